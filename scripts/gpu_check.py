#!/usr/bin/env python3
"""gpu-check: records, checks and measures every GPU path of tracetune on a real GPU.

Run through scripts/gpu-check.sh on a GPU machine, from the repository root, with the install
tree of the `gpu-carry` preset (scripts/gpu-carry.sh builds it; default ./gpu-carry):

  scripts/gpu-check.sh [--stage NAME[,NAME...]|all] [--out DIR] [--prefix CARRY] [--steps N]
                       [--budget SECONDS] [--rounds N] [--pack FILE.tar.gz]
  scripts/gpu-check.sh --facts TRACE.db     # the capture facts of any trace, as JSON
  scripts/gpu-check.sh --rehearse --python PY [--corpus DIR]   # on a CPU: everything up to the GPU

Stages (`all` runs them in this order; docs/gpu-check.md has the 15-minute plan):
  capture   each planted bottleneck of samples/gpu (PyTorch and CUDA C++), bad and --fixed, under
            `tracetune record`: kernels, copies by direction and memory kind, memsets, syncs, API
            calls, API->kernel correlation, NVTX (PyTorch emit_nvtx and user), GPU times after
            their launch calls, CUPTI drops, exit codes
  diagnose  `tracetune analyze` ranks each planted bottleneck first on the bad run, not on the fixed
  nccl      NCCL with the profiler and tuner plugins: on one GPU a self send/recv (a one-rank
            collective never reaches either plugin), on several the all-reduces with algorithm,
            protocol, channels, bytes, and the tuner's table in effect
  coexist   torch.profiler started mid-run inside a recorded job
  kill      SIGKILL of a recorded GPU job mid-run: GPU records up to the last flush are kept
  overhead  step time bare vs `tracetune record` (default, and TRACETUNE_CUDA_API=all) vs
            torch.profiler, interleaved, medians, for a small MLP (launch-bound: the worst case) and a
            transformer (realistic kernel sizes)
  bench     `tracetune bench h2d|gemm|launch|nccl`
  kernels   the kernel pack's CUDA kernels against stock PyTorch (`bench kernels --device cuda`):
            parity of outputs and gradients, and the speed ratio at the default shapes
  tune      `tracetune tune --allow-numerics` finds the planted fixes; `run --config` reproduces them
  window    `record --steps A:B`: exactly those steps, no kernel outside the window and kernels in
            each of its steps (CUPTI activity on only inside it), and the step time of a closed
            window vs bare

--budget bounds the whole call: a stage that no longer fits is skipped (said in the summary),
and no command runs past the deadline. --pack writes one archive of everything but the trace
DBs (summaries, facts, logs) plus a few DBs trimmed to 5 MB.

Writes OUT/summary.json (environment, each stage's checks and figures), OUT/<stage>/ (traces,
logs) and prints a line per check. Exit status: 0 all checks passed, 1 some failed, 2 usage or
set-up error, 3 no GPU visible (one line on stderr).
"""
import argparse
import json
import math
import os
import pathlib
import shutil
import signal
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from harness import free_port, query  # noqa: E402

STAGES = ("capture", "diagnose", "nccl", "coexist", "kill", "overhead", "bench", "kernels", "tune", "window")
SAMPLE_PY = REPO / "samples" / "gpu" / "train_gpu.py"
# planted case -> the analyzer category that must rank first on the bad run
PLANTED = {"h2d": "h2d_copy", "tiny": "launch_bound", "gemm": "precision", "sync": "sync_stall"}


class Stage:
    """One stage's named checks, figures and notes, as they go into the summary.

    check(): what must hold wherever the stage runs. truth(): what only a GPU run can show (a
    kernel count, a speedup); in a rehearsal it runs on stand-in traces and CPU runs, so its
    outcome is reported as a figure and counts neither way."""

    def __init__(self, name, rehearsal=False):
        self.name, self.checks, self.figures, self.notes = name, [], {}, []
        self.rehearsal, self.truths, self.skipped = rehearsal, [], None
        self.t0 = time.monotonic()

    def check(self, name, cond, detail=""):
        self.checks.append({"name": name, "ok": bool(cond), "detail": "" if cond else str(detail)[:2000]})
        print(("ok   " if cond else "FAIL ") + f"{self.name}: {name}" + ("" if cond else f": {str(detail)[:300]}"),
              flush=True)
        return bool(cond)

    def truth(self, name, cond, detail=""):
        if not self.rehearsal:
            return self.check(name, cond, detail)
        self.truths.append({"name": name, "on_stand_in": bool(cond)})
        print(f"     {self.name}: (GPU truth, rehearsed) {name}: {'holds' if cond else 'does not hold'}", flush=True)
        return bool(cond)

    def figure(self, key, value):
        self.figures[key] = value
        print(f"     {self.name}: {key} = {json.dumps(value)}", flush=True)

    def note(self, text):
        self.notes.append(text)
        print(f"     {self.name}: {text}", flush=True)

    def skip(self, why):
        self.skipped = why
        print(f"SKIP {self.name}: {why}", flush=True)

    def result(self):
        r = {"checks": self.checks, "figures": self.figures, "notes": self.notes,
             "passed": sum(c["ok"] for c in self.checks), "failed": sum(not c["ok"] for c in self.checks),
             "seconds": round(time.monotonic() - self.t0, 1)}
        if self.truths:
            r["truths_on_stand_ins"] = self.truths
        if self.skipped:
            r["skipped"] = self.skipped
        return r


# ---- the trace facts every capture check reads -------------------------------------------------

# each event's track -> the process it belongs to (thread tracks via threads, stream tracks via devices)
TRACK_PROCESS = """WITH tp(track_id, process_id) AS (
  SELECT t.id, th.process_id FROM tracks t JOIN threads th ON t.type = 0 AND th.id = t.owner_id
  UNION ALL
  SELECT t.id, d.process_id FROM tracks t JOIN streams s ON t.type = 1 AND s.id = t.owner_id
                                           JOIN devices d ON d.id = s.device_id)"""


def launch_facts(db):
    """Kernels with a correlation id, those whose launch call (same process, same correlation)
    is in the trace, and those that start before their launch call starts (clock error)."""
    rows = query(db, TRACK_PROCESS + """
        SELECT count(*), count(a.start_ns), sum(k.start_ns < a.start_ns)
        FROM kernels k JOIN tp kp ON kp.track_id = k.track_id
        LEFT JOIN (SELECT a.correlation, a.start_ns, ap.process_id FROM api_calls a
                   JOIN tp ap ON ap.track_id = a.track_id WHERE a.correlation IS NOT NULL) a
               ON a.correlation = k.correlation AND a.process_id = kp.process_id
        WHERE k.correlation IS NOT NULL""")
    with_corr, matched, early = rows[0]
    return {"kernels_with_correlation": with_corr, "kernels_matched_to_launch": matched,
            "kernels_before_launch": early or 0}


def stream_wait_facts(db):
    """CUDA event records and stream waits (syncs types 5 and 2), and the waits that name a record:
    one of the same process and event id with a lower correlation id, the pair the critical
    path follows across streams (docs/analysis.md)."""
    rows = query(db, TRACK_PROCESS + """, sy AS (SELECT s.type, s.event, s.correlation, tp.process_id
                                                 FROM syncs s JOIN tp ON tp.track_id = s.track_id
                                                 WHERE s.type IN (2, 5))
        SELECT (SELECT count(*) FROM sy WHERE type = 5), (SELECT count(*) FROM sy WHERE type = 2),
               (SELECT count(*) FROM sy w WHERE w.type = 2 AND EXISTS (
                   SELECT 1 FROM sy r WHERE r.type = 5 AND r.event = w.event AND r.process_id = w.process_id
                                        AND r.correlation < w.correlation))""")
    records, waits, matched = rows[0]
    return {"event_records": records, "stream_waits": waits, "stream_waits_matched": matched}


