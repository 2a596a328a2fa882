#!/usr/bin/env python3
"""`tracetune merge` of raw record sets from many hosts streams (docs/collector.md, issue 28): the
same generated job of 16 and 64 hosts (2 processes each, 20,000 events per process) merges with a
peak RSS that grows by less than the trace writer's SQLite memory, which has fixed caps but fills
up as the file grows (64 MiB of page cache, 16 MiB for the staged io_calls, the sorter that builds
the indexes at the end): 73 MiB measured, 120 MiB allowed. A merge that holds every event grows by
3.7 MiB per host (235 MiB from 16 to 64 hosts before the streaming). And the trace holds every
event.

Structural, not timed: the peak RSS of the merge process itself (wait4's ru_maxrss), the smaller
of two runs.

usage: merge_memory_test.py TRACETUNE GEN_RAW_HOSTS
"""
import json
import pathlib
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish, lowest_peak_rss  # noqa: E402

TRACETUNE, GEN = sys.argv[1], sys.argv[2]
HOSTS = (16, 64)
PROCS, EVENTS = 2, 20_000
ALLOWED_GROWTH = 120 << 20  # bytes of peak RSS from 16 to 64 hosts


def merge(raw, db):
    # through an exec'ing shell, for the summary to go to /dev/null: the peak is the merge's
    return lowest_peak_rss(["/bin/sh", "-c", 'exec "$0" merge "$1" -o "$2" >/dev/null', TRACETUNE, str(raw), str(db)],
                           fresh=db)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        peaks, events = {}, {}
        for hosts in HOSTS:
            raw, db = tmp / f"raw{hosts}", tmp / f"job{hosts}.db"
            subprocess.run([GEN, str(raw), str(hosts), str(PROCS), str(EVENTS)], check=True)
            peaks[hosts] = merge(raw, db)
            info = json.loads(subprocess.run([TRACETUNE, "info", "--json", str(db)], check=True,
                                             capture_output=True, text=True).stdout)
            events[hosts] = info["total_events"]
            print(f"{hosts} hosts: peak RSS {peaks[hosts] / 2**20:.1f} MiB, {events[hosts]} events")
        check("every event reaches the trace", events[64] == 4 * events[16] and
              events[16] >= 16 * PROCS * EVENTS * 9 // 10, f"the traces hold {events[16]} and {events[64]} events")
        growth = peaks[64] - peaks[16]
        check("the merge does not hold every host's events", growth <= ALLOWED_GROWTH,
              f"peak RSS grew by {growth / 2**20:.1f} MiB from 16 to 64 hosts (allowed {ALLOWED_GROWTH / 2**20:.0f} MiB)")
    finish()


if __name__ == "__main__":
    main()
