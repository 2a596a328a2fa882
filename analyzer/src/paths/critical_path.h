// Inside the analyzer: the paths stage (critical path, what-if replay) over the metrics stage's
// results (not a public header).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "call_names.h"
#include "cross_rank.h"
#include "tracetune/analyzer/intervals.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

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
  std::uint32_t wait = trace::kNone;   // an op on another stream it waited for (event record -> stream wait)
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

// What the walk needs of one rank, built once. Self-contained (names and track labels are
// its own), so that a sharded analysis can write it to its part file and walk it elsewhere.
struct RankGraph {
  std::int32_t rank = -1;
  std::uint32_t main_track = trace::kNone;
  std::vector<PathOp> ops;               // sorted by (track, start)
  std::vector<std::uint32_t> by_end;     // op indices sorted by end
  std::vector<std::uint32_t> by_start;   // op indices sorted by start
  std::unordered_map<std::uint32_t, HostThread> threads;  // by host track
  std::unordered_map<std::uint32_t, LaunchRef> launches;  // by correlation id
  std::vector<std::string> names;        // PathOp::name and HostMark::name index this (kNone: none)
  std::unordered_map<std::uint32_t, std::string> track_labels;  // the tracks ops and marks run on
};

// A rank's graph before the collectives are matched across ranks: everything but the matched
// collective calls of GPU-less ranks and the ops' groups (finish_graph() adds those).
struct GraphParts {
  RankGraph graph;  // ops, launches, names, labels; threads still empty
  std::unordered_map<std::uint32_t, std::vector<HostMark>> marks;  // per host track: data waits, syncs, launch calls
  std::unordered_map<std::uint32_t, std::vector<Interval>> busy_ranges, busy_calls;  // per host track
};

GraphParts graph_parts(const trace::Trace& t, const RankMetrics& rm);

// The rank's arrivals at matched collectives, with their group (an index into CollectiveGroups).
using RankGroups = std::vector<std::pair<std::uint32_t, Arrival>>;
std::vector<RankGroups> groups_by_rank(const CollectiveGroups& groups, std::size_t ranks);

RankGraph finish_graph(GraphParts parts, const RankGroups& mine, bool has_gpu);

// Where the walk gets rank graphs from: built from the trace in one process, read back from
// part files when the analysis was sharded (shard.cpp). graph() may be called from several
// threads for different ranks; release() says a rank's per-rank walk is done.
class GraphSource {
 public:
  virtual ~GraphSource() = default;
  virtual std::shared_ptr<const RankGraph> graph(std::size_t rank_index) = 0;
  virtual void release(std::size_t /*rank_index*/) {}
};

// compute_critical_paths in its parts, for a caller that holds one rank's steps at a time (the
// combine of a sharded analysis). A walker of ranks' own paths: walk() fills r.paths (and its
// steps' what-if lengths) from graph i of `graphs`; one per thread, it keeps its buffers.
class RankPathWalker {
 public:
  RankPathWalker(GraphSource& graphs, std::vector<std::int32_t> rank_numbers, const CollectiveGroups& groups,
                 const Options& opt);
  ~RankPathWalker();
  void walk(std::size_t i, RankMetrics& r);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// What the job path needs of the ranks' steps: per step number, how many steps have it and the
// rank that ended it last (the first such rank at equal ends), with the span of that rank's
// first step of that number. add() takes the ranks in any order, merge() another table.
class JobSteps {
 public:
  void add(std::size_t rank_index, const RankMetrics& r);
  void merge(const JobSteps& other);

 private:
  struct Last {
    std::size_t steps = 0;
    Ns end = 0;
    std::size_t rank = 0;
    Ns start = 0, span_end = 0;
  };
  std::map<std::int64_t, Last> by_number_;
  friend void walk_job_paths(const Options&, const CollectiveGroups&, GraphSource&, std::vector<std::int32_t>,
                             const JobSteps&, Metrics&);
};

// Metrics::job_paths: per step number of two steps or more, the path from the rank that ended
// it last, following collectives to their last arriver on other ranks.
void walk_job_paths(const Options& opt, const CollectiveGroups& groups, GraphSource& graphs,
                    std::vector<std::int32_t> rank_numbers, const JobSteps& steps, Metrics& M);

// Fills RankMetrics::paths (and the steps' what-if lengths) and, with `job_path`,
// Metrics::job_paths (docs/analysis.md, "Critical path").
void compute_critical_paths(const Options& opt, const CollectiveGroups& groups, GraphSource& graphs, bool job_path,
                            Metrics& M);

// The job path over a trace in memory holds every rank's graph at once (~60 bytes per event):
// above this many GPU ops in the trace it is left out, with this note, so that the analysis
// stays within its memory budget.
inline constexpr std::size_t kJobPathMaxOps = 2'000'000;
std::string job_path_left_out(std::size_t gpu_ops);

// The same over a trace in memory (the job path left out, with a note, above kJobPathMaxOps).
void compute_critical_paths(const trace::Trace& t, const Options& opt, const CollectiveGroups& groups, Metrics& M);

// The ranks' own paths alone (RankMetrics::paths; no job path) over a trace in memory.
void compute_rank_paths(const trace::Trace& t, const Options& opt, const CollectiveGroups& groups, Metrics& M);

// What the replays of one graph look up per op, built once per graph (12 bytes per op while
// its steps are replayed): each op's place in by_start and the launch call that launched it.
struct ReplayIndex {
  std::vector<std::uint32_t> start_pos;   // by op index: its position in RankGraph::by_start
  std::vector<const LaunchRef*> launch;   // by op index: RankGraph::launches of its correlation, or nullptr
  explicit ReplayIndex(const RankGraph& g);
};

// What-if replay (replay.cpp): the step [lo, hi) of graph `g` recomputed forward with one
// class of work changed; returns the replayed step's length. Unchanged, it returns hi - lo.
// `blocking`: a launch call that waited longer than this for its op to start was blocked by it.
Ns replay_step(const RankGraph& g, const ReplayIndex& index, Ns lo, Ns hi, std::optional<WhatIf> change, Ns blocking);

// Fills step.what_if from the replays, when the step's path is complete and the unchanged
// replay gives back the measured step time.
void replay_what_ifs(const RankGraph& g, const ReplayIndex& index, const StepPath& path, Ns blocking, StepMetrics& step);

}  // namespace tt::analyzer
