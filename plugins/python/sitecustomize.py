"""tracetune's Python integration, loaded by every Python process that `tracetune record` or
`tracetune run --config` starts (PYTHONPATH points here). It only installs lazy import hooks
(step markers when recording, tuned settings when TRACETUNE_APPLY names them), so a job that
never imports torch pays nothing; then it hands over to any sitecustomize the job had before.
"""
import os as _os
import sys as _sys


def _tracetune_bootstrap():
    try:
        import tracetune._autostep as autostep
        autostep.install()
    except Exception as e:  # never break the job
        _sys.stderr.write(f"tracetune: Python integration disabled: {e}\n")


def _tracetune_pystack():
    try:
        import tracetune._pystack as pystack
        pystack.start()
    except Exception as e:  # never break the job
        _sys.stderr.write(f"tracetune: Python stack sampling disabled: {e}\n")


def _chain_next_sitecustomize():
    """Run the sitecustomize that would have run without us (the next one on sys.path)."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    import importlib.machinery
    import importlib.util
    for entry in _sys.path:
        try:
            if not entry or _os.path.abspath(entry) == here:
                continue
        except Exception:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        _sys.modules["_tracetune_chained_sitecustomize"] = module
        spec.loader.exec_module(module)
        return


def _tracetune_apply():
    try:
        import tracetune._apply as apply
        apply.apply(_os.environ["TRACETUNE_APPLY"])
    except Exception as e:  # never break the job; but say loudly that the settings are not in effect
        _sys.stderr.write(f"tracetune: tuned settings NOT applied: {e}\n")


if _os.environ.get("TRACETUNE_APPLY"):
    _tracetune_apply()
if _os.environ.get("TRACETUNE_OUTPUT_DIR") and "python" in _os.environ.get("TRACETUNE_TRACE", "python").split(","):
    _tracetune_bootstrap()
if _os.environ.get("TRACETUNE_OUTPUT_DIR") and "pystack" in _os.environ.get("TRACETUNE_TRACE", "python,pystack").split(","):
    _tracetune_pystack()
_chain_next_sitecustomize()
