#!/usr/bin/env python3
"""Memory from real PyTorch-profiler traces (profile_memory=True, recorded on a CPU; see
tests/data/kineto/memory/README.md): the `[memory]` events become per-step memory of the
"cpu" device; the job that keeps a 24 MiB tensor per step gets a leak finding that measures
24 MiB per step; the steady job gets memory rows and no memory finding.

usage: kineto_memory_test.py TRACETUNE
"""
import json
import pathlib
import subprocess
import sys

TRACETUNE = sys.argv[1]
HERE = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))  # tests/harness.py
from harness import check, finish  # noqa: E402

DATA = HERE / "data" / "kineto" / "memory"
MiB = 1 << 20


def analyze(name):
    r = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(DATA / name)], capture_output=True, text=True,
                       timeout=120)
    check(f"analyze {name}", r.returncode == 0, r.stderr[-1000:])
    return json.loads(r.stdout) if r.returncode == 0 else {"ranks": [{}], "findings": [], "diagnostics": []}


for name in ("cpu_train.json.gz", "cpu_leak.json.gz"):
    info = subprocess.run([TRACETUNE, "info", "--json", str(DATA / name)], capture_output=True, text=True, timeout=120)
    doc = json.loads(info.stdout) if info.returncode == 0 else {}
    skipped = [d for d in doc.get("diagnostics", []) if "[memory]" in d.get("reason", "")]
    check(f"{name}: every [memory] event imported (none skipped)", info.returncode == 0 and not skipped, skipped)

leak = analyze("cpu_leak.json.gz")
mem = leak["ranks"][0].get("memory") or [{}]
growth = mem[0].get("growth_bytes_per_step", 0) / MiB
print(f"leak: cpu memory grows {growth:.1f} MiB per step (planted 24 MiB)")
check("leak: per-step memory of the cpu device", mem[0].get("device") == "cpu" and len(mem[0].get("step_peak_bytes", [])) == 8,
      mem)
check("leak: growth is the planted 24 MiB per step", 22 <= growth <= 26, growth)
found = [f for f in leak["findings"] if f["category"] == "memory"]
check("leak: a memory leak finding", len(found) == 1 and "leak" in found[0]["title"].lower(), found)

text = subprocess.run([TRACETUNE, "analyze", str(DATA / "cpu_leak.json.gz")], capture_output=True, text=True, timeout=120)
line = [x for x in text.stdout.splitlines() if x.strip().startswith("memory:")]
check("leak: the text report's memory line gives the peak and the growth",
      len(line) == 1 and "cpu peak 192.6 MiB" in line[0] and "+24.0 MiB per step over 8 steps" in line[0], line)

steady = analyze("cpu_train.json.gz")
mem = steady["ranks"][0].get("memory") or [{}]
check("steady: memory rows for the cpu device", mem[0].get("device") == "cpu" and mem[0].get("peak_bytes", 0) > 0, mem)
check("steady: no memory finding", not [f for f in steady["findings"] if f["category"] == "memory"],
      [f["title"] for f in steady["findings"]])
finish()
