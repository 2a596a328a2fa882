#!/usr/bin/env python3
"""Golden and HTA-agreement tests for `tracetune analyze` on the real traces in tests/data/corpus.

  check_analysis.py --tracetune BIN --name NAME --expected-dir DIR INPUT [--update]
      Runs `analyze --format json` and compares a stable digest (findings, per-rank metrics)
      with DIR/NAME.analysis.json.
  check_analysis.py --tracetune BIN --name NAME --hta REFERENCE.json INPUT
      Runs `analyze --hta-compat --format json` and checks the temporal breakdown and the
      communication/compute overlap against HTA's numbers within ±0.05 percentage points,
      and the kernel-type totals and per-stream idle breakdown where HTA published them.
"""
import json
import subprocess
import sys
from pathlib import Path

from golden_file import compare_or_update, golden_arguments

TOL_PP = 0.05


def analyze(binary, path, *extra):
    r = subprocess.run([binary, "analyze", "--format", "json", *extra, path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: analyze exited {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def digest(doc):
    """What a reviewer should see change: findings and the headline metrics, rounded."""
    us = lambda ns: round(ns / 1000)
    out = {"schema": doc["schema"], "version": doc["version"], "findings": [], "ranks": []}
    for f in doc["findings"]:
        out["findings"].append({"category": f["category"], "severity": f["severity"], "rank": f["rank"],
                                "title": f["title"], "gain_us": us(f["gain_ns"]), "knobs": f["knobs"]})
    groups = [{"category": g["category"], "ranks": g["ranks"], "worst_rank": g["worst_rank"]}
              for g in doc["finding_groups"] if len(g["ranks"]) > 1]
    if groups:  # findings that hold on several ranks, as the report groups them
        out["finding_groups"] = groups
    for r in doc["ranks"]:
        g = r["gpu"]
        out["ranks"].append({
            "rank": r["rank"], "has_gpu": r["has_gpu"], "steps": r["step_time"]["count"],
            "step_median_us": us(r["step_time"]["median_ns"]),
            "gpu_us": {k: us(g[k]) for k in ("span_ns", "busy_ns", "idle_ns", "compute_ns", "communication_ns",
                                              "memory_ns", "comm_compute_overlap_ns", "exposed_communication_ns")},
            "kernels": r["launch"]["kernels"], "correlated": r["launch"]["correlated"],
            "h2d_bytes": r["transfers"]["h2d_bytes"], "d2h_bytes": r["transfers"]["d2h_bytes"],
            "fp32_simt_us": us(r["gemm"]["fp32_simt_ns"]), "tensor_core_us": us(r["gemm"]["tensor_core_ns"]),
            "data_wait_us": us(r["data_wait_ns"]), "sync_wait_us": us(r["sync_wait_ns"]),
            "collectives": r["collectives"]["count"],
            "top_kernel": r["top_kernels"][0]["name"] if r["top_kernels"] else None,
            "notes": r["notes"]})
        out["ranks"][-1]["critical_path_us"] = path_digest(r["critical_path"])
    out["cross_rank"] = {k: doc["cross_rank"][k] for k in ("ranks", "slowest_rank", "matched_collectives")}
    out["job_critical_path_us"] = path_digest(doc["job_critical_path"])
    out["notes"] = doc["notes"]
    return out


def path_digest(paths):
    """Critical-path time by kind summed over the steps, and the rank each step's path starts on."""
    total = {}
    for p in paths:
        for k, v in p["by_kind_ns"].items():
            total[k] = total.get(k, 0) + v
    return {"steps": len(paths), "by_kind": {k: round(v / 1000) for k, v in total.items() if v},
            "ranks": sorted({b["rank"] for p in paths for b in p["by_rank"]})}


def check_paths(doc):
    """Every critical path tiles its step: its length is the measured step time, its kinds add up."""
    failures = []
    for r in doc["ranks"]:
        walls = {s["number"]: s["wall_ns"] for s in r["steps"]}
        for p in r["critical_path"]:
            want = walls.get(p["step"])
            if p["length_ns"] != want or p["end_ns"] - p["start_ns"] != want:
                failures.append(f"rank {r['rank']} step {p['step']}: path {p['length_ns']} ns, step {want} ns")
            if sum(p["by_kind_ns"].values()) != p["length_ns"] or sum(b["ns"] for b in p["by_rank"]) != p["length_ns"]:
                failures.append(f"rank {r['rank']} step {p['step']}: kinds or ranks do not add up to the path")
            if not p["complete"]:
                failures.append(f"rank {r['rank']} step {p['step']}: the walk stopped before the step's start")
        if r["has_steps"] and len(r["critical_path"]) != len(r["steps"]):
            failures.append(f"rank {r['rank']}: {len(r['critical_path'])} paths for {len(r['steps'])} steps")
    for p in doc["job_critical_path"]:
        if p["length_ns"] != p["end_ns"] - p["start_ns"] or sum(p["by_kind_ns"].values()) != p["length_ns"]:
            failures.append(f"job path of step {p['step']}: {p['length_ns']} ns for a {p['end_ns'] - p['start_ns']} ns step")
    return failures


def check_hta(doc, name, ref):
    failures = []
    ranks = {str(r["rank"]): r for r in doc["ranks"]}
    for rank, (idle, comp, noncomp, kt, idle_pct, comp_pct) in ref["temporal"].get(name, {}).items():
        g = ranks[rank]["gpu"]
        for label, ours, theirs in (("idle %", g["idle_pct"], idle_pct), ("compute %", g["compute_pct"], comp_pct),
                                    ("non-compute %", g["non_compute_pct"], 100.0 * noncomp / kt)):
            if abs(ours - theirs) > TOL_PP:
                failures.append(f"rank {rank} {label}: ours {ours:.4f}, HTA {theirs:.4f}")
        print(f"rank {rank}: idle {g['idle_ns'] / 1000:.0f} / compute {g['compute_ns'] / 1000:.0f} / non-compute "
              f"{g['non_compute_ns'] / 1000:.0f} / kernel_time {g['span_ns'] / 1000:.0f} µs "
              f"(HTA {idle} / {comp} / {noncomp} / {kt})")
    for rank, pct in ref["overlap_pct"].get(name, {}).items():
        ours = ranks[rank]["gpu"]["comm_compute_overlap_pct"]
        if abs(ours - pct) > TOL_PP:
            failures.append(f"rank {rank} comm/compute overlap: ours {ours:.4f}%, HTA {pct}%")
        print(f"rank {rank}: overlap {ours:.2f}% (HTA {pct}%)")
    totals = ref["kernel_type_totals"].get(name)
    if totals:
        ours = {}
        for r in doc["ranks"]:
            for k, v in r["gpu"]["exclusive_ns"].items():
                ours[k] = ours.get(k, 0) + v / 1000
        for k, v in totals.items():
            # ±1 µs per rank: HTA's own tests allow that much rounding
            if abs(ours.get(k, 0) - v) > len(doc["ranks"]):
                failures.append(f"kernel-type total {k}: ours {ours.get(k, 0):.0f} µs, HTA {v} µs")
        print(f"kernel-type totals: {({k: round(ours.get(k, 0)) for k in totals})} (HTA {totals})")
    for stream, (host, kernel, other) in ref["idle_by_stream"].get(name, {}).items():
        rows = [s for s in doc["ranks"][0]["idle_by_stream"] if str(s["stream"]) == stream]
        if not rows:
            failures.append(f"stream {stream} missing from the idle breakdown")
            continue
        s = rows[0]
        got = (s["host_wait_ns"] / 1000, s["kernel_wait_ns"] / 1000, s["other_ns"] / 1000)
        if any(abs(a - b) > 1 for a, b in zip(got, (host, kernel, other))):
            failures.append(f"stream {stream} idle host/kernel/other: ours {got}, HTA {(host, kernel, other)}")
        print(f"stream {stream}: idle host wait / kernel wait / other {got} (HTA {(host, kernel, other)})")
    return failures


def main():
    a = golden_arguments("input", expected_required=False, extra=(("--hta", {}),))
    if a.hta:
        ref = json.loads(Path(a.hta).read_text())
        failures = check_hta(analyze(a.tracetune, a.input, "--hta-compat"), a.name, ref)
        for f in failures:
            print("FAIL:", f)
        return 1 if failures else 0
    doc = analyze(a.tracetune, a.input)
    failures = check_paths(doc)
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    got = digest(doc)
    problem = compare_or_update(a.expected_dir / f"{a.name}.analysis.json", got, a.update)
    if problem:
        print(f"FAIL: analysis of {a.name}: {problem}")
        return 1
    print(f"ok: {a.name}: {len(got['findings'])} findings, {len(got['ranks'])} ranks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
