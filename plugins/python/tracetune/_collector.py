"""ctypes bindings to the C API that libtracetune_collector.so (already loaded into this
process by LD_PRELOAD) exports. Without the collector every call is a no-op.

While the job's recording window is closed (record --steps/--delay/--start-on/--armed), the
calls whose records the collector would refuse return before any work (window_open: one read
of the collector's shared window state): steps other than the training step's own record,
ranges, marks, counters. The training step's record always reaches the collector: it counts
the steps that open a --steps window and serve `tracetune capture`."""
import ctypes
import os
import time

STEP, BATCH_WAIT, OPTIMIZER_STEP = 0, 1, 2  # StepKind in record_format.h

_lib = None
_holders = None  # the window control page's `holders` word (open while > 0); None: no window
if os.environ.get("TRACETUNE_OUTPUT_DIR"):
    try:
        # PyDLL: the calls keep the GIL (they take microseconds). Through CDLL each would release
        # and retake it, a switch point that draws the stack sampler's ticks (_pystack.py) to
        # our own calls instead of the job's code.
        _self = ctypes.PyDLL(None)
        _self.tracetune_is_recording.restype = ctypes.c_int
        if _self.tracetune_is_recording():
            _lib = _self
            _lib.tracetune_now_ns.restype = ctypes.c_int64
            _lib.tracetune_step.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            _lib.tracetune_step_end.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
            _lib.tracetune_range.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64]
            _lib.tracetune_range_begin.argtypes = [ctypes.c_char_p]
            _lib.tracetune_mark.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
            _lib.tracetune_counter.argtypes = [ctypes.c_char_p, ctypes.c_double]
            _lib.tracetune_counter_at.argtypes = [ctypes.c_char_p, ctypes.c_double, ctypes.c_int64]
            _lib.tracetune_intern_string.restype = ctypes.c_uint32
            _lib.tracetune_intern_string.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
            _lib.tracetune_emit_gpu_record.restype = ctypes.c_int
            _lib.tracetune_emit_gpu_record.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_uint32]
    except (AttributeError, OSError):
        _lib = None
    try:  # a collector without it (an older build): the window's state is left to the collector
        if _lib is not None:
            _lib.tracetune_window_holders.restype = ctypes.c_void_p
            _address = _lib.tracetune_window_holders()
            if _address:  # mapped for the process's life, at the same address in fork children
                _holders = ctypes.c_uint32.from_address(_address)
    except AttributeError:
        _holders = None


def available() -> bool:
    return _lib is not None


def window_open() -> bool:
    """Whether the collector writes event records now: always without a recording window, else
    while the job's window is open. One read of shared memory (about 60 ns), no call."""
    return _holders is None or _holders.value != 0


def now_ns() -> int:
    # the collector's clock is CLOCK_MONOTONIC, which time.monotonic_ns() reads too on Linux
    return time.monotonic_ns()


def step(kind: int, start_ns: int, end_ns: int, number: int) -> None:
    """A step-kind span. Outside the window only the training step's own record (STEP) goes to
    the collector (it moves the step windows); a batch wait or optimizer span would be refused."""
    if _lib is not None and (kind == STEP or window_open()):
        _lib.tracetune_step(kind, start_ns, end_ns, number)


def step_end(kind: int, start_ns: int, end_ns: int, number: int) -> None:
    """A step record plus, stamped with its end, the process's RSS as the counter "host
    memory.rss", both written by the collector in one call (read with raw syscalls there, so
    neither slow nor recorded as the job's I/O)."""
    if _lib is not None:
        _lib.tracetune_step_end(kind, start_ns, end_ns, number)


def range(name: str, domain: str, start_ns: int, end_ns: int) -> None:  # noqa: A001
    if _lib is not None and window_open():
        _lib.tracetune_range(name.encode("utf-8", "replace"), domain.encode("utf-8", "replace"), start_ns, end_ns)


# `record --start-on`: the collector is told when each Python range starts (else it is not).
WATCH_RANGE_STARTS = os.environ.get("TRACETUNE_WINDOW_START_ON") == "1"


def range_begin(name: str) -> None:
    """A tracetune.range starts: the recording window may open on it (record --start-on)."""
    if _lib is not None:
        _lib.tracetune_range_begin(name.encode("utf-8", "replace"))


def mark(name: str, domain: str) -> None:
    if _lib is not None and window_open():
        _lib.tracetune_mark(name.encode("utf-8", "replace"), domain.encode("utf-8", "replace"))


def counter(name: str, value: float) -> None:
    if _lib is not None and window_open():
        _lib.tracetune_counter(name.encode("utf-8", "replace"), value)


def counter_at(name: str, value: float, ts_ns: int) -> None:
    """A counter sample at a time measured earlier (tracetune_now_ns / now_ns())."""
    if _lib is not None and window_open():
        _lib.tracetune_counter_at(name.encode("utf-8", "replace"), value, ts_ns)


def intern_string(text: str) -> int:
    """The id of `text` in this process's record file (a String record on first use); 0 when
    not recording. Ids belong to the process: a fork child's differ."""
    if _lib is None:
        return 0
    raw = text.encode("utf-8", "replace")
    return _lib.tracetune_intern_string(raw, len(raw))


def emit_record(record_type: int, record) -> None:
    """Writes a ctypes structure as one record of `record_type` (record_format.h's GPU-side
    types, 100..199, e.g. NcclComm / NcclColl)."""
    if _lib is not None:
        _lib.tracetune_emit_gpu_record(record_type, ctypes.byref(record), ctypes.sizeof(record))
