#!/usr/bin/env python3
"""Recording windows (`tracetune record --steps/--delay/--duration/--start-on`, docs/collector.md,
"Recording windows") on real jobs.

- steps: a DataLoader job (2 workers) of 130 steps recorded with --steps 100:120: analyze reports
  exactly steps 100..120, a mark made at step 10 is absent and one made at step 110 present, the
  workers' records are there only while the window was open, and the trace names its window.
- steps_ranks: two gloo ranks under torchrun, --steps 10:14: each rank holds exactly those steps.
- time: --delay/--duration on a plain Python job that marks in a loop and reads the window's state
  itself: every mark it made while the window was open is in the trace, none made while closed.
- start_on: --start-on '^train_phase$': ranges before the first matching one are absent, it and
  what follows are present.
- start_on_nvtx: the same on NVTX ranges pushed by a C program (nvtx_start_on.c; NVTX3 headers in
  $TT_NVTX_INCLUDE_DIR, else skipped with exit 77).
- capture: a job started with --armed, captured twice while it runs (by its raw directory, then
  by its pid) with `tracetune capture --steps 5`: two traces, each of 5 successive steps.
- capture_run: a job started by `tracetune run --config tuned.toml --armed` runs with the config
  applied and is captured by its pid: 5 successive steps, and the capture names the settings.
- capture_ranks: two gloo ranks under torchrun started with --armed, captured by rank 1's pid: both
  ranks take the request (every stepping process of the host), each holds 5 successive steps, and
  their first steps are within one step of each other.
- usage: bad window and flight recorder options are one-line usage errors and the job is not run.

usage: window_test.py TRACETUNE [CASE...]
"""
import json
import os
import pathlib
import subprocess
import sys
import time

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, free_port, query, run_cases, TORCH_PYTHON, TORCHRUN  # noqa: E402

DATALOADER_JOB = """
import torch, tracetune
from torch.utils.data import DataLoader, TensorDataset
torch.manual_seed(0)
data = TensorDataset(torch.randn(130 * 8, 16), torch.randn(130 * 8, 1))
loader = DataLoader(data, batch_size=8, num_workers=2)
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for i, (x, y) in enumerate(loader):
    if i in (10, 110):
        tracetune.mark(f"at step {i}")
    opt.zero_grad()
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
"""

RANKS_JOB = """
import torch, torch.distributed as dist
dist.init_process_group("gloo")
model = torch.nn.Linear(32, 32)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 32)
for step in range(30):
    opt.zero_grad()
    model(x).sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
dist.barrier()
dist.destroy_process_group()
"""

# Reads the window's holders from the control file (window_control.h: magic 8, version 4, holders 4).
TIME_JOB = """
import mmap, os, struct, time, tracetune
f = open(os.path.join(os.environ["TRACETUNE_OUTPUT_DIR"], "window.ctl"), "rb")
ctl = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
def holders():
    return struct.unpack_from("<I", ctl, 12)[0]
opened = closed = 0
seen_open = False
closed_after = None
while True:
    h = holders()
    tracetune.mark("tick", "job")
    if h and holders():
        opened += 1
        seen_open = True
    elif not h and not holders():
        closed += 1
    if seen_open and not h and closed_after is None:
        closed_after = time.monotonic()
    if closed_after is not None and time.monotonic() - closed_after > 0.3:
        break
    time.sleep(0.005)
print(f"MARKS open={opened} closed={closed}", flush=True)
"""

START_ON_JOB = """
import tracetune
for i in range(5):
    with tracetune.range(f"warmup {i}"):
        pass
with tracetune.range("train_phase"):
    tracetune.mark("inside")
for i in range(3):
    with tracetune.range(f"after {i}"):
        pass
"""


def record(tmp, job_text, *options, runner=None):
    job = pathlib.Path(tmp) / "job.py"
    job.write_text(job_text)
    db = pathlib.Path(tmp) / "trace.db"
    runner = runner or [TORCH_PYTHON]
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), *options, "--", *runner, str(job)],
                       capture_output=True, text=True, timeout=600)
    return r, db


def analyze(db):
    a = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(db)], capture_output=True, text=True, timeout=300)
    check("analyze succeeds", a.returncode == 0, a.stderr[-2000:])
    return json.loads(a.stdout) if a.returncode == 0 else {"ranks": []}


def meta(db):
    return dict(query(db, "SELECT key, value FROM meta WHERE key LIKE 'window%'"))


def mark_names(db):
    """Marks are ranges of no length in the trace."""
    return [n for (n,) in query(db, "SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id "
                                    "WHERE r.end_ns = r.start_ns")]


def range_names(db):
    return [n for (n,) in query(db, "SELECT s.value FROM ranges r JOIN strings s ON s.id = r.name_id")]


