#!/usr/bin/env python3
"""GPU micro-benchmarks on a machine without a GPU: one line saying "no GPU" and exit 3 (not 1
or 2); on a GPU machine, real figures. And `bench model` on a sweep generated from known
alpha/beta values: the fit is printed and a bucket size predicted.

usage: bench_gpu_test.py TRACETUNE
"""
import json
import os
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)


r = subprocess.run([TRACETUNE, "bench", "h2d", "--sizes", "64K,1M", "--repeats", "2"], capture_output=True, text=True)
lines = r.stderr.strip().splitlines()
if r.returncode == 3:
    check("bench h2d without a GPU: exit 3, one line naming it", len(lines) == 1 and "no GPU" in lines[0] and
          not r.stdout, r.stderr)
else:
    check("bench h2d on a GPU: exit 0 and pinned/pageable figures", r.returncode == 0 and "pinned" in r.stdout,
          f"rc={r.returncode} {r.stderr}")
r = subprocess.run([TRACETUNE, "bench", "h2d", "--sizes", "x"], capture_output=True, text=True)
check("bench h2d --sizes x: usage error (exit 2)", r.returncode == 2, r.returncode)

with tempfile.TemporaryDirectory() as tmp:
    pts, a, b, p = [], 2.0, 1e-5, 8  # hop 2 us, 100 GB/s links, 8 GPUs
    n = 1024
    while n <= 1 << 30:
        pts.append({"collective": "allreduce", "algorithm": "ring", "protocol": "simple", "bytes": n, "ranks": p,
                    "time_us": 2 * (p - 1) * a + 2 * (p - 1) / p * n * b})
        n *= 4
    sweep = os.path.join(tmp, "sweep.json")
    with open(sweep, "w") as f:
        json.dump({"points": pts}, f)
    r = subprocess.run([TRACETUNE, "bench", "model", sweep, "--nodes", "4"], capture_output=True, text=True)
    print(r.stdout)
    check("bench model: exit 0, the fit recovers 28 us and 57.14 GB/s", r.returncode == 0 and "T(n) = 28.00 us" in r.stdout
          and "57.14 GB/s" in r.stdout and "intra-node hop: 2.000 us, 100.00 GB/s" in r.stdout, r.stdout + r.stderr)
    check("bench model predicts a bucket size", "predicted best: ddp.bucket_cap_mb = " in r.stdout, r.stdout)
    with open(sweep, "w") as f:
        f.write('{"points": [{"bytes": 1}]}')
    r = subprocess.run([TRACETUNE, "bench", "model", sweep], capture_output=True, text=True)
    check("bench model on a bad sweep: exit 1, one line", r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1,
          r.stderr)
sys.exit(0 if results and all(results) else 1)
