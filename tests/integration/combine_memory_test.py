#!/usr/bin/env python3
"""The combine's memory does not grow with the steps per rank (docs/scale.md, "The combine's
memory"): the same generated job of R ranks with 8 and with 64 steps per rank, one shard each,
then `analyze --combine` with a JSON and a text report; the combine's peak RSS at 64 steps is
within a small allowance of its peak at 8. Each rank's steps, critical paths and memory per step
stay in the parts and in the combine's spill file, and the JSON report is written as it is made.

Structural, not timed: the peak RSS of the combine process itself (wait4's ru_maxrss), the
smaller of two runs. Holding every rank's steps and paths, as the combine did before, cost about
1.75 KB per rank-step more (text; JSON about twice that with the report built in memory): here
R x 56 more rank-steps. The reports of the two runs are checked to hold every step (the rows
are on disk, not gone).

usage: combine_memory_test.py TRACETUNE PROJECT_DIR
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish, lowest_peak_rss  # noqa: E402

TRACETUNE, PROJECT = sys.argv[1], pathlib.Path(sys.argv[2])
RANKS = 256
EVENTS_PER_STEP = 126      # gen_kineto_job.py's events per step
STEPS = (8, 64)
ALLOWED_GROWTH = 8 << 20   # bytes of peak RSS from 8 to 64 steps per rank



def combine(part, fmt, out):
    """The combine's smaller peak RSS of two runs."""
    return lowest_peak_rss([TRACETUNE, "analyze", "--combine", str(part), "--format", fmt, "--threads", "2",
                            "-o", str(out)])


def count_rows(report_path):
    """(step rows, step paths) the JSON report lists over its ranks."""
    report = json.loads(report_path.read_text())
    return (sum(len(r["steps"]) for r in report["ranks"]), sum(len(r["critical_path"]) for r in report["ranks"]))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        peaks = {}
        # every combine runs before this process reads a report: a child's peak RSS counts what
        # it shared with this process when forked
        for steps in STEPS:
            job, part = tmp / f"job{steps}", tmp / f"part{steps}.ttpart"
            subprocess.run([sys.executable, str(PROJECT / "bench" / "gen_kineto_job.py"), str(job), "--ranks",
                            str(RANKS), "--events-per-rank", str(steps * EVENTS_PER_STEP), "--jobs", "2"],
                           check=True, stdout=subprocess.DEVNULL)
            subprocess.run([TRACETUNE, "analyze", str(job), "--shard", "0/1", "-o", str(part)], check=True,
                           stderr=subprocess.DEVNULL)
            for fmt in ("json", "text"):
                peaks[steps, fmt] = combine(part, fmt, tmp / f"report{steps}.{fmt}")
        for steps in STEPS:
            rows, paths = count_rows(tmp / f"report{steps}.json")
            check(f"the report of {steps} steps per rank lists every step and path",
                  rows == RANKS * steps and paths == RANKS * steps,
                  f"{rows} steps and {paths} paths, not {RANKS * steps}")
        for fmt in ("json", "text"):
            small, large = peaks[STEPS[0], fmt], peaks[STEPS[1], fmt]
            growth = large - small
            print(f"combine peak RSS, {fmt}: {small / 1e6:.1f} MB at {STEPS[0]} steps per rank, {large / 1e6:.1f} MB "
                  f"at {STEPS[1]} ({RANKS} ranks; growth {growth / 1e6:.2f} MB, allowed {ALLOWED_GROWTH / 1e6:.2f})")
            check(f"the combine's peak memory does not grow with the steps per rank ({fmt} report)",
                  growth <= ALLOWED_GROWTH)
    finish()


if __name__ == "__main__":
    main()
