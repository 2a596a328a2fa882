#!/usr/bin/env python3
"""Integration test of the injected collector (libtracetune_collector.so) on real processes.

Usage: python3 collector_test.py /path/to/libtracetune_collector.so

Compiles collector_targets.c (next to this file) with `cc`, runs its sub-commands with
LD_PRELOAD=<library> and TRACETUNE_OUTPUT_DIR=<temp dir>, then reads the per-process .ttr
files with an independent parser written from record_format.h (header, chunks, records,
checksums) and checks counts, bytes, paths, process relations, exit data, file modes and
redaction. Python standard library only. Prints one line per test and "N passed, M failed";
exits non-zero when anything failed.
"""

import glob
import os
import random
import shutil
import stat
import struct
import string
import subprocess
import sys
import tempfile
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ttr_checksum import record_checksum  # noqa: E402

# ---- record_format.h, transcribed ----

MAGIC = b"TTRECORD"
FORMAT_VERSION = 2
HEADER_SIZE = 4096
CHUNK_SIZE = 1 << 20
HEADER_FMT = "<8sIIIIqqqqqiiiiII64s"  # FileHeader up to and including host

K_EXITED, K_EXEC_REPLACED, K_FORK_CHILD, K_RECORDING_STOPPED, K_IO_CLOCK_TSC = 1, 2, 4, 8, 16

RT_STRING, RT_PROCESS_INFO, RT_THREAD_NAME, RT_IO, RT_RANGE, RT_MARK = 1, 2, 3, 4, 5, 6
RT_STEP, RT_FORK, RT_EXEC, RT_EXIT, RT_DROPPED, RT_COUNTER = 7, 8, 9, 10, 11, 12
RT_IO_COMPACT, RT_CLOCK_SYNC = 13, 14

IO_FUNCS = [
    "Open", "Open64", "OpenAt", "OpenAt64", "Creat", "Creat64", "Open2", "Open64_2", "OpenAt2",
    "Read", "Pread", "Pread64", "Readv", "Preadv", "Preadv64", "Preadv2",
    "Write", "Pwrite", "Pwrite64", "Writev",
    "Close", "Lseek", "Lseek64",
    "Stat", "Fstat", "Lstat", "Fstatat", "Statx", "Stat64", "Fstat64", "Lstat64", "Fstatat64",
    "Mmap", "Mmap64",
    "Fopen", "Fopen64", "Fread", "Fwrite", "Fclose",
]
OPEN_FUNCS = {"Open", "Open64", "OpenAt", "OpenAt64", "Open2", "Open64_2", "OpenAt2"}
PREAD_FUNCS = {"Pread", "Pread64"}

PAYLOAD_FMT = {
    RT_PROCESS_INFO: "<IIII",
    RT_THREAD_NAME: "<II",
    RT_IO: "<qqqqqiiIB3x",
    RT_RANGE: "<qqIIIIQHBBI",
    RT_MARK: "<qIIIB3x",
    RT_STEP: "<qqqB7x",
    RT_FORK: "<qq",
    RT_EXEC: "<qII",
    RT_EXIT: "<qii",
    RT_DROPPED: "<QII",
    RT_COUNTER: "<qIId",
    RT_IO_COMPACT: "<iIiiII",  # start delta, duration, result, fd, path, arg
    RT_CLOCK_SYNC: "<qq",      # tsc, CLOCK_MONOTONIC ns
}
# IoCompact's header flags: func, bytes/offset in arg, errno (record_format.h)
IO_FUNC_MASK, IO_BYTES_IS_RESULT, IO_BYTES_IN_ARG, IO_OFFSET_IN_ARG, IO_ERR_SHIFT = 0x3F, 64, 128, 256, 9




class Io:
    __slots__ = ("start", "end", "bytes", "offset", "result", "fd", "err", "path", "func", "tid")


