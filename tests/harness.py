"""Shared by the Python test scripts (tests/integration, tests/gpu): named checks that print
ok/FAIL as they go, cases run one per temporary directory (a crash in a case is a failure, not
a runner error), read-only queries of a trace DB, and a free TCP port for torchrun.

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from harness import check, query, free_port, run_cases, finish
"""
import os
import socket
import sqlite3
import sys
import tempfile

# The Python (with its PyTorch) that runs the jobs of the tests: Debian's python3 with
# python3-torch 1.13 by default; ctest's torch2 tests set TT_TORCH_PYTHON to the PyTorch 2.x
# virtual environment that scripts/setup.sh makes (tests/CMakeLists.txt).
TORCH_PYTHON = os.environ.get("TT_TORCH_PYTHON") or "/usr/bin/python3"
TORCHRUN = os.path.join(os.path.dirname(TORCH_PYTHON), "torchrun")  # beside it (/usr/bin, the venv's bin)


def run_under_torch_python():
    """Re-executes this test script under TORCH_PYTHON unless it already runs there (ctest's
    Python may have no torch, or another one)."""
    if os.environ.pop("_TT_REEXEC", None):
        return
    if os.path.abspath(sys.executable) != os.path.abspath(TORCH_PYTHON):
        os.environ["_TT_REEXEC"] = "1"
        os.execv(TORCH_PYTHON, [TORCH_PYTHON, *sys.argv])

results = []  # (name, passed, detail)


def check(name, cond, detail=""):
    results.append((name, bool(cond), detail))
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else f": {detail}"), flush=True)
    return bool(cond)


def query(db, sql, *args):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def peak_rss(cmd, env=None):
    """(peak RSS in bytes, exit status) of the command, itself alone (wait4's ru_maxrss): not what
    this Python process shared with it at fork time."""
    pid = os.spawnve(os.P_NOWAIT, cmd[0], cmd, os.environ if env is None else env)
    _, status, usage = os.wait4(pid, 0)
    return usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status)


def lowest_peak_rss(cmd, env=None, runs=2, fresh=None):
    """The lowest peak RSS in bytes of `runs` runs of the command (a run's peak can catch the
    allocator at a bad moment; the lowest is the command's own need); exits with a FAIL line
    when a run fails. `fresh`: a file removed before each run, for each to write it anew."""
    peaks = []
    for _ in range(runs):
        if fresh is not None:
            try:
                os.unlink(fresh)
            except FileNotFoundError:
                pass
        rss, code = peak_rss(cmd, env)
        if code != 0:
            sys.exit(f"FAIL: {' '.join(map(str, cmd))} exited with {code}")
        peaks.append(rss)
    return min(peaks)


def free_port():
    """A TCP port free right now: torchrun's default 29500 may be taken by another job."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def run_cases(cases, only=()):
    """Runs each case (name -> fn(tmpdir)) selected by `only` (all when empty), prints the
    tally and exits 0 only when every check passed and at least one ran."""
    for name, fn in cases.items():
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                fn(tmp)
            except Exception as e:  # a crash in a case is a failure, not a test-runner error
                check(f"{name}: raised {type(e).__name__}", False, str(e))
    finish()


def finish():
    """Prints the tally; exits 0 only when every check passed and at least one ran."""
    passed = sum(1 for _, ok, _ in results if ok)
    print(f"{passed} passed, {len(results) - passed} failed")
    sys.exit(0 if results and passed == len(results) else 1)
