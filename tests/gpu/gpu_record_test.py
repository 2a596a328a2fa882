#!/usr/bin/env python3
"""`tracetune record` and GPU capture on a machine without a GPU:
 - the NCCL profiler plugin, loaded from the NCCL_PROFILER_PLUGIN that `record` sets, exactly
   as NCCL loads it (nccl_driver plays NCCL's calls), leaves host- and device-side rows in
   `collectives`;
 - the same driver outside `record` gets no events (mask 0) and succeeds;
 - a job that never initialises CUDA is recorded, and the summary says in one line that no
   GPU was seen; `--trace` without cuda/nccl sets neither variable.
Every check reads the DB or the output the command wrote.

 - a job that initialises CUDA injection where no GPU driver exists (the job calls
   InitializeInjection itself, as the driver would) keeps its output and exit code, warns in
   one line, and the trace says CUDA was initialised but no GPU activity was seen;
 - another profiler registering CUPTI buffer callbacks mid-run (what torch.profiler does) is
   passed through unchanged and noted in the trace.

Without a GPU or a real libcupti:
 - PyTorch's libcupti is loaded RTLD_LOCAL (a dependency of torch/_C): a stand-in loaded the
   same way is what the interposed cuptiActivityRegisterCallbacks calls;
 - torch.profiler started mid-run, played on that stand-in (which, like CUPTI, keeps filling
   the buffer it has and completes it to whoever is registered then): our buffers come back to
   us before the second profiler's registration reaches CUPTI, so its records land in its own
   buffers, and CUPTI's settings are given back (not zeroed, default thread ids, its own clock
   kept or CUPTI's default clock given back);
 - `record` finds libcupti.so.13 in the job's Python's pip wheels (nvidia/cu13/lib, the CUDA 13
   layout) and hands it to the injection library (TRACETUNE_CUPTI_LIB): in a venv laid out in a
   temporary folder, through a console script's #! line, and in PyTorch 2.11's real venv when it
   is installed (TT_TORCH2_PYTHON, else ~/.cache/tracetune/torch-2.11.0).

usage: gpu_record_test.py TRACETUNE NCCL_DRIVER NCCL_PLUGIN LIBCUPTI FAKE_LIBCUPTI TORCH2_PYTHON [GROUP]
GROUP: `core` (default; needs nothing more), `libcupti` (the cases that load a real libcupti) or
`torch2` (PyTorch 2.11's venv). A group whose prerequisite is missing exits 77, so ctest shows
it as skipped instead of counting it as passed.
"""
import json
import os
import pathlib
import subprocess
import sys

TRACETUNE, DRIVER, PLUGIN = sys.argv[1:4]
LIBCUPTI = sys.argv[4] if len(sys.argv) > 4 and sys.argv[4] and not sys.argv[4].endswith("NOTFOUND") else ""
FAKE_CUPTI = sys.argv[5]
TORCH2_PYTHON = sys.argv[6] if len(sys.argv) > 6 and sys.argv[6] else str(
    pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, query, run_cases  # noqa: E402


def record(tmp, *cmd, out="trace.db", extra=(), env=None):
    db = pathlib.Path(tmp) / out
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), *extra, "--", *cmd], capture_output=True, text=True,
                       timeout=300, env=env)
    return r, db


