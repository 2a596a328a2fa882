#!/usr/bin/env python3
"""Outputs and hostile names through the real CLI (issue 32, round two):

  special_outputs  -o naming a FIFO, a character device (our own, mknod'ed in a temporary
                   directory, never /dev/null) or a symlink to one is refused with one line and a
                   non-zero exit by every verb that writes a file; the node is left as it was.
  stdout_outputs   -o - writes the text/json/md/html reports and the chrome export to stdout;
                   verbs whose output cannot go to a pipe (import, --shard, tune) refuse it.
  hostile_names    kernel, process and file names and metadata values carrying Markdown, HTML,
                   ANSI escapes, bidi overrides and NUL reach md/text/html output only as inert text.
  strict_numbers   numeric flags and environment variables are parsed strictly (whole text, no
                   overflow, finite), with one line naming the flag or variable.
  tune_trace       `tune TRACE -- CMD` takes TRACE as the trace.

usage: cli_outputs_test.py TRACETUNE GOOD_KINETO_JSON CASE"""
import json
import os
import pathlib
import re
import stat
import subprocess
import sys
import tempfile

TRACETUNE = str(pathlib.Path(sys.argv[1]).resolve())
GOOD = pathlib.Path(sys.argv[2]).resolve()


def run(*argv, env=None, timeout=120):
    return subprocess.run([TRACETUNE, *map(str, argv)], capture_output=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})))


def one_line(r) -> str:
    lines = r.stderr.decode(errors="replace").strip().splitlines()
    return lines[0] if len(lines) == 1 else f"<{len(lines)} lines: {lines!r}>"


def special_nodes(d: pathlib.Path):
    """(what, path, test of the node's type): our own FIFO, our own char device, a symlink to it."""
    fifo = d / "fifo"
    os.mkfifo(fifo)
    yield "FIFO", fifo, stat.S_ISFIFO
    if os.geteuid() == 0:
        dev = d / "null-clone"  # same numbers as /dev/null: even a wrong write would be harmless
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        yield "character device", dev, stat.S_ISCHR
        link = d / "link-to-device"
        os.symlink(dev.name, link)
        yield "symlink to a character device", link, stat.S_ISCHR
    link = d / "link-to-fifo"
    os.symlink(fifo.name, link)
    yield "symlink to a FIFO", link, stat.S_ISFIFO


def special_outputs(d: pathlib.Path) -> list:
    failures = []
    db = d / "good.db"
    if run("import", GOOD, "-o", db).returncode != 0:
        return ["could not import the good fixture"]
    part = d / "good.ttpart"
    if run("analyze", "--shard", "0/1", GOOD, "-o", part).returncode != 0:
        return ["could not write a part file"]
    nodes = d / "nodes"
    nodes.mkdir()
    for what, node, is_kind in special_nodes(nodes):
        was_link = node.is_symlink()
        for argv in (["analyze", GOOD, "-o", node], ["analyze", "--format", "json", GOOD, "-o", node],
                     ["analyze", "--format", "html", GOOD, "-o", node], ["analyze", "--shard", "0/1", GOOD, "-o", node],
                     ["analyze", "--combine", part, "--format", "md", "-o", node], ["import", GOOD, "-o", node],
                     ["diff", GOOD, db, "--format", "md", "-o", node], ["export", db, "-o", node],
                     ["tune", "-q", "--max-trials", "1", "-o", node, "--", "/bin/true"],
                     ["record", "--trace", "io", "-o", node, "--", "/bin/true"]):
            r = run(*argv)
            line = one_line(r)
            label = f"{what}: {' '.join(map(str, argv[:3]))} ... -o {node.name}"
            if r.returncode == 0 or "not a regular file" not in line or str(node) not in line:
                failures.append(f"{label}: exit {r.returncode}, {line!r}")
            st = os.stat(node)
            if not is_kind(st.st_mode) or node.is_symlink() != was_link:
                failures.append(f"{label}: the {what} was replaced (mode {oct(st.st_mode)})")
        left = sorted(p.name for p in nodes.iterdir() if ".tmp-" in p.name)
        if left:
            failures.append(f"{what}: temporaries left: {left}")
    return failures


