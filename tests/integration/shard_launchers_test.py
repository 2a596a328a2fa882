#!/usr/bin/env python3
"""Sharded analysis under the launchers users already run (docs/scale.md): `mpirun -np 3` and
`torchrun --nproc_per_node 2 --no_python` start `tracetune analyze DIR --shard auto`, each
process takes its K/N from the launcher's variables (OMPI_COMM_WORLD_RANK/SIZE, RANK/WORLD_SIZE)
and writes its part; `analyze --combine` over the parts gives the single-process report.

usage: shard_launchers_test.py TRACETUNE KINETO_DIR
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile

TRACETUNE, INPUT = sys.argv[1], sys.argv[2]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish, free_port  # noqa: E402

LAUNCHERS = {
    "mpirun": ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3"],
    # Debian's torchrun (Python 3.11) needs its output redirected to start
    "torchrun": ["torchrun", "--nproc_per_node", "2", "--master_port", str(free_port()), "--no_python", "--redirects", "2",
                 "--tee", "2"],
}

single = subprocess.run([TRACETUNE, "analyze", INPUT, "--format", "json"], capture_output=True, text=True, timeout=300)
check("single-process analyze", single.returncode == 0, single.stderr[-1500:])
with tempfile.TemporaryDirectory() as tmp:
    for name, launcher in LAUNCHERS.items():
        if not check(f"{name} is installed (scripts/setup.sh)", shutil.which(launcher[0]), launcher[0]):
            continue
        out = pathlib.Path(tmp) / name
        out.mkdir()
        r = subprocess.run([*launcher, TRACETUNE, "analyze", INPUT, "--shard", "auto", "-o", str(out / "part-{shard}.ttpart")],
                           capture_output=True, text=True, timeout=300)
        parts = sorted(str(p) for p in out.glob("part-*.ttpart"))
        want = int(launcher[launcher.index("-np") + 1] if "-np" in launcher else launcher[launcher.index("--nproc_per_node") + 1])
        check(f"{name}: every process wrote its part", r.returncode == 0 and len(parts) == want,
              (parts, r.stdout[-1000:], r.stderr[-1500:]))
        check(f"{name}: the shards took K/N from the launcher", "from RANK/WORLD_SIZE" in r.stdout + r.stderr
              or "from OMPI_COMM_WORLD_RANK" in r.stdout + r.stderr, r.stderr[-1000:])
        c = subprocess.run([TRACETUNE, "analyze", "--combine", *parts, "--format", "json"], capture_output=True, text=True,
                           timeout=300)
        check(f"{name}: the combined report equals the single-process one", c.returncode == 0 and c.stdout == single.stdout,
              c.stderr[-1500:] or "reports differ")
finish()
