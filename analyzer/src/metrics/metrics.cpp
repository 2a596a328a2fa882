// Metrics: one pass over each rank's GPU ops and host events, then interval algebra.
// Definitions: docs/analysis.md. Ranks are analysed in parallel.
#include "tracetune/analyzer/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "tracetune/analyzer/kernel_class.h"
#include "tracetune/trace/collective_match.h"
#include "tracetune/trace/importers.h"

#include "call_names.h"
#include "parallel.h"
#include "sorted_runs.h"

namespace tt::analyzer {

using trace::kNone;
using trace::Trace;
using trace::TrackType;

namespace {

// percentile() of v, reordering v instead of copying it (so several percentiles of one vector
// cost one copy at most)
Ns percentile_in_place(std::vector<Ns>& v, double p) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(std::clamp(p, 0.0, 1.0) * static_cast<double>(v.size() - 1) + 0.5);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

}  // namespace

Ns percentile(std::vector<Ns> v, double p) { return percentile_in_place(v, p); }

namespace {

enum class OpTable : std::uint8_t { Kernel = 0, Memcpy = 1, Memset = 2 };

struct GpuOp {
  Ns s = 0, e = 0;
  std::uint32_t track = 0;
  std::uint32_t index = 0;  // row in its table
  std::uint32_t corr = 0;
  OpTable table = OpTable::Kernel;
  KernelClass cls = KernelClass::Compute;
};

// HTA reads Kineto's decimal microseconds as doubles, then rounds: start up, end
// (= start + dur, added in doubles) down, to whole µs. Emulating the doubles matters: at
// epoch-sized timestamps a double holds µs only to 1/4, and sums land on either side of an
// integer. `us_double` is the double Python's float() makes of the original decimal text
// (our importer kept its exact ns value): strtod rounds correctly, as Python does.
double us_double(Ns ns) {
  const bool neg = ns < 0;
  const auto mag = neg ? -static_cast<unsigned long long>(ns) : static_cast<unsigned long long>(ns);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s%llu.%03llu", neg ? "-" : "", mag / 1000, mag % 1000);
  return std::strtod(buf, nullptr);
}
Ns hta_start(Ns ns) { return static_cast<Ns>(std::ceil(us_double(ns))) * 1000; }
Ns hta_end(Ns start, Ns dur) { return static_cast<Ns>(std::floor(us_double(start) + us_double(dur))) * 1000; }

// Where HTA 0.6's definitions (--hta-compat) differ from ours, in one place: times rounded to
// whole µs as HTA reads them; its kernel-name classes, copies and memsets classified by name
// too; stream rows without a stream id left out; one window from the first to the last GPU op,
// with nothing clipped to it; stream gaps measured from the previous op's end and counted even
// when zero. Ours: exact times, copies are memory ops, steps are the windows, ops are clipped to
// the window and those outside it skipped.
struct Conventions {
  bool hta = false;

  Ns start(Ns s) const { return hta ? hta_start(s) : s; }
  Ns end(Ns s, Ns d) const { return hta ? hta_end(s, d) : s + d; }
  KernelClass kernel_class(std::string_view name) const { return hta ? classify_kernel_hta(name) : classify_kernel(name); }
  bool copies_by_name() const { return hta; }
  bool skips_stream(std::string_view stream_name) const {
    return hta && stream_name.starts_with(trace::kNoStreamIdPrefix);
  }
  bool steps_are_windows(bool has_steps) const { return has_steps && !hta; }
  bool clips_to_window() const { return !hta; }
  // An op of [s, e) outside the window: skipped (never under HTA's conventions).
  bool outside(Ns s, Ns e, Interval w) const { return !hta && (e <= w.start || s >= w.end); }
  // The end of the previous op a stream gap is measured from: its own, or the running maximum.
  Ns gap_from(Ns previous_end, Ns running_max_end) const { return hta ? previous_end : running_max_end; }
  // The launch pipeline's least latency (call start -> kernel start) that a gap is still the
  // host's doing within (HTA counts only calls that start after the gap).
  Ns launch_floor(Ns measured) const { return hta ? 0 : measured; }
};

struct ApiRef {
  Ns start = 0, dur = 0;
};

std::string steps_spec(std::pair<std::int64_t, std::int64_t> r) {
  const std::string a = r.first == INT64_MIN ? "" : std::to_string(r.first);
  const std::string b = r.second == INT64_MAX ? "" : std::to_string(r.second);
  return r.first == r.second ? a : a + ":" + b;
}

// Launch calls by correlation id. Ids are small dense counters in practice (CUPTI's, Kineto's),
// so a direct table when they are, a sorted vector otherwise: no hashing per GPU op.
class CorrIndex {
 public:
  void add(std::uint32_t corr, ApiRef r) { rows_.push_back({corr, r}); }
  void build() {
    std::uint32_t max = 0;
    for (const auto& [c, r] : rows_) max = std::max(max, c);
    if (max <= 4 * rows_.size() + 4096) {
      direct_.assign(static_cast<std::size_t>(max) + 1, ApiRef{0, -1});
      for (const auto& [c, r] : rows_)
        if (direct_[c].dur < 0) direct_[c] = r;  // first call wins, as with duplicates in Kineto
      rows_.clear();
      rows_.shrink_to_fit();
    } else {
      std::stable_sort(rows_.begin(), rows_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    }
  }
  const ApiRef* find(std::uint32_t corr) const {
    if (corr == 0) return nullptr;
    if (!direct_.empty() || rows_.empty()) {
      if (corr >= direct_.size() || direct_[corr].dur < 0) return nullptr;
      return &direct_[corr];
    }
    auto it = std::lower_bound(rows_.begin(), rows_.end(), corr, [](const auto& a, std::uint32_t v) { return a.first < v; });
    return it != rows_.end() && it->first == corr ? &it->second : nullptr;
  }

 private:
  std::vector<std::pair<std::uint32_t, ApiRef>> rows_;
  std::vector<ApiRef> direct_;
};

// Per-name memo of a classification (names repeat: a trace has thousands of distinct kernels
// and millions of launches).
template <typename T>
class NameMemo {
 public:
  template <typename F>
  T get(trace::StringId id, F&& compute) {
    if (id >= have_.size()) { have_.resize(id + 1, 0); value_.resize(id + 1); }
    if (!have_[id]) { value_[id] = compute(); have_[id] = 1; }
    return value_[id];
  }

