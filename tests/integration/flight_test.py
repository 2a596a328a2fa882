#!/usr/bin/env python3
"""The flight recorder (`tracetune record --ring`, docs/collector.md §9.3) and hang diagnosis
(docs/analysis.md, "Hangs") on real jobs.

- hang: two gloo ranks under torchrun; rank 1 stops calling all-reduce at step 50 and sleeps.
  `--dump-on-hang` dumps the rings into a trace whose `analyze` names rank 0 stuck in AllReduce
  #50 of the c10d:gloo communicator and rank 1 as the rank that never arrived, with the host call
  it was last seen in. Then the whole job and `tracetune record` are SIGKILLed: `tracetune merge`
  of the kept raw directory still gives the same diagnosis (the ring lives in the record files).
- ring_budget: a process writes ~60 MB of records in a few seconds with --ring-budget 4: its record
  file stays within 4 MiB of ring plus its pinned chunks (strings, process), and the trace holds
  the newest records, not the oldest.
- signal: --ring's dump signal (SIGUSR2) sent to a forked child of the job, then to the job's main
  process after it installed its own SIGUSR2 handler, then to `tracetune record` (which forwards
  it): each dumps the rings of every process, the job's handler still runs, the job is not killed
  and Python sees SIG_DFL as the signal's disposition at start (not our handler).
- ring_steps: --ring 30steps: a dump taken while the job waits inside step 120 holds exactly the
  30 complete steps 90..119, and the trace at the end the last 30 steps.
- signal_paths: a C job (signal_paths.c) sets its own SIGUSR2 disposition through each libc entry
  point (sigaction, __sigaction, signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset
  with SIG_HOLD, sigignore) and raises the signal: its handler runs as in a bare run (one-shot for sysv_signal,
  held and released for sigset, ignored for sigignore), it reads back its own disposition, and
  the signal still dumps the ring.
- ring_steps_workers: --ring 6steps on a DataLoader whose workers are not persistent (two new worker
  processes every epoch of 3 steps, 30 epochs): the launcher removes the record files of the
  workers that ended before the last 6 steps, so the raw directory holds the main process and the
  workers of the last epochs only (not one file per worker ever started), and a dump taken after
  the 30 epochs holds exactly steps 84..89, the trace at the end (2 more epochs) steps 90..95.

usage: flight_test.py TRACETUNE [CASE...]
"""
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, free_port, query, run_cases, TORCH_PYTHON, TORCHRUN  # noqa: E402

HANG_JOB = """
import pathlib, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
model = torch.nn.Linear(32, 32)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(8, 32)
for step in range(100):
    opt.zero_grad()
    model(x).sum().backward()
    if rank == 1 and step == 50:
        pathlib.Path(sys.argv[1]).write_text("stopped")
        time.sleep(600)  # rank 1 never calls the 51st all-reduce
    flat = torch.cat([p.grad.flatten() for p in model.parameters()])
    dist.all_reduce(flat)
    opt.step()
"""

RING_JOB = """
import ctypes
lib = ctypes.CDLL(None)
lib.tracetune_mark.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
for i in range(1_200_000):
    lib.tracetune_mark(b"block %d" % (i // 100_000), b"job")
"""

SIGNAL_JOB = """
import os, pathlib, signal, sys, time, tracetune
d = pathlib.Path(sys.argv[1])
(d / "initial").write_text(repr(signal.getsignal(signal.SIGUSR2)))
child = os.fork()
if child == 0:
    while not (d / "end").exists():
        tracetune.mark("child tick", "job")
        time.sleep(0.01)
    os._exit(0)
(d / "pids").write_text(f"{os.getpid()} {child}")
def on_usr2(sig, frame):
    with open(d / "job handler", "a") as f:
        f.write("ran\\n")
installed = False
while not (d / "end").exists():
    tracetune.step()
    tracetune.mark("parent tick", "job")
    if not installed and (d / "install").exists():
        signal.signal(signal.SIGUSR2, on_usr2)
        (d / "installed").write_text(repr(signal.getsignal(signal.SIGUSR2)))
        installed = True
    time.sleep(0.01)
os.waitpid(child, 0)
"""