def trace_facts(db):
    """What a capture check looks at, read from the trace DB with plain SQL."""
    one = lambda sql: query(db, sql)[0][0]  # noqa: E731
    f = {
        "kernels": one("SELECT count(*) FROM kernels"),
        "kernels_in_graphs": one("SELECT count(*) FROM kernels WHERE graph_id IS NOT NULL"),
        "memsets": one("SELECT count(*) FROM memsets"),
        "syncs": one("SELECT count(*) FROM syncs"),
        # host calls that block until the GPU drained (CUPTI names them cudaMemcpy_v3020): a
        # synchronous device-to-host cudaMemcpy is not in CUPTI's synchronisation records
        "blocking_copies": one("""SELECT count(*) FROM api_calls a JOIN strings s ON s.id = a.name_id
                                  WHERE s.value IN ('cudaMemcpy', 'cuMemcpyDtoH', 'cuMemcpyDtoH_v2')
                                     OR s.value GLOB 'cudaMemcpy_v[0-9]*'"""),
        "steps": one("SELECT count(*) FROM steps"),
        "collectives": one("SELECT count(*) FROM collectives"),
        "dropped": one("SELECT coalesce(sum(count), 0) FROM diagnostics WHERE kind = 0"),
    }
    dirs = {1: "HtoD", 2: "DtoH", 3: "DtoD", 4: "HtoH", 5: "PtoP"}
    kinds = {1: "pageable", 2: "pinned", 3: "device", 4: "managed", 5: "array"}
    f["memcpys"] = {f"{dirs.get(d, 'unknown')} {kinds.get(k, 'unknown')} {'sync' if a == 0 else 'async' if a == 1 else '?'}": n
                    for d, k, a, n in query(db, """SELECT direction, CASE WHEN direction = 2 THEN dst_kind ELSE src_kind END,
                                                   async, count(*) FROM memcpys GROUP BY 1, 2, 3""")}
    f["api_calls"] = {["runtime", "driver", "other"][min(k, 2)]: n
                      for k, n in query(db, "SELECT api, count(*) FROM api_calls GROUP BY api")}
    f["nvtx_ranges"] = one("SELECT count(*) FROM ranges WHERE kind = 0")
    f["nvtx_aten_ranges"] = one("""SELECT count(*) FROM ranges r JOIN strings s ON s.id = r.name_id
                                   WHERE r.kind = 0 AND s.value LIKE 'aten::%'""")
    f["nvtx_aten_ranges_with_args"] = one("""SELECT count(*) FROM ranges r JOIN strings s ON s.id = r.name_id
                                             WHERE r.kind = 0 AND s.value LIKE 'aten::%' AND r.args_id IS NOT NULL""")
    f["user_step_ranges"] = one("""SELECT count(*) FROM ranges r JOIN strings s ON s.id = r.name_id
                                   WHERE s.value = 'train_gpu step'""")
    # CUPTI's device-memory samples (MEMORY2), under either name (docs/analysis.md, "Memory")
    f["cupti_memory_samples"] = one("""SELECT count(*) FROM counters c JOIN strings s ON s.id = c.name_id
                                       WHERE s.value LIKE 'cuda:% memory.reserved'
                                          OR s.value LIKE 'cuda:% memory.cuda_malloc'""")
    f.update(launch_facts(db))
    f.update(stream_wait_facts(db))
    m = f["kernels_with_correlation"]
    f["launch_match_share"] = round(f["kernels_matched_to_launch"] / m, 4) if m else None
    f["diagnostics"] = [{"kind": k, "source": s, "reason": r, "count": c}
                        for k, s, r, c in query(db, "SELECT kind, source, reason, count FROM diagnostics ORDER BY id")]
    return f


def sum_memcpys(facts, prefix):
    return sum(n for key, n in facts["memcpys"].items() if key.startswith(prefix))


# ---- running things ---------------------------------------------------------------------------

def loader_finds(soname):
    """Whether the dynamic loader's cache (ldconfig) has `soname`."""
    r = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True)
    return soname in r.stdout


def library_dir(soname, dirs):
    """The first of `dirs` holding `soname`, or None."""
    return next((str(d) for d in dirs if d and (pathlib.Path(d) / soname).exists()), None)


