#!/usr/bin/env python3
"""Golden tests for `tracetune diff BASE NEW` on pairs of real traces in tests/data/corpus.

  check_diff.py --tracetune BIN --name NAME --expected-dir DIR BASE NEW [--update]

Runs `diff --format json` and compares a stable digest (the summary line, per rank pair the
aligned steps, step times and breakdown in µs, the kernel table's head and status counts, the
settings that differ, the findings' statuses) with DIR/NAME.diff.json. Independently of the
golden file it checks what must hold for any pair: the schema and version, each side's median
step equal to the median of `analyze`'s step times after warm-up, changes = new - base, the
text report opening with the summary, the Markdown report's sections, and for a trace compared
with itself: no change anywhere, every finding remaining, no setting differing.
"""
import json
import subprocess
import sys

from golden_file import compare_or_update, golden_arguments

failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + ("" if ok else f": {detail}"))
    if not ok:
        failures.append(name)


def run(binary, *args):
    r = subprocess.run([binary, *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(args[:1])} exited {r.returncode}: {r.stderr.strip()}")
    return r.stdout


def median_like_ours(values):
    """analyzer::percentile(v, 0.5): the nearest rank, rounding half up."""
    v = sorted(values)
    return v[int(0.5 * (len(v) - 1) + 0.5)] if v else 0


def digest(doc):
    us = lambda ns: round(ns / 1000)
    out = {"schema": doc["schema"], "version": doc["version"], "summary": doc["summary"], "ranks": []}
    for r in doc["ranks"]:
        status = {}
        for k in r["kernels"]:
            status[k["status"]] = status.get(k["status"], 0) + 1
        out["ranks"].append({
            "base_rank": r["base_rank"], "new_rank": r["new_rank"], "aligned_steps": r["aligned_steps"],
            "warmup": r["warmup"],
            "step_median_us": [us(r["step_median_ns"]["base"]), us(r["step_median_ns"]["new"])],
            "breakdown_us": {c["component"]: [us(c["base"]), us(c["new"])] for c in r["breakdown_ns_per_step"]},
            "kernels_by_status": status,
            "kernels_head": [[k["name"][:100], k["status"], round(k["count_per_step"]["base"], 2),
                              round(k["count_per_step"]["new"], 2)] for k in r["kernels"][:5]],
            "files": len(r["files"])})
    out["settings"] = [s["key"] for s in doc["settings"]]
    out["findings"] = [[f["status"], f["category"], f["rank"]] for f in doc["findings"]]
    out["notes"] = doc["notes"]
    return out


def check_invariants(binary, doc, base, new, identity):
    check("schema tracetune.diff version 1", doc["schema"] == "tracetune.diff" and doc["version"] == 1)
    sides = {"base": json.loads(run(binary, "analyze", "--format", "json", base))}
    sides["new"] = sides["base"] if identity else json.loads(run(binary, "analyze", "--format", "json", new))
    for r in doc["ranks"]:
        for side, rank in (("base", r["base_rank"]), ("new", r["new_rank"])):
            ranks = [x for x in sides[side]["ranks"] if x["rank"] == rank]
            skip = r["warmup"] if side == "base" else r["new_warmup"]
            walls = [s["wall_ns"] for s in ranks[0]["steps"]][skip:][:r["aligned_steps"]] if ranks else []
            check(f"{side} rank {rank}: median step = analyze's over the aligned steps",
                  r["step_median_ns"][side] == median_like_ours(walls), (r["step_median_ns"][side], walls[:5]))
        for c in r["breakdown_ns_per_step"]:
            if abs(c["new"] - c["base"] - c["change"]) > 1e-6 * max(1.0, abs(c["base"])):
                check(f"rank {r['base_rank']} {c['component']}: change = new - base", False, c)
    text = run(binary, "diff", base, new)
    check("text report: the summary comes first", text.splitlines()[1] == doc["summary"], text.splitlines()[:2])
    md = run(binary, "diff", "--format", "md", base, new)
    check("markdown report: title and a section per rank pair", md.startswith("# tracetune diff") and
          md.count("\n## ") >= len(doc["ranks"]), md[:300])
    if identity:
        moved = [(r["base_rank"], c["component"]) for r in doc["ranks"] for c in r["breakdown_ns_per_step"]
                 if c["change"] != 0]
        check("identity: no component changed", not moved, moved[:5])
        check("identity: no kernel new, vanished or changed",
              all(k["status"] == "matched" and k["time_ns_per_step"]["change"] == 0 for r in doc["ranks"]
                  for k in r["kernels"]))
        check("identity: every finding remaining", all(f["status"] == "remaining" for f in doc["findings"]))
        check("identity: no setting differs", doc["settings"] == [], doc["settings"])
        check("identity: summary says unchanged", "unchanged" in doc["summary"], doc["summary"])


def main():
    a = golden_arguments("base", "new")
    doc = json.loads(run(a.tracetune, "diff", "--format", "json", a.base, a.new))
    check_invariants(a.tracetune, doc, a.base, a.new, a.base == a.new)
    got = digest(doc)
    path = a.expected_dir / f"{a.name}.diff.json"
    problem = compare_or_update(path, got, a.update)
    if not a.update:
        check(f"digest matches {path.name}", problem is None, problem)
    print(f"summary: {doc['summary']}")
    sys.exit(1 if failures else 0)


main()
