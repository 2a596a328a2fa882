#!/usr/bin/env python3
"""scripts/gpu-check.sh where no GPU is (CI): the no-GPU path, and the capture facts every GPU
check reads, computed on a real GPU trace (a Kineto trace of AlexNet on a GPU, imported) and
compared with `tracetune info --json` and with a brute-force reading of the same rows.

 - no GPU: one line on stderr, exit 3, nothing written;
 - --facts: kernel/memset/sync/step counts equal `info`'s; memcpys by direction add up;
   the kernel->launch-call match share and the count of kernels starting before their launch
   call equal a plain-Python join of the rows; moving one kernel before its launch call is
   seen (the check can fail); the stream waits joined to an event record (same process and
   event, lower correlation) equal a plain-Python join, and a wait whose record goes is seen;
 - streams: the two-stream run's path check passes when GPU compute fills the paths and fails
   when they are GPU wait.

 - nccl: at one GPU (no collective reaches the NCCL plugins there) the stage asks for the
   communicator and the self send/recv only, and says why; at two it asks for described
   collectives; the tuner's log is read for its table (and a 'not set' warning fails);
 - budget: a stage that does not fit is skipped and says so; --stage takes a list;
 - pack: a trace trimmed under a size still opens and says it was trimmed; the archive holds
   logs and trimmed traces, never a full trace DB or an oversized file, and lists what it left.

usage: gpu_check_test.py TRACETUNE CORPUS_DIR NCCL_DRIVER [CASE...]
"""
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import types

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from harness import check, query, run_cases  # noqa: E402

TRACETUNE, SHARED, NCCL_DRIVER = sys.argv[1], pathlib.Path(sys.argv[2]), sys.argv[3]
sys.path.insert(0, str(REPO / "scripts"))
import gpu_check as gc  # noqa: E402
import gpu_pack  # noqa: E402
GPU_CHECK = REPO / "scripts" / "gpu-check.sh"
ALEXNET = SHARED / "kineto" / "hta" / "alexnet.json.gz"


def case_without_gpu(tmp):
    out = pathlib.Path(tmp) / "out"
    env = dict(os.environ, PATH="/usr/bin:/bin")  # no nvidia-smi here (nor on CI machines)
    r = subprocess.run([GPU_CHECK, "--stage", "all", "--out", out], capture_output=True, text=True, env=env,
                       timeout=60)
    check("no GPU: exit 3", r.returncode == 3, (r.returncode, r.stderr))
    check("no GPU: one line on stderr saying so", r.stderr.count("\n") == 1 and "no NVIDIA GPU" in r.stderr, r.stderr)
    check("no GPU: nothing written", not out.exists())


def facts_of(db):
    r = subprocess.run([GPU_CHECK, "--facts", db], capture_output=True, text=True, timeout=120)
    check("--facts exits 0", r.returncode == 0, r.stderr)
    return json.loads(r.stdout) if r.returncode == 0 else None


def brute_force_launch_facts(db):
    """The same join as gpu_check.launch_facts, done row by row in Python."""
    proc_of_thread = dict(query(db, "SELECT id, process_id FROM threads"))
    proc_of_device = dict(query(db, "SELECT id, process_id FROM devices"))
    proc_of_stream = {sid: proc_of_device.get(dev) for sid, dev in query(db, "SELECT id, device_id FROM streams")}
    proc_of_track = {tid: (proc_of_thread.get(owner) if ty == 0 else proc_of_stream.get(owner) if ty == 1 else None)
                     for tid, ty, owner in query(db, "SELECT id, type, owner_id FROM tracks")}
    launches = {}
    for track, start, corr in query(db, "SELECT track_id, start_ns, correlation FROM api_calls WHERE correlation IS NOT NULL"):
        launches.setdefault((proc_of_track[track], corr), []).append(start)
    with_corr = matched = early = 0
    for track, start, corr in query(db, "SELECT track_id, start_ns, correlation FROM kernels WHERE correlation IS NOT NULL"):
        with_corr += 1
        for launch_start in launches.get((proc_of_track[track], corr), []):
            matched += 1
            early += start < launch_start
    return {"kernels_with_correlation": with_corr, "kernels_matched_to_launch": matched, "kernels_before_launch": early}