def case_nccl_plugin(tmp):
    env = {k: v for k, v in os.environ.items() if k != "NCCL_PROFILER_PLUGIN"}
    r, db = record(tmp, DRIVER, env=env)
    check("nccl: driver succeeds under record", r.returncode == 0, r.stdout + r.stderr[-1500:])
    check("nccl: record set NCCL_PROFILER_PLUGIN and the plugin asked for events",
          r.stdout.strip() == "mask=70 ops=6", r.stdout)
    rows = query(db, """SELECT o.value, c.bytes, c.count, d.value, c.group_size, m.value, a.value, p.value,
                               c.channels, c.seq, c.peer, c.root, c.side, c.end_ns - c.start_ns
                        FROM collectives c JOIN strings o ON o.id = c.op_id JOIN strings d ON d.id = c.dtype_id
                        JOIN strings m ON m.id = c.communicator_id
                        LEFT JOIN strings a ON a.id = c.algorithm_id LEFT JOIN strings p ON p.id = c.protocol_id
                        ORDER BY c.side, c.start_ns""")
    host = [x for x in rows if x[12] == 0]
    dev = [x for x in rows if x[12] == 1]
    check("nccl: 6 host-side and 6 device-side rows", len(host) == 6 and len(dev) == 6, rows)
    ar = [x for x in host if x[0] == "allreduce"]
    check("nccl: allreduce rows carry bytes, dtype, algorithm, protocol, channels, seq, communicator",
          len(ar) == 5 and all(x[1] == 2 * (25 << 20) and x[2] == 25 << 20 and x[3] == "ncclFloat16" and
                                x[4] == 2 and x[5] == "1111222233334444" and x[6] == "RING" and x[7] == "LL128" and
                                x[8] == 2 for x in ar) and sorted(x[9] for x in ar) == [0, 1, 2, 3, 4], ar)
    recv = [x for x in host if x[0] == "recv"]
    check("nccl: recv row has its peer and no seq (stored as NULL)", len(recv) == 1 and recv[0][10] == 1 and recv[0][9] is None and
          recv[0][1] == 1024, recv)
    devar = [x for x in dev if x[0] == "allreduce"]
    check("nccl: device-side allreduce durations are the GPU channel spans",
          sorted(x[13] for x in devar) == [410_000] * 5, devar)
    starts = [x for x in query(db, "SELECT start_ns FROM collectives WHERE side = 1 ORDER BY start_ns")]
    gaps = [b[0] - a[0] for a, b in zip(starts, starts[1:])]
    check("nccl: device-side rows keep the GPU's spacing", gaps[:4] == [1_000_000] * 4, gaps)
    meta = dict(query(db, "SELECT key, value FROM meta WHERE key LIKE 'nccl_comm:%'"))
    check("nccl: named communicator in meta", meta.get("nccl_comm:1111222233334444") == "world", meta)
    check("nccl: summary line counts the plugin's operations",
          "NCCL profiler plugin: 12 operations in 1 processes" in r.stderr, r.stderr[-1500:])


def case_nccl_plugin_outside_record(tmp):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETUNE_") and k != "LD_PRELOAD"}
    env["NCCL_PROFILER_PLUGIN"] = PLUGIN
    r = subprocess.run([DRIVER], capture_output=True, text=True, env=env, timeout=60)
    check("nccl: outside record the plugin asks for nothing and the job succeeds",
          r.returncode == 0 and r.stdout.strip() == "mask=0 ops=0", r.stdout + r.stderr)


def case_no_gpu(tmp):
    code = ("import os\nprint(os.environ.get('CUDA_INJECTION64_PATH', '-'))\n"
            "print(os.environ.get('NCCL_PROFILER_PLUGIN', '-'))\nprint('job done')")
    r, db = record(tmp, sys.executable, "-c", code, out="nogpu.db")
    lines = r.stdout.splitlines()
    check("no GPU: job runs, output untouched, exit 0", r.returncode == 0 and lines[-1:] == ["job done"], r.stdout)
    check("no GPU: NCCL_PROFILER_PLUGIN is our plugin", len(lines) == 3 and os.path.realpath(lines[1]) == os.path.realpath(PLUGIN), lines)
    cupti = lines[0] if lines else "-"
    check("no GPU: CUDA_INJECTION64_PATH is ours when this build has CUPTI capture",
          cupti == "-" or (cupti.endswith("libtracetune_cupti.so") and os.path.exists(cupti)), cupti)
    gpu_lines = [x for x in r.stderr.splitlines() if x.startswith("GPU ")]
    want = ("no GPU seen: no process of the job initialised CUDA" if cupti != "-"
            else "no GPU capture in this build")
    check("no GPU: one summary line says no GPU was seen", len(gpu_lines) == 1 and want in gpu_lines[0], r.stderr)
    check("no GPU: the CPU side is recorded", query(db, "SELECT count(*) FROM processes")[0][0] >= 1)
    r, _ = record(tmp, sys.executable, "-c", code, out="io.db", extra=["--trace", "io"])
    check("--trace io: neither GPU variable is set", r.stdout.splitlines()[:2] == ["-", "-"], r.stdout)
    check("--trace io: no GPU line, GPU listed as not requested",
          not any(x.startswith("GPU ") for x in r.stderr.splitlines()) and "CUDA kernels" in r.stderr, r.stderr)