STEPS_JOB = """
import pathlib, sys, time, tracetune
d = pathlib.Path(sys.argv[1])
for i in range(200):
    tracetune.step()  # ends step i-1, starts step i
    tracetune.mark(f"in step {i}", "job")
    if i == 120:
        (d / "at 120").write_text("")
        while not (d / "go on").exists():
            time.sleep(0.05)
tracetune.step()
"""

SLOW_STEP_JOB = """
import pathlib, sys, time, tracetune
d = pathlib.Path(sys.argv[1])
for i in range(40):
    tracetune.step()  # ends step i-1, starts step i
    time.sleep(3 if i == 30 else 0.02)
tracetune.step()
while not (d / "go on").exists():
    time.sleep(0.05)
"""

WORKERS_JOB = """
import pathlib, sys, time, torch
from torch.utils.data import DataLoader, TensorDataset
d = pathlib.Path(sys.argv[1])
loader = DataLoader(TensorDataset(torch.randn(12, 4)), batch_size=4, num_workers=2, persistent_workers=False)

def epochs(n):
    for _ in range(n):
        for (x,) in loader:  # 3 steps; 2 worker processes started and ended with the epoch
            x.sum()

epochs(30)
(d / "done").write_text("")
while not (d / "go on").exists():
    time.sleep(0.05)
epochs(2)
"""


def still_of_job(pid, raw):
    """Whether process `pid` is still one of the recorded job's: its environment names `raw`."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f"TRACETUNE_OUTPUT_DIR={raw}".encode() in f.read()
    except OSError:
        return False

def analyze_json(db):
    a = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(db)], capture_output=True, text=True, timeout=300)
    return json.loads(a.stdout) if a.returncode == 0 else {"error": a.stderr[-2000:]}


def diagnosis(doc):
    """{rank: (state, op, seq)} and the communicator names of the report's hang section."""
    hang = doc.get("hang") or {}
    return ({r["rank"]: (r["state"], r["op"], r["seq"]) for r in hang.get("ranks", [])},
            {r["communicator"] for r in hang.get("ranks", [])}, hang.get("summary", ""))


def wait_for(predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.5)
    return None


