#!/usr/bin/env python3
"""The house rules that the code's own text can hold (docs/architecture.md):
 - no circle between source units of analyzer/, trace/, tuner/ and collector/ (UNIT_SCOPE): a
   unit is a folder's `name.h` + `name.cpp` (+ `name.cu`),
   and unit A depends on unit B when a file of A includes B's header (`#include "..."`,
   resolved as the compiler would: beside the file, then the include roots below);
 - no circle between modules (top folders: analyzer, trace, tuner, collector, gui, cli, plugins);
 - the module arrows listed in docs/architecture.md (the ```arrows block under "The picture")
   are the ones the code's includes draw between boxes (a top folder, or a second-level one in
   collector/, gui/ and plugins/), no more and no fewer;
 - the stage folders of analyzer/src and trace/src (STAGES, in the order data flows through them)
   include only from their own stage or the ones before it (a public header belongs to the stage
   of its source file);
 - no circle between the Python integration's modules (plugins/python/tracetune, every
   `import`, function-level ones included);
 - every raw system call of the collector is a wrapper in collector/preload/sys.h.
Prints each broken rule with the files behind it; exits 1 if any.

usage: house_test.py REPO
"""
import ast
import pathlib
import re
import sys

REPO = pathlib.Path(sys.argv[1]).resolve()
MODULES = ["analyzer", "trace", "tuner", "collector", "gui", "cli", "plugins"]
SOURCE = {".h", ".hpp", ".cpp", ".cc", ".c", ".cu", ".cuh"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Folders whose files' includes must not close a circle between units (a path prefix each).
UNIT_SCOPE = ("analyzer/", "trace/", "tuner/", "collector/")
# Stage folders in flow order: a stage may include its own headers and those of earlier stages.
STAGES = {"analyzer/src": ["metrics", "paths", "rules", "attribution", "report", "shard"],
          "trace/src": ["model", "files", "store", "import", "export"]}
failures = []


def sources():
    for module in MODULES:
        for path in sorted((REPO / module).rglob("*")):
            if path.suffix in SOURCE and path.is_file():
                yield path


def include_roots():
    """Every `include/` folder and every folder holding a header: what targets put on -I."""
    roots = {p for p in REPO.glob("*/**/include") if p.is_dir()}
    roots |= {p.parent for p in sources() if p.suffix in (".h", ".hpp", ".cuh")}
    return sorted(roots)


def resolve(path, name, roots):
    for base in [path.parent, *roots]:
        candidate = (base / name)
        if candidate.is_file():
            return candidate.resolve()
    return None  # a system or generated header


def unit_of(path):
    """folder/stem: a header and its source file are one unit, wherever the header lives
    (include/tracetune/x/name.h belongs to the module's src/name.cpp when one exists)."""
    return path.parent / path.stem


def find_cycle(graph):
    """One cycle of `graph` (node -> set of nodes) as a list, or None (iterative DFS)."""
    state = {}
    for start in sorted(graph):
        if state.get(start):
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        state[start], path = 1, [start]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                state[node] = 2
                stack.pop()
                path.pop()
            elif state.get(child) == 1:
                return path[path.index(child):] + [child]
            elif not state.get(child):
                state[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, ())))))
    return None


def header_units(files):
    """Public headers (include/...) map to the unit of the source file with their stem in the
    same module, when exactly one exists, or exactly one in the module's src/ (collector's
    window.h is src/window.cpp's, not preload/window.cpp's)."""
    by_stem = {}
    for f in files:
        if f.suffix in (".cpp", ".cc", ".c", ".cu"):
            by_stem.setdefault((f.relative_to(REPO).parts[0], f.stem), []).append(f)
    units = {}
    for f in files:
        unit = unit_of(f)
        if "include" in f.relative_to(REPO).parts:
            match = by_stem.get((f.relative_to(REPO).parts[0], f.stem), [])
            if len(match) > 1:  # the same stem in several folders of the module: its src/ one
                match = [m for m in match if m.parent.relative_to(REPO).parts[1:] == ("src",)]
            if len(match) == 1:
                unit = unit_of(match[0])
        units[f.resolve()] = unit
    return units


def stage_of(unit):
    """(module src folder, stage index) of a unit in a stage folder, else None."""
    rel = unit.relative_to(REPO).as_posix()
    for root, order in STAGES.items():
        if rel.startswith(root + "/"):
            first = rel[len(root) + 1:].split("/")[0]
            if first in order:
                return root, order.index(first)
    return None


