#!/usr/bin/env python3
"""`tracetune tune` on a busy machine, against an oracle sweep and against the tuner as it was.

A busy loop holds one core (taskset -c 1 when available) for the whole bench. For each job:

1. oracle: every configuration of a small grid (the knobs the tuner searches for this job) is run
   through `tracetune run --config` for --run-steps steps, each beside a bare run of the job (bare,
   config, config, bare, ...: --pairs pairs); per configuration the speedup is the geometric mean
   of bare/config over its pairs, of the job's own step_ms (steady) and of the process wall time
   (end to end, start-up included). The oracle is the best by steady speedup.
2. per run: `tune` (NEW binary) and `tune` (OLD binary, the tuner before this change), same flags
   and --budget, alternating which goes first; their trial time (trials_wall_s), the confirmation,
   the choice. Each applied choice is then measured with the oracle's harness, so the tuner's and
   the oracle's speedups are measured alike.

3. remeasure (--remeasure-pairs P): the oracle's --remeasure-top best points and every choice a
   tuner applied are measured again, P more interleaved pairs each, all in one stretch of time,
   so the oracle and the choices are compared on the same machine state with enough pairs to give
   each a 95% interval (2 pairs are +-20% on a busy machine: bare vs bare came out 0.58x-1.17x).
   --only-remeasure does this step alone from an earlier OUT/results.jsonl.

Results go to OUT/results.jsonl as they come (a partial bench still says what it measured).

usage: tune_noise.py NEW OLD OUT [--jobs dataloader,transformer,loader1w] [--runs 3] [--old-runs N] [--budget 3m]
                     [--oracle-threads 1,2] [--tune-run-steps N] [--python PY]
                     [--remeasure-pairs P] [--remeasure-top K] [--only-remeasure]
"""
import argparse
import itertools
import json
import math
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

HERE = pathlib.Path(__file__).resolve().parents[1]
PY = "/usr/bin/python3"


def job_command(name, data):
    """The job as the user wrote it; PY is the interpreter (--python: Debian's PyTorch 1.13 or a 2.x venv)."""
    if name == "dataloader":
        return [PY, str(HERE / "samples/dataloader/train.py"), str(data), "--num-workers", "0", "--batch-size", "16"]
    if name == "loader1w":  # the same sample as another user wrote it: 1 worker, 2 intra-op threads
        return [PY, str(HERE / "samples/dataloader/train.py"), str(data), "--num-workers", "1", "--threads", "2",
                "--batch-size", "16"]
    if name == "transformer":
        return [PY, str(HERE / "samples/transformer/train.py"), "--vocab", "4000"]
    raise SystemExit(f"unknown job {name}")


def oracle_grid(name, thread_counts=(1, 2)):
    if name in ("dataloader", "loader1w"):
        grid = []
        for w, t, extra in itertools.product([0, 1, 2, 4], thread_counts, [False, True]):
            s = {"dataloader.num_workers": w, "torch.num_threads": t}
            if extra and w > 0:
                s.update({"dataloader.prefetch_factor": 4, "dataloader.persistent_workers": True})
            elif extra:
                continue
            grid.append(s)
        return grid
    return [{"torch.num_threads": t, "optimizer.foreach": f} for t in (1, 2) for f in (False, True)]


def toml_of(settings):
    lines = ["[settings]"]
    for k, v in settings.items():
        lines.append(f'"{k}" = {str(v).lower() if isinstance(v, bool) else json.dumps(v) if isinstance(v, str) else v}')
    return "\n".join(lines) + "\n"


