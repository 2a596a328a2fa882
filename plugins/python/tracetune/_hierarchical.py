"""Hierarchical all-reduce DDP communication hook (`ddp.comm_hook = "hierarchical"`).

For jobs whose inter-node links are much slower than the links inside a node: each bucket is
reduce-scattered inside the node, each local rank all-reduces only its shard (1/L of the
bucket, L = ranks per node) with the ranks holding the same shard on the other nodes, and the
node all-gathers the shards back. The inter-node link carries 1/L of the bytes a flat ring
all-reduce puts on it. The result is the same sum as a plain all-reduce (divided by the world
size, as DDP's default hook averages), up to floating-point summation order.

What runs on each backend:
- nccl: intra-node `reduce_scatter`, inter-node `all_reduce` of the shard, intra-node
  `all_gather`.
- gloo (and others): gloo has no reduce_scatter (PyTorch 1.13 and later raise "does not
  support reduce_scatter"), so the intra-node step is L `reduce` calls, shard i to local rank i
  (the same bytes as a reduce-scatter); then the same inter-node `all_reduce` and an
  intra-node `all_gather` into a list of shards.

The collectives are issued in order and waited for inside the hook, and the hook returns a
completed future: every rank issues the same sequence on every group, at the price of no
overlap between this bucket's communication and the rest of the backward pass on CPU
backends (on NCCL `wait()` only orders streams). The bucket is zero-padded to a multiple of L.

Nodes: ranks are grouped as torchrun numbers them (rank = node * L + local rank), L from
TRACETUNE_RANKS_PER_NODE (explicit, e.g. to simulate nodes on one host) or torchrun's
LOCAL_WORLD_SIZE. With one node, one rank per node, an unknown or uneven L, or ranks not
numbered that way, the hook is plain all-reduce, with one warning saying why.
"""
import os


def node_layout(world, ranks_per_node):
    """(intra-node groups, cross-node groups) as lists of rank lists, or a reason string
    when the hierarchy does not apply. Intra: one per node; cross: one per local rank."""
    if ranks_per_node is None or ranks_per_node < 1:
        return "ranks per node unknown (set TRACETUNE_RANKS_PER_NODE or run under torchrun)"
    if world % ranks_per_node:
        return f"world size {world} is not a multiple of {ranks_per_node} ranks per node"
    nodes = world // ranks_per_node
    if nodes == 1:
        return f"all {world} ranks are on one node"
    if ranks_per_node == 1:
        return "one rank per node (hierarchical is plain all-reduce)"
    intra = [list(range(n * ranks_per_node, (n + 1) * ranks_per_node)) for n in range(nodes)]
    cross = [list(range(local, world, ranks_per_node)) for local in range(ranks_per_node)]
    return intra, cross


def ranks_per_node_from_env(rank, env=os.environ):
    """L from TRACETUNE_RANKS_PER_NODE, else torchrun's LOCAL_WORLD_SIZE when this rank is
    numbered node-major (GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK). A string is a reason."""
    explicit = env.get("TRACETUNE_RANKS_PER_NODE")
    if explicit:
        try:
            value = int(explicit)
        except ValueError:
            return f"TRACETUNE_RANKS_PER_NODE = {explicit!r} is not an integer"
        return value if value >= 1 else f"TRACETUNE_RANKS_PER_NODE = {explicit!r} is below 1"
    try:
        local_world = int(env["LOCAL_WORLD_SIZE"])
        local_rank, node = int(env["LOCAL_RANK"]), int(env["GROUP_RANK"])
    except (KeyError, ValueError):
        return None
    if rank != node * local_world + local_rank:
        return f"rank {rank} is not GROUP_RANK * LOCAL_WORLD_SIZE + LOCAL_RANK (uneven nodes)"
    return local_world


class HierarchicalState:
    """The subgroups, created once on every rank (new_group is collective over the world)."""

    def __init__(self, ranks_per_node=None, process_group=None):
        import torch.distributed as dist
        self.world = dist.get_world_size()
        self.rank = dist.get_rank()
        self.backend = dist.get_backend()
        rpn = ranks_per_node if ranks_per_node is not None else ranks_per_node_from_env(self.rank)
        layout = rpn if isinstance(rpn, str) else node_layout(self.world, rpn)
        if process_group is not None and process_group is not dist.distributed_c10d._get_default_group():
            layout = "DDP runs on a process group other than the default one"
        self.fallback_reason = layout if isinstance(layout, str) else None
        self.intra_ranks = self.cross_ranks = None
        self.intra = self.cross = None
        if self.fallback_reason:
            return
        self.ranks_per_node = rpn
        intra, cross = layout
        # every rank creates every group, in the same order
        for members in intra:
            group = dist.new_group(members)
            if self.rank in members:
                self.intra, self.intra_ranks = group, members
        for members in cross:
            group = dist.new_group(members)
            if self.rank in members:
                self.cross, self.cross_ranks = group, members
        self.local_rank = self.intra_ranks.index(self.rank)


def hierarchical_hook(state, bucket):
    """DDP comm hook: the bucket averaged over all ranks (see the module comment)."""
    import torch
    import torch.distributed as dist
    buffer = bucket.buffer()
    if state.fallback_reason:
        buffer.div_(state.world)
        return dist.all_reduce(buffer, async_op=True).get_future().then(lambda fut: fut.value()[0])
    L = state.ranks_per_node
    n = buffer.numel()
    if n == 0:  # nothing to reduce (every rank has the same empty bucket)
        fut = torch.futures.Future()
        fut.set_result(buffer)
        return fut
    shard_len = (n + L - 1) // L
    flat = buffer.new_zeros(shard_len * L)
    flat[:n].copy_(buffer.view(-1))
    flat.div_(state.world)
    shards = list(flat.split(shard_len))
    mine = shards[state.local_rank]
    if state.backend == "nccl":
        out = torch.empty_like(mine)
        dist.reduce_scatter(out, shards, group=state.intra)
        mine.copy_(out)
    else:
        for i, shard in enumerate(shards):
            work = dist.reduce(shard, dst=state.intra_ranks[i], group=state.intra, async_op=True)
            work.wait()
    dist.all_reduce(mine, group=state.cross)
    gathered = [torch.empty_like(mine) for _ in range(L)]
    dist.all_gather(gathered, mine, group=state.intra)
    buffer.view(-1).copy_(torch.cat(gathered)[:n])
    fut = torch.futures.Future()
    fut.set_result(buffer)
    return fut


def register(ddp, register_fn, say):
    """Create the subgroups and register the hook on `ddp` (through `register_fn`, DDP's own
    register_comm_hook); `say` logs once. The hook name in effect, or None."""
    state = HierarchicalState(process_group=getattr(ddp, "process_group", None))
    if state.fallback_reason:  # DDP's own all-reduce, untouched: no Python hook in the way
        say(f"ddp.comm_hook = hierarchical: {state.fallback_reason}; plain all-reduce")
        return state
    else:
        say(f"ddp.comm_hook = hierarchical: {state.world // state.ranks_per_node} nodes of "
            f"{state.ranks_per_node} ranks ({state.backend})")
    register_fn(ddp, state, hierarchical_hook)
    return state
