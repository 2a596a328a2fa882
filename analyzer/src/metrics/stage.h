// Inside the analyzer: the metrics stage (compute_metrics()) and the parts of it a sharded
// analysis (shard.cpp) runs apart: each rank on its own, then what needs every rank (not a
// public header).
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cross_rank.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/trace/model.h"
#include "tracetune/trace/store.h"

namespace tt::analyzer {

// The metrics stage over a trace in memory: every rank's metrics (memory and efficiency
// included) and the collectives matched across ranks, which the paths stage walks. The notes
// on missing ranks are added last (missing_rank_notes), after the paths stage's own.
struct MetricsStage {
  Metrics metrics;
  CollectiveGroups groups;
};
MetricsStage compute_metrics(const trace::Trace& t, const Options& opt);

// Ranks: processes that ran GPU work or marked steps; without any, the root processes
// (sorted by job rank, then process index).
std::vector<std::uint32_t> pick_ranks(const trace::Trace& t);
// The same from per-track event counts (a trace outline read without its events).
std::vector<std::uint32_t> pick_ranks(const trace::Trace& t, const std::vector<trace::TrackEventCounts>& per_track);

// Each parent pid's child processes, built once for all of a trace's ranks (tree_of).
using ChildrenByPid = std::unordered_map<std::int64_t, std::vector<std::uint32_t>>;
ChildrenByPid children_by_pid(const trace::Trace& t);

// A rank's process tree: itself and its descendants that are not ranks themselves, each once.
std::vector<std::uint32_t> tree_of(const trace::Trace& t, const ChildrenByPid& children, std::uint32_t root,
                                   const std::unordered_set<std::uint32_t>& ranks);

// Each rank of `processes` analysed on its own (in parallel; `processes` from pick_ranks), with
// its memory, efficiency and collective arrivals.
struct LocalRanks {
  std::vector<RankMetrics> ranks;
  std::vector<std::vector<RankArrival>> arrivals;  // per rank
};
// `all_ranks`: every rank of the trace, when `processes` is a share of them (empty: the same).
LocalRanks analyze_ranks(const trace::Trace& t, const Options& opt, const std::vector<std::uint32_t>& processes,
                         const std::vector<std::uint32_t>& all_ranks = {});

}  // namespace tt::analyzer
