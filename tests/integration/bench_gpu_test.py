#!/usr/bin/env python3
"""GPU micro-benchmarks (h2d, gemm, launch, nccl) on a machine without a GPU: one line saying
"no GPU" and exit 3 (not 1 or 2); on a GPU machine, real figures (and the nccl sweep read by
bench model where there are 2 GPUs or more); bad flags are usage errors (exit 2) either way. And `bench model` on a sweep generated from known
alpha/beta values: the fit is printed and a bucket size predicted.

usage: bench_gpu_test.py TRACETUNE
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402


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


def no_gpu_or_figures(name, args, on_gpu):
    """Without a GPU: exit 3 and one stderr line "tracetune: bench NAME: no GPU (...)", nothing on
    stdout. With one: exit 0 and on_gpu(stdout) holds."""
    r = subprocess.run([TRACETUNE, "bench", name] + args, capture_output=True, text=True, timeout=600)
    lines = r.stderr.strip().splitlines()
    if r.returncode == 3:
        check(f"bench {name} without a GPU: exit 3, one line naming it", len(lines) == 1 and
              lines[0].startswith(f"tracetune: bench {name}: no GPU (") and not r.stdout, r.stderr)
        return None
    check(f"bench {name} on a GPU: exit 0 and figures", r.returncode == 0 and on_gpu(r.stdout),
          f"rc={r.returncode} {r.stdout} {r.stderr}")
    return r.stdout


no_gpu_or_figures("gemm", ["--sizes", "256,512", "--repeats", "3", "--json"],
                  lambda out: {t["format"] for t in json.loads(out)["trials"]} == {"fp32", "tf32", "bf16", "fp16"})
no_gpu_or_figures("launch", ["--kernels", "100", "--repeats", "3", "--json"],
                  lambda out: json.loads(out)["graph"]["e2e_us"] > 0)
sweep_out = no_gpu_or_figures("nccl", ["--sizes", "1K,1M", "--algos", "Ring", "--protos", "Simple", "--json"],
                              lambda out: len(json.loads(out)["points"]) > 0)
for args, what in ((["gemm", "--sizes", "1K"], "gemm --sizes 1K"), (["gemm", "--sizes", "8"], "gemm --sizes 8"),
                   (["launch", "--kernels", "0"], "launch --kernels 0"), (["nccl", "--sizes", "1K,x"], "nccl --sizes 1K,x"),
                   (["nccl", "--algos", "Butterfly"], "nccl --algos Butterfly"),
                   (["nccl", "--protos", "LL64"], "nccl --protos LL64")):
    r = subprocess.run([TRACETUNE, "bench"] + args, capture_output=True, text=True)
    check(f"bench {what}: usage error (exit 2)", r.returncode == 2, f"rc={r.returncode} {r.stderr}")

with tempfile.TemporaryDirectory() as tmp:
    if sweep_out is not None and json.loads(sweep_out)["ranks"] >= 2:  # the sweep feeds the model as it is
        path = os.path.join(tmp, "nccl.json")
        with open(path, "w") as f:
            f.write(sweep_out)
        r = subprocess.run([TRACETUNE, "bench", "model", path], capture_output=True, text=True)
        check("bench nccl --json > sweep; bench model sweep: exit 0", r.returncode == 0 and "fit (ring" in r.stdout,
              r.stdout + r.stderr)
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
finish()
