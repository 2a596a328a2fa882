#!/usr/bin/env python3
"""The critical path on a real recording with a planted cause: a CPU PyTorch job whose
DataLoader sleeps 15 ms per sample (60 ms per batch) while the step's compute takes about a
millisecond, recorded with `tracetune record` (the Python integration marks steps and batch
waits). The path of every step must tile it (length == the step time) and run mostly through
the data wait; the what-if replay of each step without its data waits must give back the
step less its wait, and the data-loading finding must take its gain from that replay. The
replay's prediction is then compared with the same job recorded with the loader fixed (no
sleep): the error is printed, and the gain the replay predicts must match the gain the fix
delivered to within half of it (a bound that holds on a busy machine).

usage: critical_path_test.py TRACETUNE
"""
import json
import statistics
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON, check, finish  # noqa: E402

JOB = """
import sys, time, torch
SLEEP = float(sys.argv[1])
class SlowLoader(torch.utils.data.Dataset):
    def __len__(self): return 48
    def __getitem__(self, i):
        if SLEEP:
            time.sleep(SLEEP)
        return torch.randn(64)
loader = torch.utils.data.DataLoader(SlowLoader(), batch_size=4, num_workers=0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""

with tempfile.TemporaryDirectory() as tmp:
    db = pathlib.Path(tmp) / "trace.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--", TORCH_PYTHON, "-c", JOB, "0.015"],
                       capture_output=True, text=True, timeout=300)
    check("planted job runs under record", r.returncode == 0, r.stderr[-2000:])
    a = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(db)], capture_output=True, text=True, timeout=300)
    check("analyze succeeds", a.returncode == 0, a.stderr)
    doc = json.loads(a.stdout)
    ranks = [x for x in doc["ranks"] if x["has_steps"]]
    check("one rank with steps", len(ranks) == 1, [x["label"] for x in doc["ranks"]])
    rank = ranks[0]
    paths = rank["critical_path"]
    walls = {s["number"]: s["wall_ns"] for s in rank["steps"]}
    check("a path per step", len(paths) == len(walls) >= 8, (len(paths), len(walls)))
    check("every path's length is its step time", all(p["length_ns"] == walls[p["step"]] and p["complete"] for p in paths),
          [(p["step"], p["length_ns"], walls.get(p["step"])) for p in paths])
    total = {}
    for p in paths:
        for k, v in p["by_kind_ns"].items():
            total[k] = total.get(k, 0) + v
    length = sum(p["length_ns"] for p in paths)
    top = max(total, key=total.get)
    print("critical path by kind (ms):", {k: round(v / 1e6, 1) for k, v in total.items() if v})
    # The planted wait is 60 ms a step; the step's compute is about 1 ms on a quiet machine but
    # swells with the machine's load (9.4 ms a step in a CI run on 2 busy cores, where the wait
    # was 87.6% of the path and the old 90% bound failed), so the wait's share is held to a
    # majority; the 55 ms per step below is what holds the wait itself.
    check("the path runs through the planted data wait", top == "data_wait" and total["data_wait"] > 0.5 * length,
          {k: v / length for k, v in total.items()})
    # 4 samples x 15 ms of sleep per batch: every step's path holds at least 55 ms of data wait
    check("each step's path holds the planted 60 ms wait",
          sum(1 for p in paths if p["by_kind_ns"]["data_wait"] >= 55_000_000) >= len(paths) - 1,
          [round(p["by_kind_ns"]["data_wait"] / 1e6, 1) for p in paths])
    check("each step's longest segment is the data wait",
          sum(1 for p in paths if p["top"] and p["top"][0]["kind"] == "data_wait") >= len(paths) - 1,
          [p["top"][:1] for p in paths])
    # what-if replay: removing the waits leaves the step's host compute (a CPU job: nothing else
    # gates it), so each step shortens by its data wait, to within the rest of the step
    steps = rank["steps"]
    check("every step is replayed", all("what_if_ns" in s for s in steps), [s.get("what_if_ns") for s in steps])
    check("each step without its data waits shortens by the wait",
          all(abs((s["wall_ns"] - s["what_if_ns"]["no_data_wait"]) - s["data_wait_ns"]) <= 0.02 * s["wall_ns"]
              for s in steps),
          [(s["wall_ns"], s["data_wait_ns"], s["what_if_ns"]["no_data_wait"]) for s in steps])
    data = [f for f in doc["findings"] if f["category"] == "data_loading"]
    check("the data-loading finding's gain comes from the replay",
          len(data) == 1 and data[0]["gain_model"].startswith("what-if replay") and data[0]["gain_ns"] > 50_000_000,
          data)

    # the prediction against the job with the loader fixed
    fixed_db = pathlib.Path(tmp) / "fixed.db"
    r = subprocess.run([TRACETUNE, "record", "-o", str(fixed_db), "--", TORCH_PYTHON, "-c", JOB, "0"],
                       capture_output=True, text=True, timeout=300)
    check("the fixed job runs under record", r.returncode == 0, r.stderr[-2000:])
    a = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(fixed_db)], capture_output=True, text=True,
                       timeout=300)
    fixed = [x for x in json.loads(a.stdout)["ranks"] if x["has_steps"]][0]
    predicted = statistics.median(s["what_if_ns"]["no_data_wait"] for s in steps)
    measured = statistics.median(s["wall_ns"] for s in fixed["steps"])
    print(f"no_data_wait replay: predicted median step {predicted / 1e6:.2f} ms, measured with the loader fixed "
          f"{measured / 1e6:.2f} ms (error {predicted / 1e6 - measured / 1e6:+.2f} ms, "
          f"{100 * (predicted - measured) / measured:+.0f}%); recorded step {rank['step_time']['median_ns'] / 1e6:.1f} ms")
    # The two runs' compute is timed on a machine that may be busy (ctest -j, ASan): a 1 ms step
    # can take 20 ms in one run and not the other. The gain (recorded step less the step
    # without the waits, about the planted 60 ms) is what the replay claims; it must match the
    # gain the fix delivered to within half, which a replay that left the waits in (gain 0) or
    # removed the compute too fails however loaded the machine is.
    recorded = rank["step_time"]["median_ns"]
    predicted_gain, measured_gain = recorded - predicted, recorded - measured
    check("the replay's gain matches the fixed job's gain within half of it",
          abs(predicted_gain - measured_gain) <= 0.5 * predicted_gain and predicted_gain > 50_000_000,
          (recorded, predicted, measured))
finish()
