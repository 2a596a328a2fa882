// Inside the analyzer: what metrics.cpp shares with critical_path.cpp (not a public header).
#pragma once

#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracetune/analyzer/intervals.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

bool is_data_wait_name(std::string_view n);
bool is_sync_call_name(std::string_view n);

// One rank's arrival at a collective matched across ranks (metrics.cpp's cross_rank): a
// communication kernel or device-side record (host = false), or a host-side call.
struct Arrival {
  Ns start = 0, end = 0;
  std::size_t rank = 0;  // index into Metrics::ranks
  std::uint32_t track = 0;
  bool host = false;
};
using CollectiveGroups = std::vector<std::vector<Arrival>>;

// One rank's dependency graph: what the critical path walk and the what-if replay read.
constexpr std::uint32_t kNoGroup = trace::kNone;

enum OpTrait : std::uint8_t { kFp32Gemm = 1, kMemoryBound = 2, kHostToDevice = 4 };

struct PathOp {  // a GPU op of the rank
  Ns s = 0, e = 0;
  std::uint32_t track = 0;
  trace::StringId name = trace::kNone;
  std::uint32_t corr = 0;
  PathKind kind = PathKind::GpuCompute;
  std::uint32_t pred = trace::kNone;   // the op before it on its stream with the latest end
  std::uint32_t group = kNoGroup;  // matched collective (GPU side)
  std::uint8_t traits = 0;         // OpTrait bits: what a what-if may change about it
};

struct HostMark {  // a labelled host interval: data wait, sync, collective call or launch call
  Ns s = 0, e = 0;
  PathKind kind = PathKind::Launch;
  trace::StringId name = trace::kNone;
  std::uint32_t group = kNoGroup;  // collective calls of GPU-less ranks
  std::uint32_t corr = 0;          // a call that launched one of the rank's GPU ops: its correlation id
};

struct HostThread {
  std::vector<HostMark> marks;  // disjoint, sorted
  IntervalSet busy;             // any event on the thread
};

struct LaunchRef {
  Ns start = 0, end = 0;
  std::uint32_t track = 0;
  std::uint32_t op = trace::kNone;  // the op it launched (index into RankGraph::ops)
};

// What the walk needs of one rank, built once.
struct RankGraph {
  std::int32_t rank = -1;
  std::uint32_t main_track = trace::kNone;
  std::vector<PathOp> ops;               // sorted by (track, start)
  std::vector<std::uint32_t> by_end;     // op indices sorted by end
  std::vector<std::uint32_t> by_start;   // op indices sorted by start
  std::unordered_map<std::uint32_t, HostThread> threads;  // by host track
  std::unordered_map<std::uint32_t, LaunchRef> launches;  // by correlation id
};


// Fills RankMetrics::paths and Metrics::job_paths (docs/analysis.md, "Critical path").
void compute_critical_paths(const trace::Trace& t, const Options& opt, const CollectiveGroups& groups, Metrics& M);

// What-if replay (replay.cpp): the step [lo, hi) of graph `g` recomputed forward with one
// class of work changed; returns the replayed step's length. Unchanged, it returns hi - lo.
// `blocking`: a launch call that waited longer than this for its op to start was blocked by it.
Ns replay_step(const RankGraph& g, Ns lo, Ns hi, std::optional<WhatIf> change, Ns blocking);

// Fills step.what_if from the replays, when the step's path is complete and the unchanged
// replay gives back the measured step time.
void replay_what_ifs(const RankGraph& g, const StepPath& path, Ns blocking, StepMetrics& step);

}  // namespace tt::analyzer
