#!/usr/bin/env python3
"""Golden test for one real trace: import it with `tracetune import`, then check

1. `tracetune info --json` equals the checked-in expected file (paths normalised);
2. the event counts per kind equal counts taken from the source file by this script's own,
   independent reading of it (Python's json module, not our importer);
3. a few time-range queries over the trace DB (through its per-track indexes) equal the
   checked-in expected answers;
4. the file is private (0600) and `tracetune export --format chrome` writes valid JSON with
   one complete event per span.

Run with --update to rewrite the expected files after a deliberate change.
"""
import collections
import gzip
import json
import os
import pathlib
import sqlite3
import stat
import subprocess
import sys
import tempfile

from golden_file import compare_or_update, golden_arguments

SPAN_TABLES = ["kernels", "memcpys", "memsets", "api_calls", "syncs", "ranges", "steps",
               "collectives", "io_calls"]


def load_json(path: pathlib.Path):
    opener = gzip.open if path.read_bytes()[:2] == b"\x1f\x8b" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def gemm_flops(name, args):
    """FLOPs of a GEMM op from its "flops" arg or "Input Dims", as docs/trace-format.md says."""
    if name not in ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"):
        return 0
    if isinstance(args.get("flops"), int) and args["flops"] > 0:
        return args["flops"]
    dims = args.get("Input Dims") or []
    first = 1 if name in ("aten::addmm", "aten::baddbmm") else 0
    if len(dims) < first + 2:
        return 0
    x, y = dims[first], dims[first + 1]
    if len(x) == 2 and len(y) == 2 and x[1] == y[0]:
        return 2 * x[0] * x[1] * y[1]
    if len(x) == 3 and len(y) == 3 and x[0] == y[0] and x[2] == y[1]:
        return 2 * x[0] * x[1] * x[2] * y[2]
    return 0


def has_gemm_bytes(name, args):
    """Whether a GEMM op also gives "gemm.bytes.<dtype>": its shapes are known and its type sized."""
    dims = args.get("Input Dims") or []
    types = args.get("Input type") or []
    first = 1 if name in ("aten::addmm", "aten::baddbmm") else 0
    if len(dims) < first + 2 or not types or types[0] not in ("float", "c10::BFloat16", "c10::Half", "double"):
        return 0
    x, y = dims[first], dims[first + 1]
    return int((len(x) == 2 and len(y) == 2 and x[1] == y[0]) or
               (len(x) == 3 and len(y) == 3 and x[0] == y[0] and x[2] == y[1]))


def has_op_shape(name, args):
    """Whether a layer_norm / cross_entropy_loss op gives a "shape.<op>.<rows>x<cols>" counter."""
    if name not in ("aten::layer_norm", "aten::cross_entropy_loss"):
        return False
    dims = args.get("Input Dims") or []
    if not isinstance(dims, list) or any(not isinstance(d, list) or len(d) > 4 for d in dims[:3]) or not dims:
        return False
    x = dims[0]
    if not x or any(not isinstance(v, int) or v < 0 for v in x):
        return False
    col = len(x) - 1 if name == "aten::layer_norm" else min(len(x) - 1, 1)
    rows = 1
    for i, v in enumerate(x):
        rows *= v if i != col else 1
    return rows > 0 and x[col] > 0


def event_records(events):
    """The event_record rows stream waits give: one per record id named by a Stream Wait Event,
    on a recording stream that has device events of its own."""
    device_cats = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset", "cuda_sync", "gpu_user_annotation")
    streams, named = set(), {}
    for e in events:
        if e.get("ph") != "X" or e.get("cat") not in device_cats:
            continue
        args = e.get("args") or {}
        device = args.get("device", e.get("pid"))
        streams.add((device, args.get("stream", e.get("tid"))))
        record = args.get("wait_on_cuda_event_record_corr_id")
        if e.get("cat") == "cuda_sync" and record and "wait_on_stream" in args:
            named.setdefault(record, (device, args["wait_on_stream"]))
    return sum(1 for key in named.values() if key in streams)


def source_counts(inputs):
    """Counts per kind from the Kineto files, by the mapping in docs/trace-format.md."""
    c = collections.Counter()
    for path in inputs:
        doc = load_json(path)
        events = doc["traceEvents"] if isinstance(doc, dict) else doc
        c["syncs"] += event_records(events)
        for e in events:
            ph, cat, name = e.get("ph"), e.get("cat"), e.get("name", "")
            args = e.get("args") or {}
            if ph in ("s", "t", "f"):
                c["flows"] += 1
            elif ph == "M":
                c["metadata"] += 1
            elif ph in ("i", "I", "R", "n") and name == "[memory]":
                c["counters"] += ("Total Allocated" in args) + ("Total Reserved" in args)
            elif ph in ("i", "I", "R", "n"):
                c["ranges"] += 1
            elif ph == "C":
                c["counters"] += sum(1 for v in args.values()
                                     if isinstance(v, (int, float)) and not isinstance(v, bool))
            elif ph == "E":
                c["ranges"] += 1  # a B/E pair becomes one range
            elif ph == "B":
                pass
            elif ph == "X":
                if cat in ("cpu_op", "Operator") and gemm_flops(name, args) > 0:
                    c["counters"] += 1  # "gemm.flops.<dtype>" (docs/trace-format.md)
                    c["counters"] += has_gemm_bytes(name, args)  # "gemm.bytes.<dtype>"
                if cat in ("cpu_op", "Operator") and has_op_shape(name, args):
                    c["counters"] += 1  # "shape.<op>.<rows>x<cols>"
                if cat in ("kernel", "Kernel"):
                    c["kernels"] += 1
                elif cat == "mtia_ccp_events":
                    c["memcpys" if name == "dma_request" else "kernels"] += 1
                elif cat in ("gpu_memcpy", "Memcpy"):
                    c["memcpys"] += 1
                elif cat in ("gpu_memset", "Memset"):
                    c["memsets"] += 1
                elif cat in ("cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime",
                             "privateuse1_runtime", "privateuse1_driver"):
                    c["api_calls"] += 1
                elif cat == "cuda_sync":
                    c["syncs"] += 1
                else:
                    c["ranges"] += 1
                device = cat in ("kernel", "Kernel", "mtia_ccp_events", "gpu_memcpy", "Memcpy", "gpu_memset",
                                 "Memset", "cuda_sync", "gpu_user_annotation")
                api = cat in ("cuda_runtime", "Runtime", "cuda_driver", "mtia_runtime", "privateuse1_runtime",
                              "privateuse1_driver")
                if (isinstance(name, str) and name.startswith("ProfilerStep#") and name[13:].isdigit()
                        and not device and not api):
                    c["steps"] += 1
                if "Collective name" in args and (cat in ("kernel", "Kernel") or (not device and not api)):
                    c["collectives"] += 1
            else:
                c["skipped:" + str(ph)] += 1
    return c


