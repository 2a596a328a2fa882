#!/usr/bin/env python3
"""What reading PyTorch's CUDA allocator counters costs per step on the host, without a GPU
(prints, never asserts): torch.cuda.memory_stats() (flattens the nested statistics into
~120 dotted names in Python and sorts them) against the nested statistics the Python
integration reads (tracetune/_memory.py). The allocator is stood in by a nested dict with
PyTorch 2.11's keys, so what is timed is the Python side only; the C++ side that builds the
nested dict is the same in both and not measured here. 7 rounds of 2,000 calls, medians.

usage: ~/.cache/tracetune/torch-2.11.0/bin/python bench/memory_stats_cost.py
"""
import pathlib
import statistics
import sys
import time

import torch

pools = ("all", "small_pool", "large_pool")
fields = ("current", "peak", "allocated", "freed")
nested = {k: {p: {f: 123456 for f in fields} for p in pools} for k in
          ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes", "active_bytes",
           "inactive_split_bytes", "requested_bytes")}
nested.update({k: {f: 1 for f in fields} for k in ("oversize_allocations", "oversize_segments")})
nested.update({k: 0 for k in ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc", "num_device_free", "max_split_size")})
torch.cuda.is_initialized = torch.cuda.memory.is_initialized = lambda: True
torch.cuda.current_device = lambda: 0
torch._C._cuda_memoryStats = lambda d: nested
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "plugins/python"))
from tracetune import _memory
def old():
    stats = torch.cuda.memory_stats(0)
    return [stats.get(k, 0) for k in ("allocated_bytes.all.current","reserved_bytes.all.current","allocated_bytes.all.peak","num_alloc_retries","num_ooms")]
print("entries", len(torch.cuda.memory_stats(0)), "new", _memory._cuda_stats(torch))
for name, f in (("memory_stats() + get", old), ("_cuda_stats (nested)", lambda: _memory._cuda_stats(torch))):
    ts=[]
    for r in range(7):
        t0=time.perf_counter()
        for _ in range(2000): f()
        ts.append((time.perf_counter()-t0)/2000*1e6)
    print(f"{name:24} median {statistics.median(ts):6.2f} us  rounds {' '.join(f'{x:.2f}' for x in ts)}")