def brute_force_stream_wait_facts(db):
    """The same join as gpu_check.stream_wait_facts, done row by row in Python."""
    proc_of_thread = dict(query(db, "SELECT id, process_id FROM threads"))
    proc_of_device = dict(query(db, "SELECT id, process_id FROM devices"))
    proc_of_stream = {sid: proc_of_device.get(dev) for sid, dev in query(db, "SELECT id, device_id FROM streams")}
    proc_of_track = {tid: (proc_of_thread.get(owner) if ty == 0 else proc_of_stream.get(owner) if ty == 1 else None)
                     for tid, ty, owner in query(db, "SELECT id, type, owner_id FROM tracks")}
    rows = [(ty, ev, corr, proc_of_track[tr]) for ty, ev, corr, tr in
            query(db, "SELECT type, event, correlation, track_id FROM syncs WHERE type IN (2, 5)")]
    records = [r for r in rows if r[0] == 5]
    waits = [w for w in rows if w[0] == 2]
    matched = sum(any(r[1] == w[1] and r[3] == w[3] and r[2] is not None and w[2] is not None and r[2] < w[2]
                      for r in records) for w in waits)
    return {"event_records": len(records), "stream_waits": len(waits), "stream_waits_matched": matched}


def case_facts_on_real_gpu_trace(tmp):
    db = pathlib.Path(tmp) / "alexnet.db"
    r = subprocess.run([TRACETUNE, "import", ALEXNET, "-o", db], capture_output=True, text=True, timeout=120)
    if not check("import the AlexNet GPU trace", r.returncode == 0, r.stderr):
        return
    info = json.loads(subprocess.run([TRACETUNE, "info", db, "--json"], capture_output=True, text=True).stdout)
    facts = facts_of(db)
    if facts is None:
        return
    counts = info["counts"]
    for key in ("kernels", "memsets", "syncs"):
        check(f"facts: {key} = info's count", facts[key] == counts[key], (facts[key], counts[key]))
    check("facts: memcpys by direction/kind/async add up to info's count",
          sum(facts["memcpys"].values()) == counts["memcpys"], (facts["memcpys"], counts["memcpys"]))
    check("facts: the trace has kernels, copies and launch calls (a real GPU trace)",
          facts["kernels"] > 50 and facts["memcpys"] and facts["api_calls"].get("runtime", 0) > 100, facts)
    ref = brute_force_launch_facts(db)
    check("facts: kernel->launch matching equals a row-by-row join",
          all(facts[k] == v for k, v in ref.items()), (ref, {k: facts[k] for k in ref}))
    check("facts: most kernels of the real trace matched to their launch", facts["launch_match_share"] > 0.9,
          facts["launch_match_share"])

    # a kernel moved before its launch call is counted
    bad = pathlib.Path(tmp) / "early.db"
    shutil.copy(db, bad)
    con = sqlite3.connect(bad)
    kid, corr = con.execute("""SELECT k.id, k.correlation FROM kernels k WHERE k.correlation IN
                               (SELECT correlation FROM api_calls) LIMIT 1""").fetchone()
    launch = con.execute("SELECT min(start_ns) FROM api_calls WHERE correlation = ?", (corr,)).fetchone()[0]
    con.execute("UPDATE kernels SET start_ns = ?, end_ns = ? WHERE id = ?", (launch - 1000, launch - 500, kid))
    con.commit()
    con.close()
    early = facts_of(bad)
    check("facts: a kernel starting before its launch call is seen",
          early and early["kernels_before_launch"] == facts["kernels_before_launch"] + 1, early and early["kernels_before_launch"])

    # stream waits and the event records they name (AlexNet: stream 7 waits on records of stream 20)
    ref = brute_force_stream_wait_facts(db)
    check("facts: stream waits joined to their records equal a row-by-row join",
          all(facts[k] == v for k, v in ref.items()), (ref, {k: facts[k] for k in ref}))
    check("facts: the real trace has stream waits on recorded events", facts["stream_waits_matched"] > 0, ref)
    with sqlite3.connect(bad) as con:
        event = con.execute("SELECT event FROM syncs WHERE type = 5 LIMIT 1").fetchone()[0]
        con.execute("DELETE FROM syncs WHERE type = 5 AND event = ?", (event,))
    fewer = facts_of(bad)
    check("facts: a wait whose record is gone is no longer matched",
          fewer and fewer["stream_waits_matched"] < facts["stream_waits_matched"] and
          fewer["stream_waits_matched"] == brute_force_stream_wait_facts(bad)["stream_waits_matched"],
          fewer and fewer["stream_waits_matched"])