def range_queries(db: pathlib.Path):
    """Events per table overlapping windows of the busiest track: 4 quarters of its span."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    out = {}
    for table in ("kernels", "ranges", "api_calls"):
        row = con.execute(f"SELECT track_id, count(*) n FROM {table} GROUP BY track_id "
                          f"ORDER BY n DESC, track_id LIMIT 1").fetchone()
        if row is None:
            continue
        track = row[0]
        lo, hi = con.execute(f"SELECT min(start_ns), max(end_ns) FROM {table} WHERE track_id=?",
                             (track,)).fetchone()
        span = hi - lo
        answers = []
        for q in range(4):
            a, b = lo + span * q // 4, lo + span * (q + 1) // 4
            n, busy = con.execute(
                f"SELECT count(*), coalesce(sum(min(end_ns, ?) - max(start_ns, ?)), 0) FROM {table} "
                f"WHERE track_id=? AND start_ns < ? AND end_ns > ?", (b, a, track, b, a)).fetchone()
            answers.append({"window_ns": [a, b], "events": n, "covered_ns": busy})
        out[table] = {"track_id": track, "events": row[1], "quarters": answers}
    con.close()
    return out


def normalise(text: str, inputs) -> str:
    for p in inputs:
        text = text.replace(json.dumps(str(p))[1:-1], "<input>")
    return text


def main() -> int:
    a = golden_arguments("inputs", nargs="+", type=pathlib.Path)
    inputs = [p.resolve() for p in a.inputs]
    files = []
    for p in inputs:
        files += sorted(q for q in p.iterdir() if q.name.endswith((".json", ".json.gz"))) if p.is_dir() else [p]
    failures = []

    with tempfile.TemporaryDirectory() as tmp:
        db = pathlib.Path(tmp) / "trace.db"
        subprocess.run([a.tracetune, "import", "-q", *map(str, inputs), "-o", str(db)], check=True)
        mode = stat.S_IMODE(os.stat(db).st_mode)
        if mode != 0o600:
            failures.append(f"trace file mode is {oct(mode)}, expected 0o600")

        info_text = subprocess.run([a.tracetune, "info", "--json", str(db)], check=True,
                                   capture_output=True, text=True).stdout
        info = json.loads(normalise(info_text, inputs))
        queries = range_queries(db)

        # 2. independent counts
        want = source_counts(files)
        got = info["counts"]
        for kind in ("kernels", "memcpys", "memsets", "api_calls", "syncs", "ranges", "steps",
                     "collectives", "flows", "counters"):
            if got.get(kind, 0) != want.get(kind, 0):
                failures.append(f"{kind}: imported {got.get(kind, 0)}, source has {want.get(kind, 0)}")
        meta_note = sum(d["count"] for d in info["diagnostics"] if d["reason"].startswith("metadata events"))
        if meta_note != want.get("metadata", 0):
            failures.append(f"metadata: noted {meta_note}, source has {want.get('metadata', 0)}")
        for k, n in want.items():
            if k.startswith("skipped:"):
                ph = k.split(":", 1)[1]
                noted = sum(d["count"] for d in info["diagnostics"] if f"phase '{ph}'" in d["reason"])
                if noted != n:
                    failures.append(f"phase {ph}: {n} events in source, {noted} counted as skipped")

        # 4. chrome export
        chrome = pathlib.Path(tmp) / "trace.json"
        subprocess.run([a.tracetune, "export", str(db), "--format", "chrome", "-o", str(chrome)], check=True,
                       capture_output=True)
        exported = json.loads(chrome.read_text())
        n_x = sum(1 for e in exported["traceEvents"] if e.get("ph") == "X")
        n_spans = sum(got.get(t, 0) for t in SPAN_TABLES)
        if n_x != n_spans:
            failures.append(f"chrome export has {n_x} complete events, trace has {n_spans} spans")

    # 1 + 3. golden files
    for suffix, value in (("info.json", info), ("queries.json", queries)):
        problem = compare_or_update(a.expected_dir / f"{a.name}.{suffix}", value, a.update)
        if problem:
            failures.append(problem)

    for f in failures:
        print(f"FAIL {a.name}: {f}")
    if not failures:
        print(f"ok {a.name}: {info['total_events']} events, counts match the source")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
