// What-if replay: a step recomputed forward on the dependency graph the critical path walks.
//
// The main thread's time in [lo, hi) is a sequence of items: the marks (data waits, syncs,
// launch and collective calls) and the host compute between them. Replaying walks them in
// order from lo: each item keeps its length except the ones the change removes, and a sync
// returns when the GPU op it waited for ends in the replay (plus the call's own tail). A GPU op
// starts at the later of its launch call (mapped to replayed host time, plus the call's
// recorded latency), its stream predecessor's replayed end (plus the recorded gap: queue
// overhead and waits the trace does not name are kept as they were) and the replayed end of
// the op on another stream it waited for (event record -> stream wait). Whichever dependency
// gated an op in the recording gates it in the replay with its recorded latency and the other
// can only gate it later, so the unchanged replay gives back every recorded time exactly;
// shorter items can only move things earlier. Threads other than the main one are taken to
// move with it (their launches are mapped through the main thread's replayed time), and a
// collective op keeps its recorded length, waits for other ranks included.
// Definitions and limits: docs/analysis.md, "What-if replay".
#include <algorithm>
#include <unordered_map>

#include "critical_path.h"

namespace tt::analyzer {

std::string_view to_string(WhatIf w) {
  static constexpr std::string_view kNames[kWhatIfs] = {"no_data_wait", "prefetched_h2d", "tensor_core_gemms",
                                                        "fused_memory_bound", "no_sync_wait"};
  return kNames[static_cast<std::size_t>(w)];
}

namespace {

// An op's length under the change.
Ns changed_length(const PathOp& o, std::optional<WhatIf> change) {
  const Ns d = o.e - o.s;
  if (!change) return d;
  switch (*change) {
    case WhatIf::PrefetchedH2d: return (o.traits & kHostToDevice) ? 0 : d;
    case WhatIf::TensorCoreGemms:
      return (o.traits & kFp32Gemm) ? static_cast<Ns>(static_cast<double>(d) / kTensorCoreSpeedup) : d;
    case WhatIf::FusedMemoryBound:
      return (o.traits & kMemoryBound) ? static_cast<Ns>(static_cast<double>(d) * (1.0 - kFusionSaving)) : d;
    default: return d;
  }
}

// What of the step a replay met that some change would alter: without them, that change's
// replay takes the same steps as the unchanged one and gives the same length.
struct Touched {
  std::uint8_t traits = 0;   // OpTrait bits of the ops replayed or waited for
  bool data_wait = false;    // a data wait on the main thread
  bool sync_wait = false;    // a call that waited for a GPU op's end
  bool alters(WhatIf w) const {
    switch (w) {
      case WhatIf::NoDataWait: return data_wait;
      case WhatIf::PrefetchedH2d: return traits & kHostToDevice;
      case WhatIf::TensorCoreGemms: return traits & kFp32Gemm;
      case WhatIf::FusedMemoryBound: return traits & kMemoryBound;
      case WhatIf::NoSyncWait: return sync_wait;
      case WhatIf::Count: break;
    }
    return true;
  }
};

class Replay {
 public:
  Replay(const RankGraph& g, const ReplayIndex& index, Ns lo, std::optional<WhatIf> change, Ns blocking)
      : g_(g), index_(index), lo_(lo), change_(change), blocking_(blocking) {
    next_ = static_cast<std::size_t>(
        std::lower_bound(g.by_start.begin(), g.by_start.end(), lo, [&](std::uint32_t i, Ns v) { return g.ops[i].s < v; }) -
        g.by_start.begin());
    first_ = next_;
  }

  // The main thread's items in [lo, hi), replayed in order; returns the replayed step length.
  Ns run(const HostThread* main, Ns hi) {
    Ns at = lo_;  // recorded time reached
    if (main) {
      auto it = std::upper_bound(main->marks.begin(), main->marks.end(), lo_, [](Ns v, const HostMark& m) { return v < m.s; });
      if (it != main->marks.begin() && (it - 1)->e > lo_) --it;
      for (; it != main->marks.end() && it->s < hi; ++it) {
        const Ns s = std::max(it->s, lo_), e = std::min(it->e, hi);
        if (s > at) item(at, s, now_ + (s - at));  // host compute before the mark
        item(s, e, mark_end(*it, s, e));
        at = e;
      }
    }
    if (hi > at) item(at, hi, now_ + (hi - at));
    return std::max(now_, gpu_bound(hi)) - lo_;
  }

  const Touched& touched() const { return touched_; }

 private:
  struct Mapped {
    Ns s, e, new_s, new_e;
  };
  const RankGraph& g_;
  const ReplayIndex& index_;
  Ns lo_;
  std::optional<WhatIf> change_;
  Ns blocking_;                // a launch call waiting longer than this for its op was blocked
  Ns now_ = lo_;               // replayed time the main thread has reached
  std::vector<Mapped> map_;    // the main thread's items: recorded -> replayed
  std::size_t next_ = 0;       // next op (in g.by_start) to replay
  std::size_t first_ = 0;      // the first op (in g.by_start) replayed: every op from there to next_ is
  std::vector<std::pair<Ns, Ns>> ops_;  // replayed [start, end) of the ops by_start[first_ ..]
  Touched touched_;