def stdout_outputs(d: pathlib.Path) -> list:
    failures = []
    db = d / "good.db"
    if run("import", GOOD, "-o", db).returncode != 0:
        return ["could not import the good fixture"]
    part = d / "good.ttpart"
    run("analyze", "--shard", "0/1", GOOD, "-o", part)
    for argv in (["analyze", GOOD], ["analyze", "--format", "json", GOOD], ["analyze", "--format", "md", GOOD],
                 ["analyze", "--format", "html", GOOD], ["analyze", "--combine", part, "--format", "md"],
                 ["diff", GOOD, db, "--format", "md"], ["diff", GOOD, db, "--format", "json"], ["export", db]):
        f = d / "as-file.out"
        r_file = run(*argv, "-o", f)
        r_out = run(*argv, "-o", "-")
        label = " ".join(map(str, argv[:3]))
        if r_out.returncode != 0 or r_file.returncode != 0:
            failures.append(f"{label} -o -: exit {r_out.returncode} (file: {r_file.returncode}), {one_line(r_out)!r}")
        elif r_out.stdout != f.read_bytes() or (d / "-").exists():
            failures.append(f"{label} -o -: stdout ({len(r_out.stdout)} bytes) is not what -o FILE wrote "
                            f"({f.stat().st_size} bytes), or a file named '-' appeared")
        f.unlink(missing_ok=True)
    json.loads(run("export", db, "-o", "-").stdout)  # the chrome export alone on stdout: valid JSON
    for argv in (["import", GOOD], ["analyze", "--shard", "0/1", GOOD], ["tune", "--max-trials", "1"], ["record"]):
        extra = ["--", "/bin/true"] if argv[0] in ("tune", "record") else []
        r = run(*argv, "-o", "-", *extra)
        if r.returncode != 2 or "stdout" not in one_line(r) or (d / "-").exists():
            failures.append(f"{' '.join(map(str, argv[:2]))} -o -: exit {r.returncode}, {one_line(r)!r}")
    return failures


# What a hostile trace carries in its names: live markup for a Markdown or HTML viewer, terminal
# escapes, bidi overrides, a NUL, Markdown structure (headings, lists, code-span breakers).
# Reports clip long names (the first 60 characters or so are shown), so the worst comes first.
HOSTILE = ("\n# Injected\x1b[31m\u202e`x`<script>alert(1)</script>|a|<img src=x onerror=alert(2)>"
           "<svg onload=alert(3)>![t](https://evil.example/p.png)[l](javascript:alert(4))\n> quote\n"
           "- item \x9b31m\u2066\x00nul``")


def hostile_trace(d: pathlib.Path) -> tuple:
    doc = json.loads(GOOD.read_text())
    doc["traceName"] = HOSTILE
    for e in doc["traceEvents"]:
        if e.get("cat") == "kernel":
            e["name"] = HOSTILE + " kernel"
        if e.get("name") == "process_name":
            e["args"]["name"] = HOSTILE + " process"
    # the file name itself (the report's source) carries markup, a newline and an escape
    evil = d / "evil`<b>\n# h\x1b[2J.json"
    evil.write_text(json.dumps(doc))
    return evil


LIVE_MARKUP = re.compile(r"<\s*(script|img|svg|b)\b|!\[|\]\(|\x1b|\x9b|\u202e|\u2066|\x00|^#+ Injected|^#+ h|^> quote|^- item",
                         re.MULTILINE)


def md_live(text: str) -> list:
    """Markup a Markdown viewer would act on, outside code spans (which render their content literally)."""
    outside = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)  # drop well-formed code spans
    return LIVE_MARKUP.findall(outside) + (["raw <"] if "<" in outside else [])


def hostile_names(d: pathlib.Path) -> list:
    failures = []
    evil = hostile_trace(d)
    part = d / "evil.ttpart"
    if run("analyze", "--shard", "0/1", evil, "-o", part).returncode != 0:
        return ["could not write the hostile part file"]
    md_runs = {"analyze md": ["analyze", "--format", "md", evil], "combine md": ["analyze", "--combine", part, "--format", "md"],
               "diff md": ["diff", GOOD, evil, "--format", "md"], "diff md (names on both sides)": ["diff", evil, evil, "--format", "md"]}
    for what, argv in md_runs.items():
        r = run(*argv)
        text = r.stdout.decode()
        if r.returncode != 0:
            failures.append(f"{what}: exit {r.returncode}, {one_line(r)!r}")
            continue
        live = md_live(text)
        if live:
            failures.append(f"{what}: live markup in the Markdown: {sorted(set(map(str, live)))}")
        if "evil" not in text or (what.startswith("diff") and "Injected" not in text):
            failures.append(f"{what}: the hostile names are not shown at all")
        for line in text.splitlines():  # a table row keeps its cell count: no raw | or newline from a name
            if line.startswith("|") and re.sub(r"\\\|", "", line).count("|") not in (3, 4, 5, 6, 10):
                failures.append(f"{what}: a table row lost its shape: {line[:160]!r}")
    for what, argv in {"analyze text": ["analyze", evil], "diff text": ["diff", GOOD, evil],
                       "analyze html": ["analyze", "--format", "html", evil]}.items():
        r = run(*argv)
        text = r.stdout.decode(errors="replace")
        controls = sorted({f"U+{ord(c):04X}" for c in text if (ord(c) < 0x20 and c != "\n") or 0x7F <= ord(c) <= 0x9F
                           or 0x202A <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069})
        if r.returncode != 0 or controls:
            failures.append(f"{what}: exit {r.returncode}, raw control characters {controls}")
        if "\\x1b" not in text or "\\u202e" not in text:
            failures.append(f"{what}: the escapes are not shown as visible \\x1b / \\u202e")
        if what.endswith("html") and re.search(r"<\s*(script|img)\b|<svg onload", text):
            failures.append(f"{what}: live markup in the HTML")
    return failures


