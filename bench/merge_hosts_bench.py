#!/usr/bin/env python3
"""Peak RSS and wall time of `tracetune merge` over generated raw record sets of H hosts (2
processes each, 20,000 events per process: tests/unit/gen_raw_hosts.cpp), for two builds side by
side (before/after), runs interleaved; medians. Also checks that both builds write the same rows
(every table, ids included) and the same `tracetune info --json`.

usage: merge_hosts_bench.py OLD_TRACETUNE NEW_TRACETUNE GEN_RAW_HOSTS WORKDIR [--hosts 16 64 256] [--runs 3]
(the raw sets stay in WORKDIR: 2 MB per process)
Figures: bench/scale_figures.md ("Merge of many hosts").
"""
import argparse
import json
import os
import pathlib
import sqlite3
import statistics
import subprocess
import sys
import time


def run(cmd):
    """(wall s, peak RSS bytes) of cmd, its stdout discarded."""
    t0 = time.monotonic()
    with open(os.devnull, "wb") as null:
        p = subprocess.Popen(cmd, stdout=null)
        _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{cmd} failed")
    return time.monotonic() - t0, usage.ru_maxrss * 1024


def rows(db):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = []
    for name, sql in con.execute("SELECT name, sql FROM sqlite_master ORDER BY type, name"):
        out.append((name, sql))
        if sql and sql.startswith("CREATE TABLE"):
            out.extend(con.execute(f"SELECT * FROM {name}"))
    con.close()
    return out


def main():
    if sys.argv[1:2] == ["--compare"]:
        sys.exit(0 if rows(sys.argv[2]) == rows(sys.argv[3]) else 1)
    ap = argparse.ArgumentParser()
    ap.add_argument("old"), ap.add_argument("new"), ap.add_argument("gen"), ap.add_argument("workdir")
    ap.add_argument("--hosts", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    work = pathlib.Path(a.workdir)
    work.mkdir(parents=True, exist_ok=True)
    print("| hosts | processes | events | before: peak RSS, wall | after: peak RSS, wall | RSS after/before | wall after/before | same rows |")
    print("|---|---|---|---|---|---|---|---|")
    for hosts in a.hosts:
        raw = work / f"raw{hosts}"
        if not raw.exists():
            subprocess.run([a.gen, str(raw), str(hosts), "2", "20000"], check=True)
        results = {"old": [], "new": []}
        for _ in range(a.runs):
            for which in ("old", "new"):
                db = work / f"{which}{hosts}.db"
                db.unlink(missing_ok=True)
                results[which].append(run([getattr(a, which), "merge", str(raw), "-o", str(db)]))
        # in a child: the rows this process held would count in the next merges' peak RSS (a forked
        # child's RSS includes the parent's pages until it execs)
        same = subprocess.run([sys.executable, __file__, "--compare", str(work / f"old{hosts}.db"),
                               str(work / f"new{hosts}.db")]).returncode == 0
        info = [subprocess.run([a.new, "info", "--json", str(work / f"{w}{hosts}.db")], check=True,
                               capture_output=True).stdout for w in ("old", "new")]
        n = json.loads(info[1])["total_events"]
        med = {w: (statistics.median(r[0] for r in results[w]), statistics.median(r[1] for r in results[w]))
               for w in results}
        print(f"| {hosts} | {2 * hosts} | {n / 1e6:.2f} M | {med['old'][1] / 2**20:.0f} MiB, {med['old'][0]:.1f} s "
              f"| {med['new'][1] / 2**20:.0f} MiB, {med['new'][0]:.1f} s | {med['new'][1] / med['old'][1]:.2f} "
              f"| {med['new'][0] / med['old'][0]:.2f} | {'yes' if same and info[0] == info[1] else 'NO'} |", flush=True)
        for w in ("old", "new"):
            (work / f"{w}{hosts}.db").unlink(missing_ok=True)


if __name__ == "__main__":
    main()
