"""What every golden script shares: its command line and its expected files.

    from golden_file import golden_arguments, compare_or_update
    a = golden_arguments("inputs", nargs="+")        # --tracetune, --name, --expected-dir, --update
    problem = compare_or_update(path, value, a.update)  # None: matches (or was rewritten)
"""
import argparse
import difflib
import json
import pathlib


def golden_arguments(*positional, expected_required=True, extra=(), **positional_options):
    """Parses --tracetune BIN --name NAME --expected-dir DIR [--update] and the script's own
    positional argument(s); `extra`: more (flag, options) pairs."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--tracetune", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--expected-dir", required=expected_required, type=pathlib.Path)
    ap.add_argument("--update", action="store_true")
    for flag, options in extra:
        ap.add_argument(flag, **options)
    for name in positional:
        ap.add_argument(name, **positional_options)
    return ap.parse_args()


def expected_text(value) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def compare_or_update(path: pathlib.Path, value, update: bool):
    """With `update`, writes `value` as the expected file and returns None. Otherwise returns
    None when the file holds `value`, else what is wrong: the file is missing, or a unified
    diff of expected against got."""
    text = expected_text(value)
    if update:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"updated {path}")
        return None
    if not path.exists():
        return f"missing expected file {path} (run the update_golden target)"
    expected = json.loads(path.read_text())
    if expected == value:
        return None
    diff = difflib.unified_diff(expected_text(expected).splitlines(), text.splitlines(), "expected", "got",
                                lineterm="", n=2)
    return f"{path.name} differs (run the update_golden target after a deliberate change):\n" + "\n".join(diff)