def case_injection_without_gpu(tmp):
    code = ("import ctypes, os\n"
            "lib = ctypes.CDLL(os.environ['CUDA_INJECTION64_PATH'])\n"
            "print('init', lib.InitializeInjection(), lib.InitializeInjection())\n"
            "raise SystemExit(4)")
    r, db = record(tmp, sys.executable, "-c", code, out="inj.db")
    check("injection: job output and exit code unchanged", r.returncode == 4 and r.stdout == "init 1 1\n",
          f"rc={r.returncode} {r.stdout!r} {r.stderr[-800:]}")
    ours = [x for x in r.stderr.splitlines() if x.startswith("tracetune: ")]
    check("injection: one warning line from the injection library", len(ours) == 1 and "CUPTI" in ours[0], r.stderr)
    gpu = [x for x in r.stderr.splitlines() if x.startswith("GPU ")]
    check("injection: summary says CUDA was initialised but no GPU activity was seen",
          len(gpu) == 1 and "no GPU activity seen: CUDA was initialised in 1 process" in gpu[0], r.stderr)
    meta = dict(query(db, "SELECT key, value FROM meta WHERE key LIKE '%gpu_capture'"))
    check("injection: the process is marked in meta", list(meta.values()) == ["cupti-unavailable"], meta)
    diags = query(db, "SELECT reason FROM diagnostics WHERE reason LIKE '%CUPTI%'")
    check("injection: the reason is a diagnostic", len(diags) == 1, diags)


def case_takeover(tmp):
    code = ("import ctypes, sys\n"
            "direct = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)\n"
            "f = ctypes.CDLL(None).cuptiActivityRegisterCallbacks  # resolved like torch's PLT call\n"
            "a = f(None, None); b = f(None, None)\n"
            "print('rc', a, b, direct.cuptiActivityRegisterCallbacks(None, None))")
    r, db = record(tmp, sys.executable, "-c", code, LIBCUPTI, out="take.db")
    parts = r.stdout.split()
    check("takeover: the call is passed through with the real result",
          r.returncode == 0 and len(parts) == 4 and parts[1] == parts[2] == parts[3], r.stdout + r.stderr[-800:])
    diags = query(db, "SELECT kind, reason FROM diagnostics WHERE reason LIKE '%took over CUPTI%'")
    check("takeover: noted once in the trace, as truncation of GPU capture", len(diags) == 1 and diags[0][0] == 1,
          diags)
    check("takeover: a warning in the summary", "warning      GPU: another profiler" in r.stderr, r.stderr[-800:])


def case_takeover_local_cupti(tmp):
    code = ("import ctypes, sys\n"
            "ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)  # as torch/_C brings in libcupti.so.13\n"
            "print('rc', ctypes.CDLL(None).cuptiActivityRegisterCallbacks(None, None))")
    r, db = record(tmp, sys.executable, "-c", code, FAKE_CUPTI, out="local.db")
    check("takeover, libcupti loaded RTLD_LOCAL: the interposer reaches it (the stand-in's 4242)",
          r.returncode == 0 and r.stdout.split() == ["rc", "4242"], r.stdout + r.stderr[-800:])
    diags = query(db, "SELECT reason FROM diagnostics WHERE reason LIKE '%took over CUPTI%'")
    check("takeover, libcupti loaded RTLD_LOCAL: noted once", len(diags) == 1, diags)


