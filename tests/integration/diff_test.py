#!/usr/bin/env python3
"""`tracetune diff` on two of our own recordings: the DataLoader sample with num_workers=0
(data-loading bound) and with num_workers=2, each recorded for a few steps. Timing on a shared
2-core machine is noise, so nothing here judges the speed; the checks are what the diff must
say whatever the figures: one rank pair with the steps aligned after warm-up, the command as a
setting that differs (--num-workers 0 -> 2), the dataset files matched in the per-file I/O
table with reads on both sides, the data-loading breakdown, the findings' statuses, and the
three report formats agreeing. Also: a missing file is one line and exit 1.

usage: diff_test.py TRACETUNE SOURCE_DIR
"""
import json
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE, SRC = sys.argv[1], pathlib.Path(sys.argv[2])
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON as PY  # noqa: E402  (Debian's torch 1.13, or TT_TORCH_PYTHON's)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

STEPS = 8


def record(out, data, workers):
    r = subprocess.run([TRACETUNE, "record", "-o", str(out), "--trace", "io,python", "--max-steps", str(STEPS), "--",
                        PY, str(SRC / "samples/dataloader/train.py"), str(data), "--num-workers", str(workers),
                        "--steps", "100000", "--batch-size", "16"], capture_output=True, text=True, timeout=300)
    check(f"record num_workers={workers} exits 0", r.returncode == 0, r.stderr[-800:])


def diff(*args):
    return subprocess.run([TRACETUNE, "diff", *map(str, args)], capture_output=True, text=True, timeout=300)


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    data = tmp / "data"
    subprocess.run([PY, str(SRC / "samples/dataloader/make_dataset.py"), str(data), "--files", "128"], check=True,
                   capture_output=True)
    base, new = tmp / "w0.db", tmp / "w2.db"
    record(base, data, 0)
    record(new, data, 2)
    r = diff("--format", "json", base, new)
    check("diff exits 0", r.returncode == 0, r.stderr)
    doc = json.loads(r.stdout)
    check("schema tracetune.diff v1", doc["schema"] == "tracetune.diff" and doc["version"] == 1)
    check("one rank pair", len(doc["ranks"]) == 1, len(doc["ranks"]))
    rd = doc["ranks"][0]
    check(f"{STEPS} steps each, warm-up 1 left out, {STEPS - 1} aligned",
          rd["base_steps"] == STEPS and rd["new_steps"] == STEPS and rd["warmup"] == 1
          and rd["aligned_steps"] == STEPS - 1, (rd["base_steps"], rd["new_steps"], rd["aligned_steps"]))
    check("no GPU: host components only", not rd["has_gpu"] and
          [c["component"] for c in rd["breakdown_ns_per_step"]] == ["data wait", "syncs", "host compute", "main-thread I/O"],
          [c["component"] for c in rd["breakdown_ns_per_step"]])
    wait = {c["component"]: c for c in rd["breakdown_ns_per_step"]}["data wait"]
    check("num_workers=0: the main thread waits for data", wait["base"] > 0, wait)
    cmd = {s["key"]: s for s in doc["settings"]}.get("command")
    check("settings: the command differs, --num-workers 0 -> 2",
          cmd is not None and "--num-workers 0" in cmd["base"] and "--num-workers 2" in cmd["new"], doc["settings"])
    check("settings: no environment noise (same shell, same variables)",
          not [s for s in doc["settings"] if s["key"].startswith("env.")], doc["settings"])
    files = [f for f in rd["files"] if f["path"].startswith(str(data))]
    check("I/O per file: dataset files matched with reads on both sides",
          files and any(f["bytes_read_per_step"]["base"] > 0 and f["bytes_read_per_step"]["new"] > 0 for f in files),
          [f["path"] for f in rd["files"][:5]])
    check("findings: each resolved, new or remaining", all(f["status"] in ("resolved", "new", "remaining")
                                                           for f in doc["findings"]), doc["findings"])
    check("base finding data_loading is listed", any(f["category"] == "data_loading" and f["status"] != "new"
                                                     for f in doc["findings"]), doc["findings"])
    text = diff(base, new).stdout
    check("text: plain words first, then the tables", text.splitlines()[1] == doc["summary"]
          and "per step (ms)" in text and "I/O by file" in text and "Settings that differ" in text, text[:600])
    print(text)
    md = diff("--format", "md", "-o", tmp / "d.md", base, new)
    check("md -o: a private file with the tables", md.returncode == 0 and (tmp / "d.md").stat().st_mode & 0o777 == 0o600
          and "| file |" in (tmp / "d.md").read_text(), md.stderr)
    bad = diff(base, tmp / "missing.db")
    check("missing file: one line naming it, exit 1", bad.returncode == 1 and "missing.db" in bad.stderr
          and bad.stderr.count("\n") == 1, bad.stderr)

finish()