def toml_value(text):
    """A value as tuned.toml writes it: true/false, a quoted string or a number."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"'):
        return json.loads(text)
    return float(text) if "." in text else int(text)


def run_job(tt, cmd, steps, config=None):
    full = cmd + ["--steps", str(steps)]
    if config is not None:
        full = [tt, "run", "-q", "--config", str(config), "--"] + full
    t0 = time.monotonic()
    r = subprocess.run(full, capture_output=True, text=True, timeout=900)
    wall = time.monotonic() - t0
    m = re.search(r"step_ms=([0-9.]+)", r.stdout)
    if r.returncode != 0 or not m:
        return None
    return {"wall": wall, "step_ms": float(m.group(1))}


def gmean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


T975 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131}


def interval95(ratios):
    """The geometric mean's 95% t interval over the pairs' log ratios (None under 2 pairs)."""
    if len(ratios) < 2:
        return None
    logs = [math.log(x) for x in ratios]
    m = sum(logs) / len(logs)
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))
    h = T975.get(len(logs) - 1, 1.96) * sd / math.sqrt(len(logs))
    return [math.exp(m - h), math.exp(m + h)]


def beside_bare(tt, cmd, steps, config, pairs):
    """bare/config ratios, steady and end to end, over interleaved pairs."""
    steady, e2e = [], []
    for i in range(pairs):
        order = [None, config] if i % 2 == 0 else [config, None]
        got = {str(c): run_job(tt, cmd, steps, c) for c in order}
        b, c = got[str(None)], got[str(config)]
        if b and c:
            steady.append(b["step_ms"] / c["step_ms"])
            e2e.append(b["wall"] / c["wall"])
    return {"steady": gmean(steady), "e2e": gmean(e2e), "pairs": len(steady), "steady_ratios": steady, "e2e_ratios": e2e}


def emit(out, rec):
    rec["utc"] = time.strftime("%H:%M:%S", time.gmtime())
    with open(out / "results.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec), flush=True)


def oracle(args, out, name, cmd):
    best = None
    for s in oracle_grid(name, tuple(int(t) for t in args.oracle_threads.split(","))):
        cfg = out / f"oracle-{name}.toml"
        cfg.write_text(toml_of(s))
        cfg.chmod(0o600)
        m = beside_bare(args.new, cmd, args.run_steps, cfg, args.pairs)
        emit(out, {"job": name, "kind": "oracle_point", "settings": s, **m})
        if m["pairs"] and (best is None or m["steady"] > best["steady"]):
            best = {"settings": s, **m}
    emit(out, {"job": name, "kind": "oracle", **(best or {})})
    return best


def tune_once(args, out, name, cmd, which, run):
    tt = args.new if which == "new" else args.old
    d = out / f"{name}-{which}-{run}"
    d.mkdir(exist_ok=True)
    flags = ["--steps", "12", "--warmup", "3", "--budget", args.budget, "--trial-timeout", "120", "-q",
             "-o", str(d / "tuned.toml")]
    if which == "new" and args.tune_run_steps > 0:  # the old tuner has no --run-steps
        flags += ["--run-steps", str(args.tune_run_steps)]
    t0 = time.monotonic()
    r = subprocess.run([tt, "tune", *flags, "--", *cmd, "--steps", "100000"], capture_output=True, text=True, cwd=d,
                       timeout=3600)
    wall = time.monotonic() - t0
    (d / "tune.out").write_text(r.stdout + r.stderr)
    rec = {"job": name, "kind": "tune", "which": which, "run": run, "rc": r.returncode, "tune_wall_s": round(wall, 1)}
    trials = d / "tuned.trials.json"
    if trials.exists():
        doc = json.loads(trials.read_text())
        c = doc.get("confirmation") or {}
        rec.update({"trials": len(doc["trials"]), "trials_wall_s": doc["trials_wall_s"], "search_speedup": doc["speedup"],
                    "confirmed": c.get("confirmed"), "confirmed_speedup": c.get("speedup"), "low": c.get("low"),
                    "high": c.get("high"), "pairs": c.get("pairs"), "e2e_speedup": c.get("e2e_speedup"),
                    "e2e_low": c.get("e2e_low"), "e2e_high": c.get("e2e_high"), "predicted": doc.get("predicted_speedup")})
    text = (d / "tuned.toml").read_text() if (d / "tuned.toml").exists() else ""
    chosen = dict(re.findall(r'^"([a-z_.]+)" = (.+)$', text, re.M))
    rec["applied"] = chosen
    if chosen:
        rec["harness"] = beside_bare(args.new, cmd, args.run_steps, d / "tuned.toml", args.pairs)
    emit(out, rec)


def remeasure(args, out, name, cmd):
    """The oracle's best points and the applied choices, measured again side by side."""
    recs = [json.loads(line) for line in open(out / "results.jsonl")]
    points = sorted((r for r in recs if r.get("job") == name and r.get("kind") == "oracle_point" and r.get("pairs")),
                    key=lambda r: -r["steady"])[:args.remeasure_top]
    configs = [p["settings"] for p in points]
    for r in recs:
        if r.get("job") == name and r.get("kind") == "tune" and r.get("applied"):
            chosen = {k: toml_value(v) for k, v in r["applied"].items()}
            if chosen not in configs:
                configs.append(chosen)
    for i, s in enumerate(configs):
        cfg = out / f"remeasure-{name}-{i}.toml"
        cfg.write_text(toml_of(s))
        cfg.chmod(0o600)
        m = beside_bare(args.new, cmd, args.run_steps, cfg, args.remeasure_pairs)
        emit(out, {"job": name, "kind": "remeasure", "settings": s, **m, "steady_ci95": interval95(m["steady_ratios"]),
                   "e2e_ci95": interval95(m["e2e_ratios"]), "loadavg": os.getloadavg()})