def case_hang(tmp):
    tmp = pathlib.Path(tmp)
    job, stopped, db, raw = tmp / "job.py", tmp / "stopped", tmp / "trace.db", tmp / "raw"
    job.write_text(HANG_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--raw-dir", str(raw), "--keep-raw", "--ring", "120s",
                            "--dump-on-hang", "4s", "--", TORCHRUN, "--nproc_per_node", "2", "--master_port", free_port(),
                            "--redirects", "2", "--tee", "2", str(job), str(stopped)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    expected = {0: ("stuck in collective", "AllReduce", 50), 1: ("never arrived", "AllReduce", 50)}
    try:
        check("hang: rank 1 reaches its stop", wait_for(stopped.exists, 300), "no stop file")

        def dumped_diagnosis():  # the newest dump after rank 1 stopped that diagnoses the hang
            for dump in sorted(tmp.glob("trace.dump-*.db"), key=lambda p: p.stat().st_mtime, reverse=True):
                if dump.stat().st_mtime >= stopped.stat().st_mtime and diagnosis(analyze_json(dump))[0] == expected:
                    return dump
            return None

        dump = wait_for(dumped_diagnosis, 300)
        check("hang: the dump names rank 0 stuck in AllReduce #50 and rank 1 as never arrived", dump,
              [(p.name, diagnosis(analyze_json(p))) for p in tmp.glob("trace.dump-*.db")])
        if dump:
            ranks, comms, summary = diagnosis(analyze_json(dump))
            check("hang: on the gloo communicator", len(comms) == 1 and next(iter(comms)).startswith("c10d:gloo:"), comms)
            print("summary:", summary)
            absent = [r for r in analyze_json(dump)["hang"]["ranks"] if r["state"] == "never arrived"]
            check("hang: and the host call rank 1 was last seen in (its last event: the stop file's I/O here)",
                  len(absent) == 1 and absent[0]["last_event"] and f"last event: {absent[0]['last_event']}" in summary,
                  (absent, summary))
            reason = dict(query(dump, "SELECT key, value FROM meta WHERE key LIKE 'dump.%'")).get("dump.reason", "")
            check("hang: the dump says why it was taken", "hang" in reason, reason)
        before = set(tmp.glob("trace.dump-*.db"))
        c = subprocess.run([TRACETUNE, "capture", "--job", str(raw), "--dump"], capture_output=True, text=True, timeout=60)
        check("hang: capture --dump is accepted", c.returncode == 0, c.stderr)

        def asked_dump():
            for dump in set(tmp.glob("trace.dump-*.db")) - before:
                if dict(query(dump, "SELECT key, value FROM meta")).get("dump.reason") == "tracetune capture --dump":
                    return dump
            return None

        check("hang: capture --dump writes one more dump", wait_for(asked_dump, 120))
    finally:
        # every process of the job (torchrun 2.x starts its workers in sessions of their own: their
        # pids are in the record files' names), tracetune record and what is left of its group.
        # Only a pid whose environment still names this raw directory: the job's processes that
        # ended long ago may have their pids reused by another test's (pid_max is 32768 here).
        for pid in {int(f.name.split("-")[1]) for f in raw.glob("*/proc-*.ttr")}:
            if still_of_job(pid, raw):
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        os.killpg(rec.pid, signal.SIGKILL)
        rec.wait(timeout=60)
    m = subprocess.run([TRACETUNE, "merge", str(raw), "-o", str(tmp / "killed.db")], capture_output=True, text=True,
                       timeout=300)
    check("hang: the SIGKILLed job's rings merge", m.returncode == 0, m.stderr[-2000:])
    if m.returncode == 0:
        ranks, _, _ = diagnosis(analyze_json(tmp / "killed.db"))
        check("hang: and give the same diagnosis", ranks == expected, ranks)


def case_ring_budget(tmp):
    tmp = pathlib.Path(tmp)
    job, db, raw = tmp / "job.py", tmp / "trace.db", tmp / "raw"
    job.write_text(RING_JOB)
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--raw-dir", str(raw), "--keep-raw", "--ring", "1h",
                        "--ring-budget", "4", "--trace", "python", "--", TORCH_PYTHON, str(job)],
                       capture_output=True, text=True, timeout=600)
    check("ring_budget: the job runs under record --ring", r.returncode == 0 and db.exists(), r.stderr[-2000:])
    files = sorted(raw.glob("*/*.ttr"), key=lambda p: p.stat().st_blocks, reverse=True)
    biggest = files[0].stat() if files else None
    written = 1_200_000 * 48  # bytes of mark records the job wrote
    on_disk = biggest.st_blocks * 512 if biggest else -1
    mib = 1 << 20
    print(f"largest record file: {on_disk / mib:.1f} MiB on disk, {biggest.st_size / mib if biggest else 0:.1f} MiB long, "
          f"for {written / mib:.0f} MiB of records")
    check("ring_budget: the record file holds the 4 MiB ring plus at most 2 pinned chunks",
          0 < on_disk <= 4096 + 6 * mib, on_disk)
    blocks = dict(query(db, "SELECT s.value, count(*) FROM ranges r JOIN strings s ON s.id = r.name_id GROUP BY 1"))
    check("ring_budget: the newest records are kept, the oldest are gone",
          blocks.get("block 11", 0) > 0 and "block 0" not in blocks, blocks)


def dumps_by_reason(tmp, reason):
    return [p for p in tmp.glob("trace.dump-*.db") if dict(query(p, "SELECT key, value FROM meta")).get("dump.reason") == reason]


def mark_names(db):
    return {n for (n,) in query(db, "SELECT DISTINCT s.value FROM ranges r JOIN strings s ON s.id = r.name_id "
                                    "WHERE r.end_ns = r.start_ns")}


