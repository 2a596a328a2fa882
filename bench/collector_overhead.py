#!/usr/bin/env python3
"""Collector overhead, measured side by side in one run (medians; prints, never asserts).

Variants run alternately, round by round (the order rotated each round), so each round's
difference to the bare run is taken under the same machine load:

1. io: ns per call of small I/O calls, timed inside the process (bench/io_bench.c): pread of
   64 B, open+close, stat, fread of a 64-byte line. Bare, under our collector (LD_PRELOAD,
   TRACETUNE_OUTPUT_DIR) and under Darshan (LD_PRELOAD=libdarshan.so, DARSHAN_ENABLE_NONMPI=1,
   DXT tracing on) when --darshan-src or --darshan-prefix is given; then what each recorded.
2. dataloader: wall time of the DataLoader sample (samples/dataloader): bare, `tracetune record`
   (merge included), our library alone (I/O only, no merge) and Darshan.
3. nvtx: ns added per NVTX push/pop pair (bench/nvtx_bench, when built).
4. hooks: ns added per DataLoader fetch and optimizer step by the Python integration
   (bench/hook_cost_job.py under `tracetune record`).
5. burst: THREADS threads issuing recorded calls for SECONDS (io_bench burst) under our
   collector: calls/s reached, I/O events recorded and dropped, and whether recorded + dropped
   is exactly the number of calls made.

usage: collector_overhead.py BUILD_DIR [--reps 5] [--steps 60] [--calls 1000000]
       [--darshan-src DIR [--darshan-mod-mem MIB] | --darshan-prefix DIR]
       [--only io,dataloader,nvtx,hooks,burst]
       [--burst-seconds 5] [--burst-threads 8] [--burst-op lseek]
"""
import argparse
import json
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import darshan_runtime  # noqa: E402

SRC = pathlib.Path(__file__).resolve().parent.parent
PY = "/usr/bin/python3"
SECTIONS = ("io", "dataloader", "nvtx", "hooks", "burst")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--reps", type=int, default=5, help="rounds (default 5)")
    ap.add_argument("--steps", type=int, default=60, help="DataLoader sample steps (default 60)")
    ap.add_argument("--calls", type=int, default=1_000_000,
                    help="preads and freads per run; stat runs a quarter, open+close a tenth")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--darshan-src", type=pathlib.Path, help="a Darshan source tree to build")
    group.add_argument("--darshan-prefix", type=pathlib.Path, help="an installed Darshan")
    ap.add_argument("--darshan-cache", type=pathlib.Path,
                    help="where --darshan-src is built (default BUILD_DIR/bench-darshan)")
    ap.add_argument("--darshan-mod-mem", type=int, metavar="MIB",
                    help="build Darshan with --with-mod-mem=MIB: its DXT keeps MIB MiB of segments "
                         "(default 2 MiB: 52,426 reads, then it stops tracing and only counts)")
    ap.add_argument("--only", default=",".join(SECTIONS), help="sections to run, comma-separated")
    ap.add_argument("--burst-seconds", type=float, default=5.0)
    ap.add_argument("--burst-threads", type=int, default=8)
    ap.add_argument("--burst-op", default="lseek", choices=("lseek", "pread1", "badclose"))
    a = ap.parse_args()
    a.build = a.build.resolve()
    a.only = set(a.only.split(","))
    if a.only - set(SECTIONS):
        ap.error(f"unknown section(s) {', '.join(sorted(a.only - set(SECTIONS)))}")
    return a


