#!/usr/bin/env python3
"""Burst test of the injected collector: every call recorded, or counted as dropped, exactly.

Usage: python3 burst_test.py LIBTRACETUNE_COLLECTOR.so TRACETUNE SOURCE_DIR

Compiles bench/io_bench.c with `cc` and runs `io_bench burst FILE SECONDS 8 lseek` under the
collector: 8 threads, each with its own descriptor of FILE, calling lseek(fd, 0, SEEK_CUR) as
fast as they can (the cheapest recorded call: millions per second), each thread also opening and
closing FILE once; io_bench prints each thread's tid and call count. Then, for every case:
- in the raw record file (a header-only walk of the chunks, independent of the merger), the I/O
  records per thread and the counts of the Dropped records;
- in the merged trace (`tracetune merge`, `tracetune info --json`), io_calls and the dropped
  diagnostics;
and both must account for every call: recorded + dropped == calls + 2 per thread, no torn record.

Cases: no limit (nothing may be dropped: per thread exact); a file-size limit (RLIMIT_FSIZE) that
stops recording mid-burst, with the TSC clock and with TRACETUNE_IO_CLOCK=monotonic (drops must
happen, and add up exactly). Asserts exactness only, never speed; prints the rates reached.
Prints one line per case and "N passed, M failed"; exits non-zero when anything failed.
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
HEADER_SIZE, CHUNK_SIZE = 4096, 1 << 20
K_RECORDING_STOPPED = 8
RT_IO, RT_DROPPED, RT_IO_COMPACT = 4, 11, 13


class Failure(Exception):
    pass


def expect(cond, message):
    if not cond:
        raise Failure(message)


def walk_raw(path):
    """(flags, {tid: I/O records}, records counted in Dropped records) of one .ttr file."""
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

    def run(self, name, seconds, fsize=None, extra_env=None):
        """Runs the burst into a fresh raw directory; returns (raw dir, {tid: calls}, calls/s)."""
        raw = os.path.join(self.root, name)
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETUNE_")}
        env.update(LD_PRELOAD=self.lib, TRACETUNE_OUTPUT_DIR=raw, **(extra_env or {}))
        limit = (lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))) if fsize else None
        proc = subprocess.run([self.bench, "burst", self.file, str(seconds), str(THREADS), "lseek"], env=env,
                              capture_output=True, text=True, timeout=120, preexec_fn=limit)
        expect(proc.returncode == 0, f"io_bench exited {proc.returncode}: {proc.stderr.strip()}")
        calls = {int(t): int(n) for t, n in re.findall(r"tid=(\d+) calls=(\d+)", proc.stdout)}
        expect(len(calls) == THREADS, f"io_bench printed {len(calls)} threads")
        rate = float(re.search(r"calls_per_s=(\d+)", proc.stdout).group(1))
        return raw, calls, rate

    def merged(self, raw):
        """(io_calls, dropped, other diagnostics) of the merged trace of `raw`."""
        db = raw + ".db"
        subprocess.run([self.tracetune, "merge", raw, "-o", db], check=True, capture_output=True)
        info = json.loads(subprocess.run([self.tracetune, "info", "--json", db], check=True, capture_output=True,
                                         text=True).stdout)
        os.unlink(db)
        diags = info["diagnostics"]
        dropped = sum(d["count"] for d in diags if d["kind"] == "dropped")
        bad = [d for d in diags if d["kind"] in ("truncated", "skipped")]
        return info["counts"]["io_calls"], dropped, bad


def check_case(b, name, seconds, fsize=None, extra_env=None):
    raw, calls, rate = b.run(name, seconds, fsize, extra_env)
    files = [os.path.join(d, f) for d, _, fs in os.walk(raw) for f in fs if f.endswith(".ttr")]
    expect(len(files) == 1, f"{len(files)} record files")
    flags, io, raw_dropped = walk_raw(files[0])
    expected = sum(calls.values()) + 2 * THREADS  # each thread's open and close are recorded too
    recorded = sum(io.get(tid, 0) for tid in calls)
    expect(set(io) <= set(calls), f"I/O records on threads that made no call: {set(io) - set(calls)}")
    expect(recorded + raw_dropped == expected,
           f"raw: {recorded} recorded + {raw_dropped} dropped != {expected} calls "
           f"({expected - recorded - raw_dropped:+d} lost uncounted)")
    events, dropped, bad = b.merged(raw)
    expect(not bad, f"merge diagnostics: {bad}")
    expect(events == recorded and dropped == raw_dropped,
           f"merged {events} I/O events + {dropped} dropped, raw {recorded} + {raw_dropped}")
    if fsize is None:
        expect(raw_dropped == 0 and not flags & K_RECORDING_STOPPED, f"{raw_dropped} dropped without a limit")
        for tid, n in calls.items():
            expect(io.get(tid, 0) == n + 2, f"thread {tid}: {io.get(tid, 0)} I/O records for {n} + 2 calls")
    else:
        expect(flags & K_RECORDING_STOPPED and raw_dropped > 0 and recorded > 2 * THREADS,
               f"the limit should stop recording mid-burst: flags {flags:#x}, {recorded} recorded, "
               f"{raw_dropped} dropped")
        expect(os.path.getsize(files[0]) <= fsize, "record file grew past RLIMIT_FSIZE")
    shutil.rmtree(raw)
    return (f"{sum(calls.values())} calls at {rate:,.0f}/s: {recorded} recorded + {raw_dropped} dropped "
            f"= {expected} (calls + {2 * THREADS} open/close)")


def main():
    if len(sys.argv) != 4 or not os.path.isfile(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    root = tempfile.mkdtemp(prefix="tt-burst-test-")
    # 9 first chunks (the main thread's and one per burst thread) + 15 shared: the limit is hit
    # after about 15 x 26,000 records, a fraction of a second into the burst.
    fsize = HEADER_SIZE + 24 * CHUNK_SIZE
    cases = [("no_limit", 1, None, None), ("file_size_limit", 0.5, fsize, None),
             ("file_size_limit_monotonic", 0.5, fsize, {"TRACETUNE_IO_CLOCK": "monotonic"})]
    passed = failed = 0
    try:
        b = Burst(os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3], root)
        for name, seconds, limit, env in cases:
            try:
                summary = check_case(b, name, seconds, limit, env)
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
