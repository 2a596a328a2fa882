#!/usr/bin/env python3
"""Sharded analysis gives the single-process report (docs/scale.md): `analyze INPUT --shard K/N`
for every K, then `analyze --combine` over the parts, compared byte for byte with `analyze
INPUT` in every report format, for each N given. With --split, INPUT is first imported into
one tracetune trace, whose ranks the shards then split. Also checked: the parts are private
(0600), and a missing, repeated, foreign or unfinished part is refused with a one-line error.

usage: check_shard.py --tracetune BIN INPUT N [N...] [--split]
"""
import argparse
import difflib
import os
import pathlib
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--tracetune", required=True)
ap.add_argument("--split", action="store_true")
ap.add_argument("input")
ap.add_argument("counts", type=int, nargs="+")
args = ap.parse_args()
T = args.tracetune


def run(*argv, budget=None):
    """tracetune ARGV; `budget`: TRACETUNE_ANALYZE_BUDGET (bytes), else large enough for anything."""
    env = dict(os.environ, TRACETUNE_ANALYZE_BUDGET=str(budget if budget is not None else 1 << 62))
    return subprocess.run([T, *argv], capture_output=True, text=True, timeout=600, env=env)


def first_difference(a, b):
    d = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "single", "combined", lineterm="", n=1))
    return "\n".join(d[:20])


def shard_all(inp, n, out):
    out.mkdir()
    for k in range(n):
        r = run("analyze", inp, "--shard", f"{k}/{n}", "-o", str(out / "part-{shard}.ttpart"))
        check(f"shard {k}/{n} runs", r.returncode == 0, r.stderr[-1500:])
    return sorted(str(p) for p in out.glob("part-*.ttpart"))


with tempfile.TemporaryDirectory() as tmp:
    tmp = pathlib.Path(tmp)
    inp = args.input
    if args.split:
        db = tmp / "whole.db"
        r = run("import", inp, "-o", str(db))
        check("import for the split case", r.returncode == 0, r.stderr[-1500:])
        inp = str(db)
    single = {fmt: run("analyze", inp, "--format", fmt).stdout for fmt in ("text", "json", "md", "html")}
    if args.split:
        # a trace DB past the memory budget is analysed in blocks of ranks, in this process
        for fmt, want in single.items():
            got = run("analyze", inp, "--format", fmt, budget=1)
            check(f"analysed in blocks (budget 1 byte): {fmt} report equals the one in memory",
                  got.returncode == 0 and got.stdout == want, got.stderr[-1500:] or first_difference(want, got.stdout))
    parts = {}
    for n in args.counts:
        parts[n] = shard_all(inp, n, tmp / f"n{n}")
        check(f"N={n}: one part per shard", len(parts[n]) == n, parts[n])
        for fmt, want in single.items():
            got = run("analyze", "--combine", *parts[n], "--format", fmt)
            check(f"N={n}: combined {fmt} report equals the single-process one", got.returncode == 0 and got.stdout == want,
                  got.stderr[-1500:] or first_difference(want, got.stdout))
    n = max(args.counts)
    mode = stat.S_IMODE(os.stat(parts[n][0]).st_mode)
    check("part files are private (0600)", mode == 0o600, oct(mode))
    if n >= 2:
        r = run("analyze", "--combine", *parts[n][1:])
        check("a missing part is refused", r.returncode == 1 and "is missing" in r.stderr and r.stderr.count("\n") == 1,
              r.stderr)
        r = run("analyze", "--combine", parts[n][0], parts[n][0], *parts[n][1:])
        check("a repeated part is refused", r.returncode == 1 and "given twice" in r.stderr, r.stderr)
    if len(parts) >= 2:
        a, b = sorted(parts)[:2]
        r = run("analyze", "--combine", parts[a][0], *parts[b][1:])
        check("parts of different runs are refused", r.returncode == 1 and "different runs" in r.stderr, r.stderr)
    cut = tmp / "cut.ttpart"
    cut.write_bytes(pathlib.Path(parts[n][0]).read_bytes()[:4000])
    r = run("analyze", "--combine", str(cut))
    check("an unfinished part is refused", r.returncode == 1 and "not a tracetune part file" in r.stderr, r.stderr)
finish()