def nccl_trace(tmp):
    """A trace of NCCL's call sequence replayed through our profiler plugin (tests/gpu/nccl_driver:
    five all-reduces RING/LL128 and a recv, host and device rows)."""
    db = pathlib.Path(tmp) / "nccl.db"
    r = subprocess.run([TRACETUNE, "record", "-o", db, "--", NCCL_DRIVER], capture_output=True, text=True, timeout=120)
    check("nccl: the replayed NCCL job is recorded", r.returncode == 0 and db.exists(), r.stderr[-500:])
    return db


def case_nccl_one_rank(tmp):
    db, log = nccl_trace(tmp), pathlib.Path(tmp) / "nccl.log"
    log.write_text("")
    one = gc.Stage("nccl")
    gc.check_nccl_trace(types.SimpleNamespace(gpus=1), one, "one", db, log, p2p=True)
    names = [c["name"] for c in one.checks]
    check("one GPU: communicator and send/recv rows checked, and they hold",
          len(names) == 2 and all(c["ok"] for c in one.checks), one.checks)
    check("one GPU: no check asks for described collectives, a note says why",
          not any("algorithm" in n for n in names) and any("ncclLaunchOneRank" in n for n in one.notes), (names, one.notes))
    two = gc.Stage("nccl")
    gc.check_nccl_trace(types.SimpleNamespace(gpus=2), two, "two", db, log, p2p=False)
    check("two GPUs: described collectives checked, and they hold",
          any("algorithm" in c["name"] and c["ok"] for c in two.checks), two.checks)
    for text, ok in (("NCCL INFO tracetune tuner: 1 table entries for 1 ranks on 1 nodes from /tmp/t", True),
                     ("NCCL WARN tracetune tuner: TRACETUNE_NCCL_TABLE is not set (run the job with ...)", False)):
        log.write_text(text + "\n")
        tuned = gc.Stage("nccl")
        gc.check_tuner_log(types.SimpleNamespace(gpus=1), tuned, "tuned", log, [])
        check(f"tuner log {'with its table' if ok else 'without a table'}: the checks {'pass' if ok else 'fail'}",
              all(c["ok"] for c in tuned.checks) == ok and len(tuned.checks) == 2, tuned.checks)


def case_nccl_on_h100_trace(tmp):
    """The one-GPU checks on what NCCL 2.28 really gave our plugin on an H100 (tests/data/gpu):
    an unnamed communicator, the self send/recv on the host side, no kernel-channel spans."""
    db, log = REPO / "tests" / "data" / "gpu" / "h100_cpp_nccl.db", pathlib.Path(tmp) / "nccl.log"
    log.write_text("")
    one = gc.Stage("nccl")
    gc.check_nccl_trace(types.SimpleNamespace(gpus=1), one, "h100", db, log, p2p=True)
    check("h100 trace: every one-GPU check holds", one.checks and all(c["ok"] for c in one.checks), one.checks)
    figures = one.figures
    check("h100 trace: no GPU span for a send/recv to oneself, one communicator",
          figures.get("h100.p2p_gpu_spans") == 0 and figures.get("h100.collectives", {}).get("communicators") == 1, figures)


def case_h100_facts_and_fixed_runs(tmp):
    """A blocking cudaMemcpy under CUPTI 13's name counts as a sync; a fixed run passes when its
    planted finding is gone or cost a third of the bad run's at most."""
    db = pathlib.Path(tmp) / "h2d.db"
    shutil.copy(REPO / "tests" / "data" / "gpu" / "h100_py_h2d.db", db)
    with sqlite3.connect(db) as con:
        sid = con.execute("SELECT max(id) + 1 FROM strings").fetchone()[0]
        con.execute("INSERT INTO strings(id, value) VALUES (?, 'cudaMemcpy_v3020')", (sid,))
        con.execute("UPDATE api_calls SET name_id = ? WHERE id = (SELECT min(id) FROM api_calls)", (sid,))
    check("facts: a blocking copy named cudaMemcpy_v3020 is counted", gc.trace_facts(db)["blocking_copies"] == 1,
          gc.trace_facts(db)["blocking_copies"])
    d = pathlib.Path(tmp) / "diag"
    d.mkdir()

    def analyses(bad_cost, fixed_cost):
        for name, cost in (("py_tiny", bad_cost), ("py_tiny_fixed", fixed_cost)):
            found = [] if cost is None else [{"category": "launch_bound", "cost_ns": cost}]
            (d / f"{name}.analysis.json").write_text(json.dumps({"findings": found}))
        stage = gc.Stage("diagnose")
        e = types.SimpleNamespace(tracetune="tracetune", run=lambda *a, **k: types.SimpleNamespace(returncode=0, stderr=""))
        gc.diagnose_one(e, stage, d, "py_tiny_fixed", db, "launch_bound", True)
        return [c["ok"] for c in stage.checks]
    check("fixed run: gone passes", analyses(64_000_000, None) == [True, True])
    check("fixed run: a 500th of the cost passes", analyses(64_000_000, 127_000) == [True, True])
    check("fixed run: half the cost fails", analyses(64_000_000, 32_000_000) == [True, False])