def case_steps(tmp):
    r, db = record(tmp, DATALOADER_JOB, "--steps", "100:120")
    check("steps: the job runs under record --steps", r.returncode == 0 and db.exists(), r.stderr[-2000:])
    doc = analyze(db)
    ranks = [x for x in doc["ranks"] if x["has_steps"]]
    numbers = [s["number"] for s in ranks[0]["steps"]] if ranks else []
    check("steps: analyze reports exactly steps 100..120", numbers == list(range(100, 121)), numbers)
    m = meta(db)
    check("steps: the trace names its window", m.get("window") == "steps 100:120" and m.get("window.times_opened") == "1", m)
    marks = mark_names(db)
    check("steps: the mark at step 110 is in, the one at step 10 is not",
          "at step 110" in marks and "at step 10" not in marks, marks)
    check("steps: the window's opening and closing are marks",
          "tracetune.window open" in marks and "tracetune.window close" in marks, marks)
    workers = query(db, "SELECT count(*) FROM processes WHERE parent_pid IS NOT NULL")[0][0]
    check("steps: the DataLoader workers are in the trace", workers >= 2, workers)
    opened, closed = int(m.get("window.first_open_ns", 0)), int(m.get("window.last_close_ns", 0))
    io_outside = query(db, "SELECT count(*) FROM io_calls WHERE start_ns < ? OR start_ns + dur_ns > ?", opened, closed)[0][0]
    check("steps: no I/O from outside the window", opened > 0 and closed > opened and io_outside == 0,
          (opened, closed, io_outside))
    rss = query(db, "SELECT count(*) FROM counters c JOIN strings s ON s.id = c.name_id WHERE s.value = 'host memory.rss'")
    check("steps: one RSS sample per recorded step", rss[0][0] == 21, rss)


def case_steps_ranks(tmp):
    r, db = record(tmp, RANKS_JOB, "--steps", "10:14",
                   runner=[TORCHRUN, "--nproc_per_node", "2", "--master_port", free_port(), "--redirects", "2",
                           "--tee", "2"])
    check("steps_ranks: the two-rank job runs under record --steps", r.returncode == 0 and db.exists(),
          r.stdout[-1000:] + r.stderr[-2000:])
    doc = analyze(db)
    got = {x["rank"]: [s["number"] for s in x["steps"]] for x in doc["ranks"] if x["has_steps"]}
    check("steps_ranks: each rank holds exactly steps 10..14", got == {0: list(range(10, 15)), 1: list(range(10, 15))}, got)
    calls = query(db, "SELECT count(*) FROM collectives")[0][0]
    check("steps_ranks: the all-reduces of those steps are recorded (2 ranks x 5 steps x 2 tensors)", calls >= 20, calls)


def case_time(tmp):
    r, db = record(tmp, TIME_JOB, "--delay", "1", "--duration", "1s", "--trace", "python")
    check("time: the job runs under record --delay --duration", r.returncode == 0 and db.exists(), r.stderr[-2000:])
    made = dict(kv.split("=") for kv in (r.stdout.split("MARKS ")[-1].split() if "MARKS" in r.stdout else []))
    ticks = mark_names(db).count("tick")
    opened, closed = int(made.get("open", -1)), int(made.get("closed", -1))
    check("time: the marks made while the window was open are in the trace, none made while it was closed",
          opened > 0 and closed > 0 and opened <= ticks, (ticks, made))
    m = meta(db)
    check("time: the trace names its window", m.get("window") == "delay 1s, duration 1s", m)
    first, last = int(m.get("window.first_open_ns", 0)), int(m.get("window.last_close_ns", 0))
    check("time: the window lasted its duration (at least)", last - first >= 1e9, (first, last))


def case_start_on(tmp):
    r, db = record(tmp, START_ON_JOB, "--start-on", "^train_phase$", "--trace", "python")
    check("start_on: the job runs under record --start-on", r.returncode == 0 and db.exists(), r.stderr[-2000:])
    names = range_names(db)
    check("start_on: the matching range and what follows are recorded, the ranges before it are not",
          "train_phase" in names and "after 2" in names and not any(n.startswith("warmup") for n in names), names)
    check("start_on: the mark inside it too", "inside" in mark_names(db), mark_names(db))