  void item(Ns s, Ns e, Ns new_e) {
    map_.push_back({s, e, now_, new_e});
    now_ = new_e;
  }

  // The step's GPU work (the ops that started in it, and those launched in it that started
  // after it ended: the host ran ahead) bounds the step as the recording shows: its replayed
  // end less the tail it recorded past the step's end. Unchanged, that is at most hi.
  Ns gpu_bound(Ns hi) {
    const auto first = std::lower_bound(g_.by_start.begin(), g_.by_start.end(), lo_,
                                        [&](std::uint32_t i, Ns v) { return g_.ops[i].s < v; });
    Ns recorded_end = lo_, last_start = lo_;
    bool any = false;
    for (auto it = first; it != g_.by_start.end(); ++it) {
      const PathOp& o = g_.ops[*it];
      if (o.s >= hi) {
        const LaunchRef* l = o.corr ? index_.launch[*it] : nullptr;
        if (!l || l->start >= hi) break;  // launched after the step
      }
      recorded_end = std::max(recorded_end, o.e), last_start = o.s, any = true;
    }
    if (!any) return lo_;
    replay_ops_until(last_start);
    Ns replayed_end = lo_;
    for (auto it = first; it != g_.by_start.end() && g_.ops[*it].s <= last_start; ++it)
      replayed_end = std::max(replayed_end, op_times(*it).second);
    return replayed_end - std::max<Ns>(0, recorded_end - hi);
  }

  // Recorded host time -> replayed host time (before lo: unchanged; past the items replayed so
  // far: shifted as the last one was).
  Ns host_time(Ns t) const {
    if (t < lo_) return t;
    auto it = std::upper_bound(map_.begin(), map_.end(), t, [](Ns v, const Mapped& m) { return v < m.s; });
    if (it == map_.begin()) return t + (now_ - lo_);
    const Mapped& m = *(it - 1);
    if (t >= m.e) return m.new_e + (t - m.e);
    return m.new_s + std::min(t - m.s, m.new_e - m.new_s);
  }

  std::pair<Ns, Ns> op_times(std::uint32_t i) const {
    const PathOp& o = g_.ops[i];
    if (o.s < lo_) return {o.s, o.e};
    const std::size_t pos = index_.start_pos[i];
    return pos >= first_ && pos < next_ ? ops_[pos - first_] : std::pair<Ns, Ns>{o.s, o.e};
  }

  // Replays every op that started by recorded time t, in start order (a predecessor first).
  void replay_ops_until(Ns t) {
    for (; next_ < g_.by_start.size() && g_.ops[g_.by_start[next_]].s <= t; ++next_) {
      const std::uint32_t i = g_.by_start[next_];
      const PathOp& o = g_.ops[i];
      const LaunchRef* launch = o.corr ? index_.launch[i] : nullptr;
      const bool launched = launch != nullptr;
      const bool launch_gated = launched && (o.pred == trace::kNone || launch->start >= g_.ops[o.pred].e);
      Ns start = o.pred == trace::kNone && !launched ? host_time(o.s) : lo_;
      if (launched) {
        const LaunchRef& l = *launch;
        const Ns latency = launch_gated ? o.s - l.start : std::min(o.s - l.start, l.end - l.start);
        start = std::max(start, host_time(l.start) + latency);
      }
      if (o.pred != trace::kNone) {
        // the recorded gap when the predecessor gated the op; otherwise at most 0 (never later
        // than recorded, even where recorded ops overlap)
        const Ns recorded_gap = o.s - g_.ops[o.pred].e;
        const Ns gap = launch_gated ? std::min<Ns>(0, recorded_gap) : recorded_gap;
        start = std::max(start, op_times(o.pred).second + gap);
      }
      if (o.wait != trace::kNone && g_.ops[o.wait].e <= o.s) {
        // a cross-stream wait: its recorded gap when it gated the op (ended after the launch
        // call began and the stream predecessor ended), else none
        const Ns we = g_.ops[o.wait].e;
        const bool wait_gated = (o.pred == trace::kNone || we > g_.ops[o.pred].e) && (!launched || we > launch->start);
        start = std::max(start, op_times(o.wait).second + (wait_gated ? o.s - we : 0));
      }
      touched_.traits |= o.traits;
      ops_.push_back({start, start + changed_length(o, change_)});  // op_times(i) reads it from now on
    }
  }