class TraceFile:
    """One parsed proc-*.ttr file. `problems` lists every format violation found."""

    def __init__(self, path):
        self.path = path
        self.problems = []
        self.records = []  # (type, tid, values tuple or None)
        self.strings = {0: ""}
        self.torn = 0
        self.io_sizes = []  # bytes of each I/O record in the file, header included
        with open(path, "rb") as fh:
            data = fh.read()
        self._parse(data)

    def _parse(self, data):
        if len(data) < HEADER_SIZE:
            self.problems.append("file shorter than the header")
            return
        (magic, version, header_size, chunk_size, self.flags, self.pid, self.ppid, self.start_mono,
         self.start_real, self.end_mono, self.exit_status, self.rank, self.local_rank,
         self.world_size, self.chunks_reserved, _, host) = struct.unpack_from(HEADER_FMT, data, 0)
        self.host = host.split(b"\0", 1)[0].decode()
        if magic != MAGIC or version != FORMAT_VERSION:
            self.problems.append("bad magic/version")
        if header_size != HEADER_SIZE or chunk_size != CHUNK_SIZE:
            self.problems.append("bad header or chunk size")
        for c in range(self.chunks_reserved):
            base = HEADER_SIZE + c * CHUNK_SIZE
            if base + CHUNK_SIZE > len(data):
                self.problems.append(f"chunk {c} beyond end of file")
                break
            self._parse_chunk(data, base, base + CHUNK_SIZE)
        self._decode()

    def _parse_chunk(self, data, off, end):
        io_base = 0  # the IoCompact time chain restarts in every chunk
        while off + 16 <= end:
            size, rtype, flags, csum, tid = struct.unpack_from("<IHHII", data, off)
            if size == 0:
                return
            if size < 16 or size % 8 or off + size > end:
                self.torn += 1
                self.problems.append(f"bad record size {size} at {off}")
                return
            payload = data[off + 16:off + size]
            if record_checksum(rtype, flags, tid, payload[:self._payload_len(rtype, payload)]) != csum:
                self.torn += 1
                self.problems.append(f"checksum mismatch at {off}")
                return
            if rtype == RT_IO_COMPACT:
                payload = self._widen_io(payload, flags, io_base)
            if rtype in (RT_IO, RT_IO_COMPACT):
                rtype = RT_IO
                io_base = struct.unpack_from("<q", payload)[0]
                self.io_sizes.append(size)
            self.records.append((rtype, tid, payload))
            off += size

    @staticmethod
    def _widen_io(payload, flags, base):
        """An IoCompact payload as the wide IoRecord it stands for."""
        delta, duration, result, fd, path, arg = struct.unpack_from("<iIiiII", payload)
        start = base + delta
        offset = arg if flags & IO_OFFSET_IN_ARG else -1
        nbytes = result if flags & IO_BYTES_IS_RESULT else arg if flags & IO_BYTES_IN_ARG else -1
        return struct.pack(PAYLOAD_FMT[RT_IO], start, start + duration, nbytes, offset, result, fd,
                           flags >> IO_ERR_SHIFT, path, flags & IO_FUNC_MASK)

    @staticmethod
    def _payload_len(rtype, payload):
        """The unpadded payload length the writer checksummed (record_format.h)."""
        if rtype == RT_STRING and len(payload) >= 8:
            return min(len(payload), 8 + struct.unpack_from("<I", payload, 4)[0])
        if rtype in PAYLOAD_FMT:
            return min(len(payload), struct.calcsize(PAYLOAD_FMT[rtype]))
        return len(payload)

    def _decode(self):
        decoded = []
        for rtype, tid, payload in self.records:
            if rtype == RT_STRING:
                sid, length = struct.unpack_from("<II", payload)
                if 8 + length > len(payload):
                    self.problems.append("string longer than its record")
                    continue
                text = payload[8:8 + length].decode("utf-8", "replace")
                if sid in self.strings:
                    self.problems.append(f"string id {sid} defined twice")
                self.strings[sid] = text
                decoded.append((rtype, tid, (sid, text)))
            elif rtype in PAYLOAD_FMT:
                fmt = PAYLOAD_FMT[rtype]
                if struct.calcsize(fmt) > len(payload):
                    self.problems.append(f"record type {rtype} too short")
                    continue
                decoded.append((rtype, tid, struct.unpack_from(fmt, payload)))
            else:
                self.problems.append(f"unknown record type {rtype}")
        self.records = decoded
        self.io = []
        tsc_to_ns = self._tsc_map() if self.flags & K_IO_CLOCK_TSC else (lambda t: t)
        for rtype, tid, v in self.records:
            if rtype != RT_IO:
                continue
            r = Io()
            r.start, r.end, r.bytes, r.offset, r.result, r.fd, r.err, path_id, func = v
            r.start, r.end = tsc_to_ns(r.start), tsc_to_ns(r.end)
            r.tid = tid
            r.func = IO_FUNCS[func] if func < len(IO_FUNCS) else f"?{func}"
            r.path = self.string(path_id)
            if r.end < r.start:
                self.problems.append("I/O record ends before it starts")
            self.io.append(r)

    def _tsc_map(self):
        """TSC ticks -> CLOCK_MONOTONIC ns from the ClockSync pairs (record_format.h): piecewise
        linear, the nearest segment's rate outside; pairs under 10 us after the last kept skipped."""
        knots = []
        for tsc, mono in sorted(self.of_type(RT_CLOCK_SYNC)):
            if not knots or (tsc > knots[-1][0] and mono - knots[-1][1] >= 10_000):
                knots.append((tsc, mono))
        if len(knots) < 2:
            self.problems.append(f"TSC-timed I/O with {len(knots)} usable clock-sync pair(s)")
            return lambda t: t

        def to_ns(t):
            i = 1
            while i < len(knots) - 1 and knots[i][0] <= t:
                i += 1
            (t0, m0), (t1, m1) = knots[i - 1], knots[i]
            return m0 + (t - t0) * (m1 - m0) // (t1 - t0)
        return to_ns

    def string(self, sid):
        if sid not in self.strings:
            self.problems.append(f"undefined string id {sid}")
            return None
        return self.strings[sid]

    def of_type(self, rtype):
        return [v for t, _, v in self.records if t == rtype]

    def funcs(self, *names):
        return [r for r in self.io if r.func in names]

    def process_info(self):
        infos = self.of_type(RT_PROCESS_INFO)
        if len(infos) != 1:
            return None
        cmd, exe, env, cwd = infos[0]
        return {"cmd": self.string(cmd), "exe": self.string(exe), "env": self.string(env),
                "env_id": env, "cwd": self.string(cwd)}


# ---- harness ----

class Failure(Exception):
    pass


def expect(cond, message):
    if not cond:
        raise Failure(message)


def sanitized_host():
    out = []
    for i, c in enumerate(os.uname().nodename[:63]):
        ok = c.isascii() and (c.isalnum() or c in "-_" or (c == "." and i > 0))
        out.append(c if ok else "_")
    return "".join(out) or "unknown-host"