def alive(pid):
    """Running, not a zombie (a killed child stays one until the job reaps it)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def case_signal(tmp):
    tmp = pathlib.Path(tmp)
    job, db, raw = tmp / "job.py", tmp / "trace.db", tmp / "raw"
    job.write_text(SIGNAL_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--raw-dir", str(raw), "--ring", "60s", "--",
                            TORCH_PYTHON, str(job), str(tmp)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, start_new_session=True)
    try:
        pids = wait_for(lambda: (tmp / "pids").exists() and (tmp / "pids").read_text().split(), 120)
        check("signal: the job starts", pids, rec.poll())
        parent, child = (int(x) for x in pids)
        initial = (tmp / "initial").read_text()
        check("signal: Python sees SIGUSR2 at its default disposition, not our handler", "SIG_DFL" in initial, initial)
        time.sleep(0.5)
        os.kill(child, signal.SIGUSR2)
        first = wait_for(lambda: dumps_by_reason(tmp, "SIGUSR2"), 120)
        check("signal: SIGUSR2 to a child of the job dumps the rings", first)
        check("signal: and kills neither process", alive(parent) and alive(child))
        if first:
            marks = mark_names(first[0])
            check("signal: the dump holds every process of the job", {"child tick", "parent tick"} <= marks, marks)
        (tmp / "install").write_text("")
        installed = wait_for(lambda: (tmp / "installed").exists() and (tmp / "installed").read_text(), 60)
        check("signal: the job reads back its own handler", installed and "on_usr2" in installed, installed)
        time.sleep(1.5)  # one dump per second at most
        os.kill(parent, signal.SIGUSR2)
        check("signal: SIGUSR2 to the job's main process after it installed a handler dumps again",
              wait_for(lambda: len(dumps_by_reason(tmp, "SIGUSR2")) >= 2, 120))
        check("signal: and the job's own handler ran", wait_for((tmp / "job handler").exists, 60))
        time.sleep(1.5)
        os.kill(rec.pid, signal.SIGUSR2)
        check("signal: SIGUSR2 to tracetune record (forwarded to the job) dumps again",
              wait_for(lambda: len(dumps_by_reason(tmp, "SIGUSR2")) >= 3, 120))
        handled = wait_for(lambda: (tmp / "job handler").read_text().count("ran") >= 2, 60)
        check("signal: the job's handler ran for it too", handled)
        print("dumps by signal:", len(dumps_by_reason(tmp, "SIGUSR2")))
        (tmp / "end").write_text("")
        _, err = rec.communicate(timeout=300)
        check("signal: the job ends normally (exit 0)", rec.returncode == 0, err[-2000:])
    finally:
        if rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)
            rec.wait(timeout=60)


def step_numbers(db):
    doc = analyze_json(db)
    ranks = [r for r in doc.get("ranks", []) if r.get("has_steps")]
    return [s["number"] for s in ranks[0]["steps"]] if ranks else doc


def dump_then_end(name, rec, raw, db, timeout):
    """Asks the job's step ring (record --raw-dir RAW) for a dump with `capture --dump`, waits for
    the dump beside the trace, lets the job go on (the file "go on" its script waits for) and
    waits for record's end; returns (the dumps, record's stderr)."""
    c = subprocess.run([TRACETUNE, "capture", "--job", str(raw), "--dump"], capture_output=True, text=True, timeout=60)
    check(f"{name}: capture --dump is accepted", c.returncode == 0, c.stderr)
    dump = wait_for(lambda: dumps_by_reason(db.parent, "tracetune capture --dump"), 120)
    (db.parent / "go on").write_text("")
    _, err = rec.communicate(timeout=timeout)
    check(f"{name}: the job ends normally", rec.returncode == 0 and db.exists(), err[-2000:])
    return dump, err


def case_ring_steps(tmp):
    tmp = pathlib.Path(tmp)
    job, db, raw = tmp / "job.py", tmp / "trace.db", tmp / "raw"
    job.write_text(STEPS_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--raw-dir", str(raw), "--ring", "30steps", "--",
                            TORCH_PYTHON, str(job), str(tmp)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True, start_new_session=True)
    try:
        check("ring_steps: the job reaches step 120", wait_for((tmp / "at 120").exists, 120), rec.poll())
        dump, _ = dump_then_end("ring_steps", rec, raw, db, 300)
    finally:
        if rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)
            rec.wait(timeout=60)
    check("ring_steps: the dump is written", dump)
    if dump:
        numbers = step_numbers(dump[0])
        check("ring_steps: the dump holds exactly the 30 complete steps 90..119", numbers == list(range(90, 120)), numbers)
        marks = mark_names(dump[0])
        check("ring_steps: and nothing from before step 90", "in step 90" in marks and "in step 89" not in marks,
              sorted(m for m in marks if m.startswith("in step"))[:5])
    numbers = step_numbers(db)
    check("ring_steps: the trace at the end holds the last 30 steps", numbers == list(range(170, 200)), numbers)
    meta = dict(query(db, "SELECT key, value FROM meta WHERE key = 'window'"))
    check("ring_steps: and says so", meta.get("window", "").startswith("ring 30 steps"), meta)


SIGNAL_MODES = ["sigaction", "__sigaction", "signal", "bsd_signal", "ssignal", "sysv_signal", "__sysv_signal", "sigset",
                "sigignore"]


def case_signal_paths(tmp):
    tmp = pathlib.Path(tmp)
    program = tmp / "signal_paths"
    subprocess.run(["cc", "-O2", "-o", str(program), str(pathlib.Path(__file__).with_name("signal_paths.c"))], check=True)
    runs = {}
    for mode in SIGNAL_MODES:  # all at once: each waits for its dump (at most 120 s)
        (tmp / mode).mkdir()
        db = tmp / mode / "trace.db"
        runs[mode] = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--ring", "60s", "--", str(program), mode,
                                       str(tmp / mode / "trace.dump-1.db")], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
    for mode, rec in runs.items():
        out, err = rec.communicate(timeout=600)
        check(f"signal_paths: {mode}: the job's own handler behaves as in a bare run", rec.returncode == 0,
              f"exit {rec.returncode}: {err[-2000:]}")
        check(f"signal_paths: {mode}: and the signal still dumps the ring", "dump seen" in out, out + err[-2000:])
        dumps = dumps_by_reason(tmp / mode, "SIGUSR2")
        check(f"signal_paths: {mode}: a dump taken for SIGUSR2", len(dumps) == 1, dumps)


def case_fork_steps(tmp):
    """A fork while another thread writes steps (fork_steps.c), under --ring Nsteps (the step
    ring's lock) and --steps (the window's): every child writes its own step and exits. Before
    the locks were released in the fork child, a child forked while the stepping thread held one
    waited for ever (the ring's on nearly every run of 200 children)."""
    tmp = pathlib.Path(tmp)
    program = tmp / "fork_steps"
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(program), str(pathlib.Path(__file__).with_name("fork_steps.c")),
                    "-ldl"], check=True)
    for name, window in (("ring", ["--ring", "4steps"]), ("window", ["--steps", "1000:1000000000"])):
        r = subprocess.run([TRACETUNE, "record", "-o", str(tmp / f"{name}.db"), *window, "--", str(program), "200"],
                           capture_output=True, text=True, timeout=600)
        check(f"fork_steps ({name}): no fork child waits for a lock its parent's thread held",
              r.returncode == 0 and "stuck 0" in r.stdout, r.stdout + r.stderr[-1500:])


