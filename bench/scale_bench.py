#!/usr/bin/env python3
"""Scale benchmark (docs/scale.md): a generated many-rank Kineto job analysed by one process and
in N local shards plus the combine, side by side in one run. Reports per run the wall time, the
peak RSS of each process (the largest shard's and the combine's; B/event: the larger of the two per
input event), and events per second (input events over the wall time of shards plus combine); and whether the combined report equals the
single-process one. At this size, one process leaves the job critical path out (above its 2M GPU
ops); the combine computes it. So the comparison leaves out `job_critical_path` and the notes.

With --import-gb G instead: one generated rank of G GB of plain JSON imported to a trace DB by the
streaming import, beside a tenth of it imported both streamed and in memory: wall time, events/s,
peak RSS and RSS bytes per event.

usage: scale_bench.py TRACETUNE [--dir DIR] [--ranks 1024] [--events-per-rank 20000] [--shards 1 2 4]
       scale_bench.py TRACETUNE --import-gb 5 [--dir DIR]
  (generates the input in DIR with bench/gen_kineto_job.py when it is not there yet)
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent


# Each command runs under a small Python that reports its peak RSS: a child forked straight from
# this process would count this process's own memory at the fork in its peak.
MEASURE = (
    "import resource, subprocess, sys\n"
    "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "sys.stderr.write(r.stderr.decode()[-2000:]) if r.returncode else None\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n"
    "sys.exit(r.returncode)\n")


def run_all(cmds):
    """Starts every command at once; returns (wall seconds, [peak RSS bytes per command])."""
    t0 = time.monotonic()
    procs = [subprocess.Popen([sys.executable, "-c", MEASURE, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for cmd in cmds]
    rss = []
    for p, cmd in zip(procs, cmds):
        out, err = p.communicate()
        if p.returncode != 0:
            sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{err.decode()[-2000:]}")
        rss.append(int(out.split()[-1]))
    return time.monotonic() - t0, rss


def comparable(path):
    doc = json.loads(pathlib.Path(path).read_text())
    doc.pop("job_critical_path", None)
    doc.pop("notes", None)
    return doc


def import_bench(tracetune, work, gigabytes):
    big = work / "one-rank.json"
    small_dir = work / "small"
    if not big.exists():
        subprocess.run([sys.executable, str(HERE / "gen_kineto_job.py"), str(work), "--one-file", str(gigabytes)], check=True)
    if not (small_dir / "one-rank.json").exists():
        subprocess.run([sys.executable, str(HERE / "gen_kineto_job.py"), str(small_dir), "--one-file", str(gigabytes / 10)],
                       check=True)
    print(f"{'import':<34}{'GB':>6}{'events':>12}{'wall s':>8}{'events/s':>11}{'peak RSS MB':>13}{'B/event':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for label, path, env in (("in memory", small_dir / "one-rank.json", str(1 << 62)),
                                 ("streamed", small_dir / "one-rank.json", "0"),
                                 ("streamed", big, "0")):
            db = pathlib.Path(tmp) / "out.db"
            db.unlink(missing_ok=True)
            os.environ["TRACETUNE_STREAM_FROM_BYTES"] = env
            wall, (rss,) = run_all([[tracetune, "import", str(path), "-o", str(db), "-q"]])
            info = subprocess.run([tracetune, "info", "--json", str(db)], capture_output=True, text=True, check=True)
            events = json.loads(info.stdout)["total_events"]
            print(f"{label + ' ' + path.name:<34}{path.stat().st_size / 1e9:>6.2f}{events:>12}{wall:>8.1f}{events / wall:>11.0f}"
                  f"{rss / 1e6:>13.0f}{rss / events:>9.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tracetune")
    ap.add_argument("--dir", default="/tmp/tracetune-scale-job")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--events-per-rank", type=int, default=20_000)
    ap.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--import-gb", type=float, help="the streaming-import benchmark instead, on a file of this size")
    args = ap.parse_args()
    if args.import_gb:
        return import_bench(args.tracetune, pathlib.Path(args.dir), args.import_gb)
    job = pathlib.Path(args.dir)
    if not list(job.glob("rank-*.json.gz")):
        subprocess.run([sys.executable, str(HERE / "gen_kineto_job.py"), str(job), "--ranks", str(args.ranks),
                        "--events-per-rank", str(args.events_per_rank)], check=True)
    gz = sum(f.stat().st_size for f in job.glob("rank-*.json.gz"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        single = tmp / "single.json"
        wall, (rss,) = run_all([[args.tracetune, "analyze", str(job), "--format", "json", "-o", str(single)]])
        with open(single) as f:  # the count near the top; the whole report is loaded only at the end
            events = int(re.search(r'"events": *(\d+)', f.read(4096)).group(1))
        print(f"input: {len(list(job.glob('rank-*.json.gz')))} ranks, {events} events, {gz / 1e6:.0f} MB gzip")
        print(f"{'run':<22}{'wall s':>9}{'events/s':>12}{'peak RSS MB':>13}{'B/event':>9}  (combine: wall s, RSS MB)  equal")
        print(f"{'one process':<22}{wall:>9.1f}{events / wall:>12.0f}{rss / 1e6:>13.0f}{rss / events:>9.1f}")
        rows = []
        for n in args.shards:
            parts = tmp / f"n{n}"
            parts.mkdir()
            cmds = [[args.tracetune, "analyze", str(job), "--shard", f"{k}/{n}", "-o", str(parts / "part-{shard}.ttpart")]
                    for k in range(n)]
            shard_wall, shard_rss = run_all(cmds)
            combined = tmp / f"combined-{n}.json"
            comb_wall, (comb_rss,) = run_all([[args.tracetune, "analyze", "--combine", *sorted(map(str, parts.glob("*.ttpart"))),
                                               "--format", "json", "-o", str(combined)]])
            total = shard_wall + comb_wall
            rows.append((n, total, max(shard_rss), comb_wall, comb_rss, combined))
        for n, total, shard_rss, comb_wall, comb_rss, combined in rows:
            peak = max(shard_rss, comb_rss)
            equal = comparable(single) == comparable(combined)
            print(f"{f'{n} shard(s) + combine':<22}{total:>9.1f}{events / total:>12.0f}{shard_rss / 1e6:>13.0f}"
                  f"{peak / events:>9.1f}  ({comb_wall:.1f} s, {comb_rss / 1e6:.0f} MB)  {'yes' if equal else 'NO'}")


if __name__ == "__main__":
    main()
