#!/usr/bin/env python3
"""Scale benchmark (docs/scale.md): a generated many-rank Kineto job analysed by one process and
in N local shards plus the combine, side by side in one run. Reports per run the wall time, the
peak RSS of each process (the largest shard's and the combine's; B/event: the larger of the two per
input event), and events per second (input events over the wall time of shards plus combine); and whether the combined report equals the
single-process one. At this size, one process leaves the job critical path out (above its 2M GPU
ops); the combine computes it. So the comparison leaves out `job_critical_path` and the notes.
With --no-single (a job too large for one process here), the combined reports of the shard counts
are compared with each other instead, byte for byte; --sequential runs the shards one after
another (wall: their sum); --formats combines once per report format (equality: the first's).

With --import-gb G instead: one generated rank of G GB of plain JSON imported to a trace DB by the
streaming import, beside a tenth of it imported both streamed and in memory: wall time, events/s,
peak RSS and RSS bytes per event.

usage: scale_bench.py TRACETUNE [--dir DIR] [--ranks 1024] [--events-per-rank 20000] [--shards 1 2 4]
                      [--no-single] [--sequential] [--formats json text]
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


def report_events(path):
    """The input's event count, from near the top of a JSON or text report."""
    with open(path) as f:
        head = f.read(4096)
    found = re.search(r'"events": *(\d+)', head) or re.search(r'(\d+) events', head)
    return int(found.group(1))


def shard_runs(tracetune, job, parts, n, sequential):
    """N shards of the job, at once or one after another; (wall s, [peak RSS bytes per shard])."""
    cmds = [[tracetune, "analyze", str(job), "--shard", f"{k}/{n}", "-o", str(parts / "part-{shard}.ttpart")]
            for k in range(n)]
    if not sequential:
        return run_all(cmds)
    walls, rss = [], []
    for cmd in cmds:
        wall, (peak,) = run_all([cmd])
        walls.append(wall)
        rss.append(peak)
    return sum(walls), rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tracetune")
    ap.add_argument("--dir", default="/tmp/tracetune-scale-job")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--events-per-rank", type=int, default=20_000)
    ap.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--no-single", action="store_true", help="leave out the one-process run; compare the combined "
                    "reports of the shard counts with each other, byte for byte")
    ap.add_argument("--sequential", action="store_true", help="run the shards one after another (wall: their sum)")
    ap.add_argument("--formats", nargs="+", default=["json"], help="combine once per report format")
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
        single, events = None, None
        if not args.no_single:
            single = tmp / "single.json"
            wall, (rss,) = run_all([[args.tracetune, "analyze", str(job), "--format", "json", "-o", str(single)]])
            events = report_events(single)
        print(f"input: {len(list(job.glob('rank-*.json.gz')))} ranks, {gz / 1e6:.0f} MB gzip")
        print(f"{'run':<22}{'wall s':>9}{'events/s':>12}{'peak RSS MB':>13}{'B/event':>9}"
              f"  combine per format (wall s, RSS MB)  equal")
        if single:
            print(f"{'one process':<22}{wall:>9.1f}{events / wall:>12.0f}{rss / 1e6:>13.0f}{rss / events:>9.1f}")
        first = None
        for n in args.shards:
            parts = tmp / f"n{n}"
            parts.mkdir()
            shard_wall, shard_rss = shard_runs(args.tracetune, job, parts, n, args.sequential)
            combines = []
            for fmt in args.formats:
                combined = tmp / f"combined-{n}.{fmt}"
                comb_wall, (comb_rss,) = run_all([[args.tracetune, "analyze", "--combine",
                                                   *sorted(map(str, parts.glob("*.ttpart"))), "--format", fmt,
                                                   "-o", str(combined)]])
                combines.append((fmt, comb_wall, comb_rss, combined))
            for p in parts.glob("*.ttpart"):
                p.unlink()
            _, comb_wall, comb_rss, combined = combines[0]
            if events is None:
                events = report_events(combined)
            total = shard_wall + comb_wall
            peak = max(max(shard_rss), max(c[2] for c in combines))
            if single:
                equal = comparable(single) == comparable(combined)
            else:
                first = first or combined
                equal = first.read_bytes() == combined.read_bytes()
            per_format = ", ".join(f"{f}: {w:.1f} s, {r / 1e6:.0f} MB" for f, w, r, _ in combines)
            print(f"{f'{n} shard(s) + combine':<22}{total:>9.1f}{events / total:>12.0f}{max(shard_rss) / 1e6:>13.0f}"
                  f"{peak / events:>9.1f}  ({per_format})  {'yes' if equal else 'NO'}", flush=True)
            for _, _, _, c in combines:
                if c != first:
                    c.unlink()


if __name__ == "__main__":
    main()
