// The metrics stage (stage.h): which processes are ranks, each rank's metrics in parallel
// (metrics.cpp's rank_metrics, memory.cpp, efficiency.cpp), and what needs every rank
// (cross_rank.cpp).
#include "stage.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "parallel.h"

namespace tt::analyzer {

using trace::kNone;
using trace::Trace;

std::vector<trace::TrackEventCounts> track_event_counts(const Trace& t) {
  std::vector<trace::TrackEventCounts> counts(t.tracks.size());
  auto add = [&](std::span<const trace::TrackSlice> slices, bool gpu) {
    for (const auto& s : slices) (gpu ? counts[s.track].gpu_ops : counts[s.track].host) += s.end - s.begin;
  };
  add(t.slices_kernels(), true);
  add(t.slices_memcpys(), true);
  add(t.slices_memsets(), true);
  add(t.slices_ranges(), false);
  add(t.slices_api_calls(), false);
  add(t.slices_io(), false);
  return counts;
}

std::vector<std::uint32_t> pick_ranks(const Trace& t) { return pick_ranks(t, track_event_counts(t)); }

std::vector<std::uint32_t> pick_ranks(const Trace& t, const std::vector<trace::TrackEventCounts>& per_track) {
  std::vector<char> is_rank(t.processes.size(), 0), has_events(t.processes.size(), 0);
  std::vector<std::size_t> events(t.processes.size(), 0);  // host events, for the fallback
  for (std::uint32_t tr = 0; tr < per_track.size(); ++tr) {
    const auto p = t.process_of_track(tr);
    if (p == kNone) continue;
    if (per_track[tr].gpu_ops) is_rank[p] = has_events[p] = 1;
    if (per_track[tr].host) has_events[p] = 1;
    events[p] += per_track[tr].host;
  }
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto p = t.process_of_track(t.steps.track[i]);
    if (p != kNone) is_rank[p] = 1;
  }
  std::vector<std::uint32_t> out;
  for (std::uint32_t p = 0; p < t.processes.size(); ++p)
    if (is_rank[p]) out.push_back(p);
  if (out.empty()) {  // no GPU work, no steps: per known rank, its busiest process
    std::map<std::int32_t, std::uint32_t> best;
    for (std::uint32_t p = 0; p < t.processes.size(); ++p) {
      if (t.processes[p].rank < 0 || !events[p]) continue;
      auto [it, fresh] = best.emplace(t.processes[p].rank, p);
      if (!fresh && events[p] > events[it->second]) it->second = p;
    }
    for (const auto& [rank, p] : best) out.push_back(p);
  }
  if (out.empty()) {
    std::unordered_set<std::int64_t> pids;
    for (const auto& pr : t.processes) pids.insert(pr.pid);
    for (std::uint32_t p = 0; p < t.processes.size(); ++p)
      if (has_events[p] && !pids.count(t.processes[p].parent_pid)) out.push_back(p);
  }
  std::sort(out.begin(), out.end(), [&](std::uint32_t a, std::uint32_t b) {
    const auto& x = t.processes[a];
    const auto& y = t.processes[b];
    const std::int32_t rx = x.rank >= 0 ? x.rank : INT32_MAX, ry = y.rank >= 0 ? y.rank : INT32_MAX;
    return rx != ry ? rx < ry : a < b;
  });
  return out;
}

// Each rank's process tree: itself and descendants that are not ranks themselves.
ChildrenByPid children_by_pid(const Trace& t) {
  ChildrenByPid children;
  for (std::uint32_t p = 0; p < t.processes.size(); ++p) children[t.processes[p].parent_pid].push_back(p);
  return children;
}

std::vector<std::uint32_t> tree_of(const Trace& t, const ChildrenByPid& children, std::uint32_t root,
                                   const std::unordered_set<std::uint32_t>& ranks) {
  std::vector<std::uint32_t> out{root}, stack{root};
  std::unordered_set<std::uint32_t> seen{root};
  while (!stack.empty()) {
    const auto p = stack.back();
    stack.pop_back();
    auto it = children.find(t.processes[p].pid);
    if (it == children.end()) continue;
    for (auto c : it->second)
      if (!ranks.count(c) && seen.insert(c).second) { out.push_back(c); stack.push_back(c); }
  }
  return out;
}

LocalRanks analyze_ranks(const Trace& t, const Options& opt, const std::vector<std::uint32_t>& processes,
                         const std::vector<std::uint32_t>& all_ranks) {
  // HTA filters steps only when the trace names two or more distinct ProfilerStep#N.
  std::unordered_set<trace::StringId> step_names;
  for (std::size_t i = 0; i < t.steps.size(); ++i)
    if (t.strings.get(t.steps.name[i]).starts_with("ProfilerStep#")) step_names.insert(t.steps.name[i]);
  const bool hta_step_filter = step_names.size() >= 2;
  const auto& ranks = all_ranks.empty() ? processes : all_ranks;
  const std::unordered_set<std::uint32_t> rank_set(ranks.begin(), ranks.end());
  const ChildrenByPid children = children_by_pid(t);
  const ArrivalRows arrival_rows(t);
  LocalRanks out;
  out.ranks.resize(processes.size());
  out.arrivals.resize(processes.size());
  parallel_items(processes.size(), opt.threads, [&](auto take) {
    for (std::size_t i; take(i);) {
      if (stopped(opt)) continue;  // given up: the rest is left out (Options::stop)
      RankMetrics& r = out.ranks[i];
      r = rank_metrics(t, opt, processes[i], tree_of(t, children, processes[i], rank_set), hta_step_filter);
      r.memory = memory_by_device(t, r);
      r.efficiency = efficiency_of(t, r);
      out.arrivals[i] = rank_arrivals(t, arrival_rows, r);
    }
  });
  return out;
}

MetricsStage compute_metrics(const Trace& t, const Options& opt) {
  Metrics M;
  std::vector<std::uint32_t> ranks = pick_ranks(t);
  keep_rank(t, ranks, opt.rank);
  if (ranks.empty()) M.notes.push_back(no_ranks_note(opt.rank));
  LocalRanks local = analyze_ranks(t, opt, ranks);
  M.ranks = std::move(local.ranks);
  CollectiveGroups groups = cross_rank(local.arrivals, M);
  return {std::move(M), std::move(groups)};
}

}  // namespace tt::analyzer