def case_streams_path(tmp):
    """The two-stream run's path check, on analyses written by hand: it passes when the steps'
    paths are GPU compute (the wait followed to the side stream) and fails when they are GPU wait."""
    d = pathlib.Path(tmp)

    def verdict(compute, wait, first=None):
        paths = [{"length_ns": 10_000_000, "by_kind_ns": {"gpu_compute": compute, "gpu_wait": wait}}] * 3
        paths = ([first] if first else []) + paths
        (d / "py_streams.analysis.json").write_text(json.dumps({"ranks": [{"critical_path": paths}]}))
        stage = gc.Stage("diagnose")
        e = types.SimpleNamespace(tracetune="tracetune", run=lambda *a, **k: types.SimpleNamespace(returncode=0, stderr=""))
        gc.diagnose_streams(e, stage, d, d / "py_streams.db")
        return [c["ok"] for c in stage.checks], stage.figures["py_streams.critical_path_shares"]
    ok, shares = verdict(9_000_000, 100_000)
    check("streams: GPU compute on the path passes", ok == [True, True], (ok, shares))
    ok, shares = verdict(3_000_000, 6_000_000)
    check("streams: the side stream's time as GPU wait fails", ok == [True, False], (ok, shares))
    check("streams: the median step's shares", shares == {"steps": 3, "gpu_compute": 0.3, "gpu_wait": 0.6}, shares)
    # the H100's py_streams (2026-11-27): a first step of 121 ms of cuBLAS set-up on the host
    cold = {"length_ns": 120_000_000, "by_kind_ns": {"host_compute": 112_000_000, "launch": 8_000_000}}
    ok, shares = verdict(8_600_000, 0, first=cold)
    check("streams: a cold first step does not swamp the steady steps", ok == [True, True], (ok, shares))


def case_overhead_noise(tmp):
    """The overhead comparison's noise: the standard error of a median from its IQR."""
    spread = [35.0 + 0.1 * ((i * 7) % 11) / 10 for i in range(120)]  # 35.00 .. 35.10 ms
    se = gc.median_standard_error(spread)
    check("noise: a median's standard error shrinks with the sample",
          0 < se < 0.01 and gc.median_standard_error(spread[:30]) > se, se)
    check("noise: none claimed from fewer than 4 steps", gc.median_standard_error([1.0, 2.0, 3.0]) == 0.0)


def case_budget(tmp):
    check("--stage takes a list", gc.stage_list("nccl,coexist") == ("nccl", "coexist"))
    check("--tune-cases takes a list, in its order", gc.tune_case_list("tiny, gemm") == ("tiny", "gemm"))
    try:
        gc.tune_case_list("gemm,resnet")
        check("--tune-cases refuses an unknown case", False)
    except gc.argparse.ArgumentTypeError as ex:
        check("--tune-cases refuses an unknown case", "resnet" in str(ex), ex)
    try:
        gc.stage_list("nccl,bogus")
        check("--stage refuses an unknown stage", False)
    except gc.argparse.ArgumentTypeError as ex:
        check("--stage refuses an unknown stage", "bogus" in str(ex), ex)
    ran = []
    e = types.SimpleNamespace(rehearsal=False, remaining=lambda: 20)
    result = gc.run_stage(e, "capture", {"capture": lambda e, s: ran.append(1)})
    check("a stage that does not fit the budget is skipped and says so",
          not ran and "skipped" in result and "200" in result["skipped"], result)
    e.remaining = lambda: None
    gc.run_stage(e, "capture", {"capture": lambda e, s: ran.append(1)})
    check("without a budget it runs", ran == [1])
    # tune run alone (no --budget) stays inside one 10-minute device command
    e = types.SimpleNamespace(deadline=None, stage_dir=lambda name: pathlib.Path(tmp), tune_cases=tuple(gc.TUNE_CASES))
    e.remaining = lambda: None if e.deadline is None else e.deadline - gc.time.monotonic()
    seen = []
    real, gc.tune_one = gc.tune_one, lambda e, s, d, case, knobs: seen.append(e.remaining())
    try:
        gc.stage_tune(e, gc.Stage("tune"))
    finally:
        gc.tune_one = real
    check("tune alone: every case started within 540 s, the budget restored after",
          len(seen) == 3 and all(x <= gc.TUNE_STAGE_SECONDS for x in seen) and e.deadline is None, (seen, e.deadline))
    order = []
    e.tune_cases = ("tiny", "h2d")
    gc.tune_one, real = (lambda e, s, d, case, knobs: order.append((case, knobs))), gc.tune_one
    try:
        gc.stage_tune(e, gc.Stage("tune"))
    finally:
        gc.tune_one = real
    check("tune: only the cases asked for, in their order, each with its planted knobs",
          order == [("tiny", set()), ("h2d", {"dataloader.pin_memory"})], order)


