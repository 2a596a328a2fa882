#!/usr/bin/env python3
"""Markdown tables from bench/tune_noise.py's results.jsonl: the oracle per job, and per tune run
the trial time, the confirmation and the choice's speedup measured with the oracle's harness;
then the remeasure step's figures (the oracle's best points and the applied choices, side by side,
with 95% intervals).

usage: tune_noise_table.py RESULTS.jsonl
"""
import json
import sys


def f(x, nd=3):
    return "-" if x is None else f"{x:.{nd}f}"


def label(settings):
    short = {"dataloader.num_workers": "W", "torch.num_threads": "t", "dataloader.prefetch_factor": "prefetch",
             "dataloader.persistent_workers": "persistent", "optimizer.foreach": "foreach"}
    return ", ".join(f"{short.get(k, k)}={v}" for k, v in settings.items()) or "(nothing applied)"


recs = [json.loads(line) for line in open(sys.argv[1])]
oracles = {r["job"]: r for r in recs if r.get("kind") == "oracle"}
print("| job | oracle (best of the grid) | oracle steady | oracle end to end |\n| --- | --- | --- | --- |")
for job, o in oracles.items():
    print(f"| {job} | {label(o.get('settings', {}))} | {f(o.get('steady'))}x | {f(o.get('e2e'))}x |")
print()
print("| job | run | tuner | trials | trial time s | confirmed (steady, interval, pairs) | end to end (interval) | "
      "applied | harness steady | harness e2e | steady / oracle |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in recs:
    if r.get("kind") != "tune":
        continue
    o = oracles.get(r["job"], {})
    h = r.get("harness") or {}
    # nothing applied is the job as written: speedup 1 against the oracle's
    steady = h.get("steady", 1.0)
    share = steady / o["steady"] if o.get("steady") else None
    conf = "-" if r.get("confirmed") is None else (
        f"{'yes' if r['confirmed'] else 'no'} {f(r.get('confirmed_speedup'))}x ({f(r.get('low'))}-{f(r.get('high'))}), {r.get('pairs')}")
    e2e = "-" if r.get("e2e_speedup") is None else f"{f(r['e2e_speedup'])}x ({f(r.get('e2e_low'))}-{f(r.get('e2e_high'))})"
    print(f"| {r['job']} | {r['run']} | {r['which']} | {r.get('trials', '-')} | {f(r.get('trials_wall_s'), 0)} | {conf} | "
          f"{e2e} | {label(r.get('applied', {}))} | {f(h.get('steady'))} | {f(h.get('e2e'))} | "
          f"{'-' if share is None else f'{100 * share:.0f}%'} |")

remeasured = [r for r in recs if r.get("kind") == "remeasure"]
if remeasured:
    print()
    print("| job | configuration | pairs | steady (95% interval) | end to end (95% interval) | load (1 min) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in remeasured:
        ci, ce = r.get("steady_ci95") or [None, None], r.get("e2e_ci95") or [None, None]
        print(f"| {r['job']} | {label(r['settings'])} | {r['pairs']} | {f(r['steady'])}x ({f(ci[0])}-{f(ci[1])}) | "
              f"{f(r['e2e'])}x ({f(ce[0])}-{f(ce[1])}) | {r['loadavg'][0]:.1f} |")
