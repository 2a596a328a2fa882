"""Memory at the end of every step, as counters in the trace (docs/analysis.md, "Memory"):

- "host memory.rss": the process's resident set (/proc/self/statm, read by the collector with raw
  syscalls so that it is neither slow nor recorded as the job's I/O), always: written by the
  collector with the step record itself (_collector.step_end), not here;
- "cuda:N memory.allocated", ".reserved", ".max_allocated", ".alloc_retries", ".ooms": PyTorch's
  caching allocator on the current CUDA device, when the job has initialised CUDA. Read with
  torch.cuda.memory_stats_as_nested_dict(), which only reads host-side counters (no GPU sync); the
  peak statistics are never reset, so the job sees the values it would see without us.

Each sample is stamped with the step's end time, so the analyzer gives it to that step.
"""
import sys

from tracetune import _collector


def _nested(stats, *keys):
    for k in keys:
        stats = stats.get(k, {}) if isinstance(stats, dict) else {}
    return stats if isinstance(stats, (int, float)) else 0


def _cuda_stats(torch):
    """[(counter name, value)] for the current CUDA device, or [] when CUDA is not in use.
    Read from the allocator's nested statistics (memory_stats_as_nested_dict): memory_stats()
    flattens the same ~120 entries into dotted names in Python, and sorts them, at every step."""
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is None or not cuda.is_initialized():
            return []
        dev = cuda.current_device()
        stats = cuda.memory_stats_as_nested_dict(dev)
    except Exception:  # noqa: BLE001  (a broken CUDA setup must not break the job)
        return []
    name = f"cuda:{dev} memory."
    return [(name + "allocated", _nested(stats, "allocated_bytes", "all", "current")),
            (name + "reserved", _nested(stats, "reserved_bytes", "all", "current")),
            (name + "max_allocated", _nested(stats, "allocated_bytes", "all", "peak")),
            (name + "alloc_retries", _nested(stats, "num_alloc_retries")),
            (name + "ooms", _nested(stats, "num_ooms"))]


def sample_cuda(step_end_ns):
    """The CUDA allocator's counters for the step that ended at `step_end_ns`."""
    if not _collector.available():
        return
    torch = sys.modules.get("torch")
    if torch is not None:
        for name, value in _cuda_stats(torch):
            _collector.counter_at(name, value, step_end_ns)