def record_files(raw):
    """(count, bytes allocated) of the record files in `raw` now."""
    sizes = []
    for f in raw.glob("*/*.ttr"):
        try:
            sizes.append(f.stat().st_blocks * 512)
        except FileNotFoundError:  # removed meanwhile
            pass
    return len(sizes), sum(sizes)


def case_ring_steps_workers(tmp):
    tmp = pathlib.Path(tmp)
    job, db, raw = tmp / "job.py", tmp / "trace.db", tmp / "raw"
    job.write_text(WORKERS_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--raw-dir", str(raw), "--keep-raw", "--ring", "6steps",
                            "--ring-budget", "8", "--", TORCH_PYTHON, str(job), str(tmp)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # the main process and the 2 workers of each epoch the last 6 steps (2 epochs) overlap, and one
    # epoch more for slack; before the launcher removed ended workers with a step ring: 61 files
    bound = 1 + 2 * 3
    dump, err = None, ""
    try:
        check("ring_steps_workers: the job runs its 30 epochs", wait_for((tmp / "done").exists, 600), rec.poll())
        files = wait_for(lambda: record_files(raw)[0] <= bound and record_files(raw), 120)
        count, size = record_files(raw)
        print(f"after 30 epochs: {count} record files, {size / (1 << 20):.1f} MiB")
        check(f"ring_steps_workers: the raw directory keeps at most {bound} record files (not one per worker started)",
              files, count)
        # each file at most header + 8 MiB of ring + 2 pinned chunks (a worker's: one ring chunk per thread)
        check("ring_steps_workers: and its size stays bounded", size <= bound * (10 << 20) + bound * 4096, size)
        dump, err = dump_then_end("ring_steps_workers", rec, raw, db, 600)
    finally:
        if rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)
            rec.wait(timeout=60)
    check("ring_steps_workers: record says it removed ended processes' files", "removed while the job ran" in err,
          err[-2000:])
    check("ring_steps_workers: the dump is written", dump)
    if dump:
        numbers = step_numbers(dump[0])
        check("ring_steps_workers: the dump holds exactly the last 6 steps, 84..89", numbers == list(range(84, 90)),
              numbers)
        first_kept = query(dump[0], "SELECT min(start_ns) FROM steps")[0][0] or 0
        io = query(dump[0], "SELECT p.pid, count(*), min(i.start_ns + i.dur_ns) FROM io_calls i "
                            "JOIN tracks k ON k.id = i.track_id AND k.type = 0 JOIN threads t ON t.id = k.owner_id "
                            "JOIN processes p ON p.id = t.process_id "
                            "WHERE p.parent_pid IN (SELECT pid FROM processes) GROUP BY 1")  # the workers
        check("ring_steps_workers: the dump holds the I/O of the workers of those steps (2 or more of them)",
              len(io) >= 2, io)
        check("ring_steps_workers: none of it ended before step 84 started", all(end >= first_kept for _, _, end in io),
              (first_kept, io))
    numbers = step_numbers(db)
    check("ring_steps_workers: the trace at the end holds exactly steps 90..95", numbers == list(range(90, 96)), numbers)


