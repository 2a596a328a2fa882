#!/usr/bin/env python3
"""A rank that lags, planted in a real two-rank job: CPU PyTorch with gloo under torchrun,
recorded with `tracetune record`. Each rank all-reduces its gradients as one bucket per step;
rank 1 sleeps 30 ms before it, so rank 0 has nothing to wait for but rank 1. Checked: the
Python integration records the gloo all-reduces as host-side collectives matched across ranks
(one communicator, named once); rank 1 is the last arriver; rank 0's critical path is mostly rank_wait and the job's
critical path runs through rank 1's host compute; the straggler finding names rank 1 with a
cost close to the planted 30 ms (the steps are even, so step times alone show nothing); and
rank 0, which only waits, is not called CPU bound. Analysed in two shards, the trace gives the
same report.

usage: lagging_rank_test.py TRACETUNE
"""
import json
import pathlib
import subprocess
import sys
import tempfile

TRACETUNE = sys.argv[1]
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish, free_port, query, TORCHRUN  # noqa: E402

LAG_S = 0.03
JOB = """
import sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Linear(64, 64)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x = torch.randn(32, 64)
for step in range(12):
    opt.zero_grad()
    model(x).sum().backward()
    if rank == 1:
        time.sleep(float(sys.argv[1]))  # the planted straggler
    grads = [p.grad for p in model.parameters()]
    flat = torch.cat([g.flatten() for g in grads])  # one bucket, as DDP would send it
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    torch.nn.utils.vector_to_parameters(flat, grads)
    opt.step()
# both ranks past their last collective before the teardown: without it, PyTorch 2.11's gloo
# aborted one rank at exit ("terminate called without an active exception") in 2 of 8 bare runs
# on a loaded machine, 0 of 10 with it
dist.barrier()
dist.destroy_process_group()
"""

with tempfile.TemporaryDirectory() as tmp:
    job = pathlib.Path(tmp) / "job.py"
    job.write_text(JOB)
    db = pathlib.Path(tmp) / "trace.db"
    # Debian's torch 1.13 torchrun fails on Python 3.11 with its default --redirects/--tee of 0
    r = subprocess.run([TRACETUNE, "record", "-o", str(db), "--", TORCHRUN, "--nproc_per_node", "2",
                        "--master_port", free_port(), "--redirects", "2", "--tee", "2", str(job), str(LAG_S)],
                       capture_output=True, text=True, timeout=300)
    check("the two-rank job runs under record", r.returncode == 0 and db.exists(), r.stdout[-1000:] + r.stderr[-2000:])
    names = dict(query(db, "SELECT s.value, count(*) FROM collectives c JOIN strings s ON s.id = c.name_id GROUP BY 1"))
    check("gloo all-reduces recorded: one per step per rank (and the closing barrier)",
          names == {"glooAllReduce": 24, "glooBarrier": 2}, names)
    comms = query(db, "SELECT key, value FROM meta WHERE key LIKE 'nccl_comm:%'")
    check("one communicator, named once", len(comms) == 1 and comms[0][1].startswith("c10d:gloo:"), comms)

    a = subprocess.run([TRACETUNE, "analyze", "--format", "json", str(db)], capture_output=True, text=True, timeout=300)
    check("analyze succeeds", a.returncode == 0, a.stderr[-2000:])
    doc = json.loads(a.stdout)
    ranks = {x["rank"]: x for x in doc["ranks"] if x["has_steps"]}
    check("two ranks with steps", sorted(ranks) == [0, 1], sorted(ranks))
    cross = doc["cross_rank"]
    check("rank 1 arrives last", cross["last_arriver"] == 1 and cross["last_arriver_share"] >= 0.75, cross)

    def share(paths, kind):
        total = sum(p["length_ns"] for p in paths)
        return sum(p["by_kind_ns"][kind] for p in paths) / total if total else 0

    wait0 = share(ranks[0]["critical_path"], "rank_wait")
    check("rank 0's path is mostly waiting for rank 1", wait0 > 0.6, wait0)
    job_paths = doc["job_critical_path"]
    on_rank1 = sum(n for p in job_paths for x in p["by_rank"] if x["rank"] == 1 for n in [x["ns"]])
    total = sum(p["length_ns"] for p in job_paths)
    check("the job's critical path runs through rank 1", total > 0 and on_rank1 > 0.6 * total, (on_rank1, total))
    check("and there through host compute (the planted sleep)", share(job_paths, "host_compute") > 0.6,
          share(job_paths, "host_compute"))

    late = [f for f in doc["findings"] if f["category"] == "load_imbalance"]
    cost_ms = late[0]["cost_ns"] / 1e6 if late else 0
    print(f"straggler finding: rank {late[0]['rank'] if late else None}, {cost_ms:.1f} ms per step "
          f"(planted {LAG_S * 1e3:.0f} ms)")
    check("the straggler finding names rank 1", len(late) == 1 and late[0]["rank"] == 1, late)
    check("its cost is the planted lag", 0.6 * LAG_S * 1e3 <= cost_ms <= 1.5 * LAG_S * 1e3, cost_ms)
    cpu = [f["rank"] for f in doc["findings"] if f["category"] == "cpu_bound"]
    check("rank 0, which only waits, is not called CPU bound", 0 not in cpu, cpu)

    # sharded: the two ranks of this one trace split over two shards (host-side collectives,
    # GPU-less ranks: their collective calls are graph nodes), combined, give the same report
    for k in range(2):
        r = subprocess.run([TRACETUNE, "analyze", str(db), "--shard", f"{k}/2", "-o", f"{tmp}/part-{{shard}}.ttpart"],
                           capture_output=True, text=True, timeout=300)
        check(f"shard {k}/2 runs", r.returncode == 0, r.stderr[-2000:])
    c = subprocess.run([TRACETUNE, "analyze", "--combine", f"{tmp}/part-0.ttpart", f"{tmp}/part-1.ttpart", "--format",
                        "json"], capture_output=True, text=True, timeout=300)
    # The Python attribution (hot_functions, from the trace's stack samples) included: the parts
    # carry each rank's samples (docs/scale.md). The single-process report has some to compare.
    def hot_functions(node):
        if isinstance(node, dict):
            return ([node["hot_functions"]] if "hot_functions" in node else []) + \
                [h for v in node.values() for h in hot_functions(v)]
        return [h for v in node for h in hot_functions(v)] if isinstance(node, list) else []
    check("the single-process report attributes host time to Python functions", hot_functions(doc), doc["findings"])
    combined = json.loads(c.stdout) if c.returncode == 0 else {}
    check("the combined report has the same hot_functions", hot_functions(combined) == hot_functions(doc),
          c.stderr[-2000:] or (hot_functions(combined)[:3], hot_functions(doc)[:3]))
    check("the combined report equals the single-process one", combined == doc, c.stderr[-2000:] or "reports differ")
finish()
