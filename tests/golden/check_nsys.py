#!/usr/bin/env python3
"""Golden test of the Nsight Systems importer: an export written as SQL (tests/data/nsys) is
built into an SQLite file, imported with `tracetune import`, and two things are compared with
the checked-in expected file: `tracetune info --json` and every range of the trace DB as SQL
sees it (name, args, kind, domain, times, depth), so a change to what the importer writes,
PyTorch's NVTX names split into op and args included, shows up as a diff.

usage: check_nsys.py --tracetune BIN --name NAME --expected-dir DIR EXPORT.sql [--update]
"""
import argparse
import json
import pathlib
import sqlite3
import subprocess
import sys
import tempfile

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
    ap = argparse.ArgumentParser()
    ap.add_argument("--tracetune", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--expected-dir", required=True, type=pathlib.Path)
    ap.add_argument("--update", action="store_true")
    ap.add_argument("export", type=pathlib.Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        got = observed(args.tracetune, args.export, pathlib.Path(tmp))
    expected_file = args.expected_dir / f"{args.name}.nsys.json"
    text = json.dumps(got, indent=1, sort_keys=True) + "\n"
    if args.update:
        expected_file.write_text(text)
        print(f"updated {expected_file}")
        return 0
    if not expected_file.exists():
        print(f"FAIL no expected file {expected_file} (run the update_golden target)")
        return 1
    want = json.loads(expected_file.read_text())
    failed = False
    for key in ("info", "ranges"):
        if got[key] != want[key]:
            failed = True
            print(f"FAIL {key} differs from {expected_file}:\n  expected {json.dumps(want[key])[:3000]}\n"
                  f"  got      {json.dumps(got[key])[:3000]}")
    if not failed:
        print(f"ok   {args.name}: info and {len(got['ranges'])} ranges as expected")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