WHEEL_PACKAGES = ("nvidia.cuda_cupti", "nvidia.nccl", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cu13")
CUDA_SONAMES = ("libcupti.so.13", "libnccl.so.2", "libcublas.so.13", "libcudart.so.13")


def python_package_lib_dirs(python):
    """lib/ folders of the nvidia-* wheels PyTorch ships (CUPTI, NCCL, cuBLAS live there on pip
    installs): CUDA 13's one nvidia/cu13 tree, NCCL's nvidia/nccl, CUDA 12's per-library ones."""
    code = ("import importlib.util, pathlib, sys\n"
            "for n in sys.argv[1:]:\n"
            "    try:\n"
            "        s = importlib.util.find_spec(n)\n"
            "    except ImportError:\n"
            "        continue\n"
            "    if s and s.submodule_search_locations:\n"
            "        for p in s.submodule_search_locations: print(pathlib.Path(p) / 'lib')\n")
    r = subprocess.run([python, "-c", code, *WHEEL_PACKAGES], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else []


class Env:
    """Paths and the environment every stage runs its commands with; the deadline of --budget."""

    def __init__(self, a, rehearsal=False):
        self.prefix = pathlib.Path(a.prefix).resolve()
        self.tracetune = str(self.prefix / "bin" / "tracetune")
        self.sample_cpp = str(self.prefix / "libexec" / "tracetune" / "gpu_training_loop")
        self.python = a.python
        self.out = pathlib.Path(a.out).resolve()
        self.steps = a.steps
        self.rounds = a.rounds
        self.tune_cases = a.tune_cases
        self.rehearsal = rehearsal
        self.device = "cpu" if rehearsal else "cuda"
        self.gpus = 0
        self.deadline = time.monotonic() + a.budget if a.budget else None
        self.env = dict(os.environ, PYTHONUNBUFFERED="1")
        # the Python's own python3 and torchrun first on PATH (record also looks for CUPTI there)
        if pathlib.Path(a.python).parent != pathlib.Path("."):
            self.env["PATH"] = f"{pathlib.Path(a.python).parent}:{self.env.get('PATH', '')}"
        cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
        self.wheel_dirs = python_package_lib_dirs(a.python)
        dirs = [f"{cuda}/extras/CUPTI/lib64", f"{cuda}/lib64", *self.wheel_dirs]
        extra = [d for so in CUDA_SONAMES if not loader_finds(so) and (d := library_dir(so, dirs))]
        if extra:
            self.env["LD_LIBRARY_PATH"] = ":".join(dict.fromkeys(extra + [self.env.get("LD_LIBRARY_PATH", "")])).strip(":")

    def remaining(self):
        """Seconds left of --budget (None: no budget)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def stage_dir(self, name):
        d = self.out / name
        d.mkdir(parents=True, exist_ok=True)
        return d

    def run(self, args, log, timeout=300, env=None, **kw):
        """Runs `args`, writes its command line, output and exit status to `log`. The timeout is
        cut to what is left of the budget, so one hung command cannot eat the next stages."""
        if (left := self.remaining()) is not None:
            timeout = max(1, min(timeout, int(left)))
        t0 = time.monotonic()
        try:
            r = subprocess.run([str(x) for x in args], capture_output=True, text=True, timeout=timeout,
                               env=env or self.env, **kw)
        except subprocess.TimeoutExpired as e:
            text = lambda b: b.decode(errors="replace") if isinstance(b, bytes) else (b or "")  # noqa: E731
            r = subprocess.CompletedProcess(args, 124, text(e.stdout), text(e.stderr) + f"\ntimed out after {timeout} s")
        pathlib.Path(log).write_text(f"$ {' '.join(map(str, args))}\n# exit {r.returncode} after "
                                     f"{time.monotonic() - t0:.1f} s\n--- stdout\n{r.stdout}\n--- stderr\n{r.stderr}")
        return r

    def record(self, db, cmd, log, timeout=300, env=None, extra=()):
        pathlib.Path(db).unlink(missing_ok=True)
        return self.run([self.tracetune, "record", "-o", db, *extra, "--", *cmd], log, timeout, env)

    def sample(self, case, *flags, steps=None):
        device = ["--device", "cpu"] if self.device == "cpu" and case == "train" else []  # the one CPU case
        return [self.python, SAMPLE_PY, "--case", case, "--steps", str(steps or self.steps), *device, *flags]


def ms_per_step(stdout):
    for tok in stdout.split():
        if tok.startswith("ms_per_step="):
            return float(tok.split("=", 1)[1])
    return None


# ---- stages -----------------------------------------------------------------------------------

def capture_runs(e):
    """(name, command, case, fixed) of every capture run: each planted case of both samples,
    bad and fixed, the CUDA graph variant, and the sync case with PyTorch's NVTX ranges."""
    runs = []
    for case in PLANTED:
        runs.append((f"py_{case}", e.sample(case), case, False))
        runs.append((f"py_{case}_fixed", e.sample(case, "--fixed"), case, True))
        runs.append((f"cpp_{case}", [e.sample_cpp, "--case", case, "--steps", str(e.steps)], case, False))
        runs.append((f"cpp_{case}_fixed", [e.sample_cpp, "--case", case, "--fixed", "--steps", str(e.steps)], case, True))
    runs.append(("py_tiny_graph", e.sample("tiny", "--graph"), "tiny_graph", True))
    runs.append(("py_sync_emit_nvtx", e.sample("sync", "--emit-nvtx"), "sync", False))
    runs.append(("py_streams", e.sample("streams"), "streams", False))
    return runs


def check_capture(s, name, case, fixed, facts, steps):
    """The facts every recorded GPU run must show, and those of its planted case."""
    s.truth(f"{name}: kernels recorded", facts["kernels"] > 0, facts)
    s.truth(f"{name}: runtime API calls recorded", facts["api_calls"].get("runtime", 0) > 0, facts["api_calls"])
    s.truth(f"{name}: >= 99% of kernels matched to their launch call", (facts["launch_match_share"] or 0) >= 0.99,
            facts["launch_match_share"])
    s.truth(f"{name}: no kernel starts before its launch call (GPU times on the host clock)",
            facts["kernels_before_launch"] == 0, facts["kernels_before_launch"])
    s.truth(f"{name}: no CUPTI records dropped", facts["dropped"] == 0, facts["diagnostics"])
    h2d_pageable, h2d_pinned = sum_memcpys(facts, "HtoD pageable"), sum_memcpys(facts, "HtoD pinned")
    if case == "h2d":
        if fixed:
            s.truth(f"{name}: pinned async HtoD copies every step", facts["memcpys"].get("HtoD pinned async", 0) >= steps,
                    facts["memcpys"])
        else:
            s.truth(f"{name}: pageable HtoD copies every step", h2d_pageable >= steps and h2d_pinned == 0, facts["memcpys"])
    if case == "tiny":
        s.truth(f"{name}: thousands of kernels per step" if not fixed else f"{name}: a few kernels per step",
                facts["kernels"] >= 1000 * steps if not fixed else facts["kernels"] < 50 * steps, facts["kernels"])
    if case == "tiny_graph":
        s.truth(f"{name}: kernels launched from a CUDA graph", facts["kernels_in_graphs"] >= 1000, facts["kernels_in_graphs"])
    if case == "streams":  # CUPTI CUDA_EVENT records joined to SYNCHRONIZATION's stream waits
        s.truth(f"{name}: an event record and a stream wait on it every step",
                facts["event_records"] >= steps and facts["stream_waits_matched"] >= steps,
                {k: facts[k] for k in ("event_records", "stream_waits", "stream_waits_matched")})
    if case == "sync" and not fixed:
        s.truth(f"{name}: a synchronisation every step", facts["syncs"] + facts["blocking_copies"] >= steps,
                (facts["syncs"], facts["blocking_copies"]))
    s.truth(f"{name}: device memory samples (CUPTI MEMORY2 or PyTorch's allocator)", facts["cupti_memory_samples"] > 0,
            facts["cupti_memory_samples"])


def stage_capture(e, s):
    d = e.stage_dir("capture")
    python_steps = {}
    for name, cmd, case, fixed in capture_runs(e):
        r = e.record(d / f"{name}.db", cmd, d / f"{name}.log")
        if not s.check(f"{name}: job and record exit 0", r.returncode == 0, r.stderr[-800:]):
            continue
        facts = trace_facts(d / f"{name}.db")
        (d / f"{name}.facts.json").write_text(json.dumps(facts, indent=1))
        s.figure(f"{name}.ms_per_step", ms_per_step(r.stdout))
        s.figure(f"{name}.kernels", facts["kernels"])
        s.figure(f"{name}.memcpys", facts["memcpys"])
        check_capture(s, name, case, fixed, facts, e.steps)
        if name.startswith("py_"):
            python_steps[name] = facts
            s.truth(f"{name}: a user NVTX range per step", facts["user_step_ranges"] == e.steps, facts["user_step_ranges"])
            s.truth(f"{name}: steps from tracetune.step()", facts["steps"] >= e.steps - 1, facts["steps"])
    nvtx = python_steps.get("py_sync_emit_nvtx")
    if nvtx:
        s.truth("py_sync_emit_nvtx: PyTorch's aten:: NVTX ranges recorded", nvtx["nvtx_aten_ranges"] > 0, nvtx["nvtx_aten_ranges"])
        s.truth("py_sync_emit_nvtx: their per-call suffixes (seq = N, ...) moved to args",
                nvtx["nvtx_aten_ranges_with_args"] > 0, nvtx["nvtx_aten_ranges_with_args"])
    s.figure("memsets_seen", {n: f["memsets"] for n, f in python_steps.items()})


def top_category(report):
    """The first finding's category in `analyze --format json` output (ranked by gain), and all."""
    cats = [f.get("category") for f in report.get("findings", [])]
    return (cats[0] if cats else None), cats


def category_cost(report, category):
    """The cost (ns, per step or in the window) of `report`'s first finding of `category`, or None."""
    return next((f.get("cost_ns") for f in report.get("findings", []) if f.get("category") == category), None)


def gone_or_a_third(cost, bad_cost):
    """A fixed run's planted finding: gone, or costing at most a third of the bad run's."""
    return cost is None or (bad_cost is not None and cost * 3 <= bad_cost)


def diagnose_one(e, s, d, name, db, category, fixed):
    """`analyze --format json` on one trace: the planted category first on the bad run; on the
    fixed one absent, or costing at most a third of what it cost on the bad run (a fixed step
    with almost no GPU work is still launch bound, and pinned copies the step waits for are
    still exposed, only far less: 64 ms -> 0.13 ms and 3.2 -> 0.8 ms a step on an H100)."""
    r = e.run([e.tracetune, "analyze", db, "--format", "json", "-o", d / f"{name}.analysis.json"], d / f"{name}.log")
    if not s.check(f"{name}: analyze exits 0", r.returncode == 0, r.stderr[-500:]):
        return
    report = json.loads((d / f"{name}.analysis.json").read_text())
    top, cats = top_category(report)
    s.figure(f"{name}.findings", cats)
    if fixed:
        cost, bad_cost, bad = category_cost(report, category), None, d / f"{name.removesuffix('_fixed')}.analysis.json"
        if name.endswith("_fixed") and bad.exists():
            bad_cost = category_cost(json.loads(bad.read_text()), category)
        s.figure(f"{name}.{category}_cost_ns", {"fixed": cost, "bad": bad_cost})
        s.truth(f"{name}: {category} gone on the fixed run, or a third of its cost at most",
                gone_or_a_third(cost, bad_cost), (cats, cost, bad_cost))
    else:
        s.truth(f"{name}: {category} ranked first", top == category, cats)


def steps_path_share(report):
    """Over the steps' critical paths of `analyze --format json`: the median step's shares of GPU
    compute and GPU wait in its path. The median, not the pooled total: on the H100 (2026-11-27)
    py_streams' first step spent 121 ms in cuBLAS's set-up (93% host compute), which made the
    pooled share 28% GPU compute while each of the other 19 steps was 77-87%."""
    paths = [p for r in report.get("ranks", []) for p in r.get("critical_path", []) if p["length_ns"] > 0]

    def share(kind):
        return round(statistics.median(p["by_kind_ns"].get(kind, 0) / p["length_ns"] for p in paths), 4) if paths else None
    return {"steps": len(paths), "gpu_compute": share("gpu_compute"), "gpu_wait": share("gpu_wait")}


def diagnose_streams(e, s, d, db, name="py_streams"):
    """The two-stream run: the main stream's reduction waits (event record -> stream wait) for
    the side stream's matmuls, which fill most of each step, so the path runs through them
    (GPU compute) rather than calling that time GPU wait (issue 26)."""
    r = e.run([e.tracetune, "analyze", db, "--format", "json", "-o", d / f"{name}.analysis.json"], d / f"{name}.log")
    if not s.check(f"{name}: analyze exits 0", r.returncode == 0, r.stderr[-500:]):
        return
    shares = steps_path_share(json.loads((d / f"{name}.analysis.json").read_text()))
    s.figure(f"{name}.critical_path_shares", shares)
    s.truth(f"{name}: the path crosses to the side stream (GPU compute >= 50%, GPU wait <= 5% of the median step's path)",
            shares["steps"] > 0 and (shares["gpu_compute"] or 0) >= 0.5 and (shares["gpu_wait"] or 0) <= 0.05, shares)


def stage_diagnose(e, s):
    cap, d = e.out / "capture", e.stage_dir("diagnose")
    if s.check("py_streams: trace from the capture stage present", (cap / "py_streams.db").exists(),
               f"{cap / 'py_streams.db'} missing: run --stage capture first"):
        diagnose_streams(e, s, d, cap / "py_streams.db")
    for lang in ("py", "cpp"):
        for case, category in PLANTED.items():
            for fixed in (False, True):
                name = f"{lang}_{case}" + ("_fixed" if fixed else "")
                db = cap / f"{name}.db"
                if s.check(f"{name}: trace from the capture stage present", db.exists(),
                           f"{db} missing: run --stage capture first"):
                    diagnose_one(e, s, d, name, db, category, fixed)


def collective_rows(db):
    return query(db, """SELECT o.value, c.side, c.bytes, a.value, p.value, c.channels
                        FROM collectives c JOIN strings o ON o.id = c.op_id
                        LEFT JOIN strings a ON a.id = c.algorithm_id LEFT JOIN strings p ON p.id = c.protocol_id""")


P2P_OPS = ("send", "recv")
RING_SIMPLE = ('[meta]\ntracetune = "gpu-check"\n\n[[nccl.table]]\ncollective = "allreduce"\nmin_bytes = 0\n'
               'max_bytes = 1099511627776\nalgorithm = "ring"\nprotocol = "simple"\nchannels = 0\n')


def check_nccl_trace(e, s, name, db, log, p2p):
    """What the profiler plugin left in a trace. At one rank NCCL 2.28 runs a collective as a
    local copy (ncclLaunchOneRank) without a task: no profiler event and no tuner call, so only
    the communicator and a send/recv to oneself (a task: p2pTaskAppend) can show there."""
    rows = collective_rows(db)
    # The plugin marks its process (process.N.gpu_capture ends in "nccl") whatever it then sees;
    # a communicator is named in meta only when NCCL gives it a name (commName), which neither
    # the C++ sample's ncclCommInitRank nor PyTorch 2.11's ProcessGroupNCCL does.
    plugin = query(db, "SELECT count(*) FROM meta WHERE key LIKE 'process.%.gpu_capture' AND value LIKE '%nccl'")[0][0]
    comms = query(db, "SELECT count(DISTINCT communicator_id) FROM collectives c JOIN strings s "
                      "ON s.id = c.communicator_id WHERE s.value != ''")[0][0]
    s.truth(f"{name}: NCCL loaded our profiler plugin (a process marked nccl in gpu_capture)", plugin > 0, plugin)
    host, dev = [x for x in rows if x[1] == 0], [x for x in rows if x[1] == 1]
    s.figure(f"{name}.collectives", {"host": len(host), "device": len(dev), "communicators": comms,
                                     "algorithms": sorted({f"{x[3]}/{x[4]}/{x[5]}ch" for x in rows if x[3]})})
    if p2p:
        s.truth(f"{name}: the send/recv to itself recorded, with bytes", [x for x in host if x[0] in P2P_OPS and x[2] > 0],
                rows[:5])
        # Seen on one H100 (NCCL 2.28, 2026-11-26): a send/recv to oneself gets no KernelCh
        # events (no proxy op), so its GPU span is not measured; to another rank it is.
        p2p_dev = [x for x in dev if x[0] in P2P_OPS]
        if e.gpus >= 2:
            s.truth(f"{name}: ... and its GPU span from the kernel channels", p2p_dev, rows[:5])
        else:
            s.figure(f"{name}.p2p_gpu_spans", len(p2p_dev))
    if e.gpus < 2:
        s.note(f"{name}: one GPU: collectives never reach the profiler or tuner plugin (ncclLaunchOneRank), nor "
               "does a send/recv to oneself reach its kernel channels; algorithm, protocol, channels, GPU spans "
               "and the tuner's effect need >= 2 GPUs")
        return rows
    described = [x for x in host if x[0] not in P2P_OPS and x[2] > 0 and x[3] and x[4] and x[5] is not None]
    if not s.truth(f"{name}: collectives with bytes, algorithm, protocol and channels", described,
                   f"{len(rows)} rows, none described: {rows[:5]}"):
        diags = query(db, "SELECT kind, reason, count FROM diagnostics")
        nccl_lines = [ln for ln in pathlib.Path(log).read_text(errors="replace").splitlines() if "NCCL" in ln][-30:]
        s.note(f"{name}: why no described collectives: diagnostics {diags}; NCCL log tail {nccl_lines}")
    return rows


def check_tuner_log(e, s, name, log, rows):
    """The tuner plugin got its table under `run --config -- tracetune record` (the inner record
    keeps TRACETUNE_NCCL_TABLE) and, with >= 2 ranks, every all-reduce ran as the table says."""
    text = pathlib.Path(log).read_text(errors="replace")
    s.figure(f"{name}.tuner_log_lines", [ln for ln in text.splitlines() if "tuner" in ln.lower()][:10])
    s.truth(f"{name}: the tuner plugin read the table (no 'not set' warning)", "TRACETUNE_NCCL_TABLE is not set" not in text)
    s.truth(f"{name}: the tuner plugin loaded 1 table entry", "tracetune tuner: 1 table entries" in text)
    if e.gpus >= 2:
        allreduce = [x for x in rows if x[0] == "allreduce" and x[1] == 0 and x[3]]
        s.truth(f"{name}: every all-reduce ran ring/simple as the table says",
                allreduce and all(x[3].upper() == "RING" and x[4].upper() == "SIMPLE" for x in allreduce),
                sorted({(x[3], x[4]) for x in allreduce}))


def stage_nccl(e, s):
    d = e.stage_dir("nccl")
    env = dict(e.env, NCCL_DEBUG="INFO", NCCL_DEBUG_SUBSYS="INIT,TUNING,PROFILE")
    sample = [e.sample_cpp, "--case", "nccl", "--bucket-mb", "1", "--steps", str(e.steps)]
    r = e.record(d / "cpp_nccl.db", sample, d / "cpp_nccl.log", env=env)
    if s.check("cpp_nccl: job and record exit 0", r.returncode == 0, r.stderr[-800:]):
        check_nccl_trace(e, s, "cpp_nccl", d / "cpp_nccl.db", d / "cpp_nccl.log", p2p=True)
    # DDP under torchrun, one rank per GPU (NCCL refuses two ranks on one GPU)
    r = e.record(d / "ddp.db", [e.python, "-m", "torch.distributed.run", "--nproc_per_node", str(max(1, e.gpus)),
                                "--master_port", free_port(), SAMPLE_PY, "--case", "ddp", "--bucket-mb", "1",
                                "--steps", str(e.steps)], d / "ddp.log", env=env)
    if s.check("ddp: job and record exit 0", r.returncode == 0, r.stderr[-800:]):
        check_nccl_trace(e, s, "ddp", d / "ddp.db", d / "ddp.log", p2p=False)
    # the tuner plugin: a table forcing ring/simple for every all-reduce, applied by `run --config`
    cfg = d / "ring_simple.toml"
    cfg.write_text(RING_SIMPLE)
    cfg.chmod(0o600)
    r = e.run([e.tracetune, "run", "--config", cfg, "--", e.tracetune, "record", "-o", d / "tuned.db", "--", *sample],
              d / "tuned.log", env=env)
    if s.check("cpp_nccl_tuned: job and record exit 0", r.returncode == 0, r.stderr[-800:]):
        rows = check_nccl_trace(e, s, "cpp_nccl_tuned", d / "tuned.db", d / "tuned.log", p2p=True)
        check_tuner_log(e, s, "cpp_nccl_tuned", d / "tuned.log", rows)


def stage_coexist(e, s):
    d = e.stage_dir("coexist")
    prof_dir = d / "torch_profiler"
    shutil.rmtree(prof_dir, ignore_errors=True)
    r = e.record(d / "coexist.db", e.sample("train", "--torch-profiler", prof_dir), d / "coexist.log")
    s.check("the job finishes (exit 0) with torch.profiler started mid-run", r.returncode == 0, r.stderr[-800:])
    traces = sorted(prof_dir.glob("*.json")) if prof_dir.exists() else []
    if s.check("torch.profiler wrote its trace", traces, list(prof_dir.glob("*")) if prof_dir.exists() else "no dir"):
        doc = json.loads(traces[0].read_text())
        kernels = [ev for ev in doc.get("traceEvents", []) if ev.get("cat") == "kernel"]
        s.figure("torch_profiler_kernels", len(kernels))
        s.truth("torch.profiler's own trace has its GPU kernels (our CUPTI session left it the subscriber slot)",
                kernels, "no kernel events")
    if s.check("our trace was written", (d / "coexist.db").exists()):
        notes = query(d / "coexist.db", "SELECT kind, reason FROM diagnostics")
        s.figure("diagnostics", notes)
        s.truth("our trace notes the takeover of CUPTI", any("took over" in x[1] for x in notes), notes)
        s.truth("our trace kept the kernels before the takeover", trace_facts(d / "coexist.db")["kernels"] > 0)


def process_children(pid):
    """Pids whose parent is `pid` (from /proc/*/stat: the field after the parenthesised name)."""
    kids = []
    for stat in pathlib.Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def stage_kill(e, s):
    """A recorded job SIGKILLed mid-run. 12 s: CUDA up and ~100 flushes done; the trace of a
    launch-bound job is then hundreds of MB, so it stays on the GPU machine (facts come back)."""
    d = e.stage_dir("kill")
    db, log = d / "killed.db", d / "killed.log"
    db.unlink(missing_ok=True)
    seconds = 3 if e.rehearsal else 12
    job = e.sample("train" if e.rehearsal else "tiny", steps=1_000_000)
    with open(log, "w") as out:
        proc = subprocess.Popen([e.tracetune, "record", "-o", db, "--", *map(str, job)],
                                stdout=out, stderr=subprocess.STDOUT, env=e.env)
        time.sleep(seconds)
        jobs = process_children(proc.pid)
        s.check(f"the job is running under record after {seconds} s", jobs and proc.poll() is None, jobs)
        for pid in jobs:
            os.kill(pid, signal.SIGKILL)
        try:
            rc = proc.wait(timeout=max(10, min(240, int(e.remaining() or 240))))
        except subprocess.TimeoutExpired:
            proc.kill()
            rc = proc.wait()
            s.note("record did not finish merging in time: killed")
    s.figure("record_exit_status", rc)
    s.check("record reports the job's death by SIGKILL (exit 137)", rc == 128 + signal.SIGKILL, rc)
    if s.check("a trace was written", db.exists(), log.read_text()[-800:]):
        facts = trace_facts(db)
        (d / "killed.facts.json").write_text(json.dumps(facts, indent=1))
        s.figure("kernels_kept", facts["kernels"])
        s.figure("trace_bytes", db.stat().st_size)
        s.truth("GPU records up to the last flush kept (> 10,000 kernels)", facts["kernels"] > 10_000, facts["kernels"])
        s.figure("process_rows", query(db, "SELECT pid, exit_status, truncated FROM processes"))


def step_times(path, lo, hi):
    """Step times (ms) of steps [lo, hi) written by the sample's --step-times."""
    return json.loads(pathlib.Path(path).read_text())[lo:hi]


# The overhead stage's jobs: the MLP is launch-bound (~35 launches of a few us per step: the worst
# case for per-launch API records), the transformer has kernels of realistic size.
OVERHEAD_JOBS = {"mlp": ("--model", "mlp"), "transformer": ("--model", "transformer")}
# tracetune_all: record with TRACETUNE_CUDA_API=all (API records of the query calls such as
# cudaGetDevice too; docs/collector.md §8.1), measured beside the default (without them)
OVERHEAD_CONFIGS = ("bare", "tracetune", "tracetune_all", "torch_profiler")


def overhead_round(e, s, d, job, i, steps, times):
    """One round of one job: bare, under record (default, then every API call recorded), under torch.profiler,
    back to back."""
    lo, hi = steps // 4, 3 * steps // 4
    for cfg in OVERHEAD_CONFIGS:
        st = d / f"{job}_{cfg}_{i}.json"
        flags = [*OVERHEAD_JOBS[job], "--step-times", st]
        if cfg == "torch_profiler":
            flags += ["--torch-profiler", d / f"{job}_tp_{i}"]
        cmd = e.sample("train", *flags, steps=steps)
        log = d / f"{job}_{cfg}_{i}.log"
        if cfg.startswith("tracetune"):
            env = {**e.env, "TRACETUNE_CUDA_API": "all"} if cfg == "tracetune_all" else None
            r = e.record(d / f"{job}_rec_{i}.db", cmd, log, env=env)
        else:
            r = e.run(cmd, log)
        if s.check(f"{job} round {i} {cfg}: exit 0", r.returncode == 0, r.stderr[-500:]):
            times[cfg] += step_times(st, lo, hi)
    (d / f"{job}_rec_{i}.db").unlink(missing_ok=True)  # only its step times matter here


def median_standard_error(values):
    """The standard error of a sample's median, from its interquartile range (normal approximation:
    1.2533 sigma / sqrt(n), sigma = IQR / 1.349)."""
    if len(values) < 4:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4)
    return 0.929 * (q3 - q1) / math.sqrt(len(values))


def stage_overhead(e, s):
    """Step time bare vs recorded vs torch.profiler, per job, runs interleaved round by round; times
    of the steps torch.profiler covers ([steps/4, 3 steps/4)), pooled over the rounds, medians."""
    d = e.stage_dir("overhead")
    rounds, steps = (1, 4) if e.rehearsal else (e.rounds, 80)
    times = {job: {cfg: [] for cfg in OVERHEAD_CONFIGS} for job in OVERHEAD_JOBS}
    for i in range(rounds):
        if i > 0 and (left := e.remaining()) is not None and left < STAGE_SECONDS["overhead"]:
            s.note(f"{i} of {rounds} rounds run: {left:.0f} s of the budget left")
            break
        for job in OVERHEAD_JOBS:
            overhead_round(e, s, d, job, i, steps, times[job])
    for job, t in times.items():
        med = {cfg: statistics.median(v) for cfg, v in t.items() if v}
        if len(med) < len(OVERHEAD_CONFIGS):
            continue
        s.figure(f"{job}.median_step_ms", {k: round(v, 4) for k, v in med.items()})
        ours, tp = med["tracetune"] / med["bare"], med["torch_profiler"] / med["bare"]
        s.figure(f"{job}.ratio_vs_bare", {k: round(v / med["bare"], 4) for k, v in med.items() if k != "bare"})
        s.truth(f"{job}: tracetune record costs <= 2% step time (target)", ours <= 1.02, f"{(ours - 1) * 100:.2f}%")
        # "less" within the noise: two standard errors of the difference of the two medians (on the
        # H100 the transformer's +0.67% against torch.profiler's +0.61% was 0.06% apart, noise 0.10%)
        noise = 2 * math.hypot(median_standard_error(t["tracetune"]), median_standard_error(t["torch_profiler"]))
        s.figure(f"{job}.noise_vs_bare", round(noise / med["bare"], 5))
        s.truth(f"{job}: tracetune record costs no more than torch.profiler (within the noise)",
                med["tracetune"] <= med["torch_profiler"] + noise, f"ours {ours:.4f} vs {tp:.4f}, noise {noise / med['bare']:.4f}")


# Each GPU bench and its arguments (nccl: two sizes, so one rank's sweep stays short).
BENCH_ARGS = {"h2d": ("--sizes", "1M,64M"), "gemm": ("--sizes", "4096,8192"), "launch": (),
              "nccl": ("--sizes", "1M,64M", "--iters", "10")}


def bench_json(e, s, d, name):
    r = e.run([e.tracetune, "bench", name, *BENCH_ARGS[name], "--json"], d / f"{name}.log")
    if not s.check(f"bench {name}: exit 0", r.returncode == 0, r.stderr[-500:]):
        return None
    (d / f"{name}.json").write_text(r.stdout)
    return json.loads(r.stdout)


def stage_bench(e, s):
    d = e.stage_dir("bench")
    h2d = bench_json(e, s, d, "h2d")
    if h2d:
        big = max(t["bytes"] for t in h2d["trials"])
        gbs = {(t["direction"], t["pinned"]): t["gbs"] for t in h2d["trials"] if t["bytes"] == big}
        s.figure("h2d_gbs_largest", {f"{k[0]} {'pinned' if k[1] else 'pageable'}": v for k, v in gbs.items()})
        for direction in {k[0] for k in gbs}:
            s.truth(f"bench h2d {direction}: pinned beats pageable",
                    gbs.get((direction, True), 0) > gbs.get((direction, False), 0), gbs)
    gemm = bench_json(e, s, d, "gemm")
    if gemm:
        at = {t["format"].lower(): t["tflops"] for t in gemm["trials"] if t["m"] == 8192}
        s.figure("gemm_tflops_8192", at)
        for fmt_ in ("tf32", "bf16"):
            s.truth(f"bench gemm: {fmt_} beats fp32", at.get(fmt_, 0) > at.get("fp32", float("inf")), at)
    launch = bench_json(e, s, d, "launch")
    if launch:
        s.figure("launch", launch)
        s.truth("bench launch: graph replay beats launches", launch["graph_speedup"] > 1, launch["graph_speedup"])
    nccl = bench_json(e, s, d, "nccl")
    if nccl:
        s.figure("nccl_points", len(nccl["points"]))
        s.figure("nccl_skipped", nccl["skipped"][:5])
        s.truth("bench nccl at one rank: points measured", nccl["points"], nccl["skipped"][:5])


def kernels_args(e):
    """`bench kernels` at the default shapes on the GPU; on a CPU rehearsal, toy shapes, 3 repeats."""
    args = ["--python", e.python, "--device", e.device, "--json"]
    if e.rehearsal:
        args += ["--shapes", "layernorm=64x32,cross_entropy=16x128,optimizer=2x256", "--warmup", "0", "--repeats", "3"]
    return args


def stage_kernels(e, s):
    d = e.stage_dir("kernels")
    r = e.run([e.tracetune, "bench", "kernels", *kernels_args(e)], d / "bench.log", timeout=480)
    if not s.check(f"bench kernels --device {e.device}: exit 0", r.returncode == 0, r.stderr[-800:]):
        return
    (d / "bench.json").write_text(r.stdout)
    results = json.loads(r.stdout)["results"]
    s.check("bench kernels: results for every substitution", results, r.stdout[:500])
    for res in results:
        if "parity" not in res:  # an implementation not run here ("skipped: not installed", "not for cpu")
            s.figure(f"{res['substitution']}/{res['impl']}", res.get("verdict"))
            continue
        name = f"{res['substitution']}/{res['impl']} {res['shape']}"
        s.truth(f"{name}: parity of outputs and gradients", res["parity"]["pass"], res["parity"])
        s.figure(f"{name}", {k: res.get(k) for k in ("stock_ms", "candidate_ms", "ratio", "noise", "verdict")})


def tuned_settings(path):
    import tomllib
    doc = tomllib.loads(pathlib.Path(path).read_text())
    flat = {}

    def walk(prefix, table):
        for k, v in table.items():
            if isinstance(v, dict):
                walk(f"{prefix}{k}.", v)
            else:
                flat[prefix + k] = v
    walk("", doc.get("settings", {}))
    return flat, doc.get("meta", {})


def reproduce(e, s, d, case, cfg, rounds=3):
    """ms per step of the sample as written vs under `run --config`, interleaved; the ratio."""
    bare, tuned = [], []
    for i in range(rounds):
        r = e.run(e.sample(case), d / f"{case}_bare_{i}.log", timeout=60)
        bare.append(ms_per_step(r.stdout))
        r = e.run([e.tracetune, "run", "--config", cfg, "--", *e.sample(case)], d / f"{case}_run_{i}.log", timeout=60)
        tuned.append(ms_per_step(r.stdout))
    if not s.check(f"{case}: run --config and the bare sample print their step time", None not in bare + tuned,
                   (bare, tuned)):
        return
    ratio = statistics.median(bare) / statistics.median(tuned)
    s.figure(f"{case}.reproduced", {"bare_ms": bare, "run_config_ms": tuned, "speedup": round(ratio, 3)})
    s.truth(f"{case}: run --config reproduces a speedup", ratio > 1.05, f"{ratio:.3f}x")


# tune, per case: the knobs that fix it. A case is `tune` (6 trials of 15 + 3 steps, cut at
# TUNE_SECONDS) then 3 rounds of bare vs run --config: ~TUNE_CASE_SECONDS on one H100; a case that
# no longer fits the budget is not started, and the stage run alone stops at TUNE_STAGE_SECONDS,
# inside one 10-minute device command.
TUNE_CASES = {"h2d": {"dataloader.pin_memory"}, "gemm": {"torch.tf32_matmul", "amp.dtype"}, "tiny": set()}
TUNE_SECONDS, TUNE_CASE_SECONDS, TUNE_STAGE_SECONDS = 150, 210, 540


def tune_one(e, s, d, case, knobs):
    cfg = d / f"{case}.toml"
    r = e.run([e.tracetune, "tune", "--allow-numerics", "-o", cfg, "--steps", "15", "--warmup", "3",
               "--max-trials", "6", "--", *e.sample(case, steps=60)], d / f"{case}.log", timeout=TUNE_SECONDS)
    if not s.check(f"{case}: tune exits 0 and writes tuned.toml", r.returncode == 0 and cfg.exists(), r.stderr[-800:]):
        return
    settings, meta = tuned_settings(cfg)
    s.figure(f"{case}.chosen", {"settings": settings, "speedup": meta.get("speedup")})
    if not knobs:
        s.note(f"{case}: no knob reaches a model-less loop of tiny ops (CUDA graphs need a code change); chose {settings}")
        return
    s.truth(f"{case}: tune chose the planted fix ({' or '.join(sorted(knobs))})", knobs & settings.keys(), settings)
    s.truth(f"{case}: tune measured a speedup", (meta.get("speedup") or 0) > 1.0, meta.get("speedup"))
    reproduce(e, s, d, case, cfg)


def stage_tune(e, s):
    d = e.stage_dir("tune")
    outer = e.deadline
    if outer is None:  # no --budget: still within one device command
        e.deadline = time.monotonic() + TUNE_STAGE_SECONDS
    try:
        for case in e.tune_cases:
            knobs = TUNE_CASES[case]
            if (left := e.remaining()) < TUNE_CASE_SECONDS:
                s.note(f"{case}: not run, {left:.0f} s of the budget left (a case takes ~{TUNE_CASE_SECONDS} s)")
                continue
            tune_one(e, s, d, case, knobs)
    finally:
        e.deadline = outer


# ---- driver -----------------------------------------------------------------------------------

def window_kernel_facts(db):
    """Kernels inside and outside the trace's recording window (record --steps, docs/collector.md §9)."""
    meta = dict(query(db, "SELECT key, value FROM meta WHERE key LIKE 'window%'"))
    opened, closed = int(meta.get("window.first_open_ns", 0)), int(meta.get("window.last_close_ns", 0))
    outside = query(db, "SELECT count(*) FROM kernels WHERE start_ns < ? OR end_ns > ?", opened, closed)[0][0]
    # kernels that started in each window step (from its start to the next one's, the last to the window's close)
    steps = query(db, "SELECT number, min(start_ns) FROM steps GROUP BY number ORDER BY number")
    bounds = [t for _, t in steps] + [closed]
    per_step = {n: query(db, "SELECT count(*) FROM kernels WHERE start_ns >= ? AND start_ns < ?", bounds[i], bounds[i + 1])[0][0]
                for i, (n, _) in enumerate(steps)}
    return {"window": meta, "kernels": query(db, "SELECT count(*) FROM kernels")[0][0], "kernels_outside": outside,
            "step_numbers": [n for (n, _) in steps], "kernels_per_step": per_step}


def stage_window(e, s):
    """record --steps A:B on the tiny-kernels case: only those steps and their kernels; and the
    cost of a window that never opens (the collector armed) against the bare job."""
    d = e.stage_dir("window")
    first = e.steps // 2
    last = first + 4
    case = "train" if e.rehearsal else "tiny"  # a rehearsal has no GPU: the CPU case
    r = e.record(d / "tiny_window.db", e.sample(case), d / "tiny_window.log", extra=("--steps", f"{first}:{last}"))
    if s.check("tiny --steps: job and record exit 0", r.returncode == 0, r.stderr[-800:]):
        f = window_kernel_facts(d / "tiny_window.db")
        (d / "tiny_window.facts.json").write_text(json.dumps(f, indent=1))
        s.figure("tiny_window.kernels", f["kernels"])
        s.truth("tiny --steps: the trace holds exactly the window's steps", f["step_numbers"] == list(range(first, last + 1)),
                f["step_numbers"])
        s.truth("tiny --steps: thousands of kernels per window step", f["kernels"] >= 1000 * 5, f["kernels"])
        # CUPTI activity on only inside the window (session.cpp set_window): enabled when the window
        # opens, disabled and force-flushed just before it closes
        s.truth("tiny --steps: no kernel outside the window", f["kernels_outside"] == 0, f["kernels_outside"])
        per_step = list(f["kernels_per_step"].values())
        s.truth("tiny --steps: kernels in every window step, the first and the last included",
                len(per_step) == 5 and min(per_step) > 0, f["kernels_per_step"])
    times = {"bare": [], "outside_window": []}
    far = f"{100 * e.steps}:{100 * e.steps + 1}"  # never reached
    for i in range(1 if e.rehearsal else max(1, min(e.rounds, 3))):
        for cfg in times:
            log = d / f"overhead_{cfg}_{i}.log"
            cmd = e.sample("train", steps=8 if e.rehearsal else 80)
            r = e.run(cmd, log) if cfg == "bare" else e.record(d / "outside.db", cmd, log, extra=("--steps", far))
            if r.returncode == 0 and ms_per_step(r.stdout) is not None:
                times[cfg].append(ms_per_step(r.stdout))
    if all(times.values()):
        bare, outside = statistics.median(times["bare"]), statistics.median(times["outside_window"])
        s.figure("outside_window.median_ms_per_step", {"bare": bare, "outside_window": outside})
        s.truth("record outside its window costs <= 0.5% step time (target)", outside <= 1.005 * bare,
                f"{(outside / bare - 1) * 100:.2f}%")
        spread = max(times["bare"]) / min(times["bare"]) - 1
        if spread > 0.005:  # the H100 of 2026-11-27: bare runs of 58 to 80 ms a step
            s.note(f"outside_window: the bare runs spread {spread * 100:.0f}%, more than the 0.5% target: "
                   f"this figure does not resolve it")


def gpu_environment():
    """The GPU, driver and versions (None when nvidia-smi lists no GPU)."""
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    gpus = [ln.strip() for ln in r.stdout.splitlines() if ln.strip()] if r.returncode == 0 else []
    return {"gpus": gpus} if gpus else None


def versions(e, tracetune_version):
    code = "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)"
    r = subprocess.run([e.python, "-c", code], capture_output=True, text=True, env=e.env)
    py, torch_v, cuda = (r.stdout.split() + [None] * 3)[:3]
    return {"python": py, "torch": torch_v, "torch_cuda": cuda, "tracetune": tracetune_version,
            "ld_library_path": e.env.get("LD_LIBRARY_PATH", ""), "wheel_lib_dirs": e.wheel_dirs}


# Seconds a stage takes on one H100 (its smallest useful run): with --budget a stage is only
# started when this much is left. overhead: per round of its two jobs.
STAGE_SECONDS = {"capture": 200, "diagnose": 30, "nccl": 60, "coexist": 30, "kill": 60, "overhead": 80, "bench": 90,
                 "kernels": 30, "tune": TUNE_CASE_SECONDS, "window": 90}  # kernels: 9.2 and 9.4 s on the H100


def known_names(text, known, what, extra=""):
    """A comma-separated list of names from `known`, in its order; an unknown or empty one is a usage error."""
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    unknown = [x for x in names if x not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown) or '(none)'}; {what}s: {extra}{', '.join(known)}")
    return names


