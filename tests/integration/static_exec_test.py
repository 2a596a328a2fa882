#!/usr/bin/env python3
"""A job that execs a statically linked program: LD_PRELOAD cannot reach that program, so its
I/O is missing from the trace. The collector reads the program's ELF headers at exec (no
PT_INTERP: static) and the trace says what was left out: a diagnostic, and a line under "not
recorded" in record's summary instead of "(nothing left out)". Both ways in: a shell's
execve with a full path, and execvp searching PATH for a bare name. A dynamically linked
program exec'd the same way is not reported (the control).

usage: static_exec_test.py TRACETUNE   (exit 77, skipped, without a static libc to link with)
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

READER = r"""
#include <stdio.h>
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "r");
  char buf[256];
  size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
  if (f) fclose(f);
  printf("read %zu\n", n);
  return 0;
}
"""
LAUNCHER = r"""
#include <stdio.h>
#include <unistd.h>
int main(int argc, char** argv) { execvp(argv[1], argv + 1); perror("execvp"); return 127; }
"""


def build(tmp, name, source, *flags):
    src = tmp / f"{name}.c"
    src.write_text(source)
    r = subprocess.run(["cc", "-O1", *flags, "-o", str(tmp / name), str(src)], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def record(tmp, name, job, env=None):
    db = tmp / f"{name}.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--", *job], capture_output=True, text=True, timeout=120,
                       env=env)
    check(f"{name}: record exits 0", r.returncode == 0, r.stderr[-2000:])
    info = subprocess.run([TRACETUNE, "info", "--json", str(db)], capture_output=True, text=True, timeout=60)
    diagnostics = json.loads(info.stdout).get("diagnostics", []) if info.returncode == 0 else []
    return r.stderr, json.dumps(diagnostics)


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    ok, err = build(tmp, "reader_static", READER, "-static")
    if not ok:
        print(f"SKIP: cannot link statically ({err.strip()[:200]})")
        sys.exit(77)
    ok, err = build(tmp, "reader_dynamic", READER)
    check("the dynamic reader builds", ok, err)
    ok, err = build(tmp, "launcher", LAUNCHER)
    check("the execvp launcher builds", ok, err)
    data = tmp / "data.txt"
    data.write_text("x" * 100)
    static = str(tmp / "reader_static")
    sh = shutil.which("sh")

    summary, diags = record(tmp, "shell", [sh, "-c", f"{static} {data}; true"])
    check("shell: the summary names the static program under 'not recorded'",
          f"I/O of {static} (statically linked" in summary and "(nothing left out)" not in summary, summary)
    check("shell: a diagnostic names it", f"I/O of {static}" in diags, diags)

    env = dict(os.environ, PATH=f"{tmp}:{os.environ.get('PATH', '/usr/bin:/bin')}")
    summary, diags = record(tmp, "execvp", [str(tmp / "launcher"), "reader_static", str(data)], env=env)
    check("execvp: the program found in PATH is named", f"I/O of {static} (statically linked" in summary, summary)

    summary, diags = record(tmp, "dynamic", [sh, "-c", f"{tmp / 'reader_dynamic'} {data}; true"])
    check("dynamic: nothing is left out", "(nothing left out)" in summary and "statically linked" not in summary,
          summary)
finish()
