#!/usr/bin/env python3
"""Calibration of the analyzer's what-if gains: predicted vs measured speedup per finding
category, over the trials files `tracetune tune` wrote (tuned.trials.json, schema
tracetune.trials with its `knobs` and `confirmation`). Figures only, never pass/fail.

  bench/calibration.py TRIALS.json... [--json]
  bench/calibration.py --rescore OLD_TRACETUNE NEW_TRACETUNE TRIALS.json...

--rescore (the files bench/calibration_runs.sh writes: each trials file with baseline.db beside it)
recomputes each confirmed choice's prediction from the same baseline trace with two builds of
the analyzer, the tuner's way (1 / (1 - the largest gain share of the findings that named the
knob); the share capped at 0.9 for OLD as the tuner did up to commit 23e4b07, at 0.99 for NEW as
it does since), and prints every (predicted, confirmed) pair and the errors' distribution.

Per kept knob, the prediction is the analyzer's (1 / (1 - estimated gain share) of the findings
that named the knob), the measurement the search's (best median before the knob / its kept
value's median) and, when the choice was that one knob, the confirmed speedup of the
interleaved pairs. Per category it prints the runs, the medians, and the factor by which the
category's predicted gain share would have to be multiplied to match the confirmed (else the
measured) one: the correction the what-if model needs, where it misses.
"""
import json
import math
import os
import re
import statistics
import subprocess
import sys


def share(speedup):
    """Step-time share a speedup saves: 1 - 1/s."""
    return 1 - 1 / speedup if speedup and speedup > 0 else 0


def rows_of(path):
    doc = json.load(open(path))
    if doc.get("schema") != "tracetune.trials":
        sys.exit(f"{path}: not a tracetune trials file")
    conf = doc.get("confirmation")
    for k in doc.get("knobs", []):
        confirmed = conf["speedup"] if conf and len(doc["knobs"]) == 1 else None
        for category in k["findings"] or ["(none)"]:
            yield {"file": path, "category": category, "knob": k["id"], "predicted": k["predicted_speedup"],
                   "measured": k["measured_speedup"], "confirmed": confirmed,
                   "confirmed_low": conf["low"] if confirmed else None, "confirmed_high": conf["high"] if confirmed else None}


def predicted_by(tracetune, baseline, categories, cap):
    """The tuner's prediction for one knob from `tracetune analyze` of the baseline: 1 / (1 - the
    largest gain share of the findings that named it), the share capped at `cap` (0.9 up to
    commit 23e4b07, 0.99 since: tuner/src/tuned_writer.cpp)."""
    r = subprocess.run([tracetune, "analyze", "--format", "json", baseline], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{baseline}: analyze failed: {r.stderr.strip()}")
    found = [f for f in json.loads(r.stdout)["findings"] if f["category"] in categories]
    share = max((f["gain_share"] for f in found), default=0)
    return 1 / (1 - min(max(share, 0), cap))


def rescore(old, new, paths):
    rows = []
    for p in paths:
        doc = json.load(open(p))
        conf = doc.get("confirmation")
        base = os.path.join(os.path.dirname(p), "baseline.db")
        if not conf or len(doc["knobs"]) != 1 or not os.path.exists(base):
            continue
        k = doc["knobs"][0]
        o, n = predicted_by(old, base, k["findings"], 0.9), predicted_by(new, base, k["findings"], 0.99)
        value = re.search(re.escape(k["id"]) + r" = (\S+) kept", " ".join(doc.get("log", [])))
        rows.append({"file": p, "knob": k["id"] + ("=" + value.group(1) if value else ""),
                     "categories": k["findings"], "confirmed": conf["speedup"], "low": conf["low"], "high": conf["high"],
                     "old": o, "new": n})
    print(f"{'file':44} {'knob':24} {'confirmed (95%)':>22} {'old pred':>8} {'new pred':>8}")
    for r in rows:
        c = f"{r['confirmed']:.3f} ({r['low']:.2f}-{r['high']:.2f})"
        print(f"{r['file'][-44:]:44} {r['knob']:24} {c:>22} {r['old']:>8.3f} {r['new']:>8.3f}")
    if not rows:
        return
    for name in ("old", "new"):
        err = sorted(abs(r[name] - r["confirmed"]) for r in rows)
        logs = sorted(abs(math.log(r[name] / r["confirmed"])) for r in rows)
        quart = [round(q, 3) for q in statistics.quantiles(err, n=4)] if len(err) > 1 else err
        print(f"{name}: {len(err)} pairs, absolute error of the predicted speedup: median {statistics.median(err):.3f}, "
              f"quartiles {quart}, mean {statistics.mean(err):.3f}, max {err[-1]:.3f}; "
              f"|ln(predicted / confirmed)| median {statistics.median(logs):.3f}")


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "--rescore":
        return rescore(sys.argv[2], sys.argv[3], sys.argv[4:])
    args = [a for a in sys.argv[1:] if a != "--json"]
    if not args:
        sys.exit(__doc__)
    rows = [r for p in args for r in rows_of(p)]
    if "--json" in sys.argv:
        print(json.dumps(rows, indent=1))
        return
    print(f"{'category':22} {'knob':28} {'predicted':>9} {'measured':>9} {'confirmed (95%)':>24}  file")
    for r in rows:
        c = f"{r['confirmed']:.3f} ({r['confirmed_low']:.3f}-{r['confirmed_high']:.3f})" if r["confirmed"] else "-"
        print(f"{r['category']:22} {r['knob']:28} {r['predicted']:>9.3f} {r['measured']:>9.3f} {c:>24}  {r['file']}")
    print()
    print(f"{'category':22} {'runs':>4} {'pred. med':>9} {'meas. med':>9} {'conf. med':>9} {'share factor':>12}")
    for cat in sorted({r["category"] for r in rows}):
        rs = [r for r in rows if r["category"] == cat]
        pred = statistics.median(r["predicted"] for r in rs)
        meas = statistics.median(r["measured"] for r in rs)
        confs = [r["confirmed"] for r in rs if r["confirmed"]]
        conf = statistics.median(confs) if confs else None
        actual = conf if conf else meas
        factor = share(actual) / share(pred) if share(pred) > 0 else float("nan")
        print(f"{cat:22} {len(rs):>4} {pred:>9.3f} {meas:>9.3f} {conf if conf else float('nan'):>9.3f} {factor:>12.2f}")


main()
