#!/usr/bin/env python3
"""A shard's memory does not grow with its number of ranks (docs/scale.md): one shard over N and
over 4N rank files (the same generated rank, 159 steps, hard-linked N and 4N times) peaks at the
same RSS, because each rank's results go to the part file as soon as the rank is analysed; and
the part's index, the one thing the shard keeps per rank, grows by at most 64 bytes per rank.

Structural, not timed: the peak RSS of the shard process itself (wait4's ru_maxrss), the smaller
of two runs per size. Holding every rank's results until the end, as shards did before part
version 4, cost 17.8 MB more at 4N here (the index alone is 60 KB per rank of this job). The
test allows 2 MB; this code grows by about 0.1 MB.

usage: shard_memory_test.py TRACETUNE PROJECT_DIR
"""
import os
import pathlib
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))  # tests/harness.py
from harness import check, finish, lowest_peak_rss  # noqa: E402

TRACETUNE, PROJECT = sys.argv[1], pathlib.Path(sys.argv[2])
N = 32
ALLOWED_GROWTH = 2 << 20   # bytes of peak RSS from N to 4N ranks
INDEX_PER_RANK = 64        # bytes of part index per rank



def shard(job, part):
    """The shard's smaller peak RSS of two runs, and its part's index size."""
    rss = lowest_peak_rss([TRACETUNE, "analyze", str(job), "--shard", "0/1", "-o", str(part)], fresh=part)
    with open(part, "rb") as f:
        _, _, index_size, _, _ = struct.unpack("<8sQQII", f.read(32))
    return rss, index_size


def main():
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        one = tmp / "one"
        subprocess.run([sys.executable, str(PROJECT / "bench" / "gen_kineto_job.py"), str(one), "--ranks", "1",
                        "--events-per-rank", "20000", "--jobs", "1"], check=True, stdout=subprocess.DEVNULL)
        rank_file = one / "rank-0.json.gz"
        results = {}
        for n in (N, 4 * N):
            job = tmp / f"job{n}"
            job.mkdir()
            for k in range(n):
                os.link(rank_file, job / f"rank-{k:04d}.json.gz")
            results[n] = shard(job, tmp / f"part{n}.ttpart")
        (rss1, index1), (rss4, index4) = results[N], results[4 * N]
        growth, index_growth = rss4 - rss1, (index4 - index1) / (3 * N)
        print(f"shard peak RSS: {rss1 / 1e6:.1f} MB over {N} ranks, {rss4 / 1e6:.1f} MB over {4 * N} "
              f"(growth {growth / 1e6:.2f} MB, allowed {ALLOWED_GROWTH / 1e6:.2f}); "
              f"part index: {index_growth:.1f} B per rank (allowed {INDEX_PER_RANK})")
        check("the shard's peak memory does not grow with its rank count", growth <= ALLOWED_GROWTH)
        check("the part index holds an entry per rank", index_growth <= INDEX_PER_RANK)
    finish()


if __name__ == "__main__":
    main()