def check_stages(edges):
    for a, b, f, name in edges:
        sa, sb = stage_of(a), stage_of(b)
        if sa and sb and sa[0] == sb[0] and sb[1] > sa[1]:
            order = STAGES[sa[0]]
            failures.append(f"{f.relative_to(REPO)} ({order[sa[1]]}) includes {name} of a later stage ({order[sb[1]]})")


def box_of(unit):
    """The box of the architecture picture a unit sits in: its top folder, or in collector/,
    gui/ and plugins/ the folder below (collector/src/, gui/lod/, ...)."""
    parts = unit.relative_to(REPO).parts
    return "/".join(parts[:2] if parts[0] in ("collector", "gui", "plugins") else parts[:1]) + "/"


def documented_arrows():
    """box -> set of boxes, from the ```arrows block of docs/architecture.md (`box -> box box`)."""
    text = (REPO / "docs" / "architecture.md").read_text()
    block = re.search(r"^```arrows\n(.*?)^```", text, re.M | re.S)
    arrows = {}
    for line in (block.group(1).splitlines() if block else []):
        if "->" in line:
            a, b = line.split("->", 1)
            arrows.setdefault(a.strip(), set()).update(b.split())
    return arrows


def check_documented_arrows(edges):
    drawn = {}
    for a, b, f, name in edges:
        if box_of(a) != box_of(b) and f.relative_to(REPO).parts[0] in MODULES:
            drawn.setdefault((box_of(a), box_of(b)), (f, name))
    listed = {(a, b) for a, targets in documented_arrows().items() for b in targets}
    if not listed:
        failures.append("docs/architecture.md: no ```arrows block of the module arrows")
        return
    for (a, b), (f, name) in sorted(drawn.items()):
        if (a, b) not in listed:
            failures.append(f"an arrow {a} -> {b} missing from docs/architecture.md ({f.relative_to(REPO)} includes {name})")
    for a, b in sorted(listed - set(drawn)):
        failures.append(f"docs/architecture.md lists an arrow {a} -> {b} that no include draws")


def check_includes():
    files = list(sources())
    roots = include_roots()
    units = header_units(files)
    unit_graph, module_graph, edges = {}, {}, []
    for f in files:
        text = f.read_text(errors="replace")
        for name in INCLUDE.findall(text):
            target = resolve(f, name, roots)
            if target is None or target not in units:
                continue
            a, b = units[f.resolve()], units[target]
            if a != b:
                if f.relative_to(REPO).as_posix().startswith(UNIT_SCOPE):
                    unit_graph.setdefault(a, set()).add(b)
                edges.append((a, b, f, name))
            ma, mb = f.relative_to(REPO).parts[0], target.relative_to(REPO).parts[0]
            if ma != mb:
                module_graph.setdefault(ma, set()).add(mb)
    check_stages(edges)
    check_documented_arrows(edges)
    for name, graph in (("source units", unit_graph), ("modules", module_graph)):
        cycle = find_cycle(graph)
        if cycle:
            shown = " -> ".join(str(c.relative_to(REPO)) if isinstance(c, pathlib.Path) else c for c in cycle)
            failures.append(f"a circle between {name}: {shown}")


def python_imports(path, package):
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == package:
                found |= {a.name for a in node.names}
            elif node.module.startswith(package + "."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith(package + ".")}
    return found


def check_python():
    pkg = REPO / "plugins" / "python" / "tracetune"
    names = {p.stem for p in pkg.glob("*.py")}
    graph = {p.stem: (python_imports(p, "tracetune") & names) - {p.stem} for p in pkg.glob("*.py")}
    graph.pop("__init__", None)  # the package imports its modules; they may import it back
    for deps in graph.values():
        deps.discard("__init__")
    cycle = find_cycle(graph)
    if cycle:
        failures.append("a circle between Python modules: " + " -> ".join(cycle))


def check_raw_syscalls():
    allowed = REPO / "collector" / "preload" / "sys.h"
    for f in (REPO / "collector").rglob("*"):
        if f.suffix in SOURCE and f.is_file() and f != allowed:
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                code = line.split("//")[0]
                if re.search(r"\bsyscall\s*\(", code):
                    failures.append(f"a raw syscall outside collector/preload/sys.h: {f.relative_to(REPO)}:{n}")


check_includes()
check_python()
check_raw_syscalls()
for f in failures:
    print("FAIL", f)
print("all rules hold" if not failures else f"{len(failures)} broken")
sys.exit(1 if failures else 0)
