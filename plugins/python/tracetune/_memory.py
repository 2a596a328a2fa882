"""Memory at the end of every step, as counters in the trace (docs/analysis.md, "Memory"):

- "host memory.rss": the process's resident set (/proc/self/statm, read by the collector with raw
  syscalls so that it is neither slow nor recorded as the job's I/O), always;
- "cuda:N memory.allocated", ".reserved", ".max_allocated", ".alloc_retries", ".ooms": PyTorch's
  caching allocator on the current CUDA device, when the job has initialised CUDA. Read with
  torch.cuda.memory_stats() and friends, which only read host-side counters (no GPU sync); the
  peak statistics are never reset, so the job sees the values it would see without us.

Each sample is stamped with the step's end time, so the analyzer gives it to that step.
"""
import sys

from tracetune import _collector

def _cuda_stats(torch):
    """[(counter name, value)] for the current CUDA device, or [] when CUDA is not in use."""
    cuda = getattr(torch, "cuda", None)
    try:
        if cuda is None or not cuda.is_initialized():
            return []
        dev = cuda.current_device()
        stats = cuda.memory_stats(dev)
    except Exception:  # noqa: BLE001  (a broken CUDA setup must not break the job)
        return []
    name = f"cuda:{dev} memory."
    return [(name + "allocated", stats.get("allocated_bytes.all.current", 0)),
            (name + "reserved", stats.get("reserved_bytes.all.current", 0)),
            (name + "max_allocated", stats.get("allocated_bytes.all.peak", 0)),
            (name + "alloc_retries", stats.get("num_alloc_retries", 0)),
            (name + "ooms", stats.get("num_ooms", 0))]


def sample(step_end_ns):
    """Counters for the step that ended at `step_end_ns`."""
    if not _collector.available():
        return
    rss = _collector.rss_bytes()  # not through libc: our own reads would be recorded as the job's I/O
    if rss is not None:
        _collector.counter_at("host memory.rss", rss, step_end_ns)
    torch = sys.modules.get("torch")
    if torch is not None:
        for name, value in _cuda_stats(torch):
            _collector.counter_at(name, value, step_end_ns)
