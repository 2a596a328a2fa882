#!/usr/bin/env python3
"""Per-event cost of the Python integration (bench/collector_overhead.py runs it bare and under
`tracetune record`, side by side): N DataLoader fetches (batch of one tiny tensor, no workers), N
optimizer steps (SGD on a 4x4 linear layer), each loop timed inside the process; prints ns per
event. The difference between the two runs is what recording one fetch or one step costs.

usage: hook_cost_job.py N
"""
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.zeros(n, 4)), batch_size=1)
t0 = time.perf_counter_ns()
for _ in loader:
    pass
fetch = (time.perf_counter_ns() - t0) / n

model = torch.nn.Linear(4, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
model(torch.zeros(1, 4)).sum().backward()
t0 = time.perf_counter_ns()
for _ in range(n):
    opt.step()
step = (time.perf_counter_ns() - t0) / n
print(f"fetch {fetch:.0f} ns, step {step:.0f} ns")
