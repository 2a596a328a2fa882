#!/usr/bin/env python3
"""`analyze` of a trace DB larger than its memory budget reads it in blocks of ranks
(docs/scale.md): the same generated job imported as one DB with N and with 4N ranks, analysed
under one budget (TRACETUNE_ANALYZE_BUDGET), peaks at about the same RSS, while the analysis in
memory of the 4N-rank DB grows with it; and the reports in blocks equal the ones in memory.

Structural, not timed: the peak RSS of the analyze process itself (wait4's ru_maxrss), the
smaller of two runs, each run before this process reads a report (a child's peak counts what it
shared with this process when forked).

usage: analyze_blocks_memory_test.py TRACETUNE PROJECT_DIR
"""
import os
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish, lowest_peak_rss  # noqa: E402

TRACETUNE, PROJECT = sys.argv[1], pathlib.Path(sys.argv[2])
N = 12
EVENTS_PER_RANK = 20_000   # 159 steps
BUDGET = 12 << 20          # bytes: 75 per event, so blocks of 6 or 7 ranks (2 blocks at N ranks, 7 at 4N)
ALLOWED_GROWTH = 8 << 20   # bytes of peak RSS from N to 4N ranks, in blocks


def analyze(db, out, budget):
    return lowest_peak_rss([TRACETUNE, "analyze", str(db), "--format", "json", "-o", str(out)],
                           dict(os.environ, TRACETUNE_ANALYZE_BUDGET=str(budget)))


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        peaks, reports = {}, {}
        for n in (N, 4 * N):
            job, db = tmp / f"job{n}", tmp / f"job{n}.db"
            subprocess.run([sys.executable, str(PROJECT / "bench" / "gen_kineto_job.py"), str(job), "--ranks", str(n),
                            "--events-per-rank", str(EVENTS_PER_RANK), "--jobs", "2"], check=True,
                           stdout=subprocess.DEVNULL)
            subprocess.run([TRACETUNE, "import", str(job), "-o", str(db)], check=True, stdout=subprocess.DEVNULL)
            for mode, budget in (("blocks", BUDGET), ("memory", 1 << 62)):
                reports[n, mode] = tmp / f"{mode}{n}.json"
                peaks[n, mode] = analyze(db, reports[n, mode], budget)
        for n in (N, 4 * N):
            check(f"the report in blocks of the {n}-rank DB is the one in memory",
                  reports[n, "blocks"].read_bytes() == reports[n, "memory"].read_bytes())
        growth = peaks[4 * N, "blocks"] - peaks[N, "blocks"]
        print(f"peak RSS in blocks: {peaks[N, 'blocks'] / 1e6:.1f} MB at {N} ranks, {peaks[4 * N, 'blocks'] / 1e6:.1f} MB "
              f"at {4 * N} (growth {growth / 1e6:.2f} MB, allowed {ALLOWED_GROWTH / 1e6:.2f}); in memory: "
              f"{peaks[N, 'memory'] / 1e6:.1f} MB and {peaks[4 * N, 'memory'] / 1e6:.1f} MB")
        check("analyze in blocks does not grow with the trace's rank count", growth <= ALLOWED_GROWTH)
        check("the in-memory analysis grows with the ranks (else the test measures nothing)",
              peaks[4 * N, "memory"] - peaks[N, "memory"] > 2 * ALLOWED_GROWTH)
    finish()


if __name__ == "__main__":
    main()
