#!/usr/bin/env python3
"""Burst test of the injected collector: every call recorded, or counted as dropped, exactly.

Usage: python3 burst_test.py LIBTRACETUNE_COLLECTOR.so TRACETUNE SOURCE_DIR

Compiles bench/io_bench.c with `cc` and runs `io_bench burst FILE SECONDS 8 lseek END` under
the collector: 8 threads, each with its own descriptor of FILE, calling lseek(fd, 0, SEEK_CUR)
as fast as they can (the cheapest recorded call: millions per second), each also opening FILE
once (and closing it when joined); io_bench prints each thread's tid and call count. Then:
- in the raw record file (a header-only walk of the chunks, independent of the merger), the I/O
  records per thread and the counts of the Dropped records;
- in the merged trace (`tracetune merge`, `tracetune info --json`), io_calls and the dropped
  diagnostics (and no torn record, no skipped file);
and both must account for every call: recorded + dropped == calls made.

Cases: no limit (nothing dropped; per thread exact); killed by SIGKILL mid-burst, and exit()
while the threads still run (every call made is recorded: at most one per thread more than the
program counted, cut off in between);
a file-size limit (RLIMIT_FSIZE) that stops recording mid-burst, with the TSC and with the
monotonic I/O clock (drops must happen, and add up exactly).

And the process ending while its threads still make calls after a file-size limit stopped
recording: by exit() (calls made after the collector's exit handler wrote its Dropped records)
and by SIGKILL (no exit handler at all): their drops are counted in the record file's header
(kDropsInHeader), which the walk below and the merge add to the Dropped records.

Asserts exactness only, never speed; prints the rates reached. Prints one line per case and
"N passed, M failed"; exits non-zero when anything failed.
"""
import json
import mmap
import os
import re
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

THREADS = 8
HEADER_FMT = "<8sIIIIqqqqqiiiiII"  # FileHeader up to chunks_reserved (record_format.h)
HEADER_DROPPED = "<4Q", 152  # FileHeader::dropped: format and offset
K_DROPS_IN_HEADER = 0x20
HEADER_SIZE, CHUNK_SIZE = 4096, 1 << 20
K_RECORDING_STOPPED = 8
RT_IO, RT_DROPPED, RT_IO_COMPACT = 4, 11, 13


class Failure(Exception):
    pass


def expect(cond, message):
    if not cond:
        raise Failure(message)


def walk_raw(path):
    """(flags, {tid: I/O records}, records counted as dropped) of one .ttr file."""
    io, dropped = {}, 0
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        head = struct.unpack_from(HEADER_FMT, data, 0)
        flags, chunks = head[4], head[14]
        expect(head[0] == b"TTRECORD" and head[2] == HEADER_SIZE and head[3] == CHUNK_SIZE, "bad file header")
        unpack = struct.Struct("<IHHII").unpack_from
        for c in range(chunks):
            off = HEADER_SIZE + c * CHUNK_SIZE
            end = off + CHUNK_SIZE
            while off + 16 <= end:
                size, rtype, _, _, tid = unpack(data, off)
                if size == 0:
                    break
                expect(size % 8 == 0 and off + size <= end, f"bad record frame at {off}")
                if rtype == RT_IO or rtype == RT_IO_COMPACT:
                    io[tid] = io.get(tid, 0) + 1
                elif rtype == RT_DROPPED:
                    dropped += struct.unpack_from("<Q", data, off + 16)[0]
                off += size
        if flags & K_DROPS_IN_HEADER:  # drops no Dropped record carries yet
            dropped += sum(struct.unpack_from(HEADER_DROPPED[0], data, HEADER_DROPPED[1]))
    return flags, io, dropped


class Burst:
    def __init__(self, lib, tracetune, source, root):
        self.lib, self.tracetune, self.root = lib, tracetune, root
        self.bench = os.path.join(root, "io_bench")
        subprocess.run(["cc", "-O2", "-pthread", "-o", self.bench, os.path.join(source, "bench/io_bench.c")],
                       check=True)
        self.file = os.path.join(root, "blob")
        with open(self.file, "wb") as fh:
            fh.write(b"x" * 4096)

    def run(self, case):
        """Runs the burst of `case` into a fresh raw directory; returns (raw dir, pid of the
        process that ran the threads, {tid: calls}, calls/s)."""
        raw = os.path.join(self.root, case.name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETUNE_")}
        env.update(LD_PRELOAD=self.lib, TRACETUNE_OUTPUT_DIR=raw, **case.env)
        limit = (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))) if case.fsize else None
        # With a file-size limit the burst runs on until more calls were made than the file can
        # hold records (each at least a 16-byte header): the limit is then reached at any speed
        # (an ASan build, a loaded machine), not only when SECONDS happen to suffice.
        min_calls = case.fsize // 16 + 1 if case.fsize else 0
        cmd = [self.bench, "burst", self.file, str(case.seconds), str(case.threads), "lseek", case.end, str(min_calls)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=limit)
        out, err = proc.communicate(timeout=120)
        expect(proc.returncode == 0, f"io_bench exited {proc.returncode}: {err.strip()}")
        child = re.search(r"child pid=(\d+)", out)
        calls = {int(t): int(n) for t, n in re.findall(r"tid=(\d+) calls=(\d+)", out)}
        expect(len(calls) == case.threads, f"io_bench printed {len(calls)} threads")
        rate = float(re.search(r"calls_per_s=(\d+)", out).group(1))
        return raw, int(child.group(1)) if child else proc.pid, calls, rate

    def merged(self, raw):
        """(io_calls, dropped, torn or skipped diagnostics) of the merged trace of `raw`."""
        db = raw + ".db"
        subprocess.run([self.tracetune, "merge", raw, "-o", db], check=True, capture_output=True)
        info = json.loads(subprocess.run([self.tracetune, "info", "--json", db], check=True, capture_output=True,
                                         text=True).stdout)
        os.unlink(db)
        diags = info["diagnostics"]
        dropped = sum(d["count"] for d in diags if d["kind"] == "dropped")
        bad = [d for d in diags if d["kind"] == "skipped" or "torn" in d["reason"]]
        return info["counts"]["io_calls"], dropped, bad