def stage_list(text):
    return STAGES if text == "all" else known_names(text, STAGES, "stage", extra="all, ")


def tune_case_list(text):
    return known_names(text, tuple(TUNE_CASES), "tune case")


def parse_args(argv):
    p = argparse.ArgumentParser(prog="scripts/gpu-check.sh", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--stage", default=STAGES, type=stage_list, help="all, or stages separated by commas (default all)")
    p.add_argument("--out", default="out/gpu-check", help="output folder (default: out/gpu-check)")
    p.add_argument("--prefix", default=str(REPO / "gpu-carry"), help="the gpu-carry install tree (default: ./gpu-carry)")
    p.add_argument("--python", default=shutil.which("python3") or "python3", help="the Python with PyTorch (CUDA)")
    p.add_argument("--steps", type=int, default=20, help="steps per capture run (default 20)")
    p.add_argument("--rounds", type=int, default=5, help="overhead: rounds of each job (default 5)")
    p.add_argument("--tune-cases", default=tuple(TUNE_CASES), type=tune_case_list,
                   help=f"tune: the cases to run, in this order (default {','.join(TUNE_CASES)})")
    p.add_argument("--budget", type=int, metavar="SECONDS",
                   help="finish within this many seconds: stages that no longer fit are skipped, commands cut short")
    p.add_argument("--pack", metavar="FILE", help="afterwards, pack OUT (no trace DBs; a few trimmed to 5 MB) into FILE "
                                                  "(.tar.gz, at most 16 MiB)")
    p.add_argument("--facts", metavar="TRACE_DB", help="print the capture facts of a trace DB as JSON and exit")
    p.add_argument("--rehearse", action="store_true",
                   help="no GPU needed: every stage up to the first thing that needs one, its checks on real GPU "
                        "traces (--corpus) as stand-ins")
    p.add_argument("--corpus", default=str(REPO / "tests" / "data" / "corpus"),
                   help="rehearsal: the folder holding kineto/hta/alexnet.json.gz (default tests/data/corpus)")
    return p.parse_args(argv)


def start_env(a):
    """The environment, or (None, exit status) after saying in one line why the stages cannot run."""
    gpu = {"gpus": [], "rehearsal": True} if a.rehearse else gpu_environment()
    if gpu is None:
        print("gpu-check: no NVIDIA GPU visible (nvidia-smi lists none): nothing to check on this machine", file=sys.stderr)
        return None, 3
    e = Env(a, rehearsal=a.rehearse)
    e.gpus = len(gpu["gpus"])
    if not os.access(e.tracetune, os.X_OK):
        print(f"gpu-check: {e.tracetune} not found: build the carry tree first (scripts/gpu-carry.sh)", file=sys.stderr)
        return None, 2
    t = subprocess.run([e.tracetune, "--version"], capture_output=True, text=True, env=e.env)
    if t.returncode != 0:  # e.g. a glibc older than the carry tree needs (scripts/gpu-carry.sh prints it)
        print(f"gpu-check: {e.tracetune} does not run here: {(t.stderr.strip().splitlines() or ['?'])[-1]}", file=sys.stderr)
        return None, 2
    e.environment = {**gpu, **versions(e, t.stdout.strip())}
    if e.environment["torch"] is None:
        print(f"gpu-check: {e.python} cannot import torch: give the Python with PyTorch (--python)", file=sys.stderr)
        return None, 2
    return e, 0


def run_stage(e, name, functions):
    """One stage into its summary entry; a stage that does not fit the budget is skipped."""
    s = Stage(name, rehearsal=e.rehearsal)
    need = STAGE_SECONDS[name]
    if (left := e.remaining()) is not None and left < need:
        s.skip(f"{left:.0f} s of the budget left, the stage needs ~{need} s")
        return s.result()
    try:
        functions[name](e, s)
    except Exception as ex:  # a broken stage is a failed check, and the next stage still runs
        s.check(f"stage ran to the end (raised {type(ex).__name__})", False, repr(ex))
    return s.result()


def main(argv):
    a = parse_args(argv)
    if a.facts:
        print(json.dumps(trace_facts(a.facts), indent=1))
        return 0
    e, status = start_env(a)
    if e is None:
        return status
    functions = {name: globals()[f"stage_{name}"] for name in STAGES}
    if e.rehearsal:
        import gpu_rehearse
        functions.update(gpu_rehearse.stages(pathlib.Path(a.corpus)))
    e.out.mkdir(parents=True, exist_ok=True)
    summary_path = e.out / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {"stages": {}}
    summary["environment"] = e.environment
    for name in a.stage:
        result = summary["stages"][name] = run_stage(e, name, functions)
        summary_path.write_text(json.dumps(summary, indent=1))
        print(f"== {name}: {result['passed']} passed, {result['failed']} failed"
              f"{', skipped: ' + result['skipped'] if 'skipped' in result else ''} ({result['seconds']} s)", flush=True)
    passed = sum(st["passed"] for st in summary["stages"].values())
    failed = sum(st["failed"] for st in summary["stages"].values())
    skipped = [name for name, st in summary["stages"].items() if "skipped" in st]
    print(f"gpu-check: {passed} passed, {failed} failed{'; skipped (budget): ' + ', '.join(skipped) if skipped else ''}; "
          f"summary in {summary_path}")
    if a.pack:
        import gpu_pack
        if not gpu_pack.pack(e.out, pathlib.Path(a.pack).resolve(), e.tracetune):
            failed += 1
    return 0 if failed == 0 and passed > 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
