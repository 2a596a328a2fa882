#!/usr/bin/env python3
"""Bad input through the real CLI: every case must fail with exit code 1, print exactly one
line that names the input file, and leave no output (not even a temporary), while an existing
output file from an earlier run survives untouched."""
import gzip
import os
import pathlib
import sqlite3
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
GOOD = pathlib.Path(sys.argv[2])  # a valid Kineto JSON fixture


def cases(d: pathlib.Path, good: bytes):
    def w(name, data):
        p = d / name
        p.write_bytes(data)
        return p

    gz = gzip.compress(good)
    yield "truncated gzip", w("cut.json.gz", gz[: len(gz) // 2]), "truncated"
    yield "corrupt gzip", w("corrupt.json.gz", gz[:20] + b"\x00" * 40 + gz[60:]), "gzip"
    yield "invalid JSON", w("bad.json", b'{"traceEvents": [{"ph": "X",, }]}'), "bad.json"
    yield "truncated JSON", w("short.json", good[: len(good) // 2]), "short.json"
    yield "wrong type", w("type.json", b'{"traceEvents": [{"ph": "X", "ts": "soon", "dur": 1}]}'), "'ts' must be a number"
    yield "missing field", w("missing.json", b'{"traceEvents": [{"ph": "X", "dur": 1}]}'), "missing 'ts'"
    yield "not a trace", w("other.json", b'{"hello": "world"}'), "traceEvents"
    yield "deep nesting", w("deep.json", b'{"traceEvents": ' + b"[" * 100000 + b"]" * 100000 + b"}"), "deep.json"
    big = b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": "' + b"x" * (2 << 20) + b'"}]}'
    yield "megabyte string in a number field", w("big.json", big), "'dur' must be a number"
    yield "binary garbage", w("garbage.bin", os.urandom(4096)), "garbage.bin"
    yield "empty file", w("empty.json", b""), "empty.json"

    foreign = d / "foreign.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE foo(x)")
    con.commit()
    con.close()
    yield "foreign SQLite schema", foreign, "neither a tracetune trace nor an Nsight Systems export"

    trig = d / "trigger.sqlite"
    con = sqlite3.connect(trig)
    con.executescript("CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT);"
                      "CREATE TABLE t(x); CREATE TRIGGER tr AFTER INSERT ON t BEGIN DELETE FROM t; END;")
    con.close()
    yield "SQLite with a trigger", trig, "trigger"

    view = d / "view.sqlite"
    con = sqlite3.connect(view)
    con.executescript("CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT); CREATE VIEW v AS SELECT 1;")
    con.close()
    yield "SQLite with a view", view, "view"

    corrupt = d / "corrupt.sqlite"
    data = bytearray(pathlib.Path(trig).read_bytes())
    data[100:4000] = os.urandom(3900)
    corrupt.write_bytes(bytes(data))
    yield "corrupt SQLite", corrupt, "corrupt.sqlite"
    yield "missing file", d / "nope.json", "no such file"


def main() -> int:
    failures = []
    good = GOOD.read_bytes()
    with tempfile.TemporaryDirectory() as tmp:
        d = pathlib.Path(tmp)
        outdir = d / "out"
        outdir.mkdir()
        previous = outdir / "trace.db"
        n = 0
        for what, path, expect in cases(d, good):
            n += 1
            previous.write_bytes(b"earlier good output")
            for argv in (["import", str(path), "-o", str(previous)], ["info", str(path)],
                         ["export", str(path), "-o", str(outdir / "x.json")],
                         ["analyze", str(path), "-o", str(outdir / "report.txt")]):
                r = subprocess.run([TRACETUNE, *argv], capture_output=True, text=True, timeout=120)
                lines = r.stderr.strip().splitlines()
                if r.returncode != 1:
                    failures.append(f"{what} ({argv[0]}): exit {r.returncode}, expected 1")
                if len(lines) != 1:
                    failures.append(f"{what} ({argv[0]}): {len(lines)} lines on stderr: {r.stderr!r}")
                elif str(path) not in lines[0] or expect not in lines[0]:
                    failures.append(f"{what} ({argv[0]}): message lacks the path or '{expect}': {lines[0]!r}")
            left = sorted(p.name for p in outdir.iterdir())
            if left != ["trace.db"] or previous.read_bytes() != b"earlier good output":
                failures.append(f"{what}: output directory changed: {left}")
        # analyze's own usage errors: exit 2, one line, nothing written
        for bad in ("x:y", "5:2", ""):
            r = subprocess.run([TRACETUNE, "analyze", "--steps", bad, str(GOOD), "-o", str(outdir / "r.txt")],
                               capture_output=True, text=True, timeout=120)
            if bad and (r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or (outdir / "r.txt").exists()):
                failures.append(f"analyze --steps {bad!r}: exit {r.returncode}, stderr {r.stderr!r}")
        r = subprocess.run([TRACETUNE, "analyze", "--format", "xml", str(GOOD)], capture_output=True, text=True)
        if r.returncode != 2:
            failures.append(f"analyze --format xml: exit {r.returncode}, expected 2")
    for f in failures:
        print("FAIL", f)
    print(f"{n - len({f.split(':')[0].split(' (')[0] for f in failures})} passed, "
          f"{len({f.split(':')[0].split(' (')[0] for f in failures})} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