class Case:
    """A burst: `end` join (threads stopped and joined, each closing its fd), exit or kill (the
    process ends while its threads still run); `fsize` an RLIMIT_FSIZE that stops recording."""

    def __init__(self, name, seconds, end="join", fsize=None, env=None, threads=THREADS, attempts=1):
        self.name, self.seconds, self.end, self.fsize, self.env = name, seconds, end, fsize, env or {}
        self.threads, self.attempts = threads, attempts  # attempts: runs, all of which must pass


def raw_file_of(raw, pid):
    for d, _, names in os.walk(raw):
        for n in names:
            if n.startswith(f"proc-{pid}-") and n.endswith(".ttr"):
                return os.path.join(d, n)
    raise Failure(f"no record file of pid {pid}")


def check_case(b, case):
    raw, pid, calls, rate = b.run(case)
    path = raw_file_of(raw, pid)
    flags, io, raw_dropped = walk_raw(path)
    per_thread = 2 if case.end == "join" else 1  # open (+ close when joined)
    expected = sum(calls.values()) + per_thread * case.threads
    # A thread cut off by the process's end may have made one call it did not count yet.
    slack = 0 if case.end == "join" else case.threads
    recorded = sum(io.get(tid, 0) for tid in calls)
    expect(set(io) <= set(calls), f"I/O records on threads that made no call: {set(io) - set(calls)}")
    diff = recorded + raw_dropped - expected
    miss = f"{-diff} lost uncounted" if diff < 0 else f"{diff} more than the calls made"
    expect(0 <= diff <= slack, f"raw: {recorded} recorded + {raw_dropped} dropped, {expected} calls made: {miss}")
    events, dropped, bad = b.merged(raw)
    expect(not bad, f"merge diagnostics: {bad}")
    expect(events == recorded and dropped == raw_dropped,
           f"merged {events} I/O events + {dropped} dropped, raw {recorded} + {raw_dropped}")
    if case.fsize is None:
        expect(raw_dropped == 0 and not flags & K_RECORDING_STOPPED, f"{raw_dropped} dropped without a limit")
        for tid, n in calls.items():
            expect(0 <= io.get(tid, 0) - n - per_thread <= slack // case.threads,
                   f"thread {tid}: {io.get(tid, 0)} I/O records for {n} + {per_thread} calls")
    else:
        expect(flags & K_RECORDING_STOPPED and raw_dropped > 0 and recorded > case.threads,
               f"the limit should stop recording mid-burst: flags {flags:#x}, {recorded} recorded, "
               f"{raw_dropped} dropped")
        expect(os.path.getsize(path) <= case.fsize, "record file grew past RLIMIT_FSIZE")
    shutil.rmtree(raw)
    return (f"{sum(calls.values())} calls at {rate:,.0f}/s: {recorded} recorded + {raw_dropped} dropped "
            f"= {recorded + raw_dropped} for {expected} calls ({per_thread * case.threads} of them open/close)")


def main():
    args = sys.argv[1:]
    if len(args) != 3 or not os.path.isfile(args[0]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    root = tempfile.mkdtemp(prefix="tt-burst-test-")
    # 9 first chunks (the main thread's and one per burst thread) + 15 shared: the limit is hit
    # after about 15 x 26,000 records, a fraction of a second into the burst.
    fsize = HEADER_SIZE + 24 * CHUNK_SIZE
    # Two threads for stopped_then_exit: each may be one call over, far fewer than the calls
    # the exit handler's Dropped records would miss; three runs, as the threads may not get a
    # CPU while exit() flushes.
    cases = [Case("no_limit", 0.5), Case("killed", 0.2, "kill"), Case("exit_while_running", 0.2, "exit"),
             Case("file_size_limit", 0.5, fsize=fsize),
             Case("file_size_limit_monotonic", 0.5, fsize=fsize, env={"TRACETUNE_IO_CLOCK": "monotonic"}),
             Case("stopped_then_exit", 0.3, "exit", fsize=fsize, threads=2, attempts=3),
             Case("stopped_then_killed", 0.3, "kill", fsize=fsize)]
    passed = failed = 0
    try:
        b = Burst(os.path.abspath(args[0]), args[1], args[2], root)
        for case in cases:
            name = case.name
            try:
                for _ in range(case.attempts):
                    summary = check_case(b, case)
            except (Failure, subprocess.SubprocessError, OSError) as e:
                failed += 1
                print(f"FAIL burst_{name}: {e}")
            else:
                passed += 1
                print(f"PASS burst_{name}: {summary}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