def case_slow_step(tmp):
    tmp = pathlib.Path(tmp)
    job, db, raw = tmp / "job.py", tmp / "trace.db", tmp / "raw"
    job.write_text(SLOW_STEP_JOB)
    rec = subprocess.Popen([TRACETUNE, "record", "-o", str(db), "--raw-dir", str(raw), "--ring", "60s",
                            "--dump-on-slow-step", "10", "--", TORCH_PYTHON, str(job), str(tmp)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    reason = "a step slower than 10 x the running median"
    try:
        # a step of the job's 20 ms ones may also count as slow on a loaded machine: look for the dump
        # that holds step 30, not for exactly one dump
        def slow_step_dump():
            for dump in dumps_by_reason(tmp, reason):
                if query(dump, "SELECT count(*) FROM steps WHERE number = 30 AND end_ns - start_ns >= 3e9")[0][0] == 1:
                    return dump
            return None

        dump = wait_for(slow_step_dump, 300)
        check("slow_step: a dump is taken for the 3 s step, and holds it", dump,
              [(p.name, step_numbers(p)) for p in tmp.glob("trace.dump-*.db")])
        (tmp / "go on").write_text("")
        _, err = rec.communicate(timeout=300)
        check("slow_step: the job ends normally", rec.returncode == 0 and db.exists(), err[-2000:])
    finally:
        if rec.poll() is None:
            os.killpg(rec.pid, signal.SIGKILL)
            rec.wait(timeout=60)


run_cases({"hang": case_hang, "ring_budget": case_ring_budget, "signal": case_signal, "ring_steps": case_ring_steps,
           "signal_paths": case_signal_paths, "fork_steps": case_fork_steps, "ring_steps_workers": case_ring_steps_workers,
           "slow_step": case_slow_step},
          sys.argv[2:])
