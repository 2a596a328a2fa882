#!/usr/bin/env python3
"""NVTX injection end to end: build nvtx_program.cpp, run it with the collector injected,
decode the raw record file (.ttr) it leaves and check every NVTX range and mark.

Usage: python3 nvtx_test.py /path/to/libtracetune_collector.so [nccl]

The NVTX3 headers are looked up in $TT_NVTX_INCLUDE_DIR, $CUDA_HOME/include and
/usr/local/cuda/include; without them the test is skipped (exit code 77). The C++ compiler is
$CXX or c++. With `nccl`, the program calls a real NCCL (CPU only) and the NCCL ranges are
checked: $TT_NCCL_LIB, else libnccl.so.2 next to the CUDA headers' lib64/ or lib/; without one
that part is skipped (exit code 77), so ctest shows it as not run.
Prints one line per failed check and "N passed, M failed"; exits 1 on failure.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ttr_checksum import record_checksum  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM_SRC = os.path.join(HERE, "nvtx_program.cpp")

# ---- record_format.h -------------------------------------------------------------------
MAGIC = b"TTRECORD"
FORMAT_VERSION = 2
HEADER = struct.Struct("<8sIIIIqqqqqiiiiII64s")  # FileHeader up to and including host
RECORD_HEADER = struct.Struct("<IHHII")  # size, type, flags, checksum, tid
T_STRING, T_THREAD_NAME, T_RANGE, T_MARK, T_DROPPED = 1, 3, 5, 6, 11
STRING_REC = struct.Struct("<II")  # id, length
THREAD_NAME_REC = struct.Struct("<II")  # tid, name
RANGE_REC = struct.Struct("<qqIIIIQHBBI")  # start, end, name, domain, category, color, payload, depth, source, flags, pad
MARK_REC = struct.Struct("<qIIIB3x")  # ts, name, domain, category, source
DROPPED_REC = struct.Struct("<QII")  # count, reason, pad
SOURCE_NVTX = 0
FLAG_START_END = 1
FLAG_PAYLOAD = 2
U64 = (1 << 64) - 1

assert HEADER.size == 8 + 4 * 4 + 8 * 5 + 4 * 6 + 64
assert RANGE_REC.size == 48 and MARK_REC.size == 24




def checksum_ok(rtype, rflags, tid, checksum, payload):
    """The writer checksums type, flags, tid and the payload it was given; the frame is then
    padded to 8 bytes, so accept every payload length with the same padded size (as the
    merger's reader does)."""
    return any(record_checksum(rtype, rflags, tid, payload[:n]) == checksum
               for n in range(max(len(payload) - 7, 0), len(payload) + 1))


class RawFile:
    def __init__(self):
        self.header = None
        self.strings = {0: ""}
        self.ranges = []  # dicts
        self.marks = []
        self.thread_names = []  # (writer tid, tid, name id)
        self.dropped = []  # (writer tid, count, reason id)
        self.records = 0
        self.bad_checksums = 0
        self.bad_frames = 0


def parse_ttr(path):
    out = RawFile()
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 4096:
        raise ValueError(f"{path}: shorter than the header")
    fields = HEADER.unpack_from(data, 0)
    (magic, version, header_size, chunk_size, flags, pid, ppid, start_mono, start_real, end_mono,
     exit_status, rank, local_rank, world_size, chunks_reserved, _r0, host) = fields
    out.header = dict(magic=magic, version=version, header_size=header_size, chunk_size=chunk_size,
                      flags=flags, pid=pid, ppid=ppid, start_mono_ns=start_mono, end_mono_ns=end_mono,
                      host=host.split(b"\0", 1)[0].decode("utf-8", "replace"))
    if magic != MAGIC or header_size < HEADER.size or chunk_size < 4096:
        return out
    pos = header_size
    while pos < len(data):
        chunk = data[pos:pos + chunk_size]
        off = 0
        while len(chunk) - off >= RECORD_HEADER.size:
            size, rtype, rflags, checksum, tid = RECORD_HEADER.unpack_from(chunk, off)
            if size == 0:
                break
            if size % 8 or size < RECORD_HEADER.size or size > 64 * 1024 or off + size > len(chunk):
                out.bad_frames += 1
                break
            payload = chunk[off + RECORD_HEADER.size:off + size]
            if not checksum_ok(rtype, rflags, tid, checksum, payload):
                out.bad_checksums += 1
                break
            out.records += 1
            decode_record(out, rtype, tid, payload)
            off += size
        pos += chunk_size
    return out


def decode_record(out, rtype, tid, payload):
    if rtype == T_STRING:
        sid, length = STRING_REC.unpack_from(payload, 0)
        out.strings[sid] = payload[8:8 + length].decode("utf-8", "replace")
    elif rtype == T_THREAD_NAME:
        t, name = THREAD_NAME_REC.unpack_from(payload, 0)
        out.thread_names.append((tid, t, name))
    elif rtype == T_RANGE:
        (start, end, name, domain, category, color, value, depth, source, flags,
         _pad) = RANGE_REC.unpack_from(payload, 0)
        out.ranges.append(dict(tid=tid, start=start, end=end, name=name, domain=domain, category=category,
                               color=color, payload=value, depth=depth, source=source, flags=flags))
    elif rtype == T_MARK:
        ts, name, domain, category, source = MARK_REC.unpack_from(payload, 0)
        out.marks.append(dict(tid=tid, ts=ts, name=name, domain=domain, category=category, source=source))
    elif rtype == T_DROPPED:
        count, reason, _pad = DROPPED_REC.unpack_from(payload, 0)
        out.dropped.append((tid, count, reason))


# ---- the checks ------------------------------------------------------------------------
class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL: {what}")
        return ok


def dbits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def expected_ranges():
    """(name, domain, category, depth, thread role, start/end?, payload or None, color)."""
    exp = [
        ("outer", "", 0, 0, "main", False, None, 0),
        ("middle-\u03a9", "", 0, 1, "main", False, None, 0),
        ("inner", "", 7, 2, "main", False, 12345, 0xFF00FF00),
        ("main-while-worker", "", 0, 0, "main", False, None, 0),
        ("w-outer", "", 0, 0, "worker", False, None, 0),
        ("w-inner", "", 0, 1, "worker", False, None, 0),
        # start/end ranges are written by the thread that ends them
        ("cross-thread", "", 0, 0, "worker", True, None, 0),
        ("cross-back", "", 3, 0, "main", True, (-7) & U64, 0),
        ("start-w-\u00e9", "", 0, 0, "main", True, None, 0),
        ("registered-op", "tt-test", 1, 0, "main", False, None, 0),
        # depth counts the ranges of every domain open on the thread (the NVTX level returned
        # to the program is per domain: nvtx_program.cpp checks those)
        ("default-in-domain", "", 0, 1, "main", False, None, 0),
        ("d-inner", "tt-test", 2, 2, "main", False, dbits(2.5), 0),
        ("d-startend", "tt-test", 0, 0, "main", True, dbits(0.5), 0),
        ("wide-domain-range", "tt-wide-\u00e9", 0, 0, "main", False, 4000000000, 0),
        ("ncclAllReduce", "NCCL", 0, 0, "main", False, 1048576, 0),
        ("ncclSend", "NCCL", 0, 0, "main", False, 4096, 0),
        ("tt-schema", "tt-test", 0, 0, "main", False, 777, 0),
        ("second-instance", "", 0, 0, "main", False, None, 0),
        ("across-fork", "", 0, 0, "main", False, None, 0),
        ("deep-after", "", 0, 0, "deep", False, None, 0),
    ]
    exp += [(f"deep-{i}", "", 0, i, "deep", False, None, 0) for i in range(256)]
    return exp


EXPECTED_MARKS = [  # (name, domain, category, role)
    ("mark-a", "", 0, "main"),
    ("mark-w-\u00fc\u03a9", "", 0, "main"),
    ("mark-ex", "", 7, "main"),
    ("w-mark", "", 0, "worker"),
    ("registered-w-\u00e9", "tt-test", 2, "main"),
    # category names (the convention documented in nvtx_injection.cpp)
    ("nvtx.category 7 io", "", 7, "main"),
    ("nvtx.category 8 wide-cat-\u00e9", "", 8, "main"),
    ("nvtx.category 1 compute", "tt-test", 1, "main"),
    ("nvtx.category 2 comm", "tt-test", 2, "main"),
]


def check_fork_child(c, raw, parent_pid, tids):
    """The fork child's own file: names made before the fork resolve in it, the range open
    across the fork is not recorded there, the category names are recorded again."""
    h = raw.header
    c.check(h["ppid"] == parent_pid and h["flags"] & 4, f"fork child: header ppid {h['ppid']} and fork-child flag ({h['flags']:#x})")
    c.check(raw.bad_checksums == 0 and raw.bad_frames == 0, "fork child: no damaged records")
    s = raw.strings
    child_tid = tids.get("child")
    ranges = sorted(((s.get(r["name"]), s.get(r["domain"]), r["category"], r["depth"], r["tid"] == child_tid)
                     for r in raw.ranges if r["source"] == SOURCE_NVTX), key=str)
    # registered-op was pushed while across-fork (from the parent) was still open: depth 1
    want = sorted([("registered-op", "tt-test", 1, 1, True), ("child-range", "", 0, 0, True)], key=str)
    c.check(ranges == want, f"fork child: ranges {ranges} == {want}")
    marks = sorted(((s.get(m["name"]), s.get(m["domain"]), m["category"]) for m in raw.marks
                    if m["source"] == SOURCE_NVTX), key=str)
    want = sorted([("registered-w-\u00e9", "tt-test", 2), ("nvtx.category 7 io", "", 7),
                   ("nvtx.category 8 wide-cat-\u00e9", "", 8), ("nvtx.category 1 compute", "tt-test", 1),
                   ("nvtx.category 2 comm", "tt-test", 2)], key=str)
    c.check(marks == want, f"fork child: marks {marks} == {want}")


def check_trace(c, raw, pid, tids):
    h = raw.header
    c.check(h["magic"] == MAGIC and h["version"] == FORMAT_VERSION, f"file header magic/version: {h}")
    c.check(h["pid"] == pid, f"header pid {h['pid']} == program pid {pid}")
    c.check(raw.bad_checksums == 0, f"records with a bad checksum: {raw.bad_checksums}")
    c.check(raw.bad_frames == 0, f"records with a bad frame: {raw.bad_frames}")
    s = raw.strings
    role_of = {t: r for r, t in tids.items()}

    ranges = [r for r in raw.ranges if r["source"] == SOURCE_NVTX]
    marks = [m for m in raw.marks if m["source"] == SOURCE_NVTX]
    unresolved = [r for r in ranges + marks if r["name"] not in s or r["domain"] not in s]
    c.check(not unresolved, f"every name/domain id resolves to a String record ({len(unresolved)} do not)")

    def text(rec):
        return s.get(rec["name"], f"<id {rec['name']}>"), s.get(rec["domain"], f"<id {rec['domain']}>")

    # --- ranges ---
    by_key = {}
    for r in ranges:
        by_key.setdefault(text(r), []).append(r)
    exp = expected_ranges()
    c.check(len(ranges) == len(exp), f"number of NVTX ranges: {len(ranges)}, expected {len(exp)}")
    for (name, domain, cat, depth, role, startend, payload, color) in exp:
        got = by_key.get((name, domain), [])
        if not c.check(len(got) == 1, f"range {name!r} in domain {domain!r} recorded once (got {len(got)})"):
            continue
        r = got[0]
        c.check(r["start"] <= r["end"], f"range {name!r}: start <= end")
        c.check(r["start"] >= h["start_mono_ns"] > 0, f"range {name!r}: starts after the process start")
        c.check(r["category"] == cat, f"range {name!r}: category {r['category']} == {cat}")
        c.check(r["depth"] == depth, f"range {name!r}: depth {r['depth']} == {depth}")
        c.check(role_of.get(r["tid"]) == role, f"range {name!r}: thread {r['tid']} is {role} ({tids.get(role)})")
        c.check(bool(r["flags"] & FLAG_START_END) == startend, f"range {name!r}: start/end flag == {startend}")
        if payload is None:
            c.check(not r["flags"] & FLAG_PAYLOAD and r["payload"] == 0, f"range {name!r}: no payload")
        else:
            c.check(bool(r["flags"] & FLAG_PAYLOAD) and r["payload"] == payload,
                    f"range {name!r}: payload {r['payload']:#x} == {payload:#x} (flags {r['flags']:#x})")
        c.check(r["color"] == color, f"range {name!r}: color {r['color']:#x} == {color:#x}")
        c.check(r["flags"] & ~(FLAG_START_END | FLAG_PAYLOAD) == 0, f"range {name!r}: no unknown flag bits")
    for name in [f"deep-{i}" for i in range(256, 300)] + ["left-open"]:
        c.check((name, "") not in by_key, f"range {name!r} is not recorded")

    def contains(outer, inner):
        o, i = by_key.get((outer[0], outer[1])), by_key.get((inner[0], inner[1]))
        if not o or not i:
            return False
        o, i = o[0], i[0]
        return o["tid"] == i["tid"] and o["start"] <= i["start"] <= i["end"] <= o["end"]

    for outer, inner in [(("outer", ""), ("middle-\u03a9", "")), (("middle-\u03a9", ""), ("inner", "")),
                         (("w-outer", ""), ("w-inner", "")), (("registered-op", "tt-test"), ("d-inner", "tt-test")),
                         (("registered-op", "tt-test"), ("default-in-domain", "")),
                         (("default-in-domain", ""), ("d-inner", "tt-test"))]:
        c.check(contains(outer, inner), f"range {inner[0]!r} nests inside {outer[0]!r}")
    c.check(all(contains((f"deep-{i}", ""), (f"deep-{i + 1}", "")) for i in range(255)),
            "deep-(i+1) nests inside deep-i for every i")
    cross, main_pp = by_key.get(("cross-thread", "")), by_key.get(("main-while-worker", ""))
    if cross and main_pp:
        c.check(cross[0]["start"] <= main_pp[0]["start"] and cross[0]["end"] <= main_pp[0]["end"],
                "cross-thread started before the worker and ended while it ran")

    # --- marks ---
    c.check(len(marks) == len(EXPECTED_MARKS), f"number of NVTX marks: {len(marks)}, expected {len(EXPECTED_MARKS)}")
    mark_by_key = {}
    for m in marks:
        mark_by_key.setdefault(text(m), []).append(m)
    for (name, domain, cat, role) in EXPECTED_MARKS:
        got = mark_by_key.get((name, domain), [])
        if not c.check(len(got) == 1, f"mark {name!r} in domain {domain!r} recorded once (got {len(got)})"):
            continue
        m = got[0]
        c.check(m["category"] == cat, f"mark {name!r}: category {m['category']} == {cat}")
        c.check(role_of.get(m["tid"]) == role, f"mark {name!r}: thread is {role}")
        c.check(m["ts"] >= h["start_mono_ns"] > 0, f"mark {name!r}: timestamp after the process start")

    # --- thread names, dropped ranges ---
    names = {(t, s.get(n)) for (_w, t, n) in raw.thread_names}
    c.check((tids.get("main"), "tt-main") in names, f"thread name tt-main for the main thread: {names}")
    c.check((tids.get("worker"), "tt-worker") in names, f"thread name tt-worker for the worker: {names}")
    overflow = [(w, n) for (w, n, r) in raw.dropped if s.get(r) == "nvtx: push/pop stack overflow"]
    c.check(overflow == [(tids.get("deep"), 44)], f"one Dropped record of 44 overflowed ranges on the deep thread: {overflow}")


# ---- build and run ---------------------------------------------------------------------
def nvtx_include_dir():
    candidates = [os.environ.get("TT_NVTX_INCLUDE_DIR")]
    if os.environ.get("CUDA_HOME"):
        candidates.append(os.path.join(os.environ["CUDA_HOME"], "include"))
    candidates.append("/usr/local/cuda/include")
    for d in candidates:
        if d and os.path.isfile(os.path.join(d, "nvtx3", "nvToolsExt.h")):
            return d
    return None


def nccl_library(include):
    candidates = [os.environ.get("TT_NCCL_LIB")]
    for sub in ("lib64", "lib"):
        candidates.append(os.path.join(os.path.dirname(include.rstrip("/")), sub, "libnccl.so.2"))
    for f in candidates:
        if f and os.path.isfile(f):
            return f
    return None


def check_nccl_trace(c, raw, out):
    """NCCL pushes each API call in domain "NCCL", named after the function, with an extended
    payload whose schema holds the message size in bytes (checked with 2.28.9; the payload
    cut-off at 2.19 for older releases is an assumption)."""
    version = 0
    for l in out.splitlines():
        if l.startswith("VALUE nccl_version "):
            version = int(l.split()[2])
    s = raw.strings
    c.check(raw.bad_checksums == 0 and raw.bad_frames == 0, "nccl: no damaged records")
    got = [(s.get(r["name"]), s.get(r["domain"]), r["depth"], r["payload"] if r["flags"] & FLAG_PAYLOAD else None)
           for r in sorted(raw.ranges, key=lambda r: r["start"]) if r["source"] == SOURCE_NVTX]
    with_payload = version >= 21900
    want = [("ncclAllReduce", "NCCL", 1, 4096 if with_payload else None),
            ("ncclAllReduce", "NCCL", 1, 1024 if with_payload else None),
            ("ncclAllGather", "NCCL", 1, 400 if with_payload else None),
            ("nccl-probe", "", 0, None)]
    c.check(sorted(got, key=str) == sorted(want, key=str),
            f"nccl {version}: ranges (name, domain, depth, bytes) {got} == {want}")
    probe = [r for r in raw.ranges if s.get(r["name"]) == "nccl-probe"]
    inner = [r for r in raw.ranges if s.get(r["domain"]) == "NCCL"]
    c.check(len(probe) == 1 and all(probe[0]["start"] <= r["start"] <= r["end"] <= probe[0]["end"] for r in inner),
            "nccl: NCCL ranges nest inside the caller's range")


def build(workdir, include):
    cxx = os.environ.get("CXX", "c++")
    common = [cxx, "-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-I", include, PROGRAM_SRC]
    lib = os.path.join(workdir, "libtt_nvtx_second.so")
    prog = os.path.join(workdir, "nvtx_program")
    subprocess.run(common + ["-shared", "-fPIC", "-DTT_NVTX_SECOND_INSTANCE", "-o", lib, "-ldl", "-pthread"], check=True)
    subprocess.run(common + ["-o", prog, "-L", workdir, "-ltt_nvtx_second", "-Wl,-rpath," + workdir, "-ldl", "-pthread"],
                   check=True)
    return prog


def run_program(argv, lib, outdir, cwd, env_extra=None):
    if isinstance(argv, str):
        argv = [argv]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRACETUNE_") and k not in ("LD_PRELOAD",)}
    env.update(env_extra or {})
    env["LD_PRELOAD"] = lib
    env["NVTX_INJECTION64_PATH"] = lib
    if outdir is not None:
        env["TRACETUNE_OUTPUT_DIR"] = outdir
    p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return p.pid, 124, out, err + "\n(timed out)"
    return p.pid, p.returncode, out, err


def program_checks(c, label, rc, out, err):
    lines = out.splitlines()
    fails = [l for l in lines if l.startswith("CHECK-FAIL")]
    for l in fails:
        print(f"  {label}: {l}")
    c.check(rc == 0, f"{label}: program exit code {rc} == 0 (stderr: {err.strip()[-2000:]})")
    c.check("DONE" in lines, f"{label}: program ran to the end")
    c.check(not fails, f"{label}: NVTX return values as specified ({len(fails)} wrong)")
    tids = {}
    for l in lines:
        parts = l.split()
        if len(parts) == 3 and parts[0] == "TID":
            tids[parts[1]] = int(parts[2])
    return tids


def ttr_files_of(outdir, pid):
    """The decoded record files under `outdir` written by process `pid`."""
    found = []
    for root, _dirs, names in os.walk(outdir):
        for n in names:
            if n.endswith(".ttr"):
                raw = parse_ttr(os.path.join(root, n))
                if raw.header["pid"] == pid:
                    found.append(raw)
    return found


def part_recording(c, prog, lib, work):
    """Every range and mark in the .ttr file, the fork child's file, and a run that does not
    record (no output directory): NVTX still answers correctly, nothing breaks."""
    outdir = os.path.join(work, "raw")
    os.mkdir(outdir, 0o700)
    pid, rc, out, err = run_program(prog, lib, outdir, work)
    tids = program_checks(c, "recording", rc, out, err)
    c.check(set(tids) == {"main", "worker", "deep", "child"}, f"program printed its thread ids: {tids}")
    c.check("CHILD-DONE" in out.splitlines(), "fork child ran to the end")
    child_pid = next((int(l.split()[1]) for l in out.splitlines() if l.startswith("CHILDPID ")), None)
    mine, children = ttr_files_of(outdir, pid), ttr_files_of(outdir, child_pid)
    if c.check(len(mine) == 1, f"one record file for the program's pid {pid}"):
        check_trace(c, mine[0], pid, tids)
    if c.check(len(children) == 1, f"one record file for the fork child's pid {child_pid}"):
        check_fork_child(c, children[0], pid, tids)
    empty = os.path.join(work, "cwd-not-recording")
    os.mkdir(empty)
    _pid, rc, out, err = run_program(prog, lib, None, empty)
    program_checks(c, "not recording", rc, out, err)


def part_nccl(c, prog, lib, work, nccl):
    """The program calls a real NCCL (CPU only): its NCCL ranges are recorded."""
    ncdir = os.path.join(work, "raw-nccl")
    os.mkdir(ncdir, 0o700)
    pid, rc, out, err = run_program([prog, "nccl", nccl], lib, ncdir, work, {"NCCL_DEBUG": "NONE"})
    program_checks(c, "nccl", rc, out, err)
    found = ttr_files_of(ncdir, pid)
    if c.check(len(found) == 1, f"nccl: one record file for pid {pid}"):
        check_nccl_trace(c, found[0], out)


def main():
    if len(sys.argv) not in (2, 3) or sys.argv[2:] not in ([], ["nccl"]):
        print(__doc__)
        return 2
    lib = os.path.abspath(sys.argv[1])
    if not os.path.isfile(lib):
        print(f"collector library not found: {lib}")
        return 2
    include = nvtx_include_dir()
    if include is None:
        print("SKIPPED: NVTX3 headers (nvtx3/nvToolsExt.h) not found; set TT_NVTX_INCLUDE_DIR or CUDA_HOME")
        return 77
    nccl = nccl_library(include) if sys.argv[2:] == ["nccl"] else None
    if sys.argv[2:] == ["nccl"] and nccl is None:
        print("SKIPPED: no libnccl.so.2 found (set TT_NCCL_LIB)")
        return 77
    c = Checks()
    work = tempfile.mkdtemp(prefix="tt-nvtx-test-")
    try:
        prog = build(work, include)
        if nccl is None:
            part_recording(c, prog, lib, work)
        else:
            part_nccl(c, prog, lib, work, nccl)
    except subprocess.CalledProcessError as e:
        c.check(False, f"build failed: {e}")
    finally:
        if os.environ.get("TT_KEEP_TEST_DIR"):
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{c.passed} passed, {c.failed} failed")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
