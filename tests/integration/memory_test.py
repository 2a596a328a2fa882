#!/usr/bin/env python3
"""Memory on real recordings (docs/analysis.md, "Memory"): a CPU PyTorch job that keeps a 16 MiB
tensor from every step (a planted leak) and the same job dropping it, both recorded with
`tracetune record` (the Python integration samples the process's RSS at every step's end).
The leak is named, with its growth per step close to the planted 16 MiB; the steady job has
no leak finding. A third job stands in an initialised CUDA allocator (no GPU here): its counters
come from the nested statistics, without torch.cuda.memory_stats()'s per-step flattening.

usage: memory_test.py TRACETUNE
"""
import json
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON, check, finish, query  # noqa: E402

JOB = """
import resource, sys, torch, tracetune
leak = sys.argv[1] == "leak"
kept, peak = [], []
for step in range(30):
    x = torch.ones(4 << 20)  # 16 MiB, touched
    y = (x * 2).sum()
    if leak:
        kept.append(x)
    peak.append(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)  # no file I/O
    tracetune.step()
print("OWN_GROWTH", (peak[-1] - peak[5]) / 24)
"""
MIB = 1 << 20

# An initialised CUDA allocator stood in: its nested statistics as PyTorch returns them;
# torch.cuda.memory_stats() (which flattens and sorts them in Python) counts its calls.
CUDA_JOB = """
import torch, tracetune
calls = []
nested = {"allocated_bytes": {"all": {"current": 1000, "peak": 3000}, "small_pool": {"current": 7}},
          "reserved_bytes": {"all": {"current": 4096}}, "num_alloc_retries": 2, "num_ooms": 1}
real_flat = torch.cuda.memory_stats
torch.cuda.is_initialized = lambda: True
torch.cuda.current_device = lambda: 0
torch.cuda.memory_stats_as_nested_dict = lambda device=None: nested
torch.cuda.memory.memory_stats_as_nested_dict = torch.cuda.memory_stats_as_nested_dict
torch.cuda.memory_stats = lambda device=None: (calls.append(1), real_flat(device))[1]
for step in range(5):
    tracetune.step()
print("FLATTENED", len(calls))
"""


# The collector's one-call step boundary (tracetune_step_end): the step record and the RSS
# counter stamped with the step's end, as the Python integration writes them at every step.
STEP_END_JOB = """
import ctypes, time, tracetune
lib = ctypes.CDLL(None)
lib.tracetune_step_end.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
t = time.monotonic_ns()
lib.tracetune_step_end(0, t - 1000000, t, 7)
lib.tracetune_step_end(9, t, t + 1, 8)  # not a step kind: nothing
"""


def step_end_api(tmp):
    db = pathlib.Path(tmp) / "step_end.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--trace", "python", "--", TORCH_PYTHON, "-c",
                        STEP_END_JOB], capture_output=True, text=True, timeout=300)
    check("step_end: job runs under record", r.returncode == 0, r.stderr[-2000:])
    rows = query(db, "SELECT st.number, st.end_ns - st.start_ns, (SELECT count(*) FROM counters c JOIN strings s "
                     "ON s.id = c.name_id WHERE s.value = 'host memory.rss' AND c.ts_ns = st.end_ns AND c.value > 0) "
                     "FROM steps st ORDER BY st.number")
    check("step_end: one step and its RSS sample at the step's end, in one call", rows == [(7, 1000000, 1)], rows)


def cuda_counters(tmp):
    db = pathlib.Path(tmp) / "cuda.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--trace", "python", "--", TORCH_PYTHON, "-c", CUDA_JOB],
                       capture_output=True, text=True, timeout=300)
    check("cuda: job runs under record", r.returncode == 0, r.stderr[-2000:])
    check("cuda: memory_stats() never called (nested statistics read)", "FLATTENED 0" in r.stdout, r.stdout)
    rows = query(db, "SELECT s.value, min(c.value), max(c.value), count(*) FROM counters c JOIN strings s "
                     "ON s.id = c.name_id WHERE s.value LIKE 'cuda:0 memory.%' GROUP BY 1 ORDER BY 1")
    want = [("cuda:0 memory.alloc_retries", 2.0, 2.0, 4), ("cuda:0 memory.allocated", 1000.0, 1000.0, 4),
            ("cuda:0 memory.max_allocated", 3000.0, 3000.0, 4), ("cuda:0 memory.ooms", 1.0, 1.0, 4),
            ("cuda:0 memory.reserved", 4096.0, 4096.0, 4)]
    check("cuda: the five allocator counters at every step's end", rows == want, rows)


def record_and_analyze(tmp, mode):
    db = pathlib.Path(tmp) / f"{mode}.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--", TORCH_PYTHON, "-c", JOB, mode],
                       capture_output=True, text=True, timeout=300)
    check(f"{mode} job runs under record", r.returncode == 0, r.stderr[-2000:])
    own = query(db, "SELECT count(*) FROM io_calls i JOIN strings s ON s.id = i.path_id WHERE s.value LIKE '%/statm'")
    check(f"{mode}: our own RSS samples are not recorded as the job's I/O", own == [(0,)], own)
    a = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(db)], capture_output=True, text=True, timeout=300)
    check(f"{mode}: analyze succeeds", a.returncode == 0, a.stderr)
    doc = json.loads(a.stdout)
    ranks = [x for x in doc["ranks"] if x["has_steps"]]
    check(f"{mode}: one rank with steps", len(ranks) == 1, [x["label"] for x in doc["ranks"]])
    own = [float(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("OWN_GROWTH ")]
    return doc, ranks[0], own[0] if own else float("nan")


with tempfile.TemporaryDirectory() as tmp:
    doc, rank, own_growth = record_and_analyze(tmp, "leak")
    host = [m for m in rank["memory"] if m["device"] == "host"]
    check("leak: host memory per step recorded", host and sum(1 for v in host[0]["step_peak_bytes"] if v > 0) >= 28,
          rank["memory"])
    growth = host[0]["growth_bytes_per_step"] if host else 0
    print(f"leak: growth {growth / MIB:.1f} MiB/step (planted 16 MiB; the job's own peak RSS grew "
          f"{own_growth / MIB:.1f}), fit {host[0]['growth_fit'] if host else 0:.3f}")
    # what RSS grows per step depends on the allocator (torch 1.13: 16.7 MiB, 2.11: 22 MiB bare):
    # at least the planted 16 MiB, and what the job itself sees
    check("leak: growth per step at least the planted 16 MiB and within 15% of the job's own RSS growth",
          growth >= 14 * MIB and abs(growth - own_growth) <= 0.15 * own_growth, (growth / MIB, own_growth / MIB))
    leaks = [f for f in doc["findings"] if f["category"] == "memory" and f["title"].startswith("Memory leak: host")]
    check("leak: the memory rule names it", len(leaks) == 1, [f["title"] for f in doc["findings"]])

    doc, rank, _ = record_and_analyze(tmp, "steady")
    host = [m for m in rank["memory"] if m["device"] == "host"]
    print(f"steady: growth {host[0]['growth_bytes_per_step'] / MIB:.2f} MiB/step" if host else "steady: no host memory")
    check("steady: no leak finding", not [f for f in doc["findings"] if f["title"].startswith("Memory leak")],
          [f["title"] for f in doc["findings"]])
    cuda_counters(tmp)
    step_end_api(tmp)
finish()