 private:
  std::vector<char> have_;
  std::vector<T> value_;
};

// What the stages of RankAnalyzer hand on (run() shows the flow): interval sets over the
// analysed window, clipped to it under our conventions.
struct GpuSets {  // gpu_sets(): the GPU's busy time, and by kernel class
  IntervalSet all, compute, comm, memory;
};
struct CopySets {  // transfers(): host-to-device copies, and those from pageable memory
  IntervalSet h2d, h2d_pageable;
};
struct HostWaits {  // the main thread waiting for data or in a sync (host_waits()), in I/O (io()),
  IntervalSet data, sync, io_main, collective_host;  // in host-side collective calls (collectives())
};
struct IdleSplit {  // idle_split(): GPU idle while the host was late launching the next op, right
  IntervalSet launch, after_sync, other;  // after it came back from a sync, and the rest
};
// kernel_tables(): the window's kernels by start, with running sums of their memory-bound and
// FP32-GEMM time.
struct KernelSums {
  std::vector<Ns> starts, memory_bound{0}, fp32{0};

  std::size_t at(Ns t) const {
    return static_cast<std::size_t>(std::lower_bound(starts.begin(), starts.end(), t) - starts.begin());
  }
  static Ns sum(const std::vector<Ns>& prefix, std::size_t a, std::size_t b) { return prefix[b] - prefix[a]; }
};

class RankAnalyzer {
 public:
  RankAnalyzer(const Trace& t, const Options& opt, std::uint32_t process, std::vector<std::uint32_t> tree,
               bool hta_step_filter)
      : t_(t), opt_(opt), conv_{opt.hta_compat}, p_(process), tree_(std::move(tree)), hta_step_filter_(hta_step_filter) {}

  RankMetrics run() {
    m_.process = p_;
    const auto& proc = t_.processes[p_];
    m_.pid = proc.pid;
    m_.rank = proc.rank >= 0 ? proc.rank : static_cast<std::int32_t>(p_);
    m_.rank_from_trace = proc.rank >= 0;
    m_.label = proc.rank >= 0 ? fmt::format("rank {} (pid {}{}{})", proc.rank, proc.pid, proc.host.empty() ? "" : " on ",
                                            proc.host)
                              : fmt::format("process {} (pid {}{}{})", proc.name.empty() ? "?" : proc.name, proc.pid,
                                            proc.host.empty() ? "" : " on ", proc.host);
    for (const auto& d : t_.devices)
      if (d.process == p_) {
        m_.device = d.name;
        m_.compute_major = d.compute_major;
        m_.compute_minor = d.compute_minor;
        break;
      }
    classify_tracks();
    collect_api();
    collect_steps();
    m_.main_track = main_track_;
    collect_gpu_ops();
    choose_window();
    const GpuSets gpu = gpu_sets();
    launch_floor_ = conv_.launch_floor(launch_latency_floor());
    stream_gaps_and_launches();
    const CopySets copies = transfers(gpu);
    const KernelSums kernels = kernel_tables();
    HostWaits waits = host_waits();
    const IdleSplit idle = idle_split(gpu, waits);
    waits.io_main = io();
    waits.collective_host = collectives(waits);
    step_metrics(gpu, copies, waits, idle, kernels);
    add_notes(idle);
    return std::move(m_);
  }

 private:
  const Trace& t_;
  const Options& opt_;
  const Conventions conv_;
  std::uint32_t p_;
  std::vector<std::uint32_t> tree_;  // p_ and its non-rank descendants
  bool hta_step_filter_;
  RankMetrics m_;

  std::vector<std::uint32_t> host_tracks_, stream_tracks_, tree_tracks_;
  std::uint32_t main_track_ = kNone;
  CorrIndex api_;
  NameMemo<KernelClass> class_memo_;
  std::vector<std::size_t> step_rows_;
  std::vector<GpuOp> ops_;
  Interval window_{};
  Ns launch_floor_ = 0;  // launch_latency_floor(), or 0 under HTA's conventions

