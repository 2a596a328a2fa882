#!/usr/bin/env python3
"""Model FLOPs of real PyTorch-profiler traces with shapes, recorded on a CPU, against the counts
worked out here from the models' definitions, not from the traces:

- a small CNN (tests/data/kineto/conv): per step, the two convolutions forward (2·N·K·H·W·C·3·3
  each), their backward (the first layer's input needs no gradient: its weight's only; the
  second both), and the linear layer's three GEMMs (forward, input and weight gradients);
- scaled-dot-product attention (tests/data/kineto/attention): per step, the attention forward
  (2·B·H·L·S·(E + Ev)) and backward (twice that), and the projection's two GEMMs (forward and
  the weight's gradient; its input needs none).

usage: kineto_flops_test.py TRACETUNE
"""
import json
import pathlib
import subprocess
import sys

TRACETUNE = sys.argv[1]
HERE = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))  # tests/harness.py
from harness import check, finish  # noqa: E402

N, H, W = 16, 32, 32
conv1 = 2 * N * 16 * H * W * 3 * 9     # 3 -> 16 channels, 3x3, padding 1: 32x32 outputs
conv2 = 2 * N * 16 * H * W * 16 * 9    # 16 -> 16
CONV = conv1 + conv2 + conv1 + 2 * conv2  # forward, then backward (weight of conv1; input and weight of conv2)
GEMM = 3 * 2 * N * 16 * 10              # Linear(16, 10) on 16 rows: forward + two gradients

B, HEADS, L, E = 4, 4, 64, 32
ATTENTION = 3 * 2 * B * HEADS * L * L * (E + E)  # forward + backward (twice the forward)
PROJECTION = 2 * 2 * (B * L) * (HEADS * E) * (3 * HEADS * E)


def efficiency(trace):
    r = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(HERE / "data/kineto" / trace)],
                       capture_output=True, text=True, timeout=120)
    check(f"analyze {trace}", r.returncode == 0, r.stderr[-1000:])
    return json.loads(r.stdout)["ranks"][0]["efficiency"] if r.returncode == 0 else {}


def near(x, want):  # the JSON report writes 6 significant digits
    return x is not None and abs(x - want) <= 1e-5 * want


eff = efficiency("conv/cpu_cnn.json.gz")
print(f"CNN: model FLOPs per step {eff.get('flops_per_step', 0):.0f} (expected {CONV + GEMM}: conv {CONV}, GEMM {GEMM})")

kinds = eff.get("flops_per_step_by_kind", {})
check("convolution FLOPs per step", near(kinds.get("conv"), CONV), eff)
check("GEMM FLOPs per step", near(kinds.get("gemm"), GEMM), eff)
check("model FLOPs per step", near(eff.get("flops_per_step"), CONV + GEMM), eff)
check("every op counted: 2 convolutions + 2 backward, 3 GEMMs, 4 steps", eff.get("gemm_ops") == 4 * 7, eff.get("gemm_ops"))

eff = efficiency("attention/cpu_attention.json.gz")
kinds = eff.get("flops_per_step_by_kind", {})
print(f"attention: per step {kinds.get('attention', 0):.0f} attention (expected {ATTENTION}), "
      f"{kinds.get('gemm', 0):.0f} GEMM (expected {PROJECTION})")
check("attention FLOPs per step", near(kinds.get("attention"), ATTENTION), eff)
check("projection GEMM FLOPs per step", near(kinds.get("gemm"), PROJECTION), eff)
check("attention: the public op and its backward counted, not the backend's forward",
      eff.get("gemm_ops") == 3 * 4, eff.get("gemm_ops"))
finish()