class Runner:
    """Environments of the variants, and fresh output folders for each run."""

    def __init__(self, a, tmp, darshan):
        self.a, self.tmp, self.darshan = a, tmp, darshan
        self.lib = a.build / "collector/preload/libtracetune_collector.so"
        self.tracetune = a.build / "cli/tracetune"
        self.io_bench = a.build / "bench/io_bench"
        self.count = 0

    def fresh(self, name):
        self.count += 1
        path = self.tmp / f"{self.count:04d}-{name}"
        path.mkdir(mode=0o700)
        return path

    def env(self, variant, out=None):
        """(environment, output folder) for one run of `variant`: bare, ours or darshan."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACETUNE_", "DARSHAN_", "DXT_"))}
        if variant == "ours":
            out = out or self.fresh("raw")
            env.update(LD_PRELOAD=str(self.lib), TRACETUNE_OUTPUT_DIR=str(out))
        elif variant == "darshan":
            out = out or self.fresh("darshan")
            env.update(self.darshan.env(out))
        return env, out

    def run(self, cmd, env=None):
        return subprocess.run([str(c) for c in cmd], env=env, capture_output=True, text=True, check=True).stdout

    def merged_counts(self, raw):
        """(I/O events, dropped records) of a raw folder, through `tracetune merge` and `info --json`."""
        db = raw.with_suffix(".db")
        self.run([self.tracetune, "merge", raw, "-o", db])
        info = json.loads(self.run([self.tracetune, "info", "--json", db]))
        db.unlink()
        dropped = sum(d["count"] for d in info["diagnostics"] if d["kind"] == "dropped")
        return info["counts"]["io_calls"], dropped


def alternate(variants, reps, run):
    """{variant: [result of run(variant, round) per round]}, every variant once per round, the
    starting variant rotated from round to round."""
    results = {v: [] for v in variants}
    for r in range(reps):
        k = r % len(variants)
        for v in variants[k:] + variants[:k]:
            results[v].append(run(v, r))
    return results


def added(values, base):
    """Median and range of the per-round differences value - base."""
    d = sorted(v - b for v, b in zip(values, base))
    return statistics.median(d), d[0], d[-1]


def ratios(values, base):
    r = sorted(v / b for v, b in zip(values, base))
    return statistics.median(r), r[0], r[-1]


# ---- 1. I/O micro-bench ----

class Mode:
    """One io_bench mode: `calls` loop calls per run after a warm-up of max(calls/100, 100)
    (io_bench.c); each loop call is `per_loop` I/O calls to a tracer, and a run makes `extra`
    more (opening and closing its file, for the warm-up and the timed loop); Darshan counts
    the loop calls in `counter`."""

    def __init__(self, name, label, calls, per_loop, extra, counter):
        self.name, self.label, self.calls = name, label, calls
        self.per_loop, self.extra, self.counter = per_loop, extra, counter
        self.iterations = calls + max(calls // 100, 100)
        self.io_calls = self.iterations * per_loop + extra


def io_modes(a):
    return [Mode("pread", "pread 64 B", a.calls, 1, 4, "POSIX_READS"),
            Mode("openclose", "open+close pair", a.calls // 10, 2, 0, "POSIX_OPENS"),
            Mode("stat", "stat", a.calls // 4, 1, 0, "POSIX_STATS"),
            Mode("fread_lines", "fread 64 B line", a.calls, 1, 4, "STDIO_READS")]


def io_section(runner, variants):
    a = runner.a
    blob, lines = runner.tmp / "blob", runner.tmp / "lines"
    blob.write_bytes(os.urandom(4096))
    lines.write_bytes(b"".join(b"line %05d " % i + b"x" * 52 + b"\n" for i in range(1024)))
    print(f"I/O calls timed inside io_bench, ns per call (per pair for open+close): medians of "
          f"{a.reps} rounds, variants alternated; added = median over rounds of (variant - bare) "
          f"in the same round [range]; x = median ratio to bare")
    kept = {}
    modes = io_modes(a)
    for m in modes:
        m.file = lines if m.name == "fread_lines" else blob

        def run(variant, r):
            env, out = runner.env(variant)
            text = runner.run([runner.io_bench, m.name, m.file, m.calls], env)
            if out is not None and r == a.reps - 1:
                kept[(m.label, variant)] = out
            elif out is not None:
                shutil.rmtree(out)
            return float(re.search(r"ns_per_call=([\d.]+)", text).group(1))

        res = alternate(variants, a.reps, run)
        bare = res["bare"]
        cols = [f"bare {statistics.median(bare):.1f}"]
        for v in variants[1:]:
            med, lo, hi = added(res[v], bare)
            cols.append(f"{v} {statistics.median(res[v]):.1f} (added {med:+.1f} [{lo:+.0f}..{hi:+.0f}], "
                        f"x{ratios(res[v], bare)[0]:.2f})")
        print(f"  {m.label + f' x {m.calls}':<26} " + " | ".join(cols))
        m.recorded = [recorded_io(runner, v, kept[(m.label, v)], m) for v in variants[1:]]
        for v in variants[1:]:
            shutil.rmtree(kept[(m.label, v)])
    print("  what each recorded (last round, warm-up calls included):")
    for m in modes:
        print(f"    {m.label}: " + " | ".join(m.recorded))


def recorded_io(runner, variant, out, m):
    """One phrase: what `variant` recorded of a run of mode m whose output is in `out`."""
    if variant == "ours":
        events, dropped = runner.merged_counts(out)
        exact = "exact" if events + dropped == m.io_calls else "NOT EXACT"
        return f"ours {events} I/O events + {dropped} dropped of {m.io_calls} I/O calls ({exact})"
    c = runner.darshan.counters(out, m.file)
    if c is None:
        return "Darshan: no darshan-parser to read its log"
    got = c.get(m.counter, 0)
    text = f"Darshan {m.counter} {got:.0f} of {m.iterations}"
    if got == 0:
        why = ": Darshan wraps glibc's old __xstat family, not stat()" if m.counter == "POSIX_STATS" else ""
        text += f" (not recorded{why})"
    text += {"POSIX_READS": f", DXT traced {c.get('DXT_READS', 0)} of them",
             "STDIO_READS": " (DXT traces no stdio)",
             "POSIX_OPENS": " (closes: no counter; DXT traces no opens)"}.get(m.counter, "")
    if c.get("incomplete"):
        text += f"; incomplete in the log: {', '.join(sorted(c['incomplete']))}"
    return text


# ---- 2. DataLoader sample ----

def dataloader_section(runner, variants):
    """Wall time of the sample job per variant: bare, `tracetune record` (merge included), our
    library alone (I/O only, no merge: what Darshan's variant is comparable to) and Darshan."""
    a = runner.a
    data = runner.tmp / "data"
    runner.run([PY, SRC / "samples/dataloader/make_dataset.py", data, "--files", "256"])
    job = [PY, SRC / "samples/dataloader/train.py", data, "--num-workers", "2", "--steps", a.steps]
    names = ["bare", "record", "ours"] + (["darshan"] if "darshan" in variants else [])
    last = {}

    def run(variant, r):
        env, out = runner.env(variant)
        cmd = job
        if variant == "record":
            out = runner.fresh("record") / "t.db"
            cmd = [runner.tracetune, "record", "-o", out, "--", *job]
        t0 = time.perf_counter()
        runner.run(cmd, env)
        wall = time.perf_counter() - t0
        if out is not None and r == a.reps - 1:
            last[variant] = out
        elif out is not None:
            shutil.rmtree(out.parent if variant == "record" else out)
        return wall

    res = alternate(names, a.reps, run)
    label = {"record": "tracetune record (incl. merge)", "ours": "our library alone (I/O, no merge)",
             "darshan": "Darshan (DXT on)"}
    print(f"DataLoader sample ({a.steps} steps, 2 workers), wall s, medians of {a.reps} rounds; ratio "
          f"to bare: of the medians, and median of the per-round ratios [range] (target for record <= 1.03)")
    bare = statistics.median(res["bare"])
    print(f"  bare {bare:.2f} s")
    for v in names[1:]:
        med, lo, hi = ratios(res[v], res["bare"])
        print(f"  {label[v]}: {statistics.median(res[v]):.2f} s, ratio {statistics.median(res[v]) / bare:.3f}, "
              f"per round {med:.3f} [{lo:.3f}..{hi:.3f}]")
    print("  recorded (last round): " + dataloader_recorded(runner, last, data))


def dataloader_recorded(runner, last, data):
    info = json.loads(runner.run([runner.tracetune, "info", "--json", last["record"]]))
    text = f"tracetune record: {info['counts']['io_calls']} I/O calls (all files)"
    events, dropped = runner.merged_counts(last["ours"])
    text += f"; our library alone: {events} I/O calls, {dropped} dropped"
    if "darshan" in last:
        c = runner.darshan.counters(last["darshan"]) or {}
        logs = len(runner.darshan.logs(last["darshan"]))
        text += (f"; Darshan: {logs} process logs, POSIX opens {c.get('POSIX_OPENS', 0):.0f}, reads "
                 f"{c.get('POSIX_READS', 0):.0f}, stats {c.get('POSIX_STATS', 0):.0f}, STDIO reads "
                 f"{c.get('STDIO_READS', 0):.0f}, DXT read segments {c.get('DXT_READS', 0)} (files "
                 f"outside /usr, /etc, /proc, ... only: its default exclusions)")
    for out in last.values():
        shutil.rmtree(out.parent if out.suffix == ".db" else out)
    return text


# ---- 3. NVTX, 4. Python hooks ----

def nvtx_section(runner):
    bench = runner.a.build / "bench/nvtx_bench"
    if not bench.exists():
        print("NVTX push/pop: skipped (bench/nvtx_bench not built: no NVTX headers)")
        return

    def run(variant, r):
        env, out = runner.env(variant)
        if variant == "ours":
            env["NVTX_INJECTION64_PATH"] = str(runner.lib)
        text = runner.run([bench, "1000000"], env)
        if out is not None:
            shutil.rmtree(out)
        return float(re.search(r"([\d.]+) ns per push/pop", text).group(1))

    res = alternate(["bare", "ours"], runner.a.reps, run)
    med, lo, hi = added(res["ours"], res["bare"])
    print(f"NVTX push/pop x 1M: bare {statistics.median(res['bare']):.1f} ns/pair, recorded "
          f"{statistics.median(res['ours']):.1f} ns/pair, added {med:.1f} ns/pair [{lo:.1f}..{hi:.1f}]")


def hooks_section(runner):
    def run(variant, r):
        cmd = [PY, SRC / "bench/hook_cost_job.py", "20000"]
        db = None
        if variant == "record":
            db = runner.fresh("hooks") / "h.db"
            cmd = [runner.tracetune, "record", "-o", db, "--", *cmd]
        m = re.search(r"fetch (\d+) ns, step (\d+) ns", runner.run(cmd, runner.env("bare")[0]))
        if db is not None:
            shutil.rmtree(db.parent)
        return int(m.group(1)), int(m.group(2))

    res = alternate(["bare", "record"], runner.a.reps, run)
    parts = []
    for i, what in enumerate(("DataLoader fetch", "optimizer step")):
        b, t = [x[i] for x in res["bare"]], [x[i] for x in res["record"]]
        parts.append(f"{what} bare {statistics.median(b):.0f} ns, recorded {statistics.median(t):.0f} ns "
                     f"(added {added(t, b)[0]:.0f})")
    print("Python integration x 20000: " + "; ".join(parts))


# ---- 5. burst ----

def burst_section(runner):
    """THREADS threads issue recorded calls for SECONDS: the rate reached, and whether every
    call was recorded or counted as dropped (bare once for the rate without the collector)."""
    a = runner.a
    blob = runner.tmp / "burst-blob"
    blob.write_bytes(b"x" * 4096)
    cmd = [runner.io_bench, "burst", blob, a.burst_seconds, a.burst_threads, a.burst_op]
    bare = float(re.search(r"calls_per_s=(\d+)", runner.run(cmd, runner.env("bare")[0])).group(1))
    env, raw = runner.env("ours")
    text = runner.run(cmd, env)
    calls = int(re.search(r"^calls=(\d+)", text, re.M).group(1))
    rate = float(re.search(r"calls_per_s=(\d+)", text).group(1))
    events, dropped = runner.merged_counts(raw)
    shutil.rmtree(raw)
    expected = calls + 2 * a.burst_threads  # each thread also opens and closes its descriptor
    print(f"burst: {a.burst_threads} threads x {a.burst_seconds:g} s of {a.burst_op}: bare {bare:,.0f} calls/s; "
          f"recorded run {rate:,.0f} calls/s, {calls:,} calls (+{2 * a.burst_threads} open/close): "
          f"{events:,} recorded + {dropped:,} dropped = {events + dropped:,} of {expected:,}: exact "
          f"{'yes' if events + dropped == expected else 'NO'}")


def main():
    a = parse_args()
    darshan, why = None, None
    if "io" in a.only or "dataloader" in a.only:
        cache = a.darshan_cache or a.build / "bench-darshan"
        darshan, why = darshan_runtime.find_darshan(a.darshan_src, a.darshan_prefix, cache, a.darshan_mod_mem)
        print(f"Darshan: {darshan.origin}" if darshan else f"Darshan: skipped: {why}", flush=True)
    variants = ["bare", "ours"] + (["darshan"] if darshan else [])
    with tempfile.TemporaryDirectory(prefix="tt-overhead-") as tmp:
        runner = Runner(a, pathlib.Path(tmp), darshan)
        for name, section in (("io", lambda: io_section(runner, variants)),
                              ("dataloader", lambda: dataloader_section(runner, variants)),
                              ("nvtx", lambda: nvtx_section(runner)), ("hooks", lambda: hooks_section(runner)),
                              ("burst", lambda: burst_section(runner))):
            if name in a.only:
                section()
                sys.stdout.flush()
    print(f"repetitions {a.reps}, medians")


if __name__ == "__main__":
    main()
