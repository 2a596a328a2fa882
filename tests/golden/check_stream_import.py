#!/usr/bin/env python3
"""Streamed Kineto import (trace/src/import/json_stream.cpp) reads what the in-memory import reads: every
input given imports with streaming forced (TRACETUNE_STREAM_FROM_BYTES=0) to the same `info
--json` summary and the same `analyze --format json` report. Also: a gzip of two members, a
UTF-8 byte order mark, a top-level array and metadata after traceEvents read the same; a
truncated gzip, a truncated JSON and trailing garbage are refused with a one-line error.

usage: check_stream_import.py --tracetune BIN INPUT...
"""
import argparse
import gzip
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--tracetune", required=True)
ap.add_argument("inputs", nargs="+")
args = ap.parse_args()
STREAM = dict(os.environ, TRACETUNE_STREAM_FROM_BYTES="0")
NEVER = dict(os.environ, TRACETUNE_STREAM_FROM_BYTES=str(1 << 62))


def run(env, *argv):
    return subprocess.run([args.tracetune, *argv], capture_output=True, text=True, timeout=300, env=env)


def same(name, path):
    for verb in (["info", "--json"], ["analyze", "--format", "json"]):
        a, b = run(NEVER, *verb, str(path)), run(STREAM, *verb, str(path))
        check(f"{name}: {verb[0]} streamed equals in memory", a.returncode == 0 and (a.returncode, a.stdout) == (b.returncode, b.stdout),
              (a.stderr[-500:], b.stderr[-500:]))


def refused(name, path):
    r = run(STREAM, "info", str(path))
    check(f"{name}: refused with one line", r.returncode == 1 and r.stderr.count("\n") == 1, (r.returncode, r.stderr[-500:]))


for inp in args.inputs:
    same(pathlib.Path(inp).name, inp)

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 1000 + 10 * i, "dur": 5,
               "args": {"device": 0, "stream": 7, "correlation": i + 1}} for i in range(2000)]
    events.insert(0, {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 10, "tid": 10, "ts": 900, "dur": 30000})
    text = json.dumps({"traceEvents": events, "distributedInfo": {"rank": 3, "world_size": 4}, "traceName": "x"})
    (tmp / "after.json").write_text(text)
    same("metadata after traceEvents", tmp / "after.json")
    (tmp / "bom.json").write_bytes(b"\xef\xbb\xbf" + text.encode())
    same("byte order mark", tmp / "bom.json")
    (tmp / "array.json").write_text(json.dumps(events))
    same("top-level array", tmp / "array.json")
    half = len(text) // 2
    (tmp / "two.json.gz").write_bytes(gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode()))
    same("gzip of two members", tmp / "two.json.gz")
    whole = gzip.compress(text.encode())
    (tmp / "cut.json.gz").write_bytes(whole[: len(whole) // 2])
    refused("truncated gzip", tmp / "cut.json.gz")
    (tmp / "cut.json").write_text(text[: len(text) // 2])
    refused("truncated JSON", tmp / "cut.json")
    (tmp / "garbage.json").write_text(text + " x")
    refused("trailing garbage", tmp / "garbage.json")
    (tmp / "bad_event.json").write_text(text.replace('"dur": 5,', '"dur": [5,', 1))
    refused("a broken event", tmp / "bad_event.json")
finish()
