#!/usr/bin/env python3
"""The flight recorder (`tracetune record --ring`, docs/collector.md §9.3) and hang diagnosis
(docs/analysis.md, "Hangs") on real jobs.

- hang: two gloo ranks under torchrun; rank 1 stops calling all-reduce at step 50 and sleeps.
  `--dump-on-hang` dumps the rings into a trace whose `analyze` names rank 0 stuck in AllReduce
  #50 of the c10d:gloo communicator and rank 1 as the rank that never arrived. Then the whole job
  and `tracetune record` are SIGKILLed: `tracetune merge` of the kept raw directory still gives
  the same diagnosis (the ring lives in the record files).
- ring_budget: a process writes ~60 MB of records in a few seconds with --ring-budget 4: its record
  file stays within 4 MiB of ring plus its pinned chunks (strings, process), and the trace holds
  the newest records, not the oldest.

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


run_cases({"hang": case_hang, "ring_budget": case_ring_budget}, sys.argv[2:])
