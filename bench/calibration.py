#!/usr/bin/env python3
"""Calibration of the analyzer's what-if gains: predicted vs measured speedup per finding
category, over the trials files `tracetune tune` wrote (tuned.trials.json, schema
tracetune.trials with its `knobs` and `confirmation`). Figures only, never pass/fail.

  bench/calibration.py TRIALS.json... [--json]

Per kept knob, the prediction is the analyzer's (1 / (1 - estimated gain share) of the findings
that named the knob), the measurement the search's (best median before the knob / its kept
value's median) and, when the choice was that one knob, the confirmed speedup of the
interleaved pairs. Per category it prints the runs, the medians, and the factor by which the
category's predicted gain share would have to be multiplied to match the confirmed (else the
measured) one: the correction the what-if model needs, where it misses.
"""
import json
import statistics
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


def main():
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
