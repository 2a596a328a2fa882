#!/usr/bin/env python3
"""Per-step cost of `tracetune record` on the gpu-check overhead job, on the CPU: what of the
host side can be measured without a GPU (medians and ratios; prints, never asserts).

The job is scripts/gpu_check.py's overhead workload, samples/gpu/train_gpu.py --case train
--device cpu (toy sizes: a step is a few hundred microseconds of Python and dispatcher work,
so a per-op or per-module cost of ours shows as it would on a GPU's ~1 ms step). Variants run
interleaved, round by round, order rotated each round; each run writes its step times
(--step-times) and the steps [steps/4, 3 steps/4) of every round are pooled per variant, as
gpu_check.py's stage_overhead does.

Variants: bare; `record` with every default (--trace io,nvtx,python,cuda,nccl); and record
with one part left out, to attribute the cost (--trace without python, without io, and
with nothing but python).

usage: step_overhead.py BUILD_DIR [--python PY] [--model mlp|transformer] [--steps 400]
       [--rounds 5] [--variants bare,all,...] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

SRC = pathlib.Path(__file__).resolve().parent.parent
JOB = SRC / "samples/gpu/train_gpu.py"
TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"
ALL = "io,nvtx,python,cuda,nccl"
# variant -> --trace list (None: the bare job)
VARIANTS = {
    "bare": None,
    "all": ALL,
    "no_python": "io,nvtx,cuda,nccl",
    "no_io": "nvtx,python,cuda,nccl",
    "python_only": "python",
}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--python", default=str(TORCH2) if TORCH2.exists() else "/usr/bin/python3")
    ap.add_argument("--model", choices=["mlp", "transformer"], default="mlp")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--json", type=pathlib.Path, help="also write the figures as JSON")
    return ap.parse_args()


def run_once(a, variant, tmp, i):
    times = tmp / f"{variant}_{i}.json"
    cmd = [a.python, str(JOB), "--case", "train", "--device", "cpu", "--model", a.model,
           "--steps", str(a.steps), "--step-times", str(times)]
    trace = VARIANTS[variant]
    if trace is not None:
        cmd = [str(a.build / "cli/tracetune"), "record", "-o", str(tmp / f"{variant}_{i}.db"),
               "--trace", trace, "--"] + cmd
    env = dict(os.environ, OMP_NUM_THREADS="1")  # one intra-op thread: less noise on 2 cores
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit(f"{variant}: exit {r.returncode}\n{r.stderr[-2000:]}")
    t = json.loads(times.read_text())
    return t[a.steps // 4: 3 * a.steps // 4]


def main():
    a = parse_args()
    variants = a.variants.split(",")
    pooled = {v: [] for v in variants}
    per_round = {v: [] for v in variants}
    with tempfile.TemporaryDirectory(prefix="tt-step-overhead-") as d:
        tmp = pathlib.Path(d)
        for i in range(a.rounds):
            order = variants[i % len(variants):] + variants[:i % len(variants)]
            for v in order:
                t = run_once(a, v, tmp, i)
                pooled[v] += t
                per_round[v].append(statistics.median(t))
                for db in tmp.glob(f"{v}_{i}.db*"):
                    if db.is_file():
                        db.unlink()
    bare = statistics.median(pooled["bare"]) if "bare" in pooled else None
    out = {"python": a.python, "model": a.model, "steps": a.steps, "rounds": a.rounds, "variants": {}}
    print(f"python {a.python}, model {a.model}, {a.rounds} rounds x steps [{a.steps // 4}, {3 * a.steps // 4})")
    print(f"{'variant':12} {'median ms':>10} {'vs bare':>8} {'added us':>9}  per-round medians")
    for v in variants:
        med = statistics.median(pooled[v])
        ratio = med / bare if bare else None
        added = (med - bare) * 1000 if bare else None
        rounds = " ".join(f"{x:.3f}" for x in per_round[v])
        print(f"{v:12} {med:10.4f} {ratio:8.4f} {added:9.1f}  {rounds}")
        out["variants"][v] = {"trace": VARIANTS[v], "median_ms": round(med, 4),
                              "ratio_vs_bare": round(ratio, 4) if ratio else None,
                              "added_us": round(added, 1) if added is not None else None,
                              "round_medians_ms": [round(x, 4) for x in per_round[v]]}
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