def main():
    global PY
    ap = argparse.ArgumentParser()
    ap.add_argument("new")
    ap.add_argument("old")
    ap.add_argument("out")
    ap.add_argument("--jobs", default="dataloader,transformer,loader1w")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--budget", default="3m")
    ap.add_argument("--pairs", type=int, default=2)
    ap.add_argument("--run-steps", type=int, default=60)
    # the DataLoader oracle's intra-op thread counts: "1" leaves out the 2-thread points (4-7x slower
    # with one core held in the first bench) to fit a shorter session
    ap.add_argument("--oracle-threads", default="1,2")
    # the new tuner's confirmation run length (--run-steps; 0: its default, the trial length)
    ap.add_argument("--tune-run-steps", type=int, default=0)
    # the old tuner runs in the first N runs of each job only (its trial time is the figure to beat;
    # default: every run)
    ap.add_argument("--old-runs", type=int, default=-1)
    # the job's interpreter: /usr/bin/python3 (Debian, PyTorch 1.13) or a PyTorch 2.x venv's python
    ap.add_argument("--python", default=PY)
    # step 3: pairs per configuration (0: no remeasure), and how many of the oracle's best points
    ap.add_argument("--remeasure-pairs", type=int, default=0)
    ap.add_argument("--remeasure-top", type=int, default=3)
    ap.add_argument("--only-remeasure", action="store_true")
    args = ap.parse_args()
    PY = args.python
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = out / "data"
    if not data.exists():
        subprocess.run([PY, str(HERE / "samples/dataloader/make_dataset.py"), str(data), "--files", "256"], check=True,
                       capture_output=True)
    spin = ["taskset", "-c", "1"] if shutil.which("taskset") else []
    busy = subprocess.Popen(spin + ["/usr/bin/python3", "-c", "while True: pass"])
    emit(out, {"kind": "start", "busy_pid": busy.pid, "busy": " ".join(spin) + " python3 -c 'while True: pass'",
               "loadavg": os.getloadavg(), "python": PY})
    try:
        for name in args.jobs.split(","):
            cmd = job_command(name, data)
            if args.only_remeasure:
                remeasure(args, out, name, cmd)
                continue
            oracle(args, out, name, cmd)
            for run in range(1, args.runs + 1):
                order = ["new", "old"] if run % 2 else ["old", "new"]
                if 0 <= args.old_runs < run:
                    order = ["new"]
                for which in order:
                    tune_once(args, out, name, cmd, which, run)
                    emit(out, {"kind": "load", "loadavg": os.getloadavg()})
            if args.remeasure_pairs > 0:
                remeasure(args, out, name, cmd)
    finally:
        busy.kill()
        busy.wait()


if __name__ == "__main__":
    main()