# torch.profiler started mid-run, played on the stand-in libcupti: our session starts on it (the
# job calls InitializeInjection, as the CUDA driver would), records go into a buffer CUPTI took
# from us, then a second profiler registers its buffer callbacks through the interposer (as
# Kineto does when profiling starts), records more and flushes (as Kineto does when it stops).
TAKEOVER_JOB = r"""
import ctypes, json, os, sys, time
cupti = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_LOCAL)
inj = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
assert inj.InitializeInjection() == 1
cupti.fake_cupti_write(ctypes.c_size_t(100))                  # a record in our time
mine, foreign, bufs = [], [], {}
REQUEST = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                           ctypes.POINTER(ctypes.c_size_t))
COMPLETE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t)
CLOCK = ctypes.CFUNCTYPE(ctypes.c_uint64)
def request(buffer, size, max_records):                       # Kineto: a map of the buffers it gave
    b = ctypes.create_string_buffer(1 << 16)
    bufs[ctypes.addressof(b)] = b
    buffer[0], size[0], max_records[0] = ctypes.addressof(b), 1 << 16, 0
def complete(ctx, stream, buffer, size, valid):              # ... and an unknown one is dropped
    (mine if buffer in bufs else foreign).append(valid)
callbacks = REQUEST(request), COMPLETE(complete)
clock = CLOCK(lambda: 12345)                                  # Kineto's own clock (TSC), when asked
job = ctypes.CDLL(None)                                       # resolved like torch's PLT calls
if sys.argv[2] == "own-clock":
    job.cuptiActivityRegisterTimestampCallback(ctypes.cast(clock, ctypes.c_void_p))
job.cuptiActivityRegisterCallbacks(ctypes.cast(callbacks[0], ctypes.c_void_p), ctypes.cast(callbacks[1], ctypes.c_void_p))
cupti.fake_cupti_write(ctypes.c_size_t(200))                  # records in the second profiler's time
time.sleep(0.3)                                               # our periodic flush would run here
cupti.cuptiActivityFlushAll(1)                                # its forced flush when it stops
at = cupti.fake_cupti_at_registration
at.restype = ctypes.c_uint64
print(json.dumps({"mine": mine, "foreign": foreign, "misdelivered": cupti.fake_cupti_misdelivered(),
                  "zeroed": at(0), "thread_id_type": at(1), "clock": at(3),
                  "realtime": time.clock_gettime_ns(time.CLOCK_REALTIME)}))
"""


def case_takeover_hands_cupti_over(tmp):
    for clock in ("own-clock", "default-clock"):
        r, db = record(tmp, sys.executable, "-c", TAKEOVER_JOB, FAKE_CUPTI, clock, out=f"hand-{clock}.db")
        if not check(f"hand-over ({clock}): the job runs", r.returncode == 0, r.stdout + r.stderr[-1500:]):
            continue
        got = json.loads(r.stdout.splitlines()[-1])
        check(f"hand-over ({clock}): the second profiler gets its records, in its own buffers",
              got["mine"] == [200] and got["foreign"] == [] and got["misdelivered"] == 0, got)
        check(f"hand-over ({clock}): its buffers are not declared zeroed (they are not ours)", got["zeroed"] == 0, got)
        check(f"hand-over ({clock}): CUPTI's default thread ids", got["thread_id_type"] == 0, got)
        if clock == "own-clock":
            check("hand-over: the clock the second profiler registered is left alone", got["clock"] == 12345, got)
        else:
            check("hand-over: CUPTI's default clock (CLOCK_REALTIME) given back",
                  abs(got["realtime"] - got["clock"]) < 60 * 10**9, got)
        diags = query(db, "SELECT reason FROM diagnostics WHERE reason LIKE '%took over CUPTI%'")
        check(f"hand-over ({clock}): the takeover is noted once", len(diags) == 1, diags)


PRINT_CUPTI = "import os; print(os.environ.get('TRACETUNE_CUPTI_LIB', '-'))"


