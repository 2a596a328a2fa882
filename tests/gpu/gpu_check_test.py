#!/usr/bin/env python3
"""scripts/gpu-check.sh where no GPU is (CI): the no-GPU path, and the capture facts every GPU
check reads, computed on a real GPU trace (a Kineto trace of AlexNet on a GPU, imported) and
compared with `tracetune info --json` and with a brute-force reading of the same rows.

 - no GPU: one line on stderr, exit 3, nothing written;
 - --facts: kernel/memset/sync/step counts equal `info`'s; memcpys by direction add up;
   the kernel->launch-call match share and the count of kernels starting before their launch
   call equal a plain-Python join of the rows; moving one kernel before its launch call is
   seen (the check can fail).

usage: gpu_check_test.py TRACETUNE SHARED_DATA_DIR
"""
import json
import os
import pathlib
import shutil
import sqlite3
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from harness import check, query, run_cases  # noqa: E402

TRACETUNE, SHARED = sys.argv[1], pathlib.Path(sys.argv[2])
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


if __name__ == "__main__":
    run_cases({"without_gpu": case_without_gpu, "facts": case_facts_on_real_gpu_trace}, sys.argv[3:])