def case_start_on_nvtx(tmp):
    include = os.environ.get("TT_NVTX_INCLUDE_DIR", "")
    if not os.path.isfile(os.path.join(include, "nvtx3", "nvToolsExt.h")):
        print("SKIPPED: no NVTX3 headers (set TT_NVTX_INCLUDE_DIR)")
        sys.exit(77)
    program = pathlib.Path(tmp) / "nvtx_start_on"
    subprocess.run(["cc", "-O1", "-I", include, "-o", str(program), str(pathlib.Path(__file__).with_name("nvtx_start_on.c")),
                    "-ldl"], check=True)
    db = pathlib.Path(tmp) / "trace.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--start-on", "^train_phase$", "--trace", "nvtx", "--",
                        str(program)], capture_output=True, text=True, timeout=300)
    check("start_on_nvtx: the program runs under record --start-on", r.returncode == 0 and db.exists(), r.stderr[-2000:])
    names = range_names(db)
    check("start_on_nvtx: the matching NVTX range and what follows are recorded, the ranges before it are not",
          "train_phase" in names and "after 2" in names and not any(n.startswith("warmup") for n in names), names)
    marks = mark_names(db)
    check("start_on_nvtx: the mark inside it too, not the one before", "inside" in marks and "before" not in marks, marks)


CAPTURE_JOB = """
import os, pathlib, sys, time, torch
tmp = pathlib.Path(sys.argv[1])
model = torch.nn.Linear(16, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 16)
for step in range(20000):
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
    time.sleep(0.005)
    if step == 20:
        (tmp / "ready").write_text(str(os.getpid()))
    if (tmp / "stop").exists():
        break
"""


def captured_steps(trace, label):
    """Waits for a capture's trace and checks that it holds 5 successive steps; returns them."""
    check(f"{label}: its trace is written while the job runs", wait_for(trace.exists, 300))
    doc = analyze(trace) if trace.exists() else {"ranks": []}
    got = [s["number"] for x in doc["ranks"] if x["has_steps"] for s in x["steps"]]
    check(f"{label}: it holds the 5 requested steps", len(got) == 5 and got == list(range(got[0], got[0] + 5)), got)
    return got


