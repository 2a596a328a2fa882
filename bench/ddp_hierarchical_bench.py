#!/usr/bin/env python3
"""The hierarchical all-reduce hook against plain all-reduce, side by side in one run, on gloo
(CPU): WORLD ranks on this host grouped as simulated nodes of PER_NODE. Medians over
--repeats, per bucket size. On one host every "link" is loopback TCP, so this shows the
hook's overhead (more collectives, padding, copies), not what it gains on slow inter-node
links (docs/tuning.md: when it helps).

    python3 bench/ddp_hierarchical_bench.py [--world 4] [--per-node 2] [--sizes-mb 1,8,32] [--repeats 15]
"""
import argparse
import os
import pathlib
import statistics
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "plugins/python"))
from tracetune import _hierarchical as hier  # noqa: E402


class Bucket:
    """What the hook reads of DDP's GradBucket: the flat buffer."""

    def __init__(self, t):
        self.t = t

    def buffer(self):
        return self.t


def rank_main(rank, args, init_file, out):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=args.world)
    state = hier.HierarchicalState(ranks_per_node=args.per_node)
    rows = []
    for mb in args.sizes_mb:
        n = int(mb * 1024 * 1024 / 4)
        t = torch.ones(n)
        plain, hooked = [], []
        for i in range(args.repeats + 2):  # plain and hook alternate; 2 warm-ups
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t.div_(args.world))
            t1 = time.perf_counter()
            dist.barrier()
            t2 = time.perf_counter()
            hier.hierarchical_hook(state, Bucket(t)).wait()
            t3 = time.perf_counter()
            if i >= 2:
                plain.append((t1 - t0) * 1e3)
                hooked.append((t3 - t2) * 1e3)
        rows.append((mb, statistics.median(plain), statistics.median(hooked)))
    if rank == 0:
        out.put(rows)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--world", type=int, default=4)
    ap.add_argument("--per-node", type=int, default=2)
    ap.add_argument("--sizes-mb", default="1,8,32")
    ap.add_argument("--repeats", type=int, default=15)
    args = ap.parse_args()
    args.sizes_mb = [float(s) for s in args.sizes_mb.split(",")]
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        procs = [ctx.Process(target=rank_main, args=(r, args, os.path.join(tmp, "init"), out)) for r in range(args.world)]
        for p in procs:
            p.start()
        rows = out.get(timeout=600)
        for p in procs:
            p.join()
    print(f"gloo, {args.world} ranks as {args.world // args.per_node} simulated nodes of {args.per_node}, "
          f"rank 0, median of {args.repeats}")
    print(f"{'bucket MiB':>10} {'all_reduce ms':>14} {'hierarchical ms':>16} {'ratio':>6}")
    for mb, plain, hooked in rows:
        print(f"{mb:>10g} {plain:>14.2f} {hooked:>16.2f} {hooked / plain:>6.2f}")


if __name__ == "__main__":
    main()
