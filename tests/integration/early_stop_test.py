#!/usr/bin/env python3
"""TRACETUNE_EARLY_STOP in the Python integration (tracetune/_autostep.py), driven with
synthetic step boundaries in a fresh interpreter per case (the variable is read at import):
a job whose judged steps are slower than the limit ends with SystemExit(0) right after them;
a faster one runs on; steps before FROM (the warm-up) are not judged; a malformed value is
ignored with one line.

usage: early_stop_test.py SOURCE_DIR
"""
import os
import pathlib
import subprocess
import sys

SRC = pathlib.Path(sys.argv[1])
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

DRIVER = r'''
import sys
from tracetune import _autostep as a
durations = [float(x) for x in sys.argv[1].split(",")]
t = 0
a.STEPS.boundary(a._DATALOADER, t)
for i, ms in enumerate(durations):
    t += int(ms * 1e6)
    a.STEPS.boundary(a._DATALOADER, t)
    try:
        a.stop_if_done(a.STEPS.number)
    except SystemExit as e:
        print(f"stopped after {a.STEPS.number} code {e.code}")
        sys.exit(0)
print(f"ran {a.STEPS.number} kept {len(a.DURATIONS)}")
'''


def drive(spec, durations):
    env = dict(os.environ, PYTHONPATH=str(SRC / "plugins/python"))
    env.pop("TRACETUNE_EARLY_STOP", None)
    if spec is not None:
        env["TRACETUNE_EARLY_STOP"] = spec
    env.pop("TRACETUNE_MAX_STEPS", None)
    r = subprocess.run([sys.executable, "-c", DRIVER, ",".join(map(str, durations))], capture_output=True, text=True,
                       env=env, timeout=60)
    return r.stdout.strip(), r.stderr.strip()


# warm-up 2 steps, judge 3, limit 10 ms
out, err = drive("2:3:10000000", [1, 1, 20, 20, 20, 20, 20, 20])
check("slower than the limit: stops right after the judged steps (5), exit code 0", out == "stopped after 5 code 0", out)
check("says why in one line", "stopping early after 5 steps: median 20.0 ms > 10.0 ms" in err, err)
out, _ = drive("2:3:10000000", [50, 50, 5, 5, 5, 5, 5, 5])
check("faster: slow warm-up steps are not judged, the job runs on", out.startswith("ran 8 "), out)
check("... keeping no more step durations than it judged (and one)", out == "ran 8 kept 6", out)
out, _ = drive("2:3:10000000", [5, 5, 5, 20, 20, 5, 5])
check("the median of the judged steps decides (one fast of three: still slower)", out == "stopped after 5 code 0", out)
out, err = drive("bogus", [20] * 8)
check("malformed value: ignored with one line", out.startswith("ran 8 ") and "TRACETUNE_EARLY_STOP is not FROM:COUNT:NS" in err,
      (out, err))
out, _ = drive(None, [1] * 2000)
check("without TRACETUNE_EARLY_STOP no step duration is kept (a long job's memory does not grow per step)",
      out == "ran 2000 kept 0", out)
finish()
