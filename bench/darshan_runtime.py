"""Darshan (darshan-runtime, non-MPI, LD_PRELOAD) as a third variant for collector_overhead.py.

Nothing of Darshan is in this repository: `find_darshan` builds it from a Darshan source tree
the user names (--darshan-src) into a cache folder under the build directory, or takes an
installed prefix (--darshan-prefix). How to build and run it comes from Darshan's own
darshan-runtime documentation: `--without-mpi`, a log directory read from the environment
(`--with-log-path-by-env=DARSHAN_LOGPATH`: a flat folder), `--with-jobid-env=NONE` (the pid is
the job id); at run time `DARSHAN_ENABLE_NONMPI=1` and DXT tracing (`DXT_ENABLE_IO_TRACE=1`).
"""
import datetime
import os
import pathlib
import re
import shutil
import subprocess

CONFIGURE_FLAGS = ["--without-mpi", "--with-log-path-by-env=DARSHAN_LOGPATH", "--with-jobid-env=NONE"]
# (program, Debian package) needed to build from a git checkout (prepare.sh runs autoreconf)
BUILD_TOOLS = [("autoreconf", "autoconf"), ("automake", "automake"), ("libtoolize", "libtool"),
               ("make", "make"), ("cc", "gcc")]


class Darshan:
    def __init__(self, prefix, origin):
        self.prefix = pathlib.Path(prefix)
        self.origin = origin  # one line: where this Darshan came from
        self.lib = self.prefix / "lib/libdarshan.so"
        self.parser = self.prefix / "bin/darshan-parser"
        self.dxt_parser = self.prefix / "bin/darshan-dxt-parser"

    def env(self, logdir):
        """Environment additions that run a program under Darshan, logs going to `logdir`. The
        date folders are made too, for an installation configured with a date-formatted
        --with-log-path, where DARSHAN_LOGPATH names the top of that tree."""
        today = datetime.date.today()
        (logdir / f"{today.year}/{today.month}/{today.day}").mkdir(parents=True, exist_ok=True)
        return {"LD_PRELOAD": str(self.lib), "DARSHAN_ENABLE_NONMPI": "1", "DXT_ENABLE_IO_TRACE": "1",
                "DARSHAN_LOGPATH": str(logdir), "DARSHAN_MMAP_LOGPATH": str(logdir)}

    @staticmethod
    def logs(logdir):
        return sorted(pathlib.Path(logdir).rglob("*.darshan"))

    def counters(self, logdir, path=None):
        """{counter name: sum over every log in logdir (of records of `path` only, if given)},
        plus 'DXT_READS'/'DXT_WRITES' (segments DXT traced) and 'incomplete' (modules whose data
        Darshan marked incomplete). None when darshan-parser is not installed."""
        totals = {}
        if not self.parser.exists():
            return None
        for log in self.logs(logdir):
            out = run_text([self.parser, "--show-incomplete", log])
            for line in out.splitlines():
                cols = line.split("\t")
                if len(cols) >= 6 and not line.startswith("#") and (path is None or cols[5] == str(path)):
                    totals[cols[3]] = totals.get(cols[3], 0) + float(cols[4])
            for module in re.findall(r"The (\S+) module contains incomplete data", out):
                totals.setdefault("incomplete", set()).add(module)
            if self.dxt_parser.exists():
                self._add_dxt(run_text([self.dxt_parser, "--show-incomplete", log]), path, totals)
        return totals

    @staticmethod
    def _add_dxt(out, path, totals):
        current = None
        for line in out.splitlines():
            m = re.match(r"# DXT, file_id: \d+, file_name: (.*)$", line)
            if m:
                current = m.group(1)
            m = re.match(r"# DXT, write_count: (\d+), read_count: (\d+)", line)
            if m and (path is None or current == str(path)):
                totals["DXT_WRITES"] = totals.get("DXT_WRITES", 0) + int(m.group(1))
                totals["DXT_READS"] = totals.get("DXT_READS", 0) + int(m.group(2))
            if "contains incomplete data" in line and "DXT" in line:
                totals.setdefault("incomplete", set()).add("DXT_POSIX")


def run_text(cmd):
    return subprocess.run([str(c) for c in cmd], capture_output=True, text=True).stdout


def find_darshan(src, prefix, cache, mod_mem=None):
    """(Darshan, None) or (None, why it is skipped). `mod_mem` (MiB): configure's
    --with-mod-mem, the memory of Darshan's modules, DXT's trace buffer included (2 MiB)."""
    if prefix is not None:
        d = Darshan(prefix, f"installed at {prefix}")
        return (d, None) if d.lib.exists() else (None, f"{d.lib} not found")
    if src is None:
        return None, "no --darshan-src DIR (a Darshan source tree) or --darshan-prefix DIR given"
    src = pathlib.Path(src).resolve()
    if not (src / "darshan-runtime").is_dir():
        return None, f"{src} is not a Darshan source tree (no darshan-runtime/)"
    flags = CONFIGURE_FLAGS + ([f"--with-mod-mem={mod_mem}"] if mod_mem else [])
    return build_darshan(src, pathlib.Path(cache) / (f"mod-mem-{mod_mem}" if mod_mem else "default"), flags)


def missing_tools(src):
    needed = BUILD_TOOLS if not (src / "configure").exists() else BUILD_TOOLS[3:]
    missing = [pkg for prog, pkg in needed if shutil.which(prog) is None]
    if not any(pathlib.Path(d, "zlib.h").exists() for d in ("/usr/include", "/usr/local/include")):
        missing.append("zlib1g-dev")
    return missing


def build_darshan(src, cache, flags):
    """Builds darshan-runtime and darshan-util from `src` into cache/prefix, once per source
    tree and flag set (cache/stamp); the source is copied first, since its bootstrap
    (prepare.sh: autoreconf) writes into the tree."""
    prefix = cache / "prefix"
    stamp_text = f"{src}\n{' '.join(flags)}\n"
    stamp = cache / "stamp"
    d = Darshan(prefix, f"built from {src} into {prefix} ({' '.join(flags)})")
    if d.lib.exists() and stamp.exists() and stamp.read_text() == stamp_text:
        return d, None
    missing = missing_tools(src)
    if missing:
        return None, (f"cannot build {src}: missing {', '.join(missing)} "
                      f"(Debian: apt-get install {' '.join(missing)})")
    shutil.rmtree(cache, ignore_errors=True)
    cache.mkdir(parents=True)
    tree, obj, log = cache / "src", cache / "obj", cache / "build.log"
    shutil.copytree(src, tree, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    obj.mkdir()
    steps = [] if (tree / "configure").exists() else [(["sh", "prepare.sh"], tree)]
    steps += [([str(tree / "configure"), f"--prefix={prefix}", *flags], obj),
              (["make", f"-j{min(os.cpu_count() or 1, 4)}", "install"], obj)]
    print(f"building Darshan from {src} in {cache} (log: {log}) ...", flush=True)
    with open(log, "w") as fh:
        for cmd, cwd in steps:
            if subprocess.run(cmd, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT).returncode != 0:
                return None, f"`{' '.join(cmd[:2])}` failed building {src}; see {log}"
    if not d.lib.exists():
        return None, f"the build of {src} made no {d.lib}; see {log}"
    stamp.write_text(stamp_text)
    return d, None