def case_pack(tmp):
    tmp = pathlib.Path(tmp)
    out = tmp / "out"
    (out / "capture").mkdir(parents=True)
    db = out / "capture" / "py_h2d.db"
    r = subprocess.run([TRACETUNE, "import", ALEXNET, "-o", db], capture_output=True, text=True, timeout=120)
    if not check("pack: a trace to trim", r.returncode == 0, r.stderr):
        return
    size, kernels = db.stat().st_size, query(db, "SELECT count(*) FROM kernels")[0][0]
    trimmed = tmp / "t.db"
    check("trim: under the limit", gpu_pack.trim_db(db, trimmed, limit=int(size * 0.85)) and
          trimmed.stat().st_size <= size * 0.85, (size, trimmed.stat().st_size))
    info = subprocess.run([TRACETUNE, "info", trimmed], capture_output=True, text=True)
    check("trim: the trimmed trace opens, with fewer kernels and a note",
          info.returncode == 0 and 0 < query(trimmed, "SELECT count(*) FROM kernels")[0][0] < kernels and
          query(trimmed, "SELECT count(*) FROM meta WHERE key = 'gpu_check.trimmed'")[0][0] == 1, info.stderr)
    (out / "capture" / "py_h2d.log").write_text("a log\n")
    (out / "capture" / "huge.json").write_bytes(b"x" * (gpu_pack.MAX_FILE + 1))
    small = out / "capture" / "cpp_sync.db"  # a trace DB this small travels whole
    shutil.copy(trimmed, small)
    with sqlite3.connect(small) as con:
        con.execute("DELETE FROM kernels")
        con.commit()
        con.execute("VACUUM")
    limit = gpu_pack.MAX_WHOLE_DB
    gpu_pack.MAX_WHOLE_DB = small.stat().st_size  # the small one whole, the larger one not
    check("pack: a small trace to send whole", small.stat().st_size < db.stat().st_size, small.stat().st_size)
    archive = tmp / "gc.tar.gz"
    try:
        check("pack: written within 16 MiB", gpu_pack.pack(out, archive, TRACETUNE))
    finally:
        gpu_pack.MAX_WHOLE_DB = limit
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    check("pack: the log, the trimmed trace and the small trace travel, the full DB and the oversized file do not",
          "out/capture/py_h2d.log" in names and "out/trimmed/capture__py_h2d.db" in names and
          "out/capture/cpp_sync.db" in names and
          "out/capture/py_h2d.db" not in names and "out/capture/huge.json" not in names, names)
    left = [x["path"] for x in json.loads((out / "pack-manifest.json").read_text())["left_out"]]
    check("pack: the manifest names what stayed behind", sorted(left) == ["capture/huge.json", "capture/py_h2d.db"], left)


if __name__ == "__main__":
    run_cases({"without_gpu": case_without_gpu, "facts": case_facts_on_real_gpu_trace, "nccl_one_rank": case_nccl_one_rank,
               "nccl_on_h100_trace": case_nccl_on_h100_trace, "h100_facts": case_h100_facts_and_fixed_runs,
               "streams_path": case_streams_path, "overhead_noise": case_overhead_noise,
               "budget": case_budget, "pack": case_pack}, sys.argv[4:])
