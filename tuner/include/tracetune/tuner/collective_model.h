// The α–β (Hockney) cost model of collectives, fitted from an NCCL sweep on the local GPUs,
// and a simulator that uses it to predict, for N nodes, the all-reduce choice per message
// size and the DDP bucket size that exposes the least communication. Pure C++: the sweep
// comes from `tracetune bench nccl` on a GPU machine (or a JSON file), so the model and the
// simulator are unit-tested anywhere. Formulas: Hockney's α–β model with the ring and tree step
// counts of Thakur, Rabenseifner and Gropp (2005), as docs/tuning.md states them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracetune/trace/result.h"
#include "tracetune/tuner/tuned_config.h"

namespace tt::tuner {

// One measurement of a collective, as nccl-tests reports it.
struct SweepPoint {
  std::string collective = "allreduce";  // allreduce, allgather, reducescatter, broadcast, reduce
  std::string algorithm;                 // ring, tree, ...
  std::string protocol;                  // ll, ll128, simple
  std::uint64_t bytes = 0;               // message size per rank
  int ranks = 0;
  double time_us = 0;                    // per operation
};

// nccl-tests' bus-bandwidth factor (doc/PERFORMANCE.md): allreduce 2(n-1)/n, allgather and
// reducescatter (n-1)/n, broadcast and reduce 1. busbw = algbw x factor, algbw = bytes / time.
double busbw_factor(const std::string& collective, int ranks);
double algbw_gbs(const SweepPoint& p);  // GB/s (1e9 bytes per second)
double busbw_gbs(const SweepPoint& p);

// T(n) = alpha + beta n, fitted by least squares on relative error (each point weighted by
// 1/T^2, so small messages, which set alpha, count as much as large ones).
struct AlphaBeta {
  double alpha_us = 0;        // latency
  double beta_us_per_byte = 0;
  double max_rel_error = 0;   // worst |fit - measured| / measured over the points
  std::size_t points = 0;
  double time_us(double bytes) const { return alpha_us + beta_us_per_byte * bytes; }
};
Result<AlphaBeta> fit_alpha_beta(const std::vector<SweepPoint>& points);

// Per-hop parameters of one level of the machine: the latency of one step and the time per
// byte of one link.
struct LinkModel {
  double alpha_us = 0;
  double beta_us_per_byte = 0;
};

// The intra-node link from a fitted ring all-reduce on `ranks` GPUs: the ring's
// 2(p-1) alpha + 2(p-1)/p n beta (Thakur, Rabenseifner & Gropp 2005) solved for one hop.
Result<LinkModel> intra_link_from_ring(const AlphaBeta& ring_allreduce, int ranks);

struct Cluster {
  int nodes = 1;
  int gpus_per_node = 1;
  LinkModel intra;   // GPU to GPU inside a node
  LinkModel inter;   // node to node (per NIC): not measurable on one node, so given
};

enum class AllReduceAlgo { Ring, Tree, Hierarchical };
std::string_view to_string(AllReduceAlgo a);

// Predicted all-reduce time of `bytes` on the cluster:
//  ring          (2(P-1) - 2N) a_intra + 2N a_inter + 2(P-1)/P n max(b_intra, b_inter)   [N > 1]
//  tree          2((g-1) a_intra + log2(N) a_inter) + 2 n max(b_intra, b_inter)           (pipelined double tree)
//  hierarchical  2(g-1) a_intra + 2(g-1)/g n b_intra + 2(N-1) a_inter + 2(N-1)/N (n/g) b_inter
// with P = N g ranks. On one node ring and tree use the intra link only.
double allreduce_time_us(AllReduceAlgo algo, const Cluster& c, double bytes);

struct AllReduceChoice {
  AllReduceAlgo algo = AllReduceAlgo::Ring;
  double time_us = 0;
};
AllReduceChoice best_allreduce(const Cluster& c, double bytes);

// DDP's gradient all-reduce: `gradient_bytes` in buckets of `bucket_bytes`, bucket i ready
// when backward has produced it (uniformly over `backward_us`), all-reduces one after another.
// Exposed = when the last all-reduce ends minus the end of backward.
struct BucketPrediction {
  double bucket_mb = 0;      // MiB
  int buckets = 0;
  AllReduceAlgo algo = AllReduceAlgo::Ring;
  double comm_us = 0;        // sum of all-reduce times
  double exposed_us = 0;
};
BucketPrediction simulate_buckets(const Cluster& c, double gradient_bytes, double backward_us, double bucket_mb);
// The candidate with the least exposed time (ties: the larger bucket, fewer calls).
BucketPrediction best_bucket(const Cluster& c, double gradient_bytes, double backward_us,
                             const std::vector<double>& candidates_mb);

// The sweep as JSON ({"points": [{collective, algorithm, protocol, bytes, ranks, time_us}]}),
// what `tracetune bench nccl --json` writes and `tracetune bench model` reads.
Result<std::vector<SweepPoint>> parse_sweep_json(std::string_view text);

// The per-size NCCL tuner table a sweep suggests: for each collective and rank count, at each
// measured size the fastest (algorithm, protocol); runs of sizes with the same winner become
// one [[nccl.table]] entry covering [that run's first size (0 for the first run), the next
// measured size - 1]; the last run ends at the largest size measured (above it NCCL decides).
// Sizes are nccl-tests' (all-gather / reduce-scatter: the total), which is what NCCL passes
// to a tuner plugin. The sweep is of one node, so entries carry nodes = 1 and its rank count.
// channels = 0 (NCCL's choice): `bench nccl` does not vary channels. Points naming an
// algorithm or protocol NCCL's enums do not have are ignored.
std::vector<NcclTableEntry> nccl_table_from_sweep(const std::vector<SweepPoint>& points);

}  // namespace tt::tuner
