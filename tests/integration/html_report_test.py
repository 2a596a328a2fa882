#!/usr/bin/env python3
"""`tracetune analyze --format html`: the page is self-contained (no scripts, nothing fetched),
escapes and elides hostile names, and its charts draw: rendered in headless Chromium, each
chart's series colours must cover a real area of the screenshot.

usage: html_report_test.py TRACETUNE CORPUS_DIR
Exits 77 (ctest: skipped) when Chromium or Pillow is missing; scripts/setup.sh installs both.
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile

TRACETUNE, DATA = sys.argv[1], pathlib.Path(sys.argv[2])
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish  # noqa: E402

# The report's palette (analyzer/src/report/html_report.cpp): series -> #rrggbb.
COMPUTE, KERNEL_BAR, GPU_IDLE, DATA_WAIT, HOST_COMPUTE = "#4e79a7", "#59a14f", "#bab0ac", "#edc948", "#9c755f"
EXPOSED_COMM, LAUNCH_IDLE = "#e15759", "#ff9da7"


def render(trace, out):
    r = subprocess.run([TRACETUNE, "analyze", "--format", "html", "-o", str(out), str(trace)], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise RuntimeError(f"analyze {trace} exited {r.returncode}: {r.stderr}")
    return out.read_text(encoding="utf-8")


def check_self_contained(name, page):
    check(f"{name}: an HTML document", page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>"))
    lower = page.lower()
    check(f"{name}: no scripts", "<script" not in lower)
    check(f"{name}: nothing fetched", not any(s in lower for s in ("http://", "https://", " src=", "@import", "url(")))
    check(f"{name}: charts are inline SVG", page.count("<svg") >= 5, page.count("<svg"))


def hostile_trace(path, long_name):
    """A one-kernel Kineto trace whose kernel and thread names are markup and a huge string."""
    events = [
        {"ph": "X", "cat": "kernel", "name": "<script>alert(1)</script>", "pid": 0, "tid": 7, "ts": 100, "dur": 50,
         "args": {"device": 0, "stream": 7, "correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": long_name, "pid": 0, "tid": 7, "ts": 200, "dur": 80,
         "args": {"device": 0, "stream": 7, "correlation": 2}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 90, "dur": 200, "args": {}},
    ]
    path.write_text(json.dumps({"traceEvents": events}))


COUNT_COLOURS = """
import json, sys
from PIL import Image
img = Image.open(sys.argv[1]).convert("RGB")
print(json.dumps([[list(rgb), n] for n, rgb in img.getcolors(maxcolors=1 << 24)]))
"""


def pillow_python():
    """An interpreter with Pillow: this one, or Debian's (python3-pil, from scripts/setup.sh)."""
    for exe in (sys.executable, "/usr/bin/python3"):
        if exe and pathlib.Path(exe).exists() and subprocess.run([exe, "-c", "import PIL"],
                                                                 capture_output=True).returncode == 0:
            return exe
    return None


def colour_area(python, png, colours):
    """Pixels of each exact colour in the screenshot."""
    r = subprocess.run([python, "-c", COUNT_COLOURS, str(png)], capture_output=True, text=True, timeout=120, check=True)
    wanted = {tuple(int(c[i:i + 2], 16) for i in (1, 3, 5)): c for c in colours}
    counts = {c: 0 for c in colours}
    for rgb, n in json.loads(r.stdout):
        if tuple(rgb) in wanted:
            counts[wanted[tuple(rgb)]] += n
    return counts


def screenshot(chromium, page, png, tmp):
    r = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp / 'chromium-profile'}", f"--screenshot={png}", "--window-size=1200,2600",
                        page.as_uri()], capture_output=True, text=True, timeout=120)
    if r.returncode != 0 or not png.exists():
        raise RuntimeError(f"chromium exited {r.returncode}: {r.stderr[-2000:]}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        resnet = tmp / "resnet.html"
        check_self_contained("resnet", render(DATA / "kineto/param/resnet_rtx2080ti.json.gz", resnet))
        dlrm = tmp / "dlrm.html"
        page = render(DATA / "kineto/param/dlrm_8rank", dlrm)
        check_self_contained("dlrm_8rank", page)
        check("dlrm_8rank: ranks beyond the first and slowest folded", "<details>" in page)

        hostile = tmp / "hostile.json"
        hostile_trace(hostile, "k" * 2_000_000)
        page = render(hostile, tmp / "hostile.html")
        check("hostile: markup in names escaped", "<script" not in page and "&lt;script&gt;" in page)
        check("hostile: a 2 MB name elided", len(page) < 200_000 and "kkk…" in page, len(page))

        chromium = shutil.which("chromium") or shutil.which("chromium-browser")
        python = pillow_python()
        if not chromium or not python:
            print("SKIP screenshot: chromium or Pillow missing (scripts/setup.sh installs them)")
            finish_or_skip()
        png = tmp / "resnet.png"
        screenshot(chromium, resnet, png, tmp)
        area = colour_area(python, png, [COMPUTE, KERNEL_BAR, GPU_IDLE, DATA_WAIT, HOST_COMPUTE])
        # resnet: one window, GPU busy ~35%, data wait ~56%, ten top kernels: every chart has area.
        check("screenshot: compute bars drew", area[COMPUTE] > 3000, area)
        check("screenshot: top-kernel bars drew", area[KERNEL_BAR] > 10000, area)
        check("screenshot: GPU idle drew", area[GPU_IDLE] > 3000, area)
        check("screenshot: data wait drew", area[DATA_WAIT] > 3000, area)
        check("screenshot: critical path host compute drew", area[HOST_COMPUTE] > 1000, area)
        png = tmp / "dlrm.png"
        screenshot(chromium, dlrm, png, tmp)
        area = colour_area(python, png, [EXPOSED_COMM, LAUNCH_IDLE, COMPUTE])
        check("screenshot dlrm_8rank: exposed communication drew", area[EXPOSED_COMM] > 3000, area)
        check("screenshot dlrm_8rank: launch idle drew", area[LAUNCH_IDLE] > 3000, area)
    finish()


def finish_or_skip():
    from harness import results
    if results and all(ok for _, ok, _ in results):
        sys.exit(77)
    finish()


main()