def fake_venv(tmp):
    """A venv as pip lays out PyTorch 2.11's CUDA 13 wheels: bin/python3 a link to the base
    interpreter, libcupti.so.13 in site-packages/nvidia/cu13/lib, and a console script."""
    venv = pathlib.Path(tmp) / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(sys.executable, venv / "bin" / "python3")
    lib = venv / "lib" / "python3.11" / "site-packages" / "nvidia" / "cu13" / "lib"
    lib.mkdir(parents=True)
    (lib / "libcupti.so.13").write_bytes(b"")  # only looked for; nothing here loads it
    (venv / "lib" / "python3.11" / "site-packages" / "nvidia" / "nccl" / "lib").mkdir(parents=True)
    script = venv / "bin" / "print-cupti"
    script.write_text(f"#!{venv / 'bin' / 'python3'}\n{PRINT_CUPTI}\n")
    script.chmod(0o755)
    return venv, lib / "libcupti.so.13"


def case_wheel_cupti(tmp):
    venv, lib = fake_venv(tmp)
    env = dict(os.environ, PATH="/usr/bin:/bin", HOME=tmp)
    r, _ = record(tmp, venv / "bin" / "python3", "-c", PRINT_CUPTI, out="w1.db", env=env)
    check("wheel CUPTI: found in the job's venv (nvidia/cu13/lib) and handed to the injection library",
          r.returncode == 0 and r.stdout.strip() == str(lib), r.stdout + r.stderr[-800:])
    r, _ = record(tmp, venv / "bin" / "print-cupti", out="w2.db", env=env)
    check("wheel CUPTI: through a console script's #! line (torchrun's way)", r.stdout.strip() == str(lib), r.stdout)
    r, _ = record(tmp, "/usr/bin/env", "A=1", venv / "bin" / "python3", "-c", PRINT_CUPTI, out="w3.db", env=env)
    check("wheel CUPTI: a python word later in the command", r.stdout.strip() == str(lib), r.stdout)
    r, _ = record(tmp, sys.executable, "-c", PRINT_CUPTI, out="w4.db", env=dict(env, PATH=f"{venv / 'bin'}:/usr/bin:/bin"))
    check("wheel CUPTI: a job that is not the venv's uses python3 on PATH (the active environment)",
          r.stdout.strip() == str(lib), r.stdout)
    r, _ = record(tmp, sys.executable, "-c", PRINT_CUPTI, out="w5.db", extra=["--trace", "io"], env=env)
    check("wheel CUPTI: not set when CUDA is not traced", r.stdout.strip() == "-", r.stdout)


def case_wheel_cupti_torch2(tmp):
    r, _ = record(tmp, TORCH2_PYTHON, "-c", PRINT_CUPTI, out="w6.db")
    found = pathlib.Path(r.stdout.strip())
    check("wheel CUPTI: PyTorch 2.11's venv: site-packages/nvidia/cu13/lib/libcupti.so.13",
          r.returncode == 0 and found.parts[-4:] == ("nvidia", "cu13", "lib", "libcupti.so.13") and found.exists(),
          r.stdout + r.stderr[-800:])


GROUPS = {"core": [case_nccl_plugin, case_nccl_plugin_outside_record, case_no_gpu, case_takeover_local_cupti,
                   case_takeover_hands_cupti_over, case_wheel_cupti],
          "libcupti": [case_injection_without_gpu, case_takeover],
          "torch2": [case_wheel_cupti_torch2]}
GROUP = sys.argv[7] if len(sys.argv) > 7 else "core"
if GROUP == "libcupti" and not LIBCUPTI:
    print("SKIPPED: no libcupti found at configure time (TT_CUPTI_LIBRARY)")
    sys.exit(77)
if GROUP == "torch2" and not os.access(TORCH2_PYTHON, os.X_OK):
    print(f"SKIPPED: {TORCH2_PYTHON} not installed (scripts/setup.sh installs it)")
    sys.exit(77)
run_cases({fn.__name__: fn for fn in GROUPS[GROUP]})