  // The replayed end of a mark recorded over [s, e) (clipped to the step), starting at now_.
  Ns mark_end(const HostMark& m, Ns s, Ns e) {
    touched_.data_wait |= m.kind == PathKind::DataWait;
    if (m.kind == PathKind::DataWait && change_ == WhatIf::NoDataWait) return now_;
    if (m.corr && (m.kind == PathKind::Launch || m.kind == PathKind::Sync)) {
      auto l = g_.launches.find(m.corr);
      if (l != g_.launches.end() && l->second.op != trace::kNone) {
        const PathOp& own = g_.ops[l->second.op];
        // a call that returned only after the op it launched ended (a synchronous copy) waited
        // for it; one that returned after the op started, having waited longer than a queued
        // launch takes (a copy from pageable memory, a full launch queue), waited for the GPU
        // to reach it
        if (own.e > s && own.e <= e) return wait_for(l->second.op, e, false, true);
        if (own.s >= s && own.s < e && own.s - s > blocking_) return wait_for(l->second.op, e, true, false);
      }
    }
    if (m.kind != PathKind::Sync) return now_ + (e - s);
    // the op the call waited for: the last to end before it returned (as the walk takes it)
    auto w = std::upper_bound(g_.by_end.begin(), g_.by_end.end(), e, [&](Ns v, std::uint32_t i) { return v < g_.ops[i].e; });
    if (w == g_.by_end.begin() || g_.ops[*(w - 1)].e <= s) return now_ + (e - s);
    return wait_for(*(w - 1), e, false, true);
  }

  // A host call recorded as returning at e, after op `op` ended (or started): it returns the same
  // time after the op's replayed end (or start). A prefetched host-to-device copy no longer holds
  // the host, nor does a sync (`is_sync`: a synchronising call or copy) without syncs: the call
  // keeps only what followed the op's end.
  Ns wait_for(std::uint32_t op, Ns e, bool until_start, bool is_sync) {
    const PathOp& o = g_.ops[op];
    const Ns tail = e - (until_start ? o.s : o.e);
    touched_.traits |= o.traits;
    touched_.sync_wait |= is_sync;
    if ((change_ == WhatIf::PrefetchedH2d && (o.traits & kHostToDevice)) || (change_ == WhatIf::NoSyncWait && is_sync))
      return now_ + (until_start ? 0 : tail);
    replay_ops_until(o.s);
    const auto [start, end] = op_times(op);
    return std::max(now_ + tail, (until_start ? start : end) + tail);
  }
};

}  // namespace

ReplayIndex::ReplayIndex(const RankGraph& g) : start_pos(g.ops.size(), 0), launch(g.ops.size(), nullptr) {
  for (std::size_t p = 0; p < g.by_start.size(); ++p) start_pos[g.by_start[p]] = static_cast<std::uint32_t>(p);
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (!g.ops[i].corr) continue;
    auto l = g.launches.find(g.ops[i].corr);
    if (l != g.launches.end()) launch[i] = &l->second;
  }
}

namespace {

// The replayed length of [lo, hi) and what the replay met that a change would alter.
std::pair<Ns, Touched> replay(const RankGraph& g, const ReplayIndex& index, Ns lo, Ns hi, std::optional<WhatIf> change,
                              Ns blocking) {
  Replay r(g, index, lo, change, blocking);
  auto main = g.threads.find(g.main_track);
  const Ns length = r.run(main == g.threads.end() ? nullptr : &main->second, hi);
  return {length, r.touched()};
}

}  // namespace

Ns replay_step(const RankGraph& g, const ReplayIndex& index, Ns lo, Ns hi, std::optional<WhatIf> change, Ns blocking) {
  return replay(g, index, lo, hi, change, blocking).first;
}

void replay_what_ifs(const RankGraph& g, const ReplayIndex& index, const StepPath& path, Ns blocking, StepMetrics& step) {
  step.replayed = false;
  if (!path.complete || g.main_track == trace::kNone) return;
  const auto [unchanged, touched] = replay(g, index, step.start, step.end, std::nullopt, blocking);
  if (unchanged != step.wall()) return;
  // a change that alters nothing the unchanged replay met would replay it step for step
  for (std::size_t k = 0; k < kWhatIfs; ++k)
    step.what_if[k] = touched.alters(static_cast<WhatIf>(k))
                          ? replay_step(g, index, step.start, step.end, static_cast<WhatIf>(k), blocking)
                          : unchanged;
  step.replayed = true;
}

std::size_t replayed_steps(const RankMetrics& r) {
  return static_cast<std::size_t>(
      std::count_if(r.steps.begin(), r.steps.end(), [](const StepMetrics& s) { return s.replayed; }));
}

std::optional<Ns> what_if_gain(const RankMetrics& r, WhatIf change) {
  if (r.steps.empty() || replayed_steps(r) != r.steps.size()) return std::nullopt;
  std::vector<Ns> gains;
  for (const auto& s : r.steps) gains.push_back(s.wall() - s.what_if[static_cast<std::size_t>(change)]);
  return percentile(std::move(gains), 0.5);
}

}  // namespace tt::analyzer

