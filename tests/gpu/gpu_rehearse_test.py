#!/usr/bin/env python3
"""scripts/gpu-check.sh --rehearse as the GPU machine would run it, on this CPU machine:

 - the working tree copied the way the device tool copies it (tracked and untracked files that
   git does not ignore: no build tree), this build installed into its gpu-carry/ (the layout
   scripts/gpu-carry.sh makes), and the build tree hidden behind an empty tmpfs in a private
   mount namespace, so nothing can quietly load from it;
 - the job's Python is PyTorch 2.11 with its CUDA 13 wheels: TT_TORCH2_PYTHON, else
   ~/.cache/tracetune/torch-2.11.0/bin/python; without either the test is skipped (exit 77);
 - every stage must pass its rehearsal checks, and the packed archive must hold the summary and
   no full trace DB, within 16 MiB; a carry tree that is not there is one line and exit 2.

usage: gpu_rehearse_test.py BUILD_DIR CORPUS_DIR [TORCH2_PYTHON]
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))
from harness import check, finish  # noqa: E402
sys.path.insert(0, str(REPO / "scripts"))
import gpu_pack  # noqa: E402

BUILD, SHARED = pathlib.Path(sys.argv[1]).resolve(), pathlib.Path(sys.argv[2])
DEFAULT_TORCH2 = pathlib.Path.home() / ".cache/tracetune/torch-2.11.0/bin/python"
STAGES = ("capture", "diagnose", "nccl", "coexist", "kill", "overhead", "bench", "kernels", "tune")


def torch2_python():
    given = sys.argv[3] if len(sys.argv) > 3 and sys.argv[3] else ""
    for candidate in (given, str(DEFAULT_TORCH2)):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    print(f"SKIP: no PyTorch 2.11 Python (TT_TORCH2_PYTHON unset, {DEFAULT_TORCH2} absent)")
    sys.exit(77)


def copy_working_tree(dst):
    """What the device tool carries: git's tracked files and untracked ones it does not ignore."""
    files = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "-co", "--exclude-standard"], capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file() or src.is_symlink():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel, follow_symlinks=False)


def build_hidden(cmd):
    """`cmd` in a private mount namespace with an empty tmpfs over the build tree, when this
    machine allows unprivileged namespaces; else `cmd` as it is (said on stdout)."""
    if subprocess.run(["unshare", "-rm", "true"], capture_output=True).returncode != 0:
        print("NOTE: unshare -rm is not allowed here: the build tree stays visible (the injected paths are still "
              "checked to come from the carried tree)")
        return cmd
    return ["unshare", "-rm", "sh", "-c", 'mount -t tmpfs none "$0" && exec "$@"', str(BUILD), *cmd]


def check_archive(archive):
    check("archive written, at most 16 MiB", archive.exists() and archive.stat().st_size <= 16 * 1024 * 1024,
          archive.stat().st_size if archive.exists() else "missing")
    if not archive.exists():
        return
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        sizes = {m.name: m.size for m in tar.getmembers()}
    check("archive holds the summary and the pack manifest",
          "out/summary.json" in names and "out/pack-manifest.json" in names, names[:20])
    # trace DBs travel trimmed, or whole when small (scripts/gpu_pack.py)
    large = [n for n in names if n.endswith(".db") and "/trimmed/" not in n and sizes[n] > gpu_pack.MAX_WHOLE_DB]
    check("archive holds no large untrimmed trace DB", not large, large)


def main():
    python = torch2_python()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        repo = tmp / "repo"
        copy_working_tree(repo)
        r = subprocess.run(["cmake", "--install", BUILD, "--prefix", repo / "gpu-carry"], capture_output=True, text=True)
        if not check("this build installs as the carry tree", r.returncode == 0, r.stderr[-800:]):
            finish()
        script = repo / "scripts" / "gpu-check.sh"
        r = subprocess.run([script, "--rehearse", "--python", python, "--prefix", tmp / "absent"], capture_output=True,
                           text=True, timeout=120)
        check("no carry tree: one line, exit 2", r.returncode == 2 and r.stderr.count("\n") == 1, (r.returncode, r.stderr))
        out, archive = tmp / "out", tmp / "gc.tar.gz"
        t0 = time.monotonic()
        r = subprocess.run(build_hidden([str(script), "--rehearse", "--python", python, "--out", str(out),
                                         "--pack", str(archive), "--corpus", str(SHARED)]),
                           capture_output=True, text=True, timeout=840, cwd=repo)
        print(r.stdout, r.stderr[-3000:], sep="\n")
        print(f"rehearsal took {time.monotonic() - t0:.0f} s")
        check("rehearsal exits 0", r.returncode == 0, r.returncode)
        summary = json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {"stages": {}}
        for name in STAGES:
            st = summary["stages"].get(name, {})
            check(f"{name}: rehearsed, every check passed", st.get("passed", 0) > 0 and st.get("failed", 1) == 0,
                  [c for c in st.get("checks", []) if not c["ok"]][:3] or st)
        env = summary.get("environment", {})
        check("summary: PyTorch 2.11 with CUDA 13", str(env.get("torch", "")).startswith("2.11")
              and str(env.get("torch_cuda", "")).startswith("13"), env)
        check_archive(archive)
    finish()


if __name__ == "__main__":
    main()
