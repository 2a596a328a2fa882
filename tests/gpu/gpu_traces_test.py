#!/usr/bin/env python3
"""The analyzer on traces recorded on a real GPU (tests/data/gpu, H100s lent on 2026-11-26 and 27),
held to what gpu-check's capture and diagnose stages saw there: each planted bottleneck ranks
first on its bad run and is gone, or costs a third of the bad run's at most, on its fixed run;
the capture facts the stage checked hold. A change to the analyzer that loses a finding on
real GPU data fails here, without a GPU.

usage: gpu_traces_test.py TRACETUNE
"""
import json
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "scripts"))
from harness import check, finish  # noqa: E402
import gpu_check as gc  # noqa: E402

TRACETUNE = sys.argv[1]
DATA = REPO / "tests" / "data" / "gpu"
RUN2 = DATA / "h100-2026-11-26-b"  # the second run, after the samples and the analyzer were mended
RUN3 = DATA / "h100-2026-11-27"  # the next loan: py_streams (CUDA_EVENT records), the window stage

# trace -> (planted category, its bad run's trace or None when this is the bad run)
PLANTED = {
    RUN2 / "cpp_h2d.db": ("h2d_copy", None), RUN2 / "cpp_h2d_fixed.db": ("h2d_copy", RUN2 / "cpp_h2d.db"),
    RUN2 / "cpp_gemm.db": ("precision", None), RUN2 / "cpp_gemm_fixed.db": ("precision", RUN2 / "cpp_gemm.db"),
    RUN2 / "cpp_sync.db": ("sync_stall", None), RUN2 / "cpp_sync_fixed.db": ("sync_stall", RUN2 / "cpp_sync.db"),
    DATA / "h100_cpp_tiny.db": ("launch_bound", None),
    RUN2 / "cpp_tiny_fixed.db": ("launch_bound", DATA / "h100_cpp_tiny.db"),
    RUN2 / "py_h2d.db": ("h2d_copy", None), RUN2 / "py_sync_emit_nvtx.db": ("sync_stall", None),
}


REPORTS = {}  # trace -> its `analyze --format json` report (None when analyze failed), each made once


def analysis(db):
    if db not in REPORTS:
        r = subprocess.run([TRACETUNE, "analyze", db, "--format", "json"], capture_output=True, text=True, timeout=120)
        ok = check(f"{db.name}: analyze exits 0", r.returncode == 0, r.stderr[-400:])
        REPORTS[db] = json.loads(r.stdout) if ok else None
    return REPORTS[db]


def main():
    for db, (category, bad) in PLANTED.items():
        report = analysis(db)
        if report is None:
            continue
        top, cats = gc.top_category(report)
        if bad is None:
            check(f"{db.parent.name}/{db.name}: {category} ranked first", top == category, cats)
            continue
        bad_report = analysis(bad)
        cost, bad_cost = gc.category_cost(report, category), bad_report and gc.category_cost(bad_report, category)
        check(f"{db.parent.name}/{db.name}: {category} gone, or a third of the bad run's cost at most",
              gc.gone_or_a_third(cost, bad_cost), (cats, cost, bad_cost))
    first = analysis(DATA / "h100_py_sync_emit_nvtx.db")  # cuBLAS's FP32 '_ffma' xmma kernels
    check("first run's sync case (FP32 1024-wide layer): precision reported",
          first is not None and gc.category_cost(first, "precision") is not None,
          first and gc.top_category(first)[1])
    sync = gc.trace_facts(RUN2 / "cpp_sync.db")
    check("cpp_sync: a blocking copy every step (CUPTI 13's cudaMemcpy_v3020)",
          sync["syncs"] + sync["blocking_copies"] >= 20, sync)
    coexist = gc.query(RUN2 / "coexist.db", "SELECT reason FROM diagnostics")
    check("coexist: the takeover by torch.profiler is noted, the kernels before it kept",
          any("took over" in r[0] for r in coexist) and gc.trace_facts(RUN2 / "coexist.db")["kernels"] > 0, coexist)
    streams_path_crosses_to_side_stream(RUN3 / "py_streams.db")
    return finish()


def streams_path_crosses_to_side_stream(db):
    """Two streams (event record on the side stream, the main stream waits on it): every step's
    record and matched wait are in the trace, and the typical step's critical path runs through the
    side stream's matmuls rather than calling that time GPU wait (issue 26)."""
    facts = gc.trace_facts(db)
    check("py_streams: an event record and a matched stream wait every step (CUPTI CUDA_EVENT on the H100)",
          facts["event_records"] >= 20 and facts["stream_waits_matched"] >= 20, facts)
    report = analysis(db)
    if report is None:
        return
    shares = gc.steps_path_share(report)
    check("py_streams: the median step's path is >= 50% GPU compute and <= 5% GPU wait",
          shares["steps"] == 20 and shares["gpu_compute"] >= 0.5 and shares["gpu_wait"] <= 0.05, shares)
    # the text report: its pooled line reads host-bound (the cold first step), so it gives the median step's own
    text = subprocess.run([TRACETUNE, "analyze", db], capture_output=True, text=True, timeout=120).stdout
    line = next((ln.strip() for ln in text.splitlines() if ln.strip().startswith("median step (step")), "")
    check("py_streams: the text report gives the median step's path beside the pooled one (GPU compute first)",
          re.match(r"median step \(step \d+, 3\.\d\d ms\): 8\d% gpu_compute, .*the longest, step 0 \(120\.\d\d ms\)", line),
          line or text[-1500:])


if __name__ == "__main__":
    sys.exit(main())
