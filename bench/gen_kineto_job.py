#!/usr/bin/env python3
"""Writes a generated many-rank training job as PyTorch-profiler (Kineto) traces, one gzip file per
rank (rank-N.json.gz), for the scale benchmark (bench/scale_bench.py, docs/scale.md).

Each rank runs the same steps (ProfilerStep#N): per layer a CPU op that launches a GEMM kernel
(runtime call + kernel, linked by correlation id), one pinned host-to-device copy, then an NCCL
all-reduce kernel per step whose start depends on when the rank arrives; every 16th rank is a
straggler that arrives 2 ms late, so the cross-rank analysis has something to find. Deterministic
for given arguments.

usage: gen_kineto_job.py OUT_DIR [--ranks 1024] [--events-per-rank 20000] [--jobs 2]
       gen_kineto_job.py OUT_DIR --one-file GB      (one rank, plain JSON, for the import benchmark)
"""
import argparse
import json
import multiprocessing
import pathlib
import zlib

LAYERS = 40
EVENTS_PER_STEP = 1 + 3 * LAYERS + 3 + 2  # step, (op, launch, kernel) per layer, copy (launch + copy + op), nccl


def rank_steps(rank, steps):
    """Per step, its events as JSON texts (steps=None: without end)."""
    pid, tid = 10_000 + rank, 10_000 + rank
    corr = 1
    t = 1_000_000.0  # µs
    step = -1
    while steps is None or step + 1 < steps:
        step += 1
        out = []
        ev = out.append
        step_start = t
        body = []
        b = body.append
        # copy the batch in
        b(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":{pid},"tid":{tid},"ts":{t:.3f},"dur":4,'
          f'"args":{{"correlation":{corr}}}}}')
        b(f'{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)","pid":0,"tid":13,"ts":{t + 6:.3f},'
          f'"dur":30,"args":{{"device":0,"stream":13,"correlation":{corr},"bytes":1048576}}}}')
        corr += 1
        t += 8
        gpu = t + 40
        for layer in range(LAYERS):
            dur = 20 + (layer * 7 + rank) % 30
            b(f'{{"ph":"X","cat":"cpu_op","name":"aten::linear","pid":{pid},"tid":{tid},"ts":{t:.3f},"dur":12,'
              f'"args":{{"External id":{corr}}}}}')
            b(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{tid},"ts":{t + 2:.3f},"dur":6,'
              f'"args":{{"correlation":{corr},"External id":{corr}}}}}')
            gpu = max(gpu, t + 10)
            b(f'{{"ph":"X","cat":"kernel","name":"ampere_sgemm_128x64_tn_layer{layer % 8}","pid":0,"tid":7,'
              f'"ts":{gpu:.3f},"dur":{dur},"args":{{"device":0,"stream":7,"correlation":{corr}}}}}')
            gpu += dur + 1
            corr += 1
            t += 14
        # the all-reduce starts when this rank arrives (stragglers late); it ends when the last does
        arrive = max(t, gpu) + (2000 if rank % 16 == 15 else 0)
        last = max(t, gpu) + 2000
        b(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{tid},"ts":{t:.3f},"dur":5,'
          f'"args":{{"correlation":{corr}}}}}')
        b(f'{{"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",'
          f'"pid":0,"tid":20,"ts":{arrive:.3f},"dur":{last - arrive + 300:.3f},"args":{{"device":0,"stream":20,"correlation":{corr}}}}}')
        corr += 1
        t = last + 310
        ev(f'{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{step}","pid":{pid},"tid":{tid},'
           f'"ts":{step_start:.3f},"dur":{t - step_start:.3f}}}')
        out.extend(body)
        t += 5
        yield out


def header_text(rank, ranks):
    header = {"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": ranks},
              "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920,
                                    "computeMajor": 8, "computeMinor": 0}]}
    meta = f'{{"name":"process_name","ph":"M","pid":{10_000 + rank},"tid":0,"args":{{"name":"python3"}}}}'
    return json.dumps(header)[:-1] + ', "traceEvents": [\n' + meta


def rank_events(rank, ranks, steps):
    return header_text(rank, ranks) + "".join(",\n" + ",\n".join(s) for s in rank_steps(rank, steps)) + "\n]}\n"


def write_one_file(path, gigabytes):
    """One rank's trace of at least `gigabytes` GB of plain JSON, written as it is made."""
    target, written, events = gigabytes * 1e9, 0, 0
    with open(path, "w") as f:
        written += f.write(header_text(0, 1))
        for step in rank_steps(0, None):
            written += f.write("".join(",\n" + e for e in step))
            events += len(step)
            if written >= target:
                break
        f.write("\n]}\n")
    print(f"wrote {path}: {written / 1e9:.2f} GB, {events + 1} events")


def write_rank(job):
    out_dir, rank, ranks, steps = job
    text = rank_events(rank, ranks, steps).encode()
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)  # gzip container
    (pathlib.Path(out_dir) / f"rank-{rank}.json.gz").write_bytes(comp.compress(text) + comp.flush())
    return len(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--events-per-rank", type=int, default=20_000)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--one-file", type=float, metavar="GB", help="instead: one rank's plain JSON of at least GB gigabytes "
                    "in OUT_DIR/one-rank.json (the streaming-import benchmark)")
    args = ap.parse_args()
    if args.one_file:
        pathlib.Path(args.out_dir).mkdir(parents=True, exist_ok=True)
        write_one_file(pathlib.Path(args.out_dir) / "one-rank.json", args.one_file)
        return
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    steps = max(1, -(-args.events_per_rank // EVENTS_PER_STEP))
    jobs = [(str(out), r, args.ranks, steps) for r in range(args.ranks)]
    with multiprocessing.Pool(args.jobs) as pool:
        total = sum(pool.imap_unordered(write_rank, jobs, chunksize=8))
    print(f"wrote {args.ranks} ranks x {steps * EVENTS_PER_STEP} events ({steps} steps) to {out}: "
          f"{total / 1e9:.2f} GB of JSON")


if __name__ == "__main__":
    main()
