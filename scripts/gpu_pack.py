"""gpu-check's output, packed for the trip back from a lent GPU machine (scripts/gpu-check.sh --pack).

What comes back from the device tool is at most 8 files of at most 16 MiB per call, while the
trace DBs of a launch-bound run are hundreds of MB. So one archive holds every summary, facts
file and log (what the results are read from), every trace DB of at most 1 MB whole (the C++
sample's captures, most Python ones), and a few larger trace DBs trimmed to their first events,
each at most 5 MB (the size of a CI fixture, docs/gpu-check.md §4).
pack-manifest.json inside says what was left out and why.
"""
import json
import pathlib
import shutil
import sqlite3
import subprocess
import tarfile

# The trimmed traces that come back: one per kind of capture worth a golden test.
TRIMMED = ("capture/py_h2d.db", "capture/cpp_tiny.db", "capture/py_sync_emit_nvtx.db", "nccl/cpp_nccl.db",
           "coexist/coexist.db")
MAX_TRIMMED = 5_000_000
MAX_WHOLE_DB = 1_000_000     # a trace DB this small travels whole
MAX_FILE = 2_000_000          # a log or profiler JSON bigger than this stays behind (named in the manifest)
MAX_ARCHIVE = 16 * 1024 * 1024


def event_tables(con):
    """(table, time column) of the tables whose rows are events on a track (not processes,
    threads, strings, ...): the ones a trim may cut."""
    out = []
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        cols = {c[1] for c in con.execute(f'PRAGMA table_info("{t}")')}
        if "track_id" in cols and cols & {"start_ns", "ts_ns"}:
            out.append((t, "start_ns" if "start_ns" in cols else "ts_ns"))
    return out


def trim_db(src, dst, limit=MAX_TRIMMED):
    """Copies trace `src` to `dst` keeping the set-up and the first GPU activity: events that start
    more than a window after the first kernel (the first event without kernels) are removed, the
    window halved until the file is at most `limit` bytes; the cut is noted in its meta table.
    True when it fits."""
    shutil.copy(src, dst)
    if dst.stat().st_size <= limit:
        return True
    con = sqlite3.connect(dst)
    try:
        tables = event_tables(con)
        spans = [con.execute(f'SELECT min("{c}"), max("{c}") FROM "{t}"').fetchone() for t, c in tables]
        spans = [x for x in spans if x[0] is not None]
        if not spans:
            return False
        first_kernel = con.execute("SELECT min(start_ns) FROM kernels").fetchone()[0]
        lo = first_kernel if first_kernel is not None else min(x[0] for x in spans)
        window = max(x[1] for x in spans) - lo
        while dst.stat().st_size > limit and window > 1_000:
            window //= 2
            for t, c in tables:
                con.execute(f'DELETE FROM "{t}" WHERE "{c}" > ?', (lo + window,))
            con.commit()
            con.execute("VACUUM")
        con.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('gpu_check.trimmed', ?)",
                    (f"events starting more than {window} ns after the first kernel removed (scripts/gpu_pack.py)",))
        con.commit()
    finally:
        con.close()
    return dst.stat().st_size <= limit


def trimmed_copies(out, tracetune, manifest):
    """The TRIMMED traces present in `out`, trimmed into out/trimmed/ and checked to open."""
    folder = out / "trimmed"
    folder.mkdir(exist_ok=True)
    for rel in TRIMMED:
        src, dst = out / rel, folder / rel.replace("/", "__")
        if not src.exists():
            continue
        ok = trim_db(src, dst)
        ok = ok and subprocess.run([tracetune, "info", dst], capture_output=True).returncode == 0
        if not ok:
            dst.unlink(missing_ok=True)
            manifest["left_out"].append({"path": rel, "why": "could not be trimmed to 5 MB into a trace that opens"})


def chosen_files(out, manifest):
    """Every file of `out` that travels: trace DBs only when trimmed or at most MAX_WHOLE_DB, nothing
    else over MAX_FILE."""
    files = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        rel = path.relative_to(out).as_posix()
        if ".db.raw/" in rel or rel.endswith((".db-journal", ".lock")):
            continue
        if rel.endswith(".db") and not rel.startswith("trimmed/") and path.stat().st_size > MAX_WHOLE_DB:
            manifest["left_out"].append({"path": rel, "why": f"trace DB ({path.stat().st_size} bytes)"})
        elif path.stat().st_size > MAX_FILE and not rel.startswith("trimmed/"):
            manifest["left_out"].append({"path": rel, "why": f"{path.stat().st_size} bytes, over {MAX_FILE}"})
        else:
            files.append(path)
    return files


def write_archive(out, archive, files):
    with tarfile.open(archive, "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=f"{out.name}/{path.relative_to(out).as_posix()}")
    return archive.stat().st_size


def pack_once(out, archive, manifest):
    """The archive of what chosen_files keeps, with pack-manifest.json; its size."""
    written = {**manifest, "left_out": list(manifest["left_out"])}
    files = chosen_files(out, written)
    (out / "pack-manifest.json").write_text(json.dumps(written, indent=1))
    files = sorted(set(files) | {out / "pack-manifest.json"})
    return len(files), write_archive(out, archive, files)


def pack(out, archive, tracetune):
    """Packs `out` into `archive`; without the trimmed traces if all of it would pass 16 MiB.
    Prints one line; returns False when even that does not fit."""
    out, archive = pathlib.Path(out), pathlib.Path(archive)
    manifest = {"left_out": [], "limits": {"trimmed_db": MAX_TRIMMED, "file": MAX_FILE, "archive": MAX_ARCHIVE}}
    trimmed_copies(out, tracetune, manifest)
    count, size = pack_once(out, archive, manifest)
    if size > MAX_ARCHIVE:
        shutil.rmtree(out / "trimmed", ignore_errors=True)
        manifest["left_out"].append({"path": "trimmed/", "why": f"the archive came to {size} bytes with them"})
        count, size = pack_once(out, archive, manifest)
    print(f"gpu-check: packed {count} files into {archive} ({size / 1e6:.1f} MB); see pack-manifest.json for "
          "what stayed behind", flush=True)
    return size <= MAX_ARCHIVE
