// Inside the analyzer: the stages of compute_metrics() that a sharded analysis (shard.cpp) runs
// apart: each rank on its own, then what needs every rank (not a public header).
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "critical_path.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/trace/model.h"
#include "tracetune/trace/store.h"

namespace tt::analyzer {

// One rank's arrival at a collective, keyed so that the same collective has the same key on
// every rank (trace/collective_match.h's rule, with names rather than string ids so that keys
// from different traces compare).
struct RankArrival {
  bool by_kernel = false;    // matched by its communication kernel (the rank has no collective records)
  std::string communicator;  // by_kernel: empty
  std::string op;            // by_kernel: the kernel's name
  std::uint64_t ordinal = 0; // k-th of its (communicator, op) on the rank
  Ns start = 0, end = 0;
  std::uint32_t track = 0;
  bool host = false;         // a host-side call
};

// The rank's collective rows (device-side when it has any, else host-side calls) or, without
// any, its communication kernels, with their keys.
std::vector<RankArrival> rank_arrivals(const trace::Trace& t, const RankMetrics& r);

// Ranks: processes that ran GPU work or marked steps; without any, the root processes
// (sorted by job rank, then process index).
std::vector<std::uint32_t> pick_ranks(const trace::Trace& t);
// The same from per-track event counts (a trace outline read without its events).
std::vector<std::uint32_t> pick_ranks(const trace::Trace& t, const std::vector<trace::TrackEventCounts>& per_track);

// Keeps the ranks numbered `rank` (the job's rank, else the process index; -1 keeps all).
void keep_rank(const trace::Trace& t, std::vector<std::uint32_t>& ranks, std::int32_t rank);

// The note when no rank is left to analyse: none numbered `rank` (>= 0), or no events at all.
std::string no_ranks_note(std::int32_t rank);

// A rank's process tree: itself and its descendants that are not ranks themselves.
std::vector<std::uint32_t> tree_of(const trace::Trace& t, std::uint32_t root, const std::unordered_set<std::uint32_t>& ranks);

// Each rank of `processes` analysed on its own (in parallel; `processes` from pick_ranks), with
// its memory, efficiency and collective arrivals.
struct LocalRanks {
  std::vector<RankMetrics> ranks;
  std::vector<std::vector<RankArrival>> arrivals;  // per rank
};
// `all_ranks`: every rank of the trace, when `processes` is a share of them (empty: the same).
LocalRanks analyze_ranks(const trace::Trace& t, const Options& opt, const std::vector<std::uint32_t>& processes,
                         const std::vector<std::uint32_t>& all_ranks = {});

// Metrics::cross and each rank's CollectiveStats' cross-rank fields, from every rank's arrivals;
// returns the matched collectives (the critical path's cross-rank edges).
CollectiveGroups cross_rank(const std::vector<std::vector<RankArrival>>& arrivals, Metrics& M);

// The notes on ranks missing from 0..N-1 (only ranks whose number the trace gave count).
void missing_rank_notes(Metrics& M);

}  // namespace tt::analyzer
