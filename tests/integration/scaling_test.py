#!/usr/bin/env python3
"""Every analysis pass is near-linear in events: `tracetune analyze` on generated Kineto traces
of 1x, 4x and 16x the size (one rank; per step, GEMM ops with their input shapes, each launching
a kernel, so every pass has work: metrics, critical path, replay, efficiency's rooflines).
The measure is the analysis' own CPU time (user + system of the child, the best of two runs),
so the machine's speed cancels out and its load barely shows; a linear pass grows 4x per size
step (n log n a little more), a quadratic one 16x. The test fails when 16x the events cost more
than 8x what 4x cost, or 40x what 1x cost: margins of 2-2.5x over linear, far below quadratic
(measured: 4.1 and 16.2 now; 10.8 and 74.5 with the quadratic roofline lookup it was added for).

The same bounds hold over ranks: a job directory of 256, 1024 and 4096 small rank files
(bench/gen_kineto_job.py, 150 events each). Passes that walked every rank's rows or tracks for
each rank (collective arrivals, steps, collectives, track classes, graph parts) made that
quadratic: 9.1 and 46 before, 4.6 and 19 after.

usage: scaling_test.py TRACETUNE
"""
import gzip
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
BASE_STEPS = 500
LAYERS = 16
BASE_RANKS = 256
GEN_JOB = pathlib.Path(__file__).resolve().parents[2] / "bench" / "gen_kineto_job.py"


def kineto(steps):
    """One rank's trace: `steps` ProfilerSteps of LAYERS (aten::mm op, launch, kernel)."""
    pid, tid, corr, t = 100, 100, 1, 1000.0
    events = [{"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "python3"}}]
    for step in range(steps):
        start = t
        for layer in range(LAYERS):
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": pid, "tid": tid, "ts": t, "dur": 12,
                           "args": {"External id": corr, "Input Dims": [[256, 512], [512, 256]],
                                    "Input type": ["float", "float"]}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                           "ts": t + 2, "dur": 6, "args": {"correlation": corr, "External id": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": f"ampere_sgemm_128x64_tn_{layer % 4}", "pid": 0,
                           "tid": 7, "ts": t + 10, "dur": 20 + layer % 5,
                           "args": {"device": 0, "stream": 7, "correlation": corr}})
            corr += 1
            t += 14
        t += 30
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid, "tid": tid,
                       "ts": start, "dur": t - start})
        t += 5
    return {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB",
                                                       "computeMajor": 8, "computeMinor": 0}],
            "traceEvents": events}


def analyze_cpu_seconds(path):
    """The best of two runs' CPU time (user + system) of `tracetune analyze --format json`."""
    best = None
    for _ in range(2):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([TRACETUNE, "analyze", "--format", "json", "--threads", "1", str(path)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if r.returncode != 0:
            sys.exit(f"analyze {path} failed: {r.stderr[-500:]}")
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = cpu if best is None else min(best, cpu)
    return best


def near_linear(times, what):
    """True when 16x costs at most 8x what 4x cost and 40x what 1x cost (printed either way)."""
    ok = True
    for small, limit in ((4, 8), (1, 40)):
        ratio = times[16] / max(times[small], 1e-3)
        good = ratio <= limit
        ok &= good
        print(f"{'ok' if good else 'FAIL'}: {what}: 16x / {small}x = {ratio:.1f} (near-linear: at most {limit})")
    return ok


def main():
    with tempfile.TemporaryDirectory() as tmp:
        times = {}
        for factor in (1, 4, 16):
            path = pathlib.Path(tmp) / f"x{factor}.json.gz"
            with gzip.open(path, "wt", compresslevel=1) as f:
                json.dump(kineto(BASE_STEPS * factor), f)
            times[factor] = analyze_cpu_seconds(path)
            print(f"{factor:>2}x: {BASE_STEPS * factor * (3 * LAYERS + 1)} events, analyze {times[factor]:.3f} s CPU")
        by_ranks = {}
        for factor in (1, 4, 16):
            job = pathlib.Path(tmp) / f"ranks{factor}"
            subprocess.run([sys.executable, str(GEN_JOB), str(job), "--ranks", str(BASE_RANKS * factor),
                            "--events-per-rank", "150", "--jobs", "1"], check=True, stdout=subprocess.DEVNULL)
            by_ranks[factor] = analyze_cpu_seconds(job)
            print(f"{factor:>2}x: {BASE_RANKS * factor} ranks, analyze {by_ranks[factor]:.3f} s CPU")
    ok = near_linear(times, "events")
    ok &= near_linear(by_ranks, "ranks")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
