#!/usr/bin/env python3
"""A record file truncated while `tracetune merge` reads it (a leftover process of the job
truncating its file during record's merge): the merge must survive it, keep what it read, and
say where reading stopped. It used to map the file and die of SIGBUS (exit 135), losing the
trace (and, in `record`, the job's exit status and the lock file).

A preloaded shim (built here with cc) truncates each record file one page into its second
chunk the first time tracetune reads (or maps) that far, the moment a leftover process could.

usage: merge_truncated_test.py TRACETUNE
"""
import json
import os
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <unistd.h>

/* The record file behind fd, cut one page into its second chunk, once per file. */
#define CUT_AT (4096 + (1 << 20))
static void cut(int fd, off_t offset) {
  static char done[64][512];
  static int n;
  char link[64], path[512];
  if (offset < CUT_AT) return;
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = readlink(link, path, sizeof path - 1);
  if (len <= 4 || len >= (ssize_t)sizeof path) return;
  path[len] = 0;
  if (strcmp(path + len - 4, ".ttr") != 0) return;
  for (int i = 0; i < n; ++i)
    if (strcmp(done[i], path) == 0) return;
  if (n < 64) strcpy(done[n++], path);
  if (truncate(path, CUT_AT + 4096) != 0) perror("shim: truncate");
}

ssize_t pread(int fd, void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = dlsym(RTLD_NEXT, "pread");
  cut(fd, offset);
  return real(fd, buf, count, offset);
}
ssize_t pread64(int fd, void* buf, size_t count, off_t offset) {
  static ssize_t (*real)(int, void*, size_t, off_t);
  if (!real) real = dlsym(RTLD_NEXT, "pread64");
  cut(fd, offset);
  return real(fd, buf, count, offset);
}
void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  static void* (*real)(void*, size_t, int, int, int, off_t);
  if (!real) real = dlsym(RTLD_NEXT, "mmap");
  void* p = real(addr, length, prot, flags, fd, offset);
  if (fd >= 0 && p != MAP_FAILED && length > CUT_AT + 4096) cut(fd, CUT_AT);
  return p;
}
"""
# Enough I/O records for several 1 MiB chunks in one process.
JOB = ["/usr/bin/python3", "-c", "for i in range(40000):\n    f = open('/etc/hostname'); f.read(); f.close()"]

with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    (tmp / "shim.c").write_text(SHIM)
    r = subprocess.run(["cc", "-shared", "-fPIC", "-o", str(tmp / "shim.so"), str(tmp / "shim.c"), "-ldl"],
                       capture_output=True, text=True)
    check("the shim builds", r.returncode == 0, r.stderr)
    r = subprocess.run([TRACETUNE, "record", "--keep-raw", "-o", str(tmp / "job.db"), "--", *JOB], capture_output=True,
                       text=True, timeout=300)
    check("the job is recorded", r.returncode == 0, r.stderr[-2000:])
    ttr = sorted((tmp / "job.db.raw").rglob("*.ttr"), key=lambda p: p.stat().st_size)
    check("its record file holds more than two chunks", ttr and ttr[-1].stat().st_size > 4096 + 2 * (1 << 20),
          [(str(p), p.stat().st_size) for p in ttr])

    # the shim comes before the sanitizer runtime of an ASan build of tracetune: tell ASan that
    # is intended (the variable means nothing to other builds)
    asan = os.environ.get("ASAN_OPTIONS", "")
    env = dict(os.environ, LD_PRELOAD=str(tmp / "shim.so"),
               ASAN_OPTIONS=(asan + ":" if asan else "") + "verify_asan_link_order=0")
    r = subprocess.run([TRACETUNE, "merge", str(tmp / "job.db.raw"), "-o", str(tmp / "cut.db")], capture_output=True,
                       text=True, timeout=300, env=env)
    check("merge survives the truncation (exit 0, no SIGBUS)", r.returncode == 0, f"rc={r.returncode} {r.stderr[-2000:]}")
    info = subprocess.run([TRACETUNE, "info", "--json", str(tmp / "cut.db")], capture_output=True, text=True,
                          timeout=60)
    check("the trace is written", info.returncode == 0, info.stderr)
    if info.returncode == 0:
        doc = json.loads(info.stdout)
        reasons = [d["reason"] for d in doc["diagnostics"]]
        check("a diagnostic says the file shrank while it was read",
              any("reading stopped early" in x and "shrank" in x for x in reasons), reasons)
        check("the first chunk's records are kept", doc["counts"]["io_calls"] > 10000, doc["counts"])
finish()