def case_capture(tmp):
    tmp = pathlib.Path(tmp)
    job, db, raw = tmp / "job.py", tmp / "trace.db", tmp / "trace.db.raw"
    job.write_text(CAPTURE_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--armed", "--", TORCH_PYTHON, str(job), str(tmp)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        check("capture: the armed job starts stepping", wait_for(lambda: (tmp / "ready").exists(), 300))
        steps = []
        for k, target in ((1, ["--job", str(raw)]), (2, [(tmp / "ready").read_text()])):
            c = subprocess.run([TRACETUNE, "capture", *target, "--steps", "5"], capture_output=True, text=True, timeout=60)
            check(f"capture {k}: requested ({' '.join(target[:1])})", c.returncode == 0, c.stderr)
            steps.append(captured_steps(tmp / f"trace.capture-{k}.db", f"capture {k}"))
        check("capture: the two captures are separate traces of successive windows",
              len(steps) == 2 and steps[0] and steps[1] and steps[1][0] > steps[0][-1], steps)
        d = subprocess.run([TRACETUNE, "capture", "--job", str(raw), "--dump"], capture_output=True, text=True, timeout=60)
        check("capture: --dump on a job without --ring is refused in one line",
              d.returncode == 1 and "--ring" in d.stderr and len(d.stderr.strip().splitlines()) == 1, d.stderr)
    finally:
        (tmp / "stop").write_text("")
        _, err = rec.communicate(timeout=300)
    check("capture: the job ends normally", rec.returncode == 0, err[-2000:])
    m = meta(db)
    check("capture: the job's trace counts its captures", m.get("window") == "armed" and m.get("window.captures") == "2", m)


def case_capture_run(tmp):
    """`run --config cfg --armed`: the job runs with the config applied and can be captured."""
    tmp = pathlib.Path(tmp)
    job, db, cfg = tmp / "job.py", tmp / "trace.db", tmp / "tuned.toml"
    job.write_text(CAPTURE_JOB.replace("str(os.getpid())", 'f"{os.getpid()} {torch.get_num_threads()}"'))
    cfg.write_text('[settings]\n"torch.num_threads" = 1\n')
    cfg.chmod(0o600)
    run = subprocess.Popen([TRACETUNE, "run", "--config", str(cfg), "--armed", "-o", str(db), "--", TORCH_PYTHON, str(job),
                            str(tmp)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        check("capture_run: the armed job starts stepping", wait_for(lambda: (tmp / "ready").exists(), 300))
        pid, threads = (tmp / "ready").read_text().split() if (tmp / "ready").exists() else ("0", "0")
        check("capture_run: the config is applied (torch.num_threads = 1)", threads == "1", threads)
        c = subprocess.run([TRACETUNE, "capture", pid, "--steps", "5"], capture_output=True, text=True, timeout=60)
        check("capture_run: requested by the job's pid", c.returncode == 0, c.stderr)
        trace = tmp / "trace.capture-1.db"
        captured_steps(trace, "capture_run")
        if trace.exists():
            tuned = dict(query(trace, "SELECT key, value FROM meta WHERE key LIKE 'tuned.%'"))
            check("capture_run: the capture says which settings were applied", tuned == {"tuned.torch.num_threads": "1"}, tuned)
    finally:
        (tmp / "stop").write_text("")
        _, err = run.communicate(timeout=300)
    check("capture_run: the job ends normally", run.returncode == 0, err[-2000:])
    check("capture_run: the job's trace counts its capture", meta(db).get("window.captures") == "1", meta(db))
    bad = subprocess.run([TRACETUNE, "run", "--config", str(cfg), "-o", str(tmp / "x.db"), "--", "true"],
                         capture_output=True, text=True, timeout=60)
    check("capture_run: -o without --armed is a one-line usage error",
          bad.returncode == 2 and "--armed" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, bad.stderr)


CAPTURE_RANKS_JOB = """
import os, pathlib, sys, time, torch, torch.distributed as dist
tmp = pathlib.Path(sys.argv[1])
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 16)
stop = torch.zeros(1)
for step in range(20000):
    opt.zero_grad()
    model(x).sum().backward()
    for p in model.parameters():
        dist.all_reduce(p.grad)
    opt.step()
    time.sleep(0.01)
    if step == 20:
        (tmp / f"ready {rank}").write_text(str(os.getpid()))
    stop.fill_(1 if (tmp / "stop").exists() else 0)
    dist.all_reduce(stop)  # both ranks stop at the same step
    if stop.item() > 0:
        break
dist.barrier()
# not through the interpreter's teardown: there a torch 2.11 gloo rank aborts now and then, bare too
# ("terminate called without an active exception": 1 to 2 of 16 bare runs, none of 20 with os._exit)
os._exit(0)
"""


def case_capture_ranks(tmp):
    tmp = pathlib.Path(tmp)
    job, db = tmp / "job.py", tmp / "trace.db"
    job.write_text(CAPTURE_RANKS_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--armed", "--", TORCHRUN, "--nproc_per_node", "2",
                            "--master_port", free_port(), "--redirects", "2", "--tee", "2", str(job), str(tmp)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ready = tmp / "ready 1"
        check("capture_ranks: the armed ranks start stepping", wait_for(ready.exists, 300))
        c = subprocess.run([TRACETUNE, "capture", ready.read_text() if ready.exists() else "0", "--steps", "5"],
                           capture_output=True, text=True, timeout=60)
        check("capture_ranks: requested by rank 1's pid", c.returncode == 0, c.stderr)
        trace = tmp / "trace.capture-1.db"
        check("capture_ranks: its trace is written while the job runs", wait_for(trace.exists, 300))
        doc = analyze(trace) if trace.exists() else {"ranks": []}
        got = {x["rank"]: [s["number"] for s in x["steps"]] for x in doc["ranks"] if x["has_steps"]}
        check("capture_ranks: each rank holds 5 successive steps",
              sorted(got) == [0, 1] and all(len(n) == 5 and n == list(range(n[0], n[0] + 5)) for n in got.values()), got)
        if sorted(got) == [0, 1] and got[0] and got[1]:
            check("capture_ranks: the ranks took the request within one step of each other",
                  abs(got[0][0] - got[1][0]) <= 1, got)
    finally:
        (tmp / "stop").write_text("")
        _, err = rec.communicate(timeout=300)
    check("capture_ranks: the job ends normally", rec.returncode == 0, err[-2000:])


def wait_for(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def case_usage(tmp):
    marker = pathlib.Path(tmp) / "ran"
    for options, says in ((["--steps", "5"], "expected A:B"), (["--steps", "9:3"], "end is before the start"),
                          (["--start-on", "("], "--start-on"), (["--delay", "soon"], "expected seconds"),
                          (["--steps", "1:2", "--delay", "3"], "cannot be combined"),
                          (["--ring", "0steps"], "number of steps"), (["--ring", "soon"], "expected seconds"),
                          (["--ring", "60s", "--dump-signal", "KILL"], "--dump-signal"),
                          (["--dump-signal", "USR1"], "need --ring")):
        r = subprocess.run([TRACETUNE, "record", "-o", os.path.join(tmp, "t.db"), *options, "--", "touch", str(marker)],
                           capture_output=True, text=True, timeout=60)
        lines = r.stderr.strip().splitlines()
        check(f"usage: {' '.join(options)} is a one-line usage error",
              r.returncode == 2 and len(lines) == 1 and says in lines[0], r.stderr)
    check("usage: the job never ran", not marker.exists())


run_cases({"steps": case_steps, "steps_ranks": case_steps_ranks, "time": case_time, "start_on": case_start_on,
           "start_on_nvtx": case_start_on_nvtx,
           "capture": case_capture, "capture_run": case_capture_run, "capture_ranks": case_capture_ranks, "usage": case_usage}, sys.argv[2:])
