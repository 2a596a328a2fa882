#!/usr/bin/env python3
"""Golden test of the Nsight Systems importer: an export written as SQL (tests/data/nsys) is
built into an SQLite file, imported with `tracetune import`, and two things are compared with
the checked-in expected file: `tracetune info --json` and every range of the trace DB as SQL
sees it (name, args, kind, domain, times, depth), so a change to what the importer writes,
PyTorch's NVTX names split into op and args included, shows up as a diff.

usage: check_nsys.py --tracetune BIN --name NAME --expected-dir DIR EXPORT.sql [--update]
"""
import json
import pathlib
import sqlite3
import subprocess
import sys
import tempfile

from golden_file import compare_or_update, golden_arguments

RANGES = """
SELECT r.start_ns, r.end_ns, n.value, a.value, r.kind, d.value, r.depth
FROM ranges r JOIN strings n ON n.id = r.name_id JOIN strings d ON d.id = r.domain_id
LEFT JOIN strings a ON a.id = r.args_id ORDER BY r.id
"""


def observed(tracetune: str, export_sql: pathlib.Path, tmp: pathlib.Path) -> dict:
    export = tmp / (export_sql.stem + ".sqlite")
    con = sqlite3.connect(export)
    con.executescript(export_sql.read_text())
    con.close()
    db = tmp / "trace.db"
    subprocess.run([tracetune, "import", "-q", str(export), "-o", str(db)], check=True, timeout=120)
    info = subprocess.run([tracetune, "info", "--json", str(db)], check=True, capture_output=True, text=True,
                          timeout=120)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    ranges = [dict(zip(("start_ns", "end_ns", "name", "args", "kind", "domain", "depth"), row))
              for row in con.execute(RANGES)]
    con.close()
    return {"info": json.loads(info.stdout.replace(str(tmp), "<tmp>")), "ranges": ranges}


def main() -> int:
    a = golden_arguments("export", type=pathlib.Path)
    with tempfile.TemporaryDirectory() as tmp:
        got = observed(a.tracetune, a.export, pathlib.Path(tmp))
    problem = compare_or_update(a.expected_dir / f"{a.name}.nsys.json", got, a.update)
    if problem:
        print(f"FAIL {a.name}: {problem}")
        return 1
    print(f"ok   {a.name}: info and {len(got['ranges'])} ranges as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