  // The rank's own tracks (streams and host tracks) and the host tracks of its process tree,
  // each ascending; from the trace's per-process index, not a scan of every rank's tracks.
  void classify_tracks() {
    for (const std::uint32_t tr : t_.tracks_of_process(p_)) {
      if (t_.tracks[tr].type != TrackType::Stream) host_tracks_.push_back(tr);
      else if (!conv_.skips_stream(t_.streams[t_.tracks[tr].owner].name)) stream_tracks_.push_back(tr);
    }
    for (const std::uint32_t p : tree_)  // each process once (tree_of)
      for (const std::uint32_t tr : t_.tracks_of_process(p))
        if (t_.tracks[tr].type != TrackType::Stream) tree_tracks_.push_back(tr);
    std::sort(tree_tracks_.begin(), tree_tracks_.end());
  }

  template <typename F>
  void for_slices(std::span<const trace::TrackSlice> slices, const std::vector<std::uint32_t>& tracks, F&& f) const {
    // slices are sorted by track
    for (std::uint32_t tr : tracks)
      if (const trace::TrackSlice* sl = trace::find_slice(slices, tr)) f(*sl);
  }

  void collect_api() {
    const auto& a = t_.api_calls;
    for_slices(t_.slices_api_calls(), host_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i)
        if (a.correlation[i] != 0) api_.add(a.correlation[i], ApiRef{a.start[i], a.dur[i]});
    });
    api_.build();
  }

  void collect_steps() {
    const auto& st = t_.steps;
    for (const std::uint32_t tr : t_.tracks_of_process(p_))  // rows in (track, start) order, as the table's
      for (auto [i, end] = trace::rows_on_track(st.track, tr); i < end; ++i) {
        if (main_track_ == kNone) main_track_ = tr;
        step_rows_.push_back(i);
      }
    std::sort(step_rows_.begin(), step_rows_.end(), [&](std::size_t a, std::size_t b) { return st.start[a] < st.start[b]; });
    if (main_track_ == kNone) {  // the thread whose tid is the pid, else the first thread
      for (std::uint32_t tr : host_tracks_) {
        const auto& trk = t_.tracks[tr];
        if (trk.type == TrackType::Thread && t_.threads[trk.owner].tid == m_.pid) { main_track_ = tr; break; }
      }
      if (main_track_ == kNone) {
        for (std::uint32_t tr : host_tracks_)
          if (t_.tracks[tr].type == TrackType::Thread) { main_track_ = tr; break; }
      }
    }
  }

  void add_op(Ns s, Ns d, std::uint32_t tr, std::uint32_t idx, std::uint32_t corr, OpTable tab, KernelClass cls,
              std::uint64_t& negative) {
    if (d < 0) { ++negative; d = 0; }
    ops_.push_back({conv_.start(s), conv_.end(s, d), tr, idx, corr, tab, cls});
    ops_.back().e = std::max(ops_.back().e, ops_.back().s);  // µs rounding can invert a short op
  }

  KernelClass classify(trace::StringId name) {
    return class_memo_.get(name, [&] {
      const std::string_view n = t_.strings.get(name);
      return conv_.kernel_class(n);
    });
  }

