"""tracetune's in-process Python API.

    import tracetune
    for batch in loader:
        ...
        tracetune.step()          # mark a step boundary explicitly (optional)

Under `tracetune record`, PyTorch jobs get step boundaries and "waiting for the next batch"
spans without code changes (see docs/python.md); `tracetune.step()` is for loops that do not
iterate a DataLoader, and takes precedence over the automatic boundaries once called.
Outside `tracetune record` every function here is a cheap no-op.
"""
from tracetune import _collector

__all__ = ["step", "range", "mark", "counter", "is_recording", "apply"]

_explicit_step = {"number": 0, "start": None}


def apply(config=None) -> dict:
    """Apply tuned framework settings (DataLoader, DDP, TF32, optimizers, ...) in this process.

    With no argument: the settings `tracetune run --config` passed (TRACETUNE_APPLY), which
    sitecustomize already applies; calling it again is harmless. Or a tuned.toml path, or a
    dict {knob id: value}. Call it before building DataLoaders/DDP/optimizers. See
    docs/tuning.md. Returns the settings in effect."""
    from tracetune import _apply
    return _apply.apply(config)


def is_recording() -> bool:
    """True when this process runs under `tracetune record`."""
    return _collector.available()


def step(number: int = None) -> None:
    """End the current step and start the next one. The first call starts step 0."""
    if not _collector.available():
        return
    from tracetune import _autostep
    _autostep.explicit_steps_in_use()
    now = _collector.now_ns()
    state = _explicit_step
    if state["start"] is not None:
        _autostep.end_step(state["start"], now, state["number"])
        state["number"] += 1
        _autostep.stop_if_done(state["number"])
    if number is not None:
        state["number"] = int(number)
    state["start"] = now


class range:  # noqa: A001 - mirrors NVTX naming
    """A named span on the current thread: `with tracetune.range("load"): ...`."""

    __slots__ = ("_name", "_domain", "_start")

    def __init__(self, name: str, domain: str = "user"):
        self._name, self._domain, self._start = name, domain, 0

    def __enter__(self):
        if _collector.WATCH_RANGE_STARTS:
            _collector.range_begin(self._name)
        self._start = _collector.now_ns()
        return self

    def __exit__(self, *exc):
        _collector.range(self._name, self._domain, self._start, _collector.now_ns())
        return False


def mark(name: str, domain: str = "user") -> None:
    """An instant event."""
    _collector.mark(name, domain)


def counter(name: str, value: float) -> None:
    """A counter sample (e.g. samples/s) at the current time."""
    _collector.counter(name, float(value))
