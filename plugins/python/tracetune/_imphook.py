"""Run a function on a module right after it is imported, without importing it ourselves.

One meta-path finder serves every part of the integration (step markers, tuned settings):
`on_import(name, fn)` calls `fn(module)` once `name` has been executed, or at once if it is
already imported. A failing callback is reported on stderr and never breaks the job's import.
"""
import importlib.abc
import sys
import threading

_callbacks = {}  # module name -> [fn, ...]
_lock = threading.Lock()


def _run(module, fns):
    for fn in fns:
        try:
            fn(module)
        except Exception as e:  # never break the job's import
            sys.stderr.write(f"tracetune: could not hook {module.__name__}: {e}\n")


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader, name):
        self._loader, self._name = loader, name

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        with _lock:
            fns = list(_callbacks.get(self._name, ()))
        _run(module, fns)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in _callbacks:
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, _Finder):
                continue
            spec = finder.find_spec(name, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, name)
                return spec
        return None


def on_import(name, fn):
    """Call fn(module) when `name` is imported (now, if it already is)."""
    with _lock:
        _callbacks.setdefault(name, []).append(fn)
        if not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder())
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__spec__", None) is not None and not _initializing(module):
        _run(module, [fn])


def _initializing(module):
    return bool(getattr(module.__spec__, "_initializing", False))
