// Bottleneck rules: each a small function over one rank's metrics (or the cross-rank ones)
// that may emit a Finding. Every threshold lives in the one Thresholds table below;
// docs/analysis.md states each rule's definition, evidence and gain model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracetune/analyzer/hot_spots.h"
#include "tracetune/analyzer/metrics.h"

namespace tt::analyzer {

enum class Category : std::uint8_t {
  DataLoading, H2dCopy, LaunchBound, SyncStall, ExposedCommunication, Precision, MemoryBound, LoadImbalance, CpuBound,
  Memory,  // capacity, not time: leaks, fragmentation, headroom (cost and gain 0)
};
std::string_view to_string(Category);  // the ids the tuner's knob catalogue uses ("data_loading", ...)

enum class Severity : std::uint8_t { Low = 0, Medium = 1, High = 2 };
std::string_view to_string(Severity);

struct Evidence {
  std::string what;              // plain-language fact with numbers
  Ns start = 0, end = 0;         // a time range that shows it (0/0: none)
  std::int32_t rank = -1;
};

struct Finding {
  Category category{};
  Severity severity = Severity::Low;
  std::int32_t rank = -1;        // -1: cross-rank
  std::string title;             // one line
  std::string detail;            // what to do, in plain language
  double share = 0;              // of the median step (or window) time this bottleneck costs
  Ns cost = 0;                   // time per step it costs (median over steps)
  Ns gain = 0;                   // estimated step-time saving from the what-if replay
  double gain_share = 0;         // gain / step time
  std::string gain_model;        // how the gain was estimated
  std::string leaves_out;        // what the estimate does not model (the fix's own costs, e.g. workers' CPU time)
  bool gain_estimated = true;    // false: gain_model says why there is no estimate (gain 0)
  std::vector<Evidence> evidence;
  std::vector<std::string> knobs;  // tuner knob ids that address it
  HotSpots hot;                    // Python functions in its stretches (hot_spots.h; samples 0: none)
};

struct Thresholds {
  double data_wait_share = 0.10;        // data wait ≥ 10% of the step
  double h2d_exposed_share = 0.05;      // exposed H2D copies ≥ 5% of the step
  double h2d_pageable_share = 0.02;     // or pageable H2D copies ≥ 2% of the step
  double pinned_speedup = 2.0;          // pageable → pinned H2D bandwidth (what-if)
  double launch_idle_share = 0.15;      // GPU idle waiting for launches ≥ 15% of the step
  Ns launch_short_kernel = 20'000;      // ... with median kernel < 20 µs
  double sync_share = 0.05;             // host blocked in syncs ≥ 5% of the step
  double exposed_comm_share = 0.10;     // communication not under compute ≥ 10% of the step
  double fp32_gemm_share = 0.10;        // FP32 SIMT GEMMs ≥ 10% of GPU busy time
  double tf32_speedup = kTensorCoreSpeedup;  // FP32 SIMT → TF32/BF16 tensor cores (what-if, conservative)
  double memory_bound_share = 0.30;     // elementwise/reduction kernels ≥ 30% of compute
  double fusion_saving = kFusionSaving;      // share of that time fusion removes (what-if)
  double imbalance_spread = 0.10;       // slowest rank ≥ 10% above the median rank
  double cpu_share = 0.50;              // no-GPU rank: host busy outside waits ≥ 50% of the step
  double cpu_idle_share = 0.20;         // GPU rank: GPU idle, host late (not data/sync) ≥ 20%
  std::size_t leak_min_steps = 5;       // memory leak: at least 5 steps with samples,
  double leak_fit = 0.8;                // ... growing along a line (R² ≥ 0.8)
  double leak_late_share = 0.5;         // ... and still growing in the second half (≥ 50% of the slope)
  std::int64_t leak_min_bytes = 64ll << 20;  // ... by ≥ 64 MiB and ≥ 5% of the first step's
  double fragmentation_ratio = 1.5;     // reserved ≥ 1.5 x allocated at peak,
  std::int64_t fragmentation_min_bytes = 1ll << 30;  // ... and ≥ 1 GiB held but unused
  double headroom_share = 0.5;          // device peak < 50% of its memory: room for more
  double high = 0.25, medium = 0.10;    // severity by gain share
};
const Thresholds& default_thresholds();

// One rule each (exposed for the per-rule tests).
std::vector<Finding> rule_data_loading(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_h2d_copy(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_launch_bound(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_sync_stall(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_exposed_communication(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_precision(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_memory_bound(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_cpu_bound(const RankMetrics&, const Thresholds&);
std::vector<Finding> rule_memory(const RankMetrics&, const Thresholds&);
// The slowest rank by step time, unless it waited at collectives for another rank at least as
// long as its steps exceed the median (`rank_waits`: each rank's median rank_wait on its steps'
// critical paths; none: no paths): then rule_late_arriver names the rank it waited for.
std::vector<Finding> rule_load_imbalance(const Metrics&, const Thresholds&,
                                         const std::vector<std::optional<Ns>>& rank_waits = {});
// The rank the collectives wait for, where the step times show no straggler or the slowest
// rank's excess is its wait for that rank.
std::vector<Finding> rule_late_arriver(const Metrics&, const Thresholds&, const std::vector<std::optional<Ns>>& rank_waits);

// All rules over all ranks, ranked by estimated gain (largest first).
std::vector<Finding> run_rules(const Metrics&, const Thresholds& = default_thresholds());

// run_rules in its parts, for a caller that holds one rank's steps and paths at a time (the
// combine of a sharded analysis): the thresholds the job decides once (from each rank's
// kernel median), each rank's own findings, the median over its steps of its critical paths'
// wait for other ranks (none: no paths), then the cross-rank rules, which read those medians
// (indexed as m.ranks), appended to `out` (the ranks' findings in rank order), and the ranking.
Thresholds job_thresholds(const Metrics& m, const Thresholds& th);
std::vector<Finding> rank_findings(const RankMetrics& r, const Thresholds& job_th);
std::optional<Ns> rank_wait_median(const RankMetrics& r);
void job_findings(const Metrics& m, const Thresholds& job_th, const std::vector<std::optional<Ns>>& rank_waits,
                  std::vector<Finding>& out);

// One category's findings over the ranks it holds on (a rank-less finding is a group of its
// own), so that "launch bound" on eight ranks reads as one line, not eight. Groups come in the
// order of their best-ranked finding; `worst` is the finding with the largest gain.
struct FindingGroup {
  Category category{};
  std::vector<std::size_t> findings;  // indices into the findings, in rank order
  std::vector<std::int32_t> ranks;    // sorted; empty for a cross-rank finding
  std::size_t worst = 0;              // index into the findings
  Ns gain_min = 0, gain_max = 0, cost_min = 0, cost_max = 0;
};
std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings);

// "0-3, 5, 7": sorted ranks with consecutive runs folded.
std::string rank_list(const std::vector<std::int32_t>& sorted_ranks);

}  // namespace tt::analyzer
