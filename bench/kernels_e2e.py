#!/usr/bin/env python3
"""Kernel substitutions end to end on the CPU transformer sample (figures only, never
pass/fail): `tracetune tune --kernels` writes tuned.toml; then the job as written and the job
under `tracetune run --config tuned.toml` run alternately, ROUNDS times each, and we print
each run's median step time, the medians over runs, the ratio, and the largest relative
difference of the per-step losses (the fp32 numerics class allows 1e-4).

    bench/kernels_e2e.py [BUILD_DIR] [STEPS] [ROUNDS]
"""
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parents[1]
BUILD = HERE / (sys.argv[1] if len(sys.argv) > 1 else "build")
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
PY = "/usr/bin/python3"
TT = str(BUILD / "cli/tracetune")
JOB = [PY, str(HERE / "samples/transformer/train.py")]
SHAPES = "layernorm=256x16,cross_entropy=256x16000,optimizer=17x16000"  # the sample's defaults


def run(cmd, cwd):
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed: {r.stderr[-2000:]}")
    return r


def figures(out):
    ms = float(re.search(r"step_ms=([0-9.]+)", out).group(1))
    losses = [float(x) for x in re.search(r"losses=(\S+)", out).group(1).split(",")]
    return ms, losses


def main():
    with tempfile.TemporaryDirectory() as tmp:
        r = run([TT, "tune", "--kernels", "--kernels-python", PY, "--kernel-shapes", SHAPES, "--kernel-threads", "1",
                 "--steps", "10", "--warmup", "3", "--max-trials", "4", "-o", "tuned.toml", "--", *JOB, "--steps", "100000"],
                tmp)
        print(r.stderr.strip())
        print(r.stdout.strip())
        settings = [l for l in (pathlib.Path(tmp) / "tuned.toml").read_text().splitlines() if l.startswith('"')]
        print("tuned.toml settings:", ", ".join(settings) or "none")
        plain, tuned = [], []
        for _ in range(ROUNDS):
            plain.append(figures(run([*JOB, "--steps", str(STEPS)], tmp).stdout))
            tuned.append(figures(run([TT, "run", "--config", "tuned.toml", "--", *JOB, "--steps", str(STEPS)], tmp).stdout))
        p_ms, t_ms = statistics.median(x[0] for x in plain), statistics.median(x[0] for x in tuned)
        worst = max(abs(a - b) / abs(b) for a, b in zip(tuned[0][1], plain[0][1]))
        print(f"job as written:  median step per run {[round(x[0], 1) for x in plain]} ms -> {p_ms:.1f} ms")
        print(f"run --config:    median step per run {[round(x[0], 1) for x in tuned]} ms -> {t_ms:.1f} ms")
        print(f"end-to-end speedup {p_ms / t_ms:.3f}x over {ROUNDS} alternating runs of {STEPS} steps")
        print(f"loss over {STEPS} steps: largest relative difference {worst:.2e} "
              f"(final {tuned[0][1][-1]:.6f} vs {plain[0][1][-1]:.6f}; fp32 class allows 1e-4)")


if __name__ == "__main__":
    main()
