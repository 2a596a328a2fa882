#!/usr/bin/env python3
"""`tracetune bench storage` on a temporary directory: every trial reads every file completely
(checked against the sizes written here), one result per block size x thread count, JSON and
text output, and refusals of bad input.

usage: bench_storage_test.py TRACETUNE
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402


def bench(*args):
    return subprocess.run([TRACETUNE, "bench", "storage", *args], capture_output=True, text=True, timeout=300)


with tempfile.TemporaryDirectory() as tmp:
    data = pathlib.Path(tmp) / "data"
    (data / "sub").mkdir(parents=True)
    sizes = {}
    for i in range(24):
        p = data / ("sub" if i % 3 == 0 else "") / f"sample_{i:03d}.bin"
        p.write_bytes(os.urandom(10_000 + 7_919 * i))  # odd sizes: partial last blocks
        sizes[str(p)] = p.stat().st_size
    (data / "empty.bin").write_bytes(b"")
    os.symlink(data / "sample_001.bin", data / "link.bin")  # not read twice
    total = sum(sizes.values())

    r = bench(str(data), "--threads", "1,2,3", "--block", "4K,64K", "--json")
    check("bench storage --json runs", r.returncode == 0, r.stderr)
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    trials = doc.get("trials", [])
    check("one trial per block x threads, in order",
          [(t["block"], t["threads"]) for t in trials] == [(4096, 1), (4096, 2), (4096, 3), (65536, 1), (65536, 2), (65536, 3)],
          f"{trials}")
    check("the files read: every non-empty regular file, symlinks skipped",
          doc.get("files") == len(sizes) and doc.get("bytes") == total, f"{doc.get('files')} {doc.get('bytes')} vs {len(sizes)} {total}")
    check("every trial reads every byte of every file",
          trials and all(t["bytes"] == total and t["files"] == len(sizes) for t in trials), f"{trials}")
    check("throughput figures are consistent with bytes and time",
          trials and all(t["seconds"] > 0 and abs(t["mib_per_s"] - total / 2**20 / t["seconds"]) <= 0.01 * t["mib_per_s"] + 0.01
                         for t in trials), f"{trials}")
    check("cache handling reported", doc.get("cache") in ("dropped", "drop_failed"), f"{doc.get('cache')}")

    r = bench(str(data), "--threads", "2", "--block", "1M", "--max-bytes", "40K", "--cached")
    check("text output with --max-bytes and --cached", r.returncode == 0 and "page cache kept" in r.stdout and
          "of 25 files" in r.stdout and "fastest: 2 threads, 1M blocks" in r.stdout, r.stdout + r.stderr)

    one = next(iter(sizes))
    r = bench(one, "--threads", "1", "--block", "64K", "--json")
    check("a single file as the path", r.returncode == 0 and json.loads(r.stdout)["bytes"] == sizes[one], r.stdout + r.stderr)

    for args, expect, code in [
        ((str(data), "--block", "12Q"), "'12Q' is not a size", 2),
        ((str(data), "--block", "0"), "block sizes go from", 2),
        ((str(data), "--threads", "0"), "not a count from 1 to 256", 2),
        ((str(data), "--threads", "2,x"), "'x' is not a count", 2),
        ((str(pathlib.Path(tmp) / "nope"),), "not a file or directory", 1),
        ((str(data / "sub" / "..." ),), "not a file or directory", 1),
    ]:
        r = bench(*args)
        check(f"refused: {' '.join(args[1:]) or args[0]}", r.returncode == code and expect in r.stderr and
              len(r.stderr.strip().splitlines()) == 1, f"rc={r.returncode} {r.stderr!r}")
    empty = pathlib.Path(tmp) / "empty"
    empty.mkdir()
    r = bench(str(empty))
    check("refused: a directory with nothing to read", r.returncode == 1 and "no non-empty regular files" in r.stderr, r.stderr)

finish()
