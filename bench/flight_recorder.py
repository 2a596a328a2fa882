#!/usr/bin/env python3
"""Disk use of the flight recorder (`tracetune record --ring`) over a long run (prints, never asserts).

Runs the DataLoader sample (samples/dataloader, 2 workers, endless) under
`tracetune record --ring SPAN --ring-budget MIB --keep-raw` (SPAN: seconds, or steps) for SECONDS, samples the raw
directory's disk use (allocated blocks of every record file) every 10 s, then interrupts the job
(SIGINT, forwarded to it) and reports: the largest disk use seen, per process and in all, against
the budget; how many steps the job made; and what the final trace holds (its time span, events).

usage: flight_recorder.py BUILD_DIR [--seconds 600] [--span 120s|50steps] [--budget 16] [--python PY]
"""
import argparse
import pathlib
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SRC = pathlib.Path(__file__).resolve().parent.parent
TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"


def disk_use(raw):
    files = list(raw.glob("*/*.ttr"))
    sizes = [f.stat().st_blocks * 512 for f in files if f.exists()]
    return sum(sizes), max(sizes, default=0), len(files)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("build", type=pathlib.Path)
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--span", default="120s", help="the ring's span: seconds (120s) or steps (50steps)")
    ap.add_argument("--budget", type=int, default=16, help="MiB of ring per process")
    ap.add_argument("--python", default=str(TORCH2) if TORCH2.exists() else "/usr/bin/python3")
    args = ap.parse_args()
    tracetune = args.build / "cli/tracetune"
    span = args.span if args.span[-1].isalpha() else f"{args.span}s"  # a bare number: seconds
    mib = 1 << 20
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        subprocess.run([args.python, str(SRC / "samples/dataloader/make_dataset.py"), str(tmp / "data"), "--files", "256"],
                       check=True, capture_output=True)
        db, raw = tmp / "t.db", tmp / "raw"
        rec = subprocess.Popen([str(tracetune), "record", "-o", str(db), "--raw-dir", str(raw), "--keep-raw", "--ring",
                                span, "--ring-budget", str(args.budget), "--", args.python,
                                str(SRC / "samples/dataloader/train.py"), str(tmp / "data"), "--num-workers", "2",
                                "--steps", "1000000000", "--epochs", "1000000000"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        start, peak_total, peak_file, samples = time.monotonic(), 0, 0, []
        while time.monotonic() - start < args.seconds and rec.poll() is None:
            time.sleep(10)
            total, biggest, files = disk_use(raw)
            peak_total, peak_file = max(peak_total, total), max(peak_file, biggest)
            samples.append((time.monotonic() - start, total, biggest, files))
            print(f"t={samples[-1][0]:6.0f}s  raw dir {total / mib:6.1f} MiB  largest file {biggest / mib:5.1f} MiB"
                  f"  files {files}", flush=True)
        rec.send_signal(signal.SIGINT)
        out, err = rec.communicate(timeout=600)
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        steps = con.execute("SELECT count(*), min(number), max(number), min(start_ns), max(start_ns + end_ns - start_ns) "
                            "FROM steps").fetchone()
        io = con.execute("SELECT count(*) FROM io_calls").fetchone()[0]
        processes = con.execute("SELECT count(*) FROM processes").fetchone()[0]
        print(f"\nrun {args.seconds:.0f} s, --ring {args.span} --ring-budget {args.budget} MiB, {processes} processes")
        print(f"peak disk use: largest record file {peak_file / mib:.1f} MiB (budget {args.budget} MiB + header + "
              f"pinned chunks), raw directory {peak_total / mib:.1f} MiB")
        if steps[0]:
            print(f"final trace: steps {steps[1]}..{steps[2]} ({steps[0]} steps, {(steps[4] - steps[3]) / 1e9:.0f} s), "
                  f"{io} I/O calls")
        removed = [line for line in err.splitlines() if "removed while the job ran" in line]
        print("last lines of record's stderr:\n" + "\n".join(removed + err.strip().splitlines()[-4:]))


if __name__ == "__main__":
    sys.exit(main())