  void collect_gpu_ops() {
    std::uint64_t negative = 0;
    const auto& k = t_.kernels;
    for_slices(t_.slices_kernels(), stream_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i) {
        add_op(k.start[i], k.dur[i], k.track[i], i, k.correlation[i], OpTable::Kernel, classify(k.name[i]), negative);
      }
    });
    const auto& c = t_.memcpys;
    for_slices(t_.slices_memcpys(), stream_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i)
        add_op(c.start[i], c.dur[i], c.track[i], i, c.correlation[i], OpTable::Memcpy,
               conv_.copies_by_name() ? classify(c.name[i]) : KernelClass::Memory, negative);
    });
    const auto& ms = t_.memsets;
    for_slices(t_.slices_memsets(), stream_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i)
        add_op(ms.start[i], ms.dur[i], ms.track[i], i, ms.correlation[i], OpTable::Memset,
               conv_.copies_by_name() ? classify(ms.name[i]) : KernelClass::Memory, negative);
    });
    if (negative)
      m_.notes.push_back(fmt::format("{} GPU ops had negative durations (clock skew in the source); counted as 0", negative));
    if (conv_.hta && hta_step_filter_) hta_filter();
    // gathered stream by stream and table by table: each slice is a run ascending by start
    sort_from_runs(ops_, [](const GpuOp& a, const GpuOp& b) { return a.s != b.s ? a.s < b.s : a.e > b.e; });
    m_.has_gpu = !ops_.empty();
  }

  // HTA drops the last ProfilerStep and every GPU op whose launching call is not in a kept step.
  void hta_filter() {
    Ns last = 0;
    bool found = false;
    for (std::size_t i : step_rows_) {
      if (!t_.strings.get(t_.steps.name[i]).starts_with("ProfilerStep#")) continue;
      last = found ? std::max(last, hta_start(t_.steps.start[i])) : hta_start(t_.steps.start[i]);
      found = true;
    }
    if (!found) {  // HTA falls back to the earliest CPU event: nothing on the GPU is kept
      Ns first = 0;
      bool any = false;
      auto take = [&](const trace::SpanColumns& tab, std::span<const trace::TrackSlice> sl) {
        for_slices(sl, host_tracks_, [&](const trace::TrackSlice& s) {
          if (s.begin < s.end) { first = any ? std::min(first, hta_start(tab.start[s.begin])) : hta_start(tab.start[s.begin]); any = true; }
        });
      };
      take(t_.ranges, t_.slices_ranges());
      take(t_.api_calls, t_.slices_api_calls());
      last = first;
    }
    std::erase_if(ops_, [&](const GpuOp& op) {
      if (op.corr == 0) return op.s >= last;
      const ApiRef* api = api_.find(op.corr);
      return api == nullptr || hta_start(api->start) >= last;
    });
    m_.hta_filtered = true;
    m_.notes.push_back("HTA mode: the last ProfilerStep and the GPU ops it launched are excluded, as HTA does");
  }

  void choose_window() {
    const auto& st = t_.steps;
    std::vector<std::size_t> kept;
    for (std::size_t i : step_rows_) {
      if (opt_.steps && (st.number[i] < opt_.steps->first || st.number[i] > opt_.steps->second)) continue;
      kept.push_back(i);
    }
    if (opt_.steps && kept.empty() && !step_rows_.empty())
      m_.notes.push_back(fmt::format("no step numbered {} on this rank", steps_spec(*opt_.steps)));
    step_rows_ = std::move(kept);
    m_.has_steps = !step_rows_.empty();
    if (!conv_.steps_are_windows(m_.has_steps)) {
      if (!ops_.empty()) {
        Ns e = ops_.front().e;
        for (const auto& op : ops_) e = std::max(e, op.e);
        window_ = {ops_.front().s, e};
      } else {
        window_ = host_bounds();
      }
    }
    if (conv_.steps_are_windows(m_.has_steps)) {
      window_ = {st.start[step_rows_.front()], st.start[step_rows_.front()]};
      for (std::size_t i : step_rows_) window_.end = std::max(window_.end, st.end(i));
    }
    if (!m_.has_steps)
      m_.notes.push_back(step_rows_.empty() && opt_.steps ? "no steps selected: the whole trace is one window"
                                                          : "no step markers: the whole trace is analysed as one window");
    m_.window_start = window_.start;
    m_.window_end = window_.end;
  }

  Interval host_bounds() const {
    Interval w{0, 0};
    bool any = false;
    auto take = [&](const trace::SpanColumns& tab, std::span<const trace::TrackSlice> sl) {
      for_slices(sl, tree_tracks_, [&](const trace::TrackSlice& s) {
        for (std::uint32_t i = s.begin; i < s.end; ++i) {
          const Ns a = tab.start[i], b = tab.start[i] + std::max<Ns>(tab.dur[i], 0);
          if (!any) { w = {a, b}; any = true; } else { w.start = std::min(w.start, a); w.end = std::max(w.end, b); }
        }
      });
    };
    take(t_.ranges, t_.slices_ranges());
    take(t_.api_calls, t_.slices_api_calls());
    take(t_.io_calls, t_.slices_io());
    return w;
  }

  GpuSets gpu_sets() {
    std::vector<Interval> all, comp, comm, mem;
    all.reserve(ops_.size());
    for (const auto& op : ops_) {
      Interval iv{op.s, op.e};
      if (conv_.clips_to_window()) iv = {std::max(iv.start, window_.start), std::min(iv.end, window_.end)};
      all.push_back(iv);
      switch (op.cls) {
        case KernelClass::Compute: comp.push_back(iv); break;
        case KernelClass::Communication: comm.push_back(iv); break;
        case KernelClass::Memory: mem.push_back(iv); break;
        default: break;
      }
    }
    // ops_ is sorted by start and clipping keeps that order except where it raises a start
    // to the window's: union_of re-sorts to be safe.
    GpuSets sets{IntervalSet::union_of(std::move(all)), IntervalSet::union_of(std::move(comp)),
                 IntervalSet::union_of(std::move(comm)), IntervalSet::union_of(std::move(mem))};
    auto& g = m_.gpu;
    g.span = window_.end - window_.start;
    g.busy = sets.all.measure();
    g.idle = g.span - g.busy;
    g.compute = sets.compute.measure();
    g.non_compute = g.busy - g.compute;
    g.communication = sets.comm.measure();
    g.memory = sets.memory.measure();
    const IntervalSet ck = sets.compute.intersect(sets.comm), cm = sets.compute.intersect(sets.memory),
                      km = sets.comm.intersect(sets.memory);
    const Ns ckm = ck.intersect(sets.memory).measure();
    g.comm_compute_overlap = ck.measure();
    g.comm_memory_overlap = km.measure();
    g.exposed_communication = g.communication - g.comm_compute_overlap;
    g.exclusive[1] = g.compute - ck.measure() - cm.measure() + ckm;
    g.exclusive[2] = g.communication - ck.measure() - km.measure() + ckm;
    g.exclusive[4] = g.memory - cm.measure() - km.measure() + ckm;
    g.exclusive[3] = ck.measure() - ckm;
    g.exclusive[5] = cm.measure() - ckm;
    g.exclusive[6] = km.measure() - ckm;
    g.exclusive[7] = ckm;
    g.exclusive[0] = g.idle;
    return sets;
  }

  // The least time from a launch call's start to its kernel's start that this trace shows
  // (the 10th percentile, at most kernel_wait_threshold): a kernel launched later than
  // gap start - floor could not have started before the gap ended, so the host's launch made
  // the gap. On an H100 a C++ loop of 1 µs kernels launches every ~4.6 µs and each starts ~6 µs
  // after its call: the call precedes the gap, and only this floor says the host paced it.
  Ns launch_latency_floor() const {
    std::vector<Ns> delays;
    delays.reserve(ops_.size());
    for (const auto& op : ops_)
      if (const ApiRef* api = op.table == OpTable::Kernel ? api_.find(op.corr) : nullptr; api && op.s >= api->start)
        delays.push_back(op.s - api->start);
    return std::min(percentile_in_place(delays, 0.1), opt_.kernel_wait_threshold);
  }

  void stream_gaps_and_launches() {
    std::map<std::uint32_t, std::vector<const GpuOp*>> by_stream;
    for (const auto& op : ops_) by_stream[op.track].push_back(&op);
    std::vector<Ns> kdur, ldur, ldelay;
    for (auto* v : {&kdur, &ldur, &ldelay}) v->reserve(ops_.size());
    std::uint64_t queued_sum = 0, queued_n = 0, short_k = 0;
    auto& L = m_.launch;
    for (auto& [track, ops] : by_stream) {
      StreamIdle si;
      si.track = track;
      const auto& trk = t_.tracks[track];
      si.stream = trk.type == TrackType::Stream ? t_.streams[trk.owner].stream : -1;
      si.ops = ops.size();
      std::vector<Ns> run_max_end(ops.size());
      Ns max_end = 0;
      for (std::size_t i = 0; i < ops.size(); ++i) {
        const GpuOp& op = *ops[i];
        const ApiRef* api = api_.find(op.corr);
        if (i > 0) {
          const Ns prev_end = conv_.gap_from(ops[i - 1]->e, max_end);
          Ns gap = op.s - prev_end;
          const bool in_window = !conv_.clips_to_window() || (op.s > window_.start && prev_end < window_.end);
          if (conv_.clips_to_window()) gap = std::max<Ns>(0, std::min(op.s, window_.end) - std::max(prev_end, window_.start));
          if (in_window && (gap != 0 || !conv_.clips_to_window())) {
            const bool host_late = api != nullptr && conv_.start(api->start) + launch_floor_ > prev_end;
            if (host_late) si.host_wait += gap;
            else if (gap < opt_.kernel_wait_threshold) si.kernel_wait += gap;
            else si.other += gap;
          }
        }
        max_end = i == 0 ? op.e : std::max(max_end, op.e);
        run_max_end[i] = max_end;
        if (op.table != OpTable::Kernel) continue;
        if (conv_.outside(op.s, op.e, window_)) continue;
        ++L.kernels;
        kdur.push_back(op.e - op.s);
        if (op.e - op.s < 10'000) ++short_k;
        if (api == nullptr) continue;
        ++L.correlated;
        ldur.push_back(api->dur);
        ldelay.push_back(op.s - api->start);
        // ops queued ahead of this one when it was launched: earlier ops still running then
        const Ns at = api->start;
        const auto first_running = std::upper_bound(run_max_end.begin(), run_max_end.begin() + static_cast<std::ptrdiff_t>(i), at);
        const auto q = static_cast<std::uint32_t>(run_max_end.begin() + static_cast<std::ptrdiff_t>(i) - first_running);
        queued_sum += q;
        ++queued_n;
        L.queue_max = std::max(L.queue_max, q);
      }
      m_.streams.push_back(si);
    }
    L.kernel_median = percentile_in_place(kdur, 0.5);
    L.kernel_p90 = percentile_in_place(kdur, 0.9);
    L.short_kernel_share = L.kernels ? static_cast<double>(short_k) / static_cast<double>(L.kernels) : 0;
    L.launch_call_median = percentile_in_place(ldur, 0.5);
    L.launch_delay_median = percentile_in_place(ldelay, 0.5);
    L.launch_delay_p90 = percentile_in_place(ldelay, 0.9);
    L.queue_mean = queued_n ? static_cast<double>(queued_sum) / static_cast<double>(queued_n) : 0;
    if (L.kernels && L.correlated < L.kernels)
      m_.notes.push_back(fmt::format("{} of {} kernels have no launch call in the trace: launch statistics and host-wait "
                                     "attribution cover the rest",
                                     L.kernels - L.correlated, L.kernels));
  }

  CopySets transfers(const GpuSets& gpu) {
    auto& T = m_.transfers;
    const auto& c = t_.memcpys;
    std::vector<Interval> h2d, h2d_pageable;
    for (const auto& op : ops_) {
      if (op.table != OpTable::Memcpy) continue;
      if (conv_.outside(op.s, op.e, window_)) continue;
      const std::uint32_t i = op.index;
      const Ns d = op.e - op.s;
      if (c.direction[i] == trace::MemcpyDirection::HtoD) {
        const bool pageable = c.src_kind[i] == trace::MemoryKind::Pageable;
        ++T.h2d_count;
        T.h2d_bytes += c.bytes[i];
        T.h2d_time += d;
        h2d.push_back({std::max(op.s, window_.start), std::min(op.e, window_.end)});
        if (pageable) {
          T.h2d_pageable_bytes += c.bytes[i];
          T.h2d_pageable_time += d;
          h2d_pageable.push_back(h2d.back());
        }
      } else if (c.direction[i] == trace::MemcpyDirection::DtoH) {
        ++T.d2h_count;
        T.d2h_bytes += c.bytes[i];
        T.d2h_time += d;
        if (c.dst_kind[i] == trace::MemoryKind::Pageable) T.d2h_pageable_bytes += c.bytes[i];
      }
    }
    CopySets sets{IntervalSet::union_of(std::move(h2d)), IntervalSet::union_of(std::move(h2d_pageable))};
    T.h2d_exposed = sets.h2d.subtract(gpu.compute).measure();
    auto gbps = [](std::uint64_t b, Ns t) { return t > 0 ? static_cast<double>(b) / static_cast<double>(t) : 0.0; };
    T.h2d_pageable_gbps = gbps(T.h2d_pageable_bytes, T.h2d_pageable_time);
    T.h2d_pinned_gbps = gbps(T.h2d_bytes - T.h2d_pageable_bytes, T.h2d_time - T.h2d_pageable_time);
    T.d2h_gbps = gbps(T.d2h_bytes, T.d2h_time);
    return sets;
  }

  KernelSums kernel_tables() {
    std::unordered_map<trace::StringId, KernelTotal> totals;
    NameMemo<std::pair<GemmFormat, bool>> gemm_memo;
    const auto& k = t_.kernels;
    auto& G = m_.gemm;
    Ns fp32_best = 0;
    std::unordered_map<trace::StringId, Ns> fp32_by_name;
    std::vector<std::pair<Ns, std::pair<Ns, Ns>>> per_kernel;  // start, (memory-bound time, fp32 time)
    for (const auto& op : ops_) {
      if (op.table != OpTable::Kernel) continue;
      if (conv_.outside(op.s, op.e, window_)) continue;
      const Ns d = op.e - op.s;
      auto& tot = totals[k.name[op.index]];
      if (tot.count++ == 0) tot.kernel_class = std::string(to_string(op.cls));  // one class per name (classify)
      tot.total += d;
      Ns mb = 0, fp32 = 0;
      if (op.cls == KernelClass::Compute) {
        const std::string_view n = t_.strings.get(k.name[op.index]);
        const auto [f, mem_bound] = gemm_memo.get(k.name[op.index], [&] {
          return std::make_pair(classify_gemm(n), is_memory_bound_kernel(n));
        });
        G.by_format[static_cast<int>(f)] += d;
        if (f == GemmFormat::Fp32Simt) {
          G.fp32_simt += d;
          ++G.fp32_simt_kernels;
          fp32 = d;
          Ns& acc = fp32_by_name[k.name[op.index]];
          acc += d;
          if (acc > fp32_best) { fp32_best = acc; G.top_fp32_kernel = std::string(n); }
        } else if (uses_tensor_cores(f)) {
          G.tensor_core += d;
        } else if (f == GemmFormat::Fp64) {
          G.fp64 += d;
        } else if (f == GemmFormat::Unknown) {
          G.unknown += d;
        } else if (mem_bound) {
          m_.memory_bound_kernels += d;
          mb = d;
        }
      }
      per_kernel.push_back({op.s, {mb, fp32}});
    }
    for (auto& [id, tot] : totals) tot.name = std::string(t_.strings.get(id));
    std::vector<KernelTotal> all;
    all.reserve(totals.size());
    for (auto& [id, tot] : totals) all.push_back(std::move(tot));
    std::sort(all.begin(), all.end(), [](const KernelTotal& a, const KernelTotal& b) {
      return a.total != b.total ? a.total > b.total : a.name < b.name;
    });
    m_.top_kernels.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(10, all.size())));
    m_.kernels = std::move(all);
    // per_kernel follows ops_, ascending by start already; the sums are read at lower_bound
    // boundaries, which no order among equal starts moves
    KernelSums sums;
    sums.starts.reserve(per_kernel.size());
    for (const auto& [s, v] : per_kernel) {
      sums.starts.push_back(s);
      sums.memory_bound.push_back(sums.memory_bound.back() + v.first);
      sums.fp32.push_back(sums.fp32.back() + v.second);
    }
    return sums;
  }

  HostWaits host_waits() {
    std::vector<Interval> data, sync;
    const auto& r = t_.ranges;
    for_slices(t_.slices_ranges(), host_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i)
        if (is_data_wait_name(t_.strings.get(r.name[i]))) data.push_back({r.start[i], r.end(i)});
    });
    const auto& a = t_.api_calls;
    std::unordered_map<trace::StringId, Ns> sync_by_name;
    for_slices(t_.slices_api_calls(), host_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i)
        if (is_sync_call_name(t_.strings.get(a.name[i])) && a.end(i) > window_.start && a.start[i] < window_.end) {
          sync.push_back({a.start[i], a.end(i)});
          sync_by_name[a.name[i]] += a.dur[i];
        }
    });
    m_.sync_calls = sync.size();
    trace::StringId top = 0;
    Ns top_t = -1;
    for (const auto& [id, d] : sync_by_name)
      if (d > top_t || (d == top_t && id < top)) { top = id; top_t = d; }
    if (top_t >= 0) m_.top_sync_call = std::string(api_base_name(t_.strings.get(top)));
    HostWaits waits;
    waits.data = IntervalSet::union_of(std::move(data)).clip(window_.start, window_.end);
    waits.sync = IntervalSet::union_of(std::move(sync)).clip(window_.start, window_.end).subtract(waits.data);
    m_.data_wait = waits.data.measure();
    m_.sync_wait = waits.sync.measure();
    return waits;
  }

  // GPU idle time outside the host's data and sync waits: the host late launching the op that
  // ends it (after_sync when a sync that waited for the GPU returned in the gap: it drained the
  // queue and kept the host from running ahead, so the time is the sync's), or the rest. A sync
  // that found the GPU idle already waited for nothing: the gap after it is the host's.
  IdleSplit idle_split(const GpuSets& gpu, const HostWaits& waits) const {
    if (!m_.has_gpu) return {};
    const IntervalSet rest = gpu.all.complement_in(window_).subtract(waits.data).subtract(waits.sync);
    const auto& syncs = waits.sync.intervals();
    std::vector<std::pair<Ns, std::uint32_t>> ends;  // (end, corr) of every op, by end
    ends.reserve(ops_.size());
    for (const auto& op : ops_) ends.emplace_back(op.e, op.corr);
    std::sort(ends.begin(), ends.end());
    // How long the sync that returned in the gap waited for work queued before it (the op that
    // drained last before the gap was launched before the sync began, so not the sync's own
    // copy); 0 if none did. Without that wait the host would have been as much earlier.
    auto sync_wait_before = [&](const Interval& gap) -> Ns {
      const auto it = std::partition_point(syncs.begin(), syncs.end(), [&](const Interval& x) { return x.end < gap.start; });
      if (it == syncs.end() || it->end > gap.end || it->start >= gap.start) return 0;
      const auto last = std::upper_bound(ends.begin(), ends.end(), std::make_pair(gap.start, UINT32_MAX));
      if (last == ends.begin() || std::prev(last)->first <= it->start) return 0;  // the GPU was idle already
      const ApiRef* api = api_.find(std::prev(last)->second);
      return api != nullptr && api->start < it->start ? it->end - it->start : 0;
    };
    std::vector<Interval> launch, after_sync, other;
    auto it = ops_.begin();  // gaps come in time order: each search goes on from the last one's answer
    for (const Interval& gap : rest.intervals()) {
      // the op that ends this idle stretch: the first op starting at or after its end
      while (it != ops_.end() && it->s < gap.end) ++it;
      bool host_late = false;
      if (it != ops_.end()) {
        const ApiRef* api = api_.find(it->corr);
        host_late = api != nullptr && api->start + launch_floor_ > gap.start;
      }
      if (!host_late) {
        other.push_back(gap);
        continue;
      }
      const Ns by_sync = std::min(gap.end - gap.start, sync_wait_before(gap));
      if (by_sync > 0) after_sync.push_back({gap.start, gap.start + by_sync});
      if (gap.start + by_sync < gap.end) launch.push_back({gap.start + by_sync, gap.end});
    }
    return {IntervalSet::union_of_sorted(launch), IntervalSet::union_of_sorted(after_sync),
            IntervalSet::union_of_sorted(other)};
  }

  // I/O of the process and its workers; returns the main thread's I/O time.
  IntervalSet io() {
    auto& I = m_.io;
    const auto& io = t_.io_calls;
    std::vector<Interval> main;
    std::unordered_map<trace::StringId, FileIo> files;
    for_slices(t_.slices_io(), tree_tracks_, [&](const trace::TrackSlice& sl) {
      for (std::uint32_t i = sl.begin; i < sl.end; ++i) {
        if (conv_.outside(io.start[i], io.end(i), window_)) continue;
        const std::uint32_t proc = t_.process_of_track(sl.track);
        auto pit = std::find_if(I.per_process.begin(), I.per_process.end(),
                                [&](const ProcessIo& x) { return x.process == proc; });
        if (pit == I.per_process.end()) {
          ProcessIo pio;
          pio.process = proc;
          pio.pid = t_.processes[proc].pid;
          pio.name = t_.processes[proc].name;
          I.per_process.push_back(pio);
          pit = I.per_process.end() - 1;
        }
        const Ns d = std::max<Ns>(io.dur[i], 0);
        const std::uint64_t b = io.bytes[i] > 0 ? static_cast<std::uint64_t>(io.bytes[i]) : 0;
        ++I.calls;
        ++pit->calls;
        I.time += d;
        pit->time += d;
        if (io.err[i] != 0) ++I.errors;
        FileIo& file = files[io.path[i]];
        ++file.calls;
        file.time += d;
        if (io.op[i] == trace::IoOp::Read) { ++I.read_calls; I.bytes_read += b; pit->bytes_read += b; file.bytes_read += b; }
        if (io.op[i] == trace::IoOp::Write) {
          ++I.write_calls;
          I.bytes_written += b;
          pit->bytes_written += b;
          file.bytes_written += b;
        }
        if (sl.track == main_track_) main.push_back({io.start[i], io.end(i)});
      }
    });
    IntervalSet io_main = IntervalSet::union_of(std::move(main)).clip(window_.start, window_.end);
    I.main_thread = io_main.measure();
    for (auto& [path, file] : files) {
      file.path = std::string(t_.strings.get(path));
      I.per_file.push_back(std::move(file));
    }
    std::sort(I.per_file.begin(), I.per_file.end(), [](const FileIo& a, const FileIo& b) {
      return a.time != b.time ? a.time > b.time : a.path < b.path;
    });
    return io_main;
  }

  // Collective statistics; returns the main thread's time in host-side collective calls outside
  // its other waits (ranks whose collectives are host-side: gloo, mpi).
  IntervalSet collectives(const HostWaits& waits) {
    auto& C = m_.collectives;
    const auto& c = t_.collectives;
    std::vector<std::size_t> rows;  // the process's, in the table's order
    for (const std::uint32_t tr : t_.tracks_of_process(p_))
      for (auto [i, end] = trace::rows_on_track(c.track, tr); i < end; ++i) rows.push_back(i);
    C.device_side = std::any_of(rows.begin(), rows.end(), [&](std::size_t i) { return c.side[i] == trace::CollectiveSide::Device; });
    const auto want = C.device_side ? trace::CollectiveSide::Device : trace::CollectiveSide::Host;
    std::vector<Interval> host_calls;
    for (const std::size_t i : rows) {
      if (c.side[i] != want) continue;
      ++C.count;
      C.bytes += c.bytes[i];
      C.time += std::max<Ns>(c.dur[i], 0);
      if (!C.device_side && c.track[i] == main_track_) host_calls.push_back({c.start[i], c.end(i)});
    }
    return IntervalSet::union_of(std::move(host_calls))
        .clip(window_.start, window_.end)
        .subtract(waits.data)
        .subtract(waits.sync)
        .subtract(waits.io_main);
  }

  void step_metrics(const GpuSets& gpu, const CopySets& copies, const HostWaits& waits, const IdleSplit& idle,
                    const KernelSums& kernels) {
    std::vector<Interval> windows;
    std::vector<std::int64_t> numbers;
    if (conv_.steps_are_windows(m_.has_steps)) {
      for (std::size_t i : step_rows_) { windows.push_back({t_.steps.start[i], t_.steps.end(i)}); numbers.push_back(t_.steps.number[i]); }
    } else {
      windows.push_back(window_);
      numbers.push_back(-1);
    }
    const IntervalSet comm_exposed = gpu.comm.subtract(gpu.compute);
    const IntervalSet ck = gpu.comm.intersect(gpu.compute);
    const IntervalSet h2d_exposed = copies.h2d.subtract(gpu.compute);
    const IntervalSet idle_all = m_.has_gpu ? gpu.all.complement_in(window_) : IntervalSet{};
    const IntervalSet idle_data = idle_all.intersect(waits.data), idle_sync = idle_all.intersect(waits.sync);
    std::vector<Ns> walls;
    for (std::size_t k = 0; k < windows.size(); ++k) {
      const Interval w = windows[k];
      StepMetrics s;
      s.number = numbers[k];
      s.start = w.start;
      s.end = w.end;
      s.gpu_busy = gpu.all.measure_in(w.start, w.end);
      s.gpu_idle = m_.has_gpu ? s.wall() - s.gpu_busy : 0;
      s.compute = gpu.compute.measure_in(w.start, w.end);
      s.communication = gpu.comm.measure_in(w.start, w.end);
      s.memory = gpu.memory.measure_in(w.start, w.end);
      s.comm_compute_overlap = ck.measure_in(w.start, w.end);
      s.exposed_communication = comm_exposed.measure_in(w.start, w.end);
      s.data_wait = waits.data.measure_in(w.start, w.end);
      s.sync_wait = waits.sync.measure_in(w.start, w.end);
      s.io_main = waits.io_main.measure_in(w.start, w.end);
      s.collective_host = waits.collective_host.measure_in(w.start, w.end);
      s.h2d = copies.h2d.measure_in(w.start, w.end);
      s.h2d_exposed = h2d_exposed.measure_in(w.start, w.end);
      s.h2d_pageable = copies.h2d_pageable.measure_in(w.start, w.end);
      s.idle_data = idle_data.measure_in(w.start, w.end);
      s.idle_sync = idle_sync.measure_in(w.start, w.end) + idle.after_sync.measure_in(w.start, w.end);
      s.idle_launch = idle.launch.measure_in(w.start, w.end);
      s.idle_other = idle.other.measure_in(w.start, w.end);
      const std::size_t a = kernels.at(w.start), b = kernels.at(w.end);
      s.kernels = b - a;
      s.memory_bound_kernels = KernelSums::sum(kernels.memory_bound, a, b);
      s.fp32_gemm = KernelSums::sum(kernels.fp32, a, b);
      walls.push_back(s.wall());
      m_.steps.push_back(s);
    }
    m_.step_median = percentile(walls, 0.5);
    m_.step_p90 = percentile(walls, 0.9);
    m_.step_min = walls.empty() ? 0 : *std::min_element(walls.begin(), walls.end());
    m_.step_max = walls.empty() ? 0 : *std::max_element(walls.begin(), walls.end());
  }

  void add_notes(const IdleSplit& idle) {
    if (!m_.has_gpu) m_.notes.push_back("no GPU activity on this rank: GPU metrics are not determined");
    const Ns other = idle.other.measure();
    if (m_.has_gpu && m_.gpu.span > 0 && other * 5 >= m_.gpu.span)
      m_.notes.push_back(fmt::format(
          "the GPU sat idle {:.0f}% of the window with its next work already launched: it waited on dependencies "
          "(events, other streams, CUDA-graph nodes, peers); the trace does not say which, so no rule claims this time",
          100.0 * static_cast<double>(other) / static_cast<double>(m_.gpu.span)));
  }
};

}  // namespace

RankMetrics rank_metrics(const Trace& t, const Options& opt, std::uint32_t process, std::vector<std::uint32_t> tree,
                         bool hta_step_filter) {
  return RankAnalyzer(t, opt, process, std::move(tree), hta_step_filter).run();
}

}  // namespace tt::analyzer