def strict_numbers(d: pathlib.Path) -> list:
    failures = []
    out = d / "parts"
    out.mkdir()
    cases = [
        (["analyze", "--shard", "4294967297/3", GOOD, "-o", out / "p.ttpart"], {}, "--shard"),
        (["analyze", "--shard", "1/3x", GOOD, "-o", out / "p-{shard}.ttpart"], {}, "--shard"),
        (["analyze", "--shard", "-1/3", GOOD, "-o", out / "p-{shard}.ttpart"], {}, "--shard"),
        (["tune", "--trial-timeout", "nan", "--", "/bin/true"], {}, "--trial-timeout"),
        (["tune", "--trial-timeout", "inf", "--", "/bin/true"], {}, "--trial-timeout"),
        (["tune", "--min-gain", "nan", "--", "/bin/true"], {}, "--min-gain"),
        (["tune", "--early-stop", "nan", "--", "/bin/true"], {}, "--early-stop"),
        (["tune", "--budget", "infm", "--", "/bin/true"], {}, "--budget"),
        (["info", GOOD], {"TRACETUNE_STREAM_FROM_BYTES": "abc"}, "TRACETUNE_STREAM_FROM_BYTES"),
        (["info", GOOD], {"TRACETUNE_STREAM_FROM_BYTES": "99999999999999999999"}, "TRACETUNE_STREAM_FROM_BYTES"),
        (["info", GOOD], {"TRACETUNE_MAX_INFLATE": "12X"}, "TRACETUNE_MAX_INFLATE"),
        (["analyze", "--shard", "auto", GOOD, "-o", out / "p-{shard}.ttpart"], {"RANK": "one", "WORLD_SIZE": "2"}, "RANK"),
    ]
    for argv, env, name in cases:
        r = run(*argv, env=env, timeout=60)
        line = one_line(r)
        if r.returncode == 0 or name not in line:
            failures.append(f"{' '.join(map(str, argv[:3]))} {env or ''}: exit {r.returncode}, {line!r} (wants {name})")
    if any(out.iterdir()):
        failures.append(f"refused runs wrote {sorted(p.name for p in out.iterdir())}")
    # every {shard} in the name is replaced
    r = run("analyze", "--shard", "1/3", GOOD, "-o", out / "p-{shard}-of-{shard}.ttpart")
    if r.returncode != 0 or not (out / "p-1-of-1.ttpart").exists():
        failures.append(f"two {{shard}}: exit {r.returncode}, wrote {sorted(p.name for p in out.iterdir())}")
    return failures


def tune_trace(d: pathlib.Path) -> list:
    failures = []
    # a missing trace before --: refused as a trace that cannot be read, not as a usage error
    missing = d / "missing.json"
    r = run("tune", "-q", missing, "--", "/bin/true")
    if r.returncode != 1 or str(missing) not in one_line(r) or "at most one trace" in one_line(r):
        failures.append(f"tune MISSING -- CMD: exit {r.returncode}, {one_line(r)!r}")
    # a good trace: analysed, then the job's baseline trial runs (a command that does not exist fails it)
    r = run("tune", "-q", "--max-trials", "1", GOOD, "--", str(d / "no-such-job"))
    err = r.stderr.decode(errors="replace")
    if "at most one trace" in err or "baseline" not in err:
        failures.append(f"tune TRACE -- CMD: exit {r.returncode}, {err[-400:]!r}")
    # the command's own -- and arguments stay the command's
    r = run("tune", "-q", missing, "--", "/bin/sh", "-c", "true", "--", "x")
    if r.returncode != 1 or str(missing) not in one_line(r):
        failures.append(f"tune MISSING -- CMD with its own --: exit {r.returncode}, {one_line(r)!r}")
    # two arguments before -- are still refused
    r = run("tune", GOOD, GOOD, "--", "/bin/true")
    if r.returncode != 2 or "at most one trace before --" not in one_line(r):
        failures.append(f"tune TRACE TRACE -- CMD: exit {r.returncode}, {one_line(r)!r}")
    return failures


def main() -> int:
    case = sys.argv[3]
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # where a stray file named "-" would appear
        failures = globals()[case](pathlib.Path(tmp))
        os.chdir("/")
    for f in failures:
        print("FAIL", f)
    print(f"{case}: {'FAILED' if failures else 'passed'} ({len(failures)} failures)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