def has_interpreter(path):
    """True for a dynamically linked ELF (PT_INTERP present): LD_PRELOAD applies to it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return False
        phoff, = struct.unpack_from("<Q", head, 32)
        phentsize, phnum = struct.unpack_from("<HH", head, 54)
        for i in range(phnum):
            off = phoff + i * phentsize
            if off + 4 <= len(head) and struct.unpack_from("<I", head, off)[0] == 3:
                return True
    except OSError:
        pass
    return False


class Context:
    def __init__(self, lib, root):
        self.lib = os.path.abspath(lib)
        self.root = root
        self.counter = 0
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "collector_targets.c")
        self.targets = os.path.join(root, "collector_targets")
        subprocess.run(["cc", "-O2", "-pthread", "-o", self.targets, src], check=True)
        self.data = os.path.join(root, "data.bin")
        with open(self.data, "wb") as fh:
            fh.write(os.urandom(64 * 1024))

    def fresh_dir(self, name):
        self.counter += 1
        path = os.path.join(self.root, f"{self.counter:02d}-{name}")
        os.mkdir(path, 0o700)
        return path

    def env(self, out, extra=None):
        env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETUNE_")}
        env["LD_PRELOAD"] = self.lib
        if out is not None:
            env["TRACETUNE_OUTPUT_DIR"] = out
        env.update(extra or {})
        return env

    def run(self, args, out, extra_env=None, timeout=120, cwd=None, program=None):
        """Runs the target; returns (pid, returncode, stdout)."""
        proc = subprocess.Popen([program or self.targets] + args, env=self.env(out, extra_env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise Failure(f"{args[0] if args else program} timed out after {timeout}s (deadlock?)")
        if stderr.strip():
            sys.stderr.write(stderr.decode(errors="replace"))
        return proc.pid, proc.returncode, stdout.decode()

    @staticmethod
    def load(out, require_clean=True):
        files = [TraceFile(p) for p in sorted(glob.glob(os.path.join(out, "*", "proc-*.ttr")))]
        if require_clean:
            for f in files:
                expect(not f.problems, f"{os.path.basename(f.path)}: {f.problems[:3]}")
        return files


def by_pid(files, pid):
    matches = [f for f in files if f.pid == pid]
    expect(len(matches) == 1, f"expected one file for pid {pid}, found {len(matches)}")
    return matches[0]


def check_exit(f, status, how):
    exits = f.of_type(RT_EXIT)
    expect(len(exits) == 1, f"pid {f.pid}: {len(exits)} Exit records")
    expect(exits[0][1] == status and exits[0][2] == how,
           f"pid {f.pid}: Exit{exits[0][1:]} != ({status}, {how})")
    expect(f.flags & K_EXITED and f.exit_status == status and f.end_mono >= f.start_mono > 0,
           f"pid {f.pid}: header flags {f.flags:#x} status {f.exit_status}")


def check_preads(f, path, count):
    preads = [r for r in f.funcs(*PREAD_FUNCS) if r.path == path]
    expect(len(preads) == count, f"pid {f.pid}: {len(preads)} preads of {path}, expected {count}")
    total = sum(r.bytes for r in preads)
    expect(total == count * 4096, f"pid {f.pid}: {total} bytes, expected {count * 4096}")
    expect(all(r.result == 4096 and r.err == 0 for r in preads), "pread results")
    return preads


# ---- tests ----

def test_reads_counts_bytes_paths_and_modes(ctx):
    out = ctx.fresh_dir("reads")
    pid, rc, _ = ctx.run(["reads", ctx.data, "1000"], out)
    expect(rc == 0, f"exit status {rc}")
    files = ctx.load(out)
    expect(len(files) == 1, f"{len(files)} files")
    f = files[0]
    expect(f.pid == pid and f.ppid == os.getpid(), f"pid/ppid {f.pid}/{f.ppid}")
    expect(f.host == sanitized_host(), f"host {f.host!r}")
    preads = check_preads(f, ctx.data, 1000)
    expect(all(r.fd == preads[0].fd and r.offset >= 0 for r in preads), "pread fd/offset")
    # Format version 2: every I/O record but the first of its chunk fits the 40-byte form.
    wide = sum(1 for n in f.io_sizes if n != 40)
    expect(wide == 1 and len(f.io_sizes) >= 1002, f"{wide} of {len(f.io_sizes)} I/O records not 40 bytes")
    expect(f.funcs(*OPEN_FUNCS) and f.funcs(*OPEN_FUNCS)[0].path == ctx.data, "open record")
    closes = [r for r in f.funcs("Close") if r.path == ctx.data]
    expect(len(closes) == 1 and closes[0].result == 0, "close record with the path")
    check_exit(f, 0, 0)
    info = f.process_info()
    expect(info and info["exe"] == os.path.realpath(ctx.targets), f"process info {info}")
    expect(info["cmd"] == f"{ctx.targets} reads {ctx.data} 1000", f"command line {info['cmd']!r}")
    expect(info["cwd"] == os.getcwd(), f"cwd {info['cwd']!r}")
    names = [f.string(v[1]) for v in f.of_type(RT_THREAD_NAME) if v[0] == pid]
    expect(names == ["collector_targe"], f"main thread name {names}")
    host_dir = os.path.dirname(f.path)
    expect(stat.S_IMODE(os.stat(f.path).st_mode) == 0o600, "file mode is not 0600")
    expect(stat.S_IMODE(os.stat(host_dir).st_mode) == 0o700, "host directory mode is not 0700")


def test_io_times_on_the_monotonic_clock(ctx):
    """I/O records timed by the TSC (where it is invariant and the kernel's clocksource) or by
    CLOCK_MONOTONIC (TRACETUNE_IO_CLOCK=monotonic) land, once mapped, inside the process's own
    lifetime as its header gives it in CLOCK_MONOTONIC, in call order."""
    tsc = "constant_tsc" in open("/proc/cpuinfo").read() and open(
        "/sys/devices/system/clocksource/clocksource0/current_clocksource").read().strip() == "tsc"
    for mode in ("default", "monotonic"):
        out = ctx.fresh_dir("clock-" + mode)
        extra = {"TRACETUNE_IO_CLOCK": "monotonic"} if mode == "monotonic" else None
        pid, rc, _ = ctx.run(["reads", ctx.data, "3000"], out, extra_env=extra)
        expect(rc == 0, f"exit status {rc}")
        f = by_pid(ctx.load(out), pid)
        uses_tsc = bool(f.flags & K_IO_CLOCK_TSC)
        expect(uses_tsc == (tsc and mode == "default"), f"{mode}: TSC flag {uses_tsc}, machine TSC {tsc}")
        expect(len(f.of_type(RT_CLOCK_SYNC)) >= (3 if uses_tsc else 0), f"{mode}: clock-sync pairs")
        expect(len(f.io) >= 3002, f"{mode}: {len(f.io)} I/O records")
        for r in f.io:
            expect(f.start_mono <= r.start <= r.end <= f.end_mono,
                   f"{mode}: I/O {r.func} [{r.start}, {r.end}] outside the process [{f.start_mono}, {f.end_mono}]")
        starts = [r.start for r in f.io]
        expect(starts == sorted(starts), f"{mode}: I/O start times out of call order")


def test_io_times_match_the_programs_own_clock(ctx):
    """Each recorded pread lies between the CLOCK_MONOTONIC reads the program took around it
    (1 us of slack for the clock-sync pairs' reading error), across the sleeps that put the
    calls in several calibration segments when the TSC times them."""
    out = ctx.fresh_dir("brackets")
    pid, rc, stdout = ctx.run(["bracketed-preads", ctx.data, "2000"], out)
    expect(rc == 0, f"exit status {rc}")
    brackets = [tuple(map(int, line.split())) for line in stdout.splitlines()]
    f = by_pid(ctx.load(out), pid)
    preads = [r for r in f.funcs(*PREAD_FUNCS) if r.path == ctx.data]
    expect(len(preads) == len(brackets) == 2000, f"{len(preads)} preads, {len(brackets)} brackets")
    slack = 1000
    off = [(r.start, r.end, t0, t1) for r, (t0, t1) in zip(preads, brackets)
           if not t0 - slack <= r.start <= r.end <= t1 + slack]
    expect(not off, f"{len(off)} preads outside their brackets, e.g. {off[:3]} "
                    f"(TSC: {bool(f.flags & K_IO_CLOCK_TSC)}, {len(f.of_type(RT_CLOCK_SYNC))} pairs)")


def test_sigkill_keeps_committed_records(ctx):
    out = ctx.fresh_dir("kill")
    pid, rc, _ = ctx.run(["kill-after", ctx.data, "500"], out)
    expect(rc == -9, f"exit status {rc}")
    f = by_pid(ctx.load(out), pid)
    reads = [r for r in f.funcs("Read") if r.path == ctx.data]
    expect(len(reads) == 500, f"{len(reads)} reads kept, expected 500")
    expect(sum(r.bytes for r in reads) == 500 * 4096, "read bytes")
    expect(not f.of_type(RT_EXIT) and not f.flags & K_EXITED and f.end_mono == 0,
           "a SIGKILLed process must look truncated")


def test_fork_tree(ctx):
    out = ctx.fresh_dir("fork")
    pid, rc, _ = ctx.run(["fork-tree", ctx.data], out)
    expect(rc == 0, f"exit status {rc}")
    files = ctx.load(out)
    expect(len(files) == 3, f"{len(files)} files, expected 3")
    parent = by_pid(files, pid)
    children = [f for f in files if f is not parent]
    forks = sorted(v[1] for v in parent.of_type(RT_FORK))
    expect(forks == sorted(c.pid for c in children), f"Fork records {forks}")
    expect(not parent.funcs(*PREAD_FUNCS), "the parent did not pread")
    for c in children:
        expect(c.ppid == pid and c.flags & K_FORK_CHILD, f"child header ppid {c.ppid} flags {c.flags}")
        # The fd was opened by the parent: its path comes from the inherited fd table.
        check_preads(c, ctx.data, 10)
        check_exit(c, 0, 1)
        expect(c.start_mono >= parent.start_mono, "child starts after its parent")
    check_exit(parent, 0, 0)


def test_vfork_exec_200(ctx):
    out = ctx.fresh_dir("vfork")
    started = time.monotonic()
    pid, rc, _ = ctx.run(["vfork-exec", ctx.data, "200"], out, timeout=300)
    expect(rc == 0, f"exit status {rc}")
    files = ctx.load(out)
    parent = by_pid(files, pid)
    # The children closed the parent's fd before exec: the parent's bookkeeping must not see it.
    check_preads(parent, ctx.data, 1)
    closes = parent.funcs("Close")
    expect(len(closes) == 1 and closes[0].path == ctx.data, f"{len(closes)} close records in parent")
    expect(not parent.of_type(RT_EXEC), "a vfork child wrote an Exec record into the parent's file")
    check_exit(parent, 0, 0)
    images = [f for f in files if f is not parent]
    expect(all(f.ppid == pid and f.flags & K_EXITED for f in images), "exec'd /bin/true files")
    if has_interpreter("/bin/true"):
        expect(len(images) == 199, f"{len(images)} /bin/true files, expected 199")
    expect(time.monotonic() - started < 300, "too slow")


def test_exec_record_and_new_image(ctx):
    out = ctx.fresh_dir("exec")
    pid, rc, _ = ctx.run(["fork-exec"], out)
    expect(rc == 0, f"exit status {rc}")
    files = ctx.load(out)
    parent = by_pid(files, pid)
    forks = parent.of_type(RT_FORK)
    expect(len(forks) == 1, "one Fork record")
    child_pid = forks[0][1]
    same_pid = [f for f in files if f.pid == child_pid]
    before = [f for f in same_pid if f.flags & K_FORK_CHILD]
    expect(len(before) == 1, "the fork child's own file")
    execs = [before[0].string(v[1]) for v in before[0].of_type(RT_EXEC)]
    expect(execs == ["/nonexistent/tracetune-no-such-program", "/bin/true"], f"Exec records {execs}")
    expect(before[0].flags & K_EXEC_REPLACED and not before[0].flags & K_EXITED
           and before[0].end_mono > 0, f"exec'd child header flags {before[0].flags:#x}")
    if has_interpreter("/bin/true"):
        after = [f for f in same_pid if f is not before[0]]
        expect(len(after) == 1 and after[0].ppid == pid and not after[0].flags & K_FORK_CHILD,
               "the new image writes its own file with the same pid")
        expect(after[0].process_info()["exe"] == os.path.realpath("/bin/true"), "new image exe")


def test_exit_code_unchanged(ctx):
    out = ctx.fresh_dir("exit")
    pid, rc, _ = ctx.run(["exit-code", "42"], out)
    expect(rc == 42, f"exit status {rc}")
    check_exit(by_pid(ctx.load(out), pid), 42, 0)
    out = ctx.fresh_dir("_exit")
    pid, rc, _ = ctx.run(["underscore-exit", "7"], out)
    expect(rc == 7, f"_exit status {rc}")
    check_exit(by_pid(ctx.load(out), pid), 7, 1)


def test_threads(ctx):
    out = ctx.fresh_dir("threads")
    pid, rc, _ = ctx.run(["threads", ctx.data, "4", "1000"], out)
    expect(rc == 0, f"exit status {rc}")
    f = by_pid(ctx.load(out), pid)
    preads = check_preads(f, ctx.data, 4000)
    per_tid = {}
    for r in preads:
        per_tid[r.tid] = per_tid.get(r.tid, 0) + 1
    expect(sorted(per_tid.values()) == [1000] * 4 and pid not in per_tid, f"per-thread {per_tid}")
    expect(f.chunks_reserved >= 5, f"{f.chunks_reserved} chunks: one per thread expected")


def test_io_mix_coverage(ctx):
    out = ctx.fresh_dir("iomix")
    work = ctx.fresh_dir("iomix-data")
    data = os.path.join(work, "input.bin")
    shutil.copy(ctx.data, data)
    written = os.path.join(work, "written.bin")
    pid, rc, _ = ctx.run(["io-mix", work, data], out)
    expect(rc == 0, f"exit status {rc}")
    f = by_pid(ctx.load(out), pid)

    def one(func, path, **fields):
        rs = [r for r in f.funcs(func) if r.path == path]
        expect(rs, f"no {func} record for {path}")
        for key, value in fields.items():
            expect(getattr(rs[0], key) == value, f"{func}.{key} = {getattr(rs[0], key)} != {value}")

    one("Stat", data, result=0)
    one("Lstat", data, result=0)
    one("Stat", "/nonexistent/tracetune-missing", result=-1, err=2)
    one("Fstatat", data, result=0)   # relative to a directory fd, joined
    one("Statx", data, result=0)
    one("OpenAt", data)
    one("Fstat", data, result=0)
    one("Readv", data, bytes=300, result=300)
    one("Preadv", data, bytes=300, offset=4096)
    one("Preadv2", data, bytes=300, offset=8192)
    one("Lseek", data, offset=10, result=10)
    one("Read", data, bytes=10, result=10, offset=-1)
    one("Mmap", data, bytes=4096, result=1)
    one("Write", written, bytes=512)
    one("Pwrite", written, bytes=256, offset=1024)
    one("Writev", written, bytes=300)
    one("Creat", written)
    one("Fopen", data, result=1)
    one("Fread", data, bytes=128, result=8)
    one("Fclose", data, result=0)
    one("Fwrite", written, bytes=77, result=77)
    one("Fclose", written, result=0)
    expect(not [r for r in f.io if r.func == "Mmap" and r.fd < 0], "anonymous mmaps are not I/O")
    on_100 = [(r.func, r.path, r.bytes) for r in f.io if r.fd == 100 and r.func in ("Pread", "Read")]
    expect(on_100 == [("Pread", data, 16), ("Read", "", 1)], f"dup2/close_range bookkeeping {on_100}")


def test_errno_preserved(ctx):
    out = ctx.fresh_dir("errno")
    _, rc, _ = ctx.run(["errno-check", ctx.data], out)
    expect(rc == 0, f"errno check failed with code {rc} under the collector")
    _, rc, _ = ctx.run(["errno-check", ctx.data], None)
    expect(rc == 0, f"errno check failed with code {rc} without output dir")


def test_thread_name(ctx):
    out = ctx.fresh_dir("tname")
    pid, rc, _ = ctx.run(["thread-name", "tt-worker-1"], out)
    expect(rc == 0, f"exit status {rc}")
    f = by_pid(ctx.load(out), pid)
    names = [f.string(v[1]) for v in f.of_type(RT_THREAD_NAME) if v[0] == pid]
    expect(names[-1:] == ["tt-worker-1"], f"thread names {names}")


def test_secrets_redacted(ctx):
    out = ctx.fresh_dir("env")
    while "abc" in out:  # the raw-bytes check below must not trip over our own paths
        out = ctx.fresh_dir("env")
    unique = "tt-" + uuid.uuid4().hex
    secrets = {"MY_API_TOKEN": "abc", "AWS_SECRET_ACCESS_KEY": unique + "1",
               "db_password": unique + "2", "HTTP_COOKIE": unique + "3",
               "GIT_CREDENTIALS": unique + "4", "X_AUTH_HEADER": unique + "5",
               "SSH_PASSWD": unique + "6"}
    pid, rc, _ = ctx.run(["exit-code", "0"], out, dict(secrets, TT_VISIBLE="hello-visible"))
    expect(rc == 0, f"exit status {rc}")
    f = by_pid(ctx.load(out), pid)
    env = f.process_info()["env"].splitlines()
    for name in secrets:
        expect(f"{name}=<redacted>" in env, f"{name} not redacted")
    expect("TT_VISIBLE=hello-visible" in env, "ordinary variables are kept")
    with open(f.path, "rb") as fh:
        raw = fh.read()
    expect(b"abc" not in raw and unique.encode() not in raw, "a secret value reached the file")
    expect(b"<redacted>" in raw, "no <redacted> marker in the file")

    out = ctx.fresh_dir("noenv")
    pid, rc, _ = ctx.run(["exit-code", "0"], out, {"TRACETUNE_NO_ENV": "1", "TT_VISIBLE": "hello"})
    f = by_pid(ctx.load(out), pid)
    expect(f.process_info()["env_id"] == 0, "TRACETUNE_NO_ENV=1 still recorded the environment")
    with open(f.path, "rb") as fh:
        expect(b"TT_VISIBLE" not in fh.read(), "environment text in the file with NO_ENV")


def test_secrets_by_name_and_value(ctx):
    """Issue 17 #2: secrets under other names, inside URLs and on the command line never reach
    the record file; the working directory (PWD) and ordinary values stay readable."""
    out = ctx.fresh_dir("env2")
    unique = "tt" + uuid.uuid4().hex[:12]
    rng = random.Random(unique)
    key = "Ab3" + "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(37))
    by_name = {"DB_PASS": unique + "a", "PGPASS": unique + "b", "SLACK_WEBHOOK": "https://hooks.example/" + unique + "c",
               "SESSION_ID": unique + "d", "AWS_CREDS": unique + "e", "PRIVATE_THING": unique + "f",
               "SENTRY_DSN": unique + "g", "REQUEST_SIGNATURE": unique + "h"}
    by_value = {"DATABASE_URL": f"postgres://admin:{unique}i@db.example:5432/prod",
                "HTTPS_PROXY": f"http://user:{unique}j@proxy.example:3128", "SOME_SETTING": key}
    args = ["-c", "exit 0", "sh", f"--password={unique}k", "--token", unique + "l", f"https://bob:{unique}m@git.example/r",
            "--lr=0.1", "resnet50_imagenet_Training_run-2024"]
    pid, rc, _ = ctx.run(args, out, dict(by_name, **by_value, TT_VISIBLE="hello-visible"), program="/bin/sh")
    expect(rc == 0, f"exit status {rc}")
    f = by_pid(ctx.load(out), pid)
    info = f.process_info()
    env = info["env"].splitlines()
    for name in by_name:
        expect(f"{name}=<redacted>" in env, f"{name} not redacted")
    expect("DATABASE_URL=postgres://<redacted>@db.example:5432/prod" in env, "URL password kept in DATABASE_URL")
    expect("HTTPS_PROXY=http://<redacted>@proxy.example:3128" in env, "URL password kept in HTTPS_PROXY")
    expect("SOME_SETTING=<redacted>" in env, f"a high-entropy value was kept: {[e for e in env if e.startswith('SOME')]}")
    expect("TT_VISIBLE=hello-visible" in env and any(e.startswith("PWD=/") for e in env), "ordinary variables or PWD lost")
    cmd = info["cmd"]
    expect("'--password=<redacted>' --token '<redacted>' 'https://<redacted>@git.example/r' --lr=0.1 resnet50_imagenet_Training_run-2024" in cmd,
           f"command line not redacted as expected: {cmd!r}")
    with open(f.path, "rb") as fh:
        raw = fh.read()
    expect(unique.encode() not in raw and key.encode() not in raw, "a secret value reached the record file")


def test_unset_output_dir_writes_nothing(ctx):
    cwd = ctx.fresh_dir("unset")
    for value in (None, ""):
        extra = {} if value is None else {"TRACETUNE_OUTPUT_DIR": value}
        _, rc, _ = ctx.run(["reads", ctx.data, "10"], None, extra, cwd=cwd)
        expect(rc == 0, f"exit status {rc}")
        _, rc, _ = ctx.run(["fork-tree", ctx.data], None, extra, cwd=cwd)
        expect(rc == 0, f"exit status {rc}")
    expect(os.listdir(cwd) == [], f"files written without an output dir: {os.listdir(cwd)}")


def test_unsafe_directories_refused(ctx):
    host = sanitized_host()
    out = ctx.fresh_dir("unsafe")
    os.mkdir(os.path.join(out, host))
    os.chmod(os.path.join(out, host), 0o777)
    _, rc, _ = ctx.run(["reads", ctx.data, "10"], out)
    expect(rc == 0, f"exit status {rc}")
    expect(os.listdir(os.path.join(out, host)) == [], "wrote into a world-writable directory")

    if os.geteuid() == 0:  # root can hand a directory to someone else: it must be refused
        out = ctx.fresh_dir("foreign")
        os.mkdir(os.path.join(out, host), 0o700)
        os.chown(os.path.join(out, host), 65534, 65534)
        _, rc, _ = ctx.run(["reads", ctx.data, "10"], out)
        expect(rc == 0, f"exit status {rc}")
        expect(os.listdir(os.path.join(out, host)) == [], "wrote into a directory owned by another user")

    out = ctx.fresh_dir("symlink")
    elsewhere = ctx.fresh_dir("symlink-target")
    os.symlink(elsewhere, os.path.join(out, host))
    _, rc, _ = ctx.run(["reads", ctx.data, "10"], out)
    expect(rc == 0, f"exit status {rc}")
    expect(os.listdir(elsewhere) == [], "followed a planted symlink")


def test_relative_output_dir(ctx):
    cwd = ctx.fresh_dir("relative")
    old_umask = os.umask(0o022)
    try:
        pid, rc, _ = ctx.run(["reads", ctx.data, "5"], "a/b", cwd=cwd)
    finally:
        os.umask(old_umask)
    expect(rc == 0, f"exit status {rc}")
    files = ctx.load(os.path.join(cwd, "a", "b"))
    expect(len(files) == 1 and files[0].pid == pid, "file under the relative directory")
    for d in ("a", "a/b"):
        expect(stat.S_IMODE(os.stat(os.path.join(cwd, d)).st_mode) == 0o700, f"{d} is not 0700")


PY_API = r"""
import ctypes, os, subprocess, sys
lib = ctypes.CDLL(sys.argv[1])
lib.tracetune_now_ns.restype = ctypes.c_int64
lib.tracetune_step.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
lib.tracetune_range.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64]
lib.tracetune_mark.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.tracetune_counter.argtypes = [ctypes.c_char_p, ctypes.c_double]
assert lib.tracetune_is_recording() == 1
t0 = lib.tracetune_now_ns()
fd = os.open(sys.argv[2], os.O_RDONLY)
for i in range(int(sys.argv[3])):  # CPython's subprocess: vfork + close_fds in the child
    subprocess.run(["/bin/true"], check=True)
os.pread(fd, 4096, 0)
os.close(fd)
t1 = lib.tracetune_now_ns()
lib.tracetune_step(0, t0, t1, 7)
lib.tracetune_step(9, t0, t1, 8)  # invalid kind: ignored
lib.tracetune_range(b"forward", b"model", t0, t1)
lib.tracetune_mark(b"checkpoint", None)
lib.tracetune_counter(b"loss", 0.25)
"""


def test_python_api_and_subprocess(ctx):
    out = ctx.fresh_dir("python")
    pid, rc, _ = ctx.run(["-c", PY_API, ctx.lib, ctx.data, "100"], out, program=sys.executable,
                         timeout=300)
    expect(rc == 0, f"python exit status {rc}")
    files = ctx.load(out)
    f = by_pid(files, pid)
    steps = f.of_type(RT_STEP)
    expect(len(steps) == 1 and steps[0][2] == 7 and steps[0][3] == 0 and steps[0][1] > steps[0][0],
           f"steps {steps}")
    ranges = f.of_type(RT_RANGE)
    expect(len(ranges) == 1 and f.string(ranges[0][2]) == "forward" and
           f.string(ranges[0][3]) == "model" and ranges[0][8] == 1, f"ranges {ranges}")
    marks = f.of_type(RT_MARK)
    expect(len(marks) == 1 and f.string(marks[0][1]) == "checkpoint" and marks[0][2] == 0, "marks")
    counters = f.of_type(RT_COUNTER)
    expect(len(counters) == 1 and f.string(counters[0][1]) == "loss" and counters[0][3] == 0.25,
           "counters")
    check_preads(f, ctx.data, 1)
    check_exit(f, 0, 0)
    children = [c for c in files if c.ppid == pid]
    if has_interpreter("/bin/true"):
        expect(len(children) == 100, f"{len(children)} /bin/true files, expected 100")


SECOND_COPY = r"""
import ctypes, sys
second = ctypes.CDLL(sys.argv[1])  # e.g. also named by CUDA_INJECTION64_PATH
print(second.tracetune_is_recording())
"""


def test_second_copy_stays_passive(ctx):
    # Static TLS headroom is raised here so this checks the single-instance logic only;
    # test_dlopen_fits_static_tls checks the TLS budget itself.
    out = ctx.fresh_dir("secondcopy")
    copy = os.path.join(ctx.fresh_dir("libcopy"), "libtracetune_collector_copy.so")
    shutil.copy(ctx.lib, copy)
    pid, rc, stdout = ctx.run(["-c", SECOND_COPY, copy], out, program=sys.executable,
                              extra_env={"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=1048576"})
    expect(rc == 0 and stdout.strip() == "0", f"second copy: rc {rc}, recording {stdout.strip()!r}")
    by_pid(ctx.load(out), pid)  # exactly one file for the process


def test_dlopen_fits_static_tls(ctx):
    # Without LD_PRELOAD the library is dlopen()ed (ctypes, CUDA_INJECTION64_PATH): its
    # initial-exec TLS must fit glibc's default static TLS surplus (checklist item 8).
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "GLIBC_TUNABLES")}
    proc = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])",
                           ctx.lib], env=env, capture_output=True, timeout=60)
    err = proc.stderr.decode(errors="replace").strip().splitlines()
    expect(proc.returncode == 0, f"dlopen failed: {err[-1] if err else proc.returncode}")


def test_fork_while_threads_intern(ctx):
    out = ctx.fresh_dir("forkstress")
    pid, rc, _ = ctx.run(["fork-stress", ctx.data, "3", "50"], out, timeout=300)
    expect(rc == 0, f"exit status {rc}")
    files = ctx.load(out)  # every file clean: no torn record, no undefined string id
    parent = by_pid(files, pid)
    children = [f for f in files if f is not parent]
    expect(len(children) == 50, f"{len(children)} child files, expected 50")
    for c in children:
        expect(c.ppid == pid and c.flags & K_FORK_CHILD, "child header")
        check_preads(c, ctx.data, 10)
        check_exit(c, 0, 1)
    expect(len(parent.of_type(RT_FORK)) == 50, "Fork records")
    stats = [r for r in parent.funcs("Stat") if r.path and r.path.startswith("/nonexistent/")]
    expect(len(stats) > 0 and len({r.path for r in stats}) == len(stats), "unique stat paths")


def test_signal_handler_reentry(ctx):
    out = ctx.fresh_dir("signals")
    pid, rc, stdout = ctx.run(["signal-reads", ctx.data, "20000"], out)
    expect(rc == 0, f"exit status {rc}")
    handler_calls = int(stdout.split()[1])
    f = by_pid(ctx.load(out), pid)
    main_reads = [r for r in f.funcs(*PREAD_FUNCS) if r.bytes == 4096]
    handler_reads = [r for r in f.funcs(*PREAD_FUNCS) if r.bytes == 64]
    expect(len(main_reads) == 20000, f"{len(main_reads)} main-thread preads, expected 20000")
    # Handler calls that interrupt a hook are not recorded (re-entry guard), never doubled.
    expect(len(handler_reads) <= handler_calls, f"{len(handler_reads)} > {handler_calls}")
    check_exit(f, 0, 0)


def test_file_size_limit_stops_recording_not_the_job(ctx):
    import resource
    out = ctx.fresh_dir("fsize")
    limit = HEADER_SIZE + 2 * CHUNK_SIZE + 100  # room for two chunks only
    n = 100000                                 # ~4 MB of 40-byte records

    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    proc = subprocess.Popen([ctx.targets, "reads", ctx.data, str(n)], env=ctx.env(out),
                            preexec_fn=set_limit)
    expect(proc.wait(timeout=120) == 0, f"exit status {proc.returncode} (SIGXFSZ would be -25)")
    f = by_pid(ctx.load(out), proc.pid)
    expect(f.flags & K_RECORDING_STOPPED and f.chunks_reserved == 2, f"flags {f.flags:#x}")
    recorded = len(f.funcs(*PREAD_FUNCS))
    dropped = f.of_type(RT_DROPPED)
    expect(len(dropped) == 1, f"{len(dropped)} Dropped records")
    reason = f.string(dropped[0][1])
    expect("file too large" in reason, f"reason {reason!r}")
    # Exact accounting: every pread not recorded is counted, plus the final close.
    expect(recorded + dropped[0][0] == n + 1, f"{recorded} recorded + {dropped[0][0]} dropped != {n + 1}")
    check_exit(f, 0, 0)
    expect(os.path.getsize(f.path) <= limit, "file grew past the limit")


TESTS = [
    test_reads_counts_bytes_paths_and_modes,
    test_io_times_on_the_monotonic_clock,
    test_io_times_match_the_programs_own_clock,
    test_sigkill_keeps_committed_records,
    test_fork_tree,
    test_vfork_exec_200,
    test_exec_record_and_new_image,
    test_exit_code_unchanged,
    test_threads,
    test_io_mix_coverage,
    test_errno_preserved,
    test_thread_name,
    test_secrets_redacted,
    test_secrets_by_name_and_value,
    test_unset_output_dir_writes_nothing,
    test_unsafe_directories_refused,
    test_relative_output_dir,
    test_python_api_and_subprocess,
    test_second_copy_stays_passive,
    test_dlopen_fits_static_tls,
    test_fork_while_threads_intern,
    test_signal_handler_reentry,
    test_file_size_limit_stops_recording_not_the_job,
]


def main():
    if len(sys.argv) != 2 or not os.path.isfile(sys.argv[1]):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 64
    root = tempfile.mkdtemp(prefix="tt-collector-test-")
    passed = failed = 0
    try:
        ctx = Context(sys.argv[1], root)
        for test in TESTS:
            try:
                test(ctx)
            except Failure as e:
                failed += 1
                print(f"FAIL {test.__name__}: {e}")
            except Exception as e:  # a crash in the test itself is a failure too
                failed += 1
                print(f"FAIL {test.__name__}: {type(e).__name__}: {e}")
            else:
                passed += 1
                print(f"PASS {test.__name__}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
