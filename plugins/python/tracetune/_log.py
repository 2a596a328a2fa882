"""One-line messages of the Python integration on the job's stderr, each said at most once per
process (a setting applied, a swap made, a fallback taken)."""
import sys
import threading

_lock = threading.Lock()
_said = set()


def say(msg):
    sys.stderr.write(f"tracetune: {msg}\n")


def once(key, msg):
    """`msg` the first time `key` is given in this process; nothing after."""
    with _lock:
        if key in _said:
            return
        _said.add(key)
    say(msg)
