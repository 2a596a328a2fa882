#!/usr/bin/env python3
"""`tracetune analyze` on awkward inputs: a multi-rank directory with a rank missing, an
empty trace, a trace without GPU events or steps, rank and step selection, and every report
format. Each must give a valid report that says what could not be determined.

usage: analyze_test.py TRACETUNE CORPUS_DIR
"""
import json
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tempfile

TRACETUNE, DATA = sys.argv[1], pathlib.Path(sys.argv[2])
SRC = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402


def analyze(path, *extra, fmt="json"):
    r = subprocess.run([TRACETUNE, "analyze", "--format", fmt, *extra, str(path)], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"analyze {path} exited {r.returncode}: {r.stderr}")
    return json.loads(r.stdout) if fmt == "json" else r.stdout


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    seven = tmp / "dlrm7"
    seven.mkdir()
    for r in (0, 1, 2, 4, 5, 6, 7):
        shutil.copy(DATA / f"kineto/param/dlrm_8rank/rank-{r}.json.gz", seven)
    doc = analyze(seven)
    check("missing rank: 7 ranks analysed", [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 4, 5, 6, 7],
          [r["rank"] for r in doc["ranks"]])
    check("missing rank: a note names rank 3", any("rank 3 missing" in n for n in doc["notes"]), doc["notes"])

    one = analyze(DATA / "kineto/param/dlrm_8rank", "--rank", "5")
    check("--rank 5: only rank 5", [r["rank"] for r in one["ranks"]] == [5] and one["options"]["rank"] == 5)

    empty = tmp / "empty.json"
    empty.write_text('{"traceEvents": []}')
    doc = analyze(empty)
    check("empty trace: valid report, no ranks, a note", doc["ranks"] == [] and doc["findings"] == []
          and doc["notes"], doc)
    text = analyze(empty, fmt="text")
    check("empty trace: text report says there is nothing", "no events" in text, text)

    doc = analyze(DATA / "kineto/hta/cpu_only_gloo.json.gz")
    r = doc["ranks"][0]
    check("no GPU: rank without GPU metrics, noted", not r["has_gpu"] and any("no GPU activity" in n for n in r["notes"]),
          r["notes"])

    doc = analyze(DATA / "kineto/hta/mtia_inference_rank_0.json.gz")
    r = doc["ranks"][0]
    check("no steps: one window, noted", not r["has_steps"] and len(r["steps"]) == 1
          and any("no step markers" in n for n in r["notes"]), r["notes"])

    doc = analyze(DATA / "kineto/hta/ns_resolution_rank_0.json.gz", "--steps", "102:103")
    nums = [s["number"] for s in doc["ranks"][0]["steps"]]
    check("--steps 102:103 selects two steps", nums == [102, 103], nums)
    doc = analyze(DATA / "kineto/hta/ns_resolution_rank_0.json.gz", "--steps", "900:")
    check("--steps outside the trace: noted", any("no step numbered" in n for n in doc["ranks"][0]["notes"]),
          doc["ranks"][0]["notes"])

    md = analyze(DATA / "kineto/param/dlrm_8rank", fmt="md")
    check("markdown: findings and the per-rank table", "## Findings" in md and "| 7 |" in md, md[:800])
    out = tmp / "report.json"
    r = subprocess.run([TRACETUNE, "analyze", "--format", "json", "-o", str(out),
                        str(DATA / "kineto/hta/simple_add.json.gz")], capture_output=True, text=True)
    check("-o writes a private file", r.returncode == 0 and out.stat().st_mode & 0o777 == 0o600
          and json.loads(out.read_text())["schema"] == "tracetune.analysis", r.stderr)

    # an nsys export has no ProfilerStep#N: steps from its NVTX ranges (--step-range)
    nsys = tmp / "small_export.sqlite"
    con = sqlite3.connect(nsys)
    con.executescript((SRC / "tests/data/nsys/small_export.sql").read_text())
    con.close()
    without = analyze(nsys)
    doc = analyze(nsys, "--step-range", "^train_step$")
    check("--step-range on an nsys export: the NVTX range is the step",
          not without["ranks"][0]["has_steps"] and doc["ranks"][0]["has_steps"] and
          [x["start_ns"] for x in doc["ranks"][0]["steps"]] == [1000],
          [(r["has_steps"], [x["start_ns"] for x in r["steps"]]) for r in (without["ranks"][0], doc["ranks"][0])])
    check("--step-range: the report says where the steps came from", any("--step-range" in n for n in doc["notes"]),
          doc["notes"])
    r = subprocess.run([TRACETUNE, "analyze", "--step-range", "(", str(nsys)], capture_output=True, text=True)
    check("--step-range with a bad regex: one line, exit 1",
          r.returncode == 1 and r.stderr.count("\n") == 1 and "not a valid regular expression" in r.stderr, r.stderr)

finish()
