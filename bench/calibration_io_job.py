#!/usr/bin/env python3
"""A CPU training job whose DataLoader mostly waits (an I/O-like loader): each sample sleeps
SLEEP seconds and then does a little CPU work (a 64x64 matmul chain), so DataLoader workers add
little CPU load. A calibration job for bench/calibration.py: the data-loading what-if should
hold here, unlike samples/dataloader where workers compete with the main thread for the cores.

    python3 bench/calibration_io_job.py [--sleep 0.004] [--batch-size 8] [--num-workers 0]
"""
import argparse
import time

import torch


class WaitingLoader(torch.utils.data.Dataset):
    def __init__(self, sleep: float):
        self.sleep = sleep

    def __len__(self):
        return 1 << 20

    def __getitem__(self, i):
        time.sleep(self.sleep)
        x = torch.randn(64, 64)
        for _ in range(4):
            x = torch.tanh(x @ x)
        return x.flatten()[:256], i % 10


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sleep", type=float, default=0.004)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--num-workers", type=int, default=0)
    ap.add_argument("--steps", type=int, default=100000)
    a = ap.parse_args()
    torch.set_num_threads(1)
    loader = torch.utils.data.DataLoader(WaitingLoader(a.sleep), batch_size=a.batch_size, num_workers=a.num_workers)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step, (x, y) in enumerate(loader):
        if step >= a.steps:
            break
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


if __name__ == "__main__":
    main()
