#!/usr/bin/env python3
"""The hierarchical all-reduce DDP hook (plugins/python/tracetune/_hierarchical.py) on real
gloo, CPU: 4 ranks (mp.spawn) grouped as two simulated nodes of 2. Checks the subgroups'
membership by reducing over them, and that DDP gradients with the hook equal plain DDP's
(odd-sized buckets, several of them); the node layout and the env parsing in-process.

usage: hierarchical_hook_test.py SOURCE_DIR [CASE...]
"""
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import TORCH_PYTHON as PY, run_under_torch_python  # noqa: E402

run_under_torch_python()  # the job's Python: Debian's (torch 1.13) or TT_TORCH_PYTHON's
SRC = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(SRC / "plugins/python"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, run_cases  # noqa: E402
from tracetune import _hierarchical as hier  # noqa: E402

WORLD, PER_NODE = 4, 2


def rank_main(rank, init_file, results):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    state = hier.HierarchicalState(ranks_per_node=PER_NODE)
    # membership, seen by the collectives themselves: the sum of the members' ranks
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=state.intra)
    c = torch.tensor([float(rank)])
    dist.all_reduce(c, group=state.cross)
    grads = []
    for hooked in (False, True):
        torch.manual_seed(0)
        net = nn.Sequential(nn.Linear(7, 13), nn.Tanh(), nn.Linear(13, 5), nn.Linear(5, 3))  # odd sizes
        ddp = DDP(net, bucket_cap_mb=0.0002)  # ~200 bytes: several buckets
        if hooked:
            ddp.register_comm_hook(state, hier.hierarchical_hook)
        torch.manual_seed(100 + rank)  # different data on each rank
        for _ in range(2):
            ddp.zero_grad()
            ddp(torch.randn(6, 7)).pow(2).sum().backward()
        grads.append([p.grad.clone() for p in ddp.parameters()])
    equal = all(torch.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(*grads))
    worst = max(float((a - b).abs().max()) for a, b in zip(*grads))
    # not a trivially equal result: the hook's gradients differ from this rank's local ones
    torch.manual_seed(0)
    local = nn.Sequential(nn.Linear(7, 13), nn.Tanh(), nn.Linear(13, 5), nn.Linear(5, 3))
    torch.manual_seed(100 + rank)
    local(torch.randn(6, 7)).pow(2).sum().backward()
    differs = any(not torch.allclose(a, p.grad) for a, p in zip(grads[1], local.parameters()))
    results.put((rank, state.intra_ranks, state.cross_ranks, float(t), float(c), equal, worst, differs,
                 state.fallback_reason))
    dist.barrier()  # every rank past its last collective before the teardown (gloo can abort at exit otherwise)
    dist.destroy_process_group()


def case_layout(tmp):
    check("layout: 4 ranks, 2 per node", hier.node_layout(4, 2) == ([[0, 1], [2, 3]], [[0, 2], [1, 3]]),
          f"{hier.node_layout(4, 2)}")
    check("layout: 8 ranks, 4 per node", hier.node_layout(8, 4) == ([[0, 1, 2, 3], [4, 5, 6, 7]],
                                                                    [[0, 4], [1, 5], [2, 6], [3, 7]]))
    for world, rpn, why in ((4, 4, "one node"), (4, 3, "not a multiple"), (4, 1, "one rank per node"),
                            (4, None, "unknown")):
        reason = hier.node_layout(world, rpn)
        check(f"layout: {world} ranks, {rpn} per node falls back ({why})", isinstance(reason, str) and why in reason,
              f"{reason}")
    env = {"LOCAL_WORLD_SIZE": "2", "LOCAL_RANK": "1", "GROUP_RANK": "1"}
    check("env: torchrun's variables", hier.ranks_per_node_from_env(3, env) == 2)
    check("env: rank not node-major is refused", "not GROUP_RANK" in str(hier.ranks_per_node_from_env(2, env)))
    check("env: explicit setting wins", hier.ranks_per_node_from_env(3, {**env, "TRACETUNE_RANKS_PER_NODE": "4"}) == 4)
    check("env: bad explicit setting", "not an integer" in str(hier.ranks_per_node_from_env(0, {"TRACETUNE_RANKS_PER_NODE": "x"})))
    check("env: nothing known", hier.ranks_per_node_from_env(0, {}) is None)


def case_gloo(tmp):
    import torch.multiprocessing as mp
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, os.path.join(tmp, "init"), results)) for r in range(WORLD)]
    for p in procs:
        p.start()
    got = sorted(results.get(timeout=120) for _ in range(WORLD))
    for p in procs:
        p.join(60)
    check("gloo: all ranks exited cleanly", all(p.exitcode == 0 for p in procs), f"{[p.exitcode for p in procs]}")
    for rank, intra, cross, intra_sum, cross_sum, equal, worst, differs, fallback in got:
        node, local = divmod(rank, PER_NODE)
        want_intra = [node * PER_NODE + i for i in range(PER_NODE)]
        want_cross = list(range(local, WORLD, PER_NODE))
        check(f"rank {rank}: hierarchy in use", fallback is None, f"{fallback}")
        check(f"rank {rank}: node group {want_intra}, cross-node group {want_cross}",
              intra == want_intra and cross == want_cross, f"{intra} {cross}")
        check(f"rank {rank}: the groups' collectives reach exactly those ranks",
              intra_sum == sum(want_intra) and cross_sum == sum(want_cross), f"{intra_sum} {cross_sum}")
        check(f"rank {rank}: gradients equal plain all-reduce's (max diff {worst:.2e})", equal)
        check(f"rank {rank}: gradients are averaged over ranks, not local", differs)


if __name__ == "__main__":
    run_cases({"layout": case_layout, "gloo": case_gloo}, set(sys.argv[2:]))
