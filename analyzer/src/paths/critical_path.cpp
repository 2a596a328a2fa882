// Critical path per step: a backward walk over the dependency graph the trace implies.
//
// Nodes are host intervals (per thread: data waits, synchronising calls, collective calls,
// launch calls, and host compute between them), GPU ops, and collectives matched across ranks.
// Edges: thread order; launch call -> GPU op (correlation id); stream order (an op waits for the
// op before it); sync call -> the GPU op it waited for (the last one to end before it
// returned); stream wait -> the work its event record captured on another stream; a non-main
// thread with nothing to do waits for the main thread, and a main thread that launched nothing
// while another thread launched waits for that thread (backward()); a collective ->
// its last arriver (metrics.cpp matches them across ranks). Starting at a step's end on the
// rank's main thread, each move takes the edge that gated the current moment and emits the
// segment of time it explains, so the segments tile [step start, step end) and the path's
// length is the step time by construction (checked: a mismatch marks the path incomplete).
// Definitions and limits: docs/analysis.md, "Critical path".
#include "critical_path.h"

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include <fmt/format.h>

#include "tracetune/analyzer/kernel_class.h"

#include "parallel.h"
#include "sorted_runs.h"

namespace tt::analyzer {

using trace::kNone;
using trace::Trace;
using trace::TrackType;

std::string_view to_string(PathKind k) {
  static constexpr std::string_view kNames[kPathKinds] = {"host_compute", "launch",    "gpu_compute",
                                                         "copy",         "communication", "gpu_wait",
                                                         "rank_wait",    "data_wait", "sync"};
  return kNames[static_cast<std::size_t>(k)];
}

namespace {

// f(track, begin, end) for each of the process's tracks (streams or not) with a slice of the table.
template <typename F>
void for_rank_track_slices(const Trace& t, std::span<const trace::TrackSlice> slices, std::uint32_t process, bool streams,
                           F&& f) {
  for (const std::uint32_t track : t.tracks_of_process(process)) {  // ascending, as the slices are
    if ((t.tracks[track].type == TrackType::Stream) != streams) continue;
    if (const trace::TrackSlice* sl = trace::find_slice(slices, track); sl && sl->begin < sl->end) f(track, sl->begin, sl->end);
  }
}

template <typename F>
void for_rank_tracks(const Trace& t, std::span<const trace::TrackSlice> slices, std::uint32_t process, bool streams, F&& f) {
  for (const std::uint32_t track : t.tracks_of_process(process)) {  // ascending, as the slices are
    if ((t.tracks[track].type == TrackType::Stream) != streams) continue;
    if (const trace::TrackSlice* sl = trace::find_slice(slices, track))
      for (std::uint32_t i = sl->begin; i < sl->end; ++i) f(i);
  }
}

// What the path and the replay need to know of an op by its name, worked out once per name.
struct OpClass {
  PathKind kind = PathKind::GpuCompute;
  std::uint8_t traits = 0;
};

OpClass classify_op(std::string_view name) {
  OpClass c;
  switch (classify_kernel(name)) {
    case KernelClass::Communication: c.kind = PathKind::Communication; break;
    case KernelClass::Memory: c.kind = PathKind::Copy; break;
    case KernelClass::Other: c.kind = PathKind::GpuWait; break;
    case KernelClass::Compute:
      if (classify_gemm(name) == GemmFormat::Fp32Simt) c.traits |= kFp32Gemm;
      else if (is_memory_bound_kernel(name)) c.traits |= kMemoryBound;
      break;
  }
  return c;
}

// Op and mark names as the graph's own string table.
class GraphNames {
 public:
  GraphNames(const Trace& t, RankGraph& g) : t_(t), g_(g) {}
  std::uint32_t operator()(trace::StringId id) {
    if (local_.empty()) local_.assign(t_.strings.size(), kNone);
    std::uint32_t& mine = local_[id];
    if (mine == kNone) {
      mine = static_cast<std::uint32_t>(g_.names.size());
      g_.names.emplace_back(t_.strings.get(id));
    }
    return mine;
  }

 private:
  const Trace& t_;
  RankGraph& g_;
  std::vector<std::uint32_t> local_;  // by trace string id: the graph's (kNone: not yet)
};

// A yes/no question about a trace string, answered once per distinct string.
class NameTest {
 public:
  NameTest(const Trace& t, bool (*test)(std::string_view)) : t_(t), test_(test) {}
  bool operator()(trace::StringId id) {
    if (known_.empty()) known_.assign(t_.strings.size(), kUnknown);
    std::uint8_t& k = known_[id];
    if (k == kUnknown) k = test_(t_.strings.get(id)) ? 1 : 0;
    return k == 1;
  }

 private:
  static constexpr std::uint8_t kUnknown = 2;
  const Trace& t_;
  bool (*test_)(std::string_view);
  std::vector<std::uint8_t> known_;
};

// The ops' indices by start, equal starts in index order: ops are sorted by (track, start), so
// this merges the tracks' runs (what a stable sort by start gives).
std::vector<std::uint32_t> ops_by_start(const std::vector<PathOp>& ops) {
  std::vector<std::uint32_t> v(ops.size());
  for (std::uint32_t i = 0; i < v.size(); ++i) v[i] = i;
  const auto by_start = [&](std::uint32_t a, std::uint32_t b) { return ops[a].s < ops[b].s; };
  std::size_t run = 0;  // where the run of the track being merged in begins
  for (std::size_t i = 1; i <= ops.size(); ++i) {
    if (i < ops.size() && ops[i].track == ops[i - 1].track) continue;
    if (run > 0) std::inplace_merge(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(run), v.begin() + static_cast<std::ptrdiff_t>(i), by_start);
    run = i;
  }
  return v;
}

void add_gpu_ops(const Trace& t, std::uint32_t process, GraphNames& names, RankGraph& g) {
  std::size_t count = 0;
  for (const auto slices : {t.slices_kernels(), t.slices_memcpys(), t.slices_memsets()})
    for_rank_track_slices(t, slices, process, true, [&](std::uint32_t, std::uint32_t b, std::uint32_t e) { count += e - b; });
  g.ops.reserve(count);
  std::unordered_map<trace::StringId, OpClass> class_of;
  for_rank_tracks(t, t.slices_kernels(), process, true, [&](std::uint32_t i) {
    auto [it, fresh] = class_of.try_emplace(t.kernels.name[i]);
    if (fresh) it->second = classify_op(t.strings.get(t.kernels.name[i]));
    PathOp op{t.kernels.start[i], t.kernels.start[i] + std::max<Ns>(0, t.kernels.dur[i]), t.kernels.track[i],
              names(t.kernels.name[i]), t.kernels.correlation[i], it->second.kind};
    op.traits = it->second.traits;
    g.ops.push_back(op);
  });
  for_rank_tracks(t, t.slices_memcpys(), process, true, [&](std::uint32_t i) {
    PathOp op{t.memcpys.start[i], t.memcpys.start[i] + std::max<Ns>(0, t.memcpys.dur[i]), t.memcpys.track[i],
              names(t.memcpys.name[i]), t.memcpys.correlation[i], PathKind::Copy};
    if (t.memcpys.direction[i] == trace::MemcpyDirection::HtoD) op.traits = kHostToDevice;
    g.ops.push_back(op);
  });
  for_rank_tracks(t, t.slices_memsets(), process, true, [&](std::uint32_t i) {
    g.ops.push_back({t.memsets.start[i], t.memsets.start[i] + std::max<Ns>(0, t.memsets.dur[i]), t.memsets.track[i],
                     names(t.memsets.name[i]), t.memsets.correlation[i], PathKind::Copy});
  });
  // gathered table by table, each in (track, start) order: a few runs to merge
  sort_from_runs(g.ops, [](const PathOp& a, const PathOp& b) {
    return a.track != b.track ? a.track < b.track : a.s != b.s ? a.s < b.s : a.e > b.e;
  });
  // stream order: each op's predecessor is the earlier op on its stream that ended last
  for (std::size_t i = 0; i < g.ops.size(); ++i) {
    if (i == 0 || g.ops[i - 1].track != g.ops[i].track) continue;
    const std::uint32_t prev = static_cast<std::uint32_t>(i - 1);
    const std::uint32_t best = g.ops[prev].pred;
    g.ops[i].pred = best != kNone && g.ops[best].e > g.ops[prev].e ? best : prev;
  }
  g.by_end.resize(g.ops.size());
  for (std::uint32_t i = 0; i < g.ops.size(); ++i) g.by_end[i] = i;
  // a stream's ops end in the order they start, mostly: its runs are merged
  sort_from_runs(g.by_end, [&](std::uint32_t a, std::uint32_t b) { return g.ops[a].e < g.ops[b].e; });
  // stable: an op comes after its stream predecessor even when both start at once (the replay's order)
  g.by_start = ops_by_start(g.ops);
}

// The stream id of a stream track (-1 for another kind).
std::int64_t stream_id(const Trace& t, std::uint32_t track) {
  const auto& trk = t.tracks[track];
  return trk.type == TrackType::Stream ? t.streams[trk.owner].stream : -1;
}

// A stream's ops by correlation id (ops without one left out), to find what a record captured
// and what a wait held back.
using OpsByCorr = std::vector<std::pair<std::uint32_t, std::uint32_t>>;  // (correlation, op), sorted

std::unordered_map<std::int64_t, OpsByCorr> ops_by_stream(const Trace& t, const RankGraph& g) {
  std::unordered_map<std::int64_t, OpsByCorr> by;
  for (std::uint32_t i = 0; i < g.ops.size(); ++i)
    if (g.ops[i].corr) by[stream_id(t, g.ops[i].track)].push_back({g.ops[i].corr, i});
  for (auto& [id, v] : by) std::sort(v.begin(), v.end());
  return by;
}

// Cross-stream edges: a stream wait (cudaStreamWaitEvent) holds back the first op launched on
// the waiting stream after it until the work its event record captured has ended: the ops
// launched on the recording stream before the record (the latest-ending of the last of them
// and its stream predecessor). A wait matches the latest record of its event id with a lower
// correlation id. Waits are on the waiting stream's track (Kineto) or carry it in `stream`
// (nsys, CUPTI: on the calling thread); records carry their stream.
void add_stream_waits(const Trace& t, std::uint32_t process, RankGraph& g) {
  struct Record { std::uint32_t corr; std::int64_t stream; };
  std::unordered_map<std::int64_t, std::vector<Record>> records;  // by event id
  std::vector<std::uint32_t> waits;
  for (bool streams : {true, false})
    for_rank_tracks(t, t.slices_syncs(), process, streams, [&](std::uint32_t i) {
      if (t.syncs.event[i] < 0 || !t.syncs.correlation[i]) return;
      if (t.syncs.type[i] == trace::SyncType::EventRecord) records[t.syncs.event[i]].push_back({t.syncs.correlation[i], t.syncs.stream[i]});
      else if (t.syncs.type[i] == trace::SyncType::StreamWaitEvent) waits.push_back(i);
    });
  if (records.empty() || waits.empty()) return;
  for (auto& [id, v] : records) std::sort(v.begin(), v.end(), [](const Record& a, const Record& b) { return a.corr < b.corr; });
  const auto by_stream = ops_by_stream(t, g);
  for (const std::uint32_t w : waits) {
    const std::uint32_t wc = t.syncs.correlation[w];
    const auto& recs = records[t.syncs.event[w]];
    auto r = std::lower_bound(recs.begin(), recs.end(), wc, [](const Record& x, std::uint32_t v) { return x.corr < v; });
    if (r == recs.begin()) continue;
    const Record rec = *(r - 1);
    const std::int64_t waiting = stream_id(t, t.syncs.track[w]) >= 0 ? stream_id(t, t.syncs.track[w]) : t.syncs.stream[w];
    const auto src = by_stream.find(rec.stream), dst = by_stream.find(waiting);
    if (src == by_stream.end() || dst == by_stream.end() || rec.stream == waiting) continue;
    auto before = std::lower_bound(src->second.begin(), src->second.end(), std::pair{rec.corr, 0u});
    auto after = std::upper_bound(dst->second.begin(), dst->second.end(), std::pair{wc, kNone});
    if (before == src->second.begin() || after == dst->second.end()) continue;
    std::uint32_t captured = (before - 1)->second;
    if (const auto p = g.ops[captured].pred; p != kNone && g.ops[p].e > g.ops[captured].e) captured = p;
    std::uint32_t& held = g.ops[after->second].wait;
    if (held == kNone || g.ops[captured].e > g.ops[held].e) held = captured;
  }
}

// The first of a rank's GPU ops with each correlation id: a direct table when the ids are
// dense (CUPTI's and Kineto's counters), a hash map otherwise (no hashing per call when dense).
class FirstOpByCorr {
 public:
  explicit FirstOpByCorr(const std::vector<PathOp>& ops) {
    std::uint32_t max = 0;
    std::size_t n = 0;
    for (const auto& op : ops)
      if (op.corr) { max = std::max(max, op.corr); ++n; }
    if (max <= 4 * n + 4096) {
      direct_.assign(static_cast<std::size_t>(max) + 1, kNone);
      for (std::uint32_t i = 0; i < ops.size(); ++i)
        if (ops[i].corr && direct_[ops[i].corr] == kNone) direct_[ops[i].corr] = i;
      return;
    }
    sparse_.reserve(n);
    for (std::uint32_t i = 0; i < ops.size(); ++i)
      if (ops[i].corr) sparse_.try_emplace(ops[i].corr, i);
  }
  // The op, or kNone.
  std::uint32_t find(std::uint32_t corr) const {
    if (corr == 0) return kNone;
    if (sparse_.empty()) return corr < direct_.size() ? direct_[corr] : kNone;
    const auto it = sparse_.find(corr);
    return it == sparse_.end() ? kNone : it->second;
  }

 private:
  std::vector<std::uint32_t> direct_;
  std::unordered_map<std::uint32_t, std::uint32_t> sparse_;
};

// The host side before matching: data waits, syncs and launch calls per thread, and what kept
// each thread busy (ranges, calls).
void add_host_parts(const Trace& t, std::uint32_t process, GraphNames& names, GraphParts& parts) {
  RankGraph& g = parts.graph;
  const FirstOpByCorr launched(g.ops);
  NameTest data_wait(t, is_data_wait_name), sync_call(t, is_sync_call_name);
  // each table's slice of a track holds that track's events only: one look-up per track
  for_rank_track_slices(t, t.slices_ranges(), process, false, [&](std::uint32_t tr, std::uint32_t b, std::uint32_t end) {
    auto& busy = parts.busy_ranges[tr];
    busy.reserve(busy.size() + (end - b));
    std::vector<HostMark>* marks = nullptr;
    for (std::uint32_t i = b; i < end; ++i) {
      const Ns s = t.ranges.start[i], e = t.ranges.end(i);
      busy.push_back({s, e});
      if (!data_wait(t.ranges.name[i])) continue;
      if (!marks) marks = &parts.marks[tr];
      marks->push_back({s, e, PathKind::DataWait, names(t.ranges.name[i])});
    }
  });
  for_rank_track_slices(t, t.slices_api_calls(), process, false, [&](std::uint32_t tr, std::uint32_t b, std::uint32_t end) {
    auto& busy = parts.busy_calls[tr];
    busy.reserve(busy.size() + (end - b));
    std::vector<HostMark>* marks = nullptr;
    for (std::uint32_t i = b; i < end; ++i) {
      const Ns s = t.api_calls.start[i], e = t.api_calls.end(i);
      busy.push_back({s, e});
      const auto c = t.api_calls.correlation[i];
      const std::uint32_t op = launched.find(c);
      const std::uint32_t corr = op != kNone ? c : 0;
      const bool sync = sync_call(t.api_calls.name[i]);
      if (!sync && !corr) continue;
      if (!marks) {
        marks = &parts.marks[tr];
        marks->reserve(marks->size() + (end - i));  // launch calls: most of a thread's calls, if any
      }
      if (sync) marks->push_back({s, e, PathKind::Sync, names(t.api_calls.name[i]), kNoGroup, corr});
      if (corr) {
        marks->push_back({s, e, PathKind::Launch, names(t.api_calls.name[i]), kNoGroup, corr});
        g.launches.try_emplace(c, LaunchRef{s, e, tr, op});
      }
    }
  });
}

// Kineto names threads "thread N (name)" already; ours carry the bare name
std::string track_label(const Trace& t, std::uint32_t track) {
  const auto& trk = t.tracks[track];
  if (trk.type == TrackType::Thread && t.threads[trk.owner].name.starts_with("thread ")) return t.threads[trk.owner].name;
  return t.track_label(track);
}

template <class T, class Less>
void stable_sort_unless_sorted(std::vector<T>& v, Less less) {
  if (!std::is_sorted(v.begin(), v.end(), less)) std::stable_sort(v.begin(), v.end(), less);
}

// One thread's host marks (sorted by start) resolved in precedence: a later kind keeps only the
// time no earlier kind covers, each piece named by the mark of its kind that began last at or
// before it. Appends them to `out` in time order.
void resolve_thread_marks(const std::vector<HostMark>& marks, std::vector<HostMark>& out) {
  static constexpr PathKind kPrecedence[] = {PathKind::DataWait, PathKind::Sync, PathKind::Communication, PathKind::Launch};
  std::size_t count[std::size(kPrecedence)] = {};
  for (const auto& m : marks)
    for (std::size_t k = 0; k < std::size(kPrecedence); ++k) count[k] += m.kind == kPrecedence[k] ? 1 : 0;
  std::size_t kinds_left = 0;
  for (auto c : count) kinds_left += c ? 1 : 0;
  out.reserve(out.size() + marks.size());  // pieces: about one per mark (unions merge, subtraction may split)
  std::size_t runs[std::size(kPrecedence) + 1] = {out.size()};  // where each kind's pieces begin in `out`
  std::size_t nruns = 0;
  IntervalSet taken;
  std::vector<Interval> mine;
  std::vector<const HostMark*> src;
  for (std::size_t k = 0; k < std::size(kPrecedence); ++k) {
    if (!count[k]) continue;
    mine.clear();
    src.clear();
    mine.reserve(count[k]);
    src.reserve(count[k]);
    for (const auto& m : marks)
      if (m.kind == kPrecedence[k]) { mine.push_back({m.s, m.e}); src.push_back(&m); }
    IntervalSet set = IntervalSet::union_of(std::move(mine));  // sorted already: merged in place
    if (!taken.empty()) set = set.subtract(taken);
    std::size_t at = 0;  // the last mark of the kind starting at or before the piece (pieces come in time order)
    for (const auto& iv : set.intervals()) {
      while (at + 1 < src.size() && src[at + 1]->s <= iv.start) ++at;
      const HostMark* m = src[at];
      out.push_back({iv.start, iv.end, kPrecedence[k], m->name, m->group, m->corr});
    }
    runs[++nruns] = out.size();
    if (--kinds_left) taken = taken.unite(set);  // the last kind takes nothing from a later one
  }
  // each kind's pieces are in time order already; pieces are disjoint, so starts are distinct
  const auto by_start = [](const HostMark& a, const HostMark& b) { return a.s < b.s; };
  const auto at = [&](std::size_t i) { return out.begin() + static_cast<std::ptrdiff_t>(i); };
  for (std::size_t r = 2; r <= nruns; ++r) std::inplace_merge(at(runs[0]), at(runs[r - 1]), at(runs[r]), by_start);
}

// Host marks per thread, in precedence: data wait, sync, collective call (ranks without a GPU,
// whose collective calls block until the last rank arrives), launch call.
void resolve_host_marks(GraphParts& parts) {
  RankGraph& g = parts.graph;
  auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  for (auto& [tr, iv] : parts.busy_calls)
    if (!std::is_sorted(iv.begin(), iv.end(), by_start)) std::sort(iv.begin(), iv.end(), by_start);
  for (auto& [tr, marks] : parts.marks) {
    stable_sort_unless_sorted(marks, [](const HostMark& a, const HostMark& b) { return a.s < b.s; });
    resolve_thread_marks(marks, g.threads[tr].marks);
  }
  // the parts' vectors are not needed after: each union is merged in its own vector
  for (auto& [tr, iv] : parts.busy_ranges) g.threads[tr].busy = IntervalSet::union_of(std::move(iv));
  for (auto& [tr, iv] : parts.busy_calls) {
    auto& b = g.threads[tr].busy;
    b = b.empty() ? IntervalSet::union_of(std::move(iv)) : b.unite(IntervalSet::union_of(std::move(iv)));
  }
}

struct RawSegment {
  Ns s = 0, e = 0;
  PathKind kind = PathKind::HostCompute;
  std::int32_t rank = -1;
  std::uint32_t track = kNone;     // host compute: the thread
  std::uint32_t name = kNone;      // kernel or call, in the graph's names (kNone: name the thread)
  std::size_t graph = 0;           // the rank index whose graph names it
};

// The backward walk. One instance serves every step of every rank.
class PathWalker {
 public:
  // `rank_numbers`: the job's rank of each graph index
  PathWalker(GraphSource& graphs, std::vector<std::int32_t> rank_numbers, const CollectiveGroups& groups, const Options& opt)
      : source_(graphs), rank_numbers_(std::move(rank_numbers)), groups_(groups), queue_gap_(opt.kernel_wait_threshold),
        keep_pieces_(opt.path_pieces) {
    for (const auto& grp : groups_) {
      std::size_t last = 0;
      for (std::size_t i = 1; i < grp.size(); ++i)
        if (grp[i].start > grp[last].start) last = i;
      last_.push_back(last);
    }
  }

  // The path of [lo, hi) starting on rank `r`'s main thread at hi. With `follow_ranks`, a
  // collective gated by a later rank continues on that rank; without, the wait is rank_wait.
  StepPath walk(std::size_t r, Ns lo, Ns hi, std::int64_t step, bool follow_ranks) {
    follow_ = follow_ranks;
    segs_.clear();
    held_.assign(rank_numbers_.size(), nullptr);
    lo_ = lo;
    StepPath p;
    p.step = step;
    p.rank = rank_numbers_[r];
    p.start = lo;
    p.end = hi;
    State s{r, At::Host, g(r).main_track, kNone, hi};
    int stalled = 0;
    while (s.t > lo) {
      const Ns before = s.t;
      const std::size_t moves = segs_.size();
      move(s);
      if (s.t < before || segs_.size() != moves) { stalled = 0; continue; }
      if (++stalled > 64) {  // no edge explains this moment: call the rest host compute
        emit(lo, s.t, PathKind::HostCompute, s.r, g(s.r).main_track, kNone);
        p.complete = false;
        break;
      }
    }
    finish(p);
    held_.clear();
    return p;
  }

 private:
  enum class At : std::uint8_t { Host, Gpu, GpuStart };
  struct State {
    std::size_t r;
    At at;
    std::uint32_t track;  // Host
    std::uint32_t op;     // Gpu, GpuStart
    Ns t;
  };

  GraphSource& source_;
  const std::vector<HostMark>* searched_ = nullptr;  // the marks first_mark_from() searched last,
  std::size_t found_ = 0;                            // and what it found there
  std::vector<std::shared_ptr<const RankGraph>> held_;  // the graphs this walk has visited
  std::vector<std::int32_t> rank_numbers_;
  const CollectiveGroups& groups_;
  std::vector<std::size_t> last_;  // per group: index of the last arrival
  Ns queue_gap_;
  bool keep_pieces_;
  bool follow_ = false;
  Ns lo_ = 0;
  std::vector<RawSegment> segs_;

  const RankGraph& g(std::size_t r) {
    if (!held_[r]) held_[r] = source_.graph(r);
    return *held_[r];
  }

  // A segment of rank index r's graph (RankWait: `rank` is the job rank waited for instead).
  void emit(Ns a, Ns b, PathKind k, std::size_t r, std::uint32_t track, std::uint32_t name,
            std::int32_t rank = -1) {
    a = std::max(a, lo_);
    if (b <= a) return;
    segs_.push_back({a, b, k, rank >= 0 ? rank : rank_numbers_[r], track, name, r});
  }

  void move(State& s) {
    switch (s.at) {
      case At::Host: host(s); break;
      case At::Gpu: gpu(s); break;
      case At::GpuStart: gpu_start(s); break;
    }
  }

  // Continue on rank r at time t when no node is known there: its main thread.
  void resume_host(State& s, std::size_t r, Ns t) {
    s = {r, At::Host, g(r).main_track, kNone, t};
    if (s.track == kNone) {  // a rank without threads: nothing explains the time
      emit(lo_, t, PathKind::HostCompute, r, kNone, kNone);
      s.t = lo_;
    }
  }

  // The first of `marks` (sorted by start) starting at or after t: std::lower_bound's answer,
  // searched outward from the last answer on the same marks (a walk moves back in time by
  // small steps), so that it reads a few nearby marks instead of a binary search's far ones.
  std::size_t first_mark_from(const std::vector<HostMark>& marks, Ns t) {
    const auto starts_before = [t](const HostMark& m) { return m.s < t; };
    const auto lower_bound_in = [&](std::size_t lo, std::size_t hi) {
      return static_cast<std::size_t>(std::partition_point(marks.begin() + static_cast<std::ptrdiff_t>(lo),
                                                           marks.begin() + static_cast<std::ptrdiff_t>(hi), starts_before) -
                                       marks.begin());
    };
    std::size_t h = searched_ == &marks ? std::min(found_, marks.size()) : marks.size();
    searched_ = &marks;
    if (h > 0 && !starts_before(marks[h - 1])) {  // the answer is at or before h - 1: gallop back
      std::size_t hi = h - 1, step = 1;
      while (hi > 0 && !starts_before(marks[hi - std::min(step, hi)])) {
        hi -= std::min(step, hi);
        step *= 2;
      }
      return found_ = lower_bound_in(hi - std::min(step, hi), hi);
    }
    std::size_t lo = h, step = 1;  // marks before h start before t: gallop forward
    while (lo + step < marks.size() && starts_before(marks[lo + step])) {
      lo += step;
      step *= 2;
    }
    return found_ = lower_bound_in(lo, std::min(lo + step, marks.size()));
  }

  void host(State& s) {
    const RankGraph& G = g(s.r);
    const Ns t = s.t;
    auto th_it = G.threads.find(s.track);
    if (th_it == G.threads.end()) {
      if (s.track != G.main_track) return resume_host(s, s.r, t);
      emit(lo_, t, PathKind::HostCompute, s.r, s.track, kNone);
      s.t = lo_;
      return;
    }
    const HostThread& th = th_it->second;
    auto it = th.marks.begin() + static_cast<std::ptrdiff_t>(first_mark_from(th.marks, t));
    const HostMark* m = it == th.marks.begin() ? nullptr : &*(it - 1);  // last mark starting before t
    if (m && m->e >= t) return host_mark(s, *m);
    const Ns prev_end = m ? m->e : lo_;
    Ns floor = std::max(prev_end, lo_);
    if (s.track != G.main_track) {
      // a worker thread with nothing to do was waiting for the main thread
      const auto& busy = th.busy.intervals();
      auto b = std::lower_bound(busy.begin(), busy.end(), t, [](const Interval& iv, Ns v) { return iv.end < v; });
      if (b == busy.end() || b->start >= t) return resume_host(s, s.r, t);
      floor = std::max(floor, b->start);
    } else if (const auto other = launching_thread(G, floor, t)) {
      // the main thread launched nothing since `floor` while another thread (the autograd
      // engine's, in backward()) launched GPU work: it was waiting for that thread
      emit(other->second, t, PathKind::HostCompute, s.r, s.track, kNone);
      s = {s.r, At::Host, other->first, kNone, other->second};
      return;
    }
    emit(floor, t, PathKind::HostCompute, s.r, s.track, kNone);
    s.t = floor;
  }

  // The thread other than the main one whose last launch call in (floor, t] ended last, and
  // when: the thread the main thread waited for (the autograd thread during backward()).
  static std::optional<std::pair<std::uint32_t, Ns>> launching_thread(const RankGraph& G, Ns floor, Ns t) {
    std::optional<std::pair<std::uint32_t, Ns>> best;
    for (const auto& [track, th] : G.threads) {
      if (track == G.main_track) continue;
      auto it = std::upper_bound(th.marks.begin(), th.marks.end(), t, [](Ns v, const HostMark& m) { return v < m.e; });
      while (it != th.marks.begin()) {
        const HostMark& m = *--it;
        if (m.e <= floor) break;
        if (m.kind != PathKind::Launch || m.e <= m.s) continue;
        if (!best || m.e > best->second || (m.e == best->second && track < best->first)) best = {track, m.e};
        break;
      }
    }
    return best;
  }

  void host_mark(State& s, const HostMark& m) {
    const RankGraph& G = g(s.r);
    const Ns t = s.t, a = std::max(m.s, lo_);
    if (m.kind == PathKind::Sync) {
      // the call returned when the GPU finished the last op that ended before it returned
      auto e = std::upper_bound(G.by_end.begin(), G.by_end.end(), t, [&](Ns v, std::uint32_t i) { return v < G.ops[i].e; });
      if (e != G.by_end.begin() && G.ops[*(e - 1)].e > m.s && G.ops[*(e - 1)].e > lo_) {
        const std::uint32_t op = *(e - 1);
        emit(G.ops[op].e, t, PathKind::Sync, s.r, s.track, m.name);
        s = {s.r, At::Gpu, kNone, op, G.ops[op].e};
        return;
      }
    } else if (m.kind == PathKind::Communication && m.group != kNoGroup) {
      const Arrival& last = groups_[m.group][last_[m.group]];
      if (last.rank != s.r && last.start > m.s) return gated(s, m.s, last, m.name, kNone);
    }
    emit(a, t, m.kind, s.r, s.track, m.name);
    s.t = a;
  }

  // A collective this rank joined at `arrived` that could not finish before `last` arrived.
  void gated(State& s, Ns arrived, const Arrival& last, std::uint32_t name, std::uint32_t op) {
    const Ns t = s.t, cut = std::min(last.start, t);
    emit(cut, t, PathKind::Communication, s.r, s.track, name);
    if (follow_) {
      if (cut <= lo_) { s.t = lo_; return; }
      const RankGraph& L = g(last.rank);
      if (!last.host && cut == last.start) {
        // the last arriver's own communication op: what made it late gated everyone
        auto b = std::lower_bound(L.by_start.begin(), L.by_start.end(), cut, [&](std::uint32_t i, Ns v) { return L.ops[i].s < v; });
        for (; b != L.by_start.end() && L.ops[*b].s == cut; ++b)
          if (L.ops[*b].track == last.track) { s = {last.rank, At::GpuStart, kNone, *b, cut}; return; }
      }
      if (last.host) { s = {last.rank, At::Host, last.track, kNone, cut}; return; }
      return resume_host(s, last.rank, cut);
    }
    const Ns a = std::max(arrived, lo_);
    emit(a, std::max(a, cut), PathKind::RankWait, s.r, s.track, name, rank_numbers_[last.rank]);
    s.t = a;
    if (op != kNone && a > lo_) s = {s.r, At::GpuStart, kNone, op, a};
  }

  void gpu(State& s) {
    const RankGraph& G = g(s.r);
    const PathOp& o = G.ops[s.op];
    if (o.group != kNoGroup) {
      const Arrival& last = groups_[o.group][last_[o.group]];
      if (last.rank != s.r && last.start > o.s) return gated(s, o.s, last, o.name, s.op);
    }
    emit(o.s, s.t, o.kind, s.r, o.track, o.name);
    s.t = std::max(o.s, lo_);
    s.at = At::GpuStart;
  }

  // What let the op start: its launch call (the host was late), the op before it on its
  // stream, or the op on another stream it waited for (an event record and a stream wait).
  void gpu_start(State& s) {
    const RankGraph& G = g(s.r);
    const PathOp& o = G.ops[s.op];
    const Ns t = s.t;
    auto launch = o.corr ? G.launches.find(o.corr) : G.launches.end();
    const bool has_launch = launch != G.launches.end();
    if (waited_last(G, o, has_launch ? launch->second.start : lo_, t)) {
      const Ns we = G.ops[o.wait].e;
      emit(we, t, t - we <= queue_gap_ ? PathKind::Launch : PathKind::GpuWait, s.r, o.track, o.name);
      s = {s.r, At::Gpu, kNone, o.wait, std::max(we, lo_)};
      return;
    }
    if (has_launch && (o.pred == kNone || launch->second.start >= G.ops[o.pred].e)) {
      // the call, and its latency up to the op's start unless that is longer than a queued
      // op's launch overhead: then the op waited on something the trace does not name
      const Ns a = std::min(launch->second.start, t), call_end = std::clamp(launch->second.end, a, t);
      if (t - call_end > queue_gap_) {
        emit(call_end, t, PathKind::GpuWait, s.r, o.track, o.name);
        emit(a, call_end, PathKind::Launch, s.r, launch->second.track, o.name);
      } else {
        emit(a, t, PathKind::Launch, s.r, launch->second.track, o.name);
      }
      s = {s.r, At::Host, launch->second.track, kNone, std::max(a, lo_)};
      return;
    }
    if (o.pred != kNone) {
      const PathOp& p = G.ops[o.pred];
      const Ns pe = std::min(p.e, t);
      emit(pe, t, t - pe <= queue_gap_ ? PathKind::Launch : PathKind::GpuWait, s.r, o.track, o.name);
      s = {s.r, At::Gpu, kNone, o.pred, std::max(pe, lo_)};
      return;
    }
    resume_host(s, s.r, t);
  }

  // The op's cross-stream wait ended after its launch call began and its stream predecessor ended.
  static bool waited_last(const RankGraph& G, const PathOp& o, Ns launch_start, Ns t) {
    if (o.wait == kNone) return false;
    const Ns we = G.ops[o.wait].e;
    return we <= t && we > launch_start && (o.pred == kNone || we > G.ops[o.pred].e);
  }

  std::string label(const RawSegment& sg) {
    const RankGraph& G = g(sg.graph);
    if (sg.name != kNone) return G.names[sg.name];
    auto it = G.track_labels.find(sg.track);
    return it == G.track_labels.end() ? std::string() : it->second;
  }

  void finish(StepPath& p) {
    // merge contiguous pieces of one thing, then sum and rank them
    std::vector<RawSegment> merged;
    for (auto it = segs_.rbegin(); it != segs_.rend(); ++it) {
      if (!merged.empty()) {
        auto& b = merged.back();
        if (b.e == it->s && b.kind == it->kind && b.rank == it->rank && b.graph == it->graph && b.track == it->track &&
            b.name == it->name) {
          b.e = it->e;
          continue;
        }
      }
      merged.push_back(*it);
    }
    if (keep_pieces_) p.pieces.reserve(merged.size());
    for (const auto& sg : merged) {
      if (keep_pieces_) p.pieces.push_back({sg.s, sg.e, sg.kind, sg.track});
      p.length += sg.e - sg.s;
      p.by_kind[static_cast<std::size_t>(sg.kind)] += sg.e - sg.s;
      auto r = std::find_if(p.by_rank.begin(), p.by_rank.end(), [&](const auto& x) { return x.first == sg.rank; });
      if (r == p.by_rank.end()) p.by_rank.push_back({sg.rank, sg.e - sg.s});
      else r->second += sg.e - sg.s;
    }
    std::sort(p.by_rank.begin(), p.by_rank.end());
    if (p.length != p.end - p.start) p.complete = false;
    std::vector<std::size_t> idx(merged.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    const std::size_t k = std::min<std::size_t>(5, idx.size());
    std::partial_sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), [&](std::size_t a, std::size_t b) {
      const Ns la = merged[a].e - merged[a].s, lb = merged[b].e - merged[b].s;
      return la != lb ? la > lb : merged[a].s < merged[b].s;
    });
    for (std::size_t i = 0; i < k; ++i) {
      const auto& sg = merged[idx[i]];
      p.top.push_back({sg.s, sg.e, sg.kind, sg.rank, label(sg)});
    }
  }
};

}  // namespace

GraphParts graph_parts(const Trace& t, const RankMetrics& rm) {
  GraphParts parts;
  RankGraph& g = parts.graph;
  g.rank = rm.rank;
  g.main_track = rm.main_track;
  GraphNames names(t, g);
  add_gpu_ops(t, rm.process, names, g);
  add_stream_waits(t, rm.process, g);
  add_host_parts(t, rm.process, names, parts);
  for (const std::uint32_t tr : t.tracks_of_process(rm.process)) g.track_labels.emplace(tr, track_label(t, tr));
  return parts;
}

std::vector<RankGroups> groups_by_rank(const CollectiveGroups& groups, std::size_t ranks) {
  std::vector<RankGroups> out(ranks);
  for (std::uint32_t gi = 0; gi < groups.size(); ++gi)
    for (const Arrival& a : groups[gi]) out[a.rank].push_back({gi, a});
  return out;
}

RankGraph finish_graph(GraphParts parts, const RankGroups& mine, bool has_gpu) {
  RankGraph& g = parts.graph;
  for (const auto& [gi, a] : mine) {
    if (a.host) {
      // a GPU rank's host-side collective call returns at once: only GPU-less ranks block in it
      if (!has_gpu) {
        parts.marks[a.track].push_back({a.start, a.end, PathKind::Communication, kNone, gi});
        parts.busy_calls[a.track].push_back({a.start, a.end});
      }
      continue;
    }
    auto b = std::lower_bound(g.by_start.begin(), g.by_start.end(), a.start, [&](std::uint32_t i, Ns v) { return g.ops[i].s < v; });
    for (; b != g.by_start.end() && g.ops[*b].s < std::max(a.end, a.start + 1); ++b)
      if (g.ops[*b].track == a.track || g.ops[*b].kind == PathKind::Communication) { g.ops[*b].group = gi; break; }
  }
  resolve_host_marks(parts);
  return std::move(parts.graph);
}

namespace {

// Graphs built from the trace in memory, kept for the job path when it is wanted.
class TraceGraphs : public GraphSource {
 public:
  TraceGraphs(const Trace& t, const Metrics& M, const CollectiveGroups& groups, bool keep)
      : t_(t), M_(M), mine_(groups_by_rank(groups, M.ranks.size())), graphs_(M.ranks.size()), keep_(keep) {}
  std::shared_ptr<const RankGraph> graph(std::size_t r) override {
    if (!graphs_[r]) {
      const RankMetrics& rm = M_.ranks[r];
      graphs_[r] = rm.main_track == kNone ? std::make_shared<const RankGraph>(RankGraph{.rank = rm.rank})
                                          : std::make_shared<const RankGraph>(finish_graph(graph_parts(t_, rm), mine_[r], rm.has_gpu));
    }
    return graphs_[r];
  }
  void release(std::size_t r) override {
    if (!keep_) graphs_[r].reset();
  }

 private:
  const Trace& t_;
  const Metrics& M_;
  std::vector<RankGroups> mine_;
  std::vector<std::shared_ptr<const RankGraph>> graphs_;  // one slot per rank: each worker fills its own
  bool keep_;
};

}  // namespace

void JobSteps::add(std::size_t i, const RankMetrics& r) {
  if (!r.has_steps || r.main_track == kNone) return;
  for (const auto& st : r.steps) {
    Last& last = by_number_[st.number];
    ++last.steps;
    // the latest end; at equal ends the first rank (ranks may come in any order), then its first step
    if (last.steps == 1 || st.end > last.end || (st.end == last.end && i < last.rank)) {
      const std::int64_t n = st.number;  // the rank's first step of that number gives the span
      const auto first = std::find_if(r.steps.begin(), r.steps.end(), [n](const StepMetrics& s) { return s.number == n; });
      last = {last.steps, st.end, i, first->start, first->end};
    }
  }
}

void JobSteps::merge(const JobSteps& o) {
  for (const auto& [number, x] : o.by_number_) {
    auto [it, fresh] = by_number_.try_emplace(number, x);
    if (fresh) continue;
    Last& last = it->second;
    const std::size_t steps = last.steps + x.steps;
    if (x.end > last.end || (x.end == last.end && x.rank < last.rank)) last = x;
    last.steps = steps;
  }
}

struct RankPathWalker::Impl {
  PathWalker walker;
  GraphSource& graphs;
  Ns blocking;
  bool what_ifs;
  const std::atomic<bool>* stop;  // Options::stop
};

RankPathWalker::RankPathWalker(GraphSource& graphs, std::vector<std::int32_t> rank_numbers,
                               const CollectiveGroups& groups, const Options& opt)
    : impl_(std::make_unique<Impl>(Impl{PathWalker(graphs, std::move(rank_numbers), groups, opt), graphs,
                                        opt.kernel_wait_threshold, opt.what_ifs, opt.stop})) {}
RankPathWalker::~RankPathWalker() = default;

void RankPathWalker::walk(std::size_t i, RankMetrics& r) {
  if (r.main_track == kNone) {
    r.notes.push_back("no host thread: the critical path is not determined");
    return;
  }
  if (stopped(impl_->stop)) return;  // given up (Options::stop): the rest is left out
  const auto graph = impl_->graphs.graph(i);
  {
    const ReplayIndex index(*graph);
    for (auto& st : r.steps) {
      if (stopped(impl_->stop)) break;
      r.paths.push_back(impl_->walker.walk(i, st.start, st.end, st.number, false));
      if (impl_->what_ifs) replay_what_ifs(*graph, index, r.paths.back(), impl_->blocking, st);
    }
  }
  impl_->graphs.release(i);
  std::size_t incomplete = 0;
  for (const auto& p : r.paths) incomplete += p.complete ? 0 : 1;
  if (incomplete)
    r.notes.push_back(
        fmt::format("the critical path of {} step(s) has stretches no edge explains (called host compute)", incomplete));
}

// Per step number that two steps or more share, the path from the rank that ended it last,
// following collectives to their last arriver on other ranks.
void walk_job_paths(const Options& opt, const CollectiveGroups& groups, GraphSource& graphs,
                    std::vector<std::int32_t> rank_numbers, const JobSteps& steps, Metrics& M) {
  PathWalker walker(graphs, std::move(rank_numbers), groups, opt);
  for (const auto& [number, last] : steps.by_number_) {
    if (last.steps < 2) continue;
    M.job_paths.push_back(walker.walk(last.rank, last.start, last.span_end, number, true));
  }
}

void compute_critical_paths(const Options& opt, const CollectiveGroups& groups, GraphSource& graphs, bool job_path,
                            Metrics& M) {
  // per rank, in parallel: a rank's own path never leaves its graph
  std::vector<std::int32_t> rank_numbers;
  for (const auto& r : M.ranks) rank_numbers.push_back(r.rank);
  parallel_items(M.ranks.size(), opt.threads, [&](auto take) {
    RankPathWalker walker(graphs, rank_numbers, groups, opt);
    for (std::size_t i; take(i);) walker.walk(i, M.ranks[i]);
  });
  if (!job_path || M.ranks.size() < 2) return;
  JobSteps steps;
  for (std::size_t i = 0; i < M.ranks.size(); ++i) steps.add(i, M.ranks[i]);
  walk_job_paths(opt, groups, graphs, std::move(rank_numbers), steps, M);
}

std::string job_path_left_out(std::size_t gpu_ops) {
  return fmt::format("the job critical path is left out: {} GPU ops in the trace, above the {} its graphs may hold at once",
                     gpu_ops, kJobPathMaxOps);
}

void compute_critical_paths(const Trace& t, const Options& opt, const CollectiveGroups& groups, Metrics& M) {
  const std::size_t total_ops = t.kernels.size() + t.memcpys.size() + t.memsets.size();
  const bool job = M.ranks.size() >= 2 && total_ops <= kJobPathMaxOps;
  if (M.ranks.size() >= 2 && !job) M.notes.push_back(job_path_left_out(total_ops));
  TraceGraphs graphs(t, M, groups, job);  // a rank's graph is dropped after its own paths unless the job path needs it
  compute_critical_paths(opt, groups, graphs, job, M);
}

void compute_rank_paths(const Trace& t, const Options& opt, const CollectiveGroups& groups, Metrics& M) {
  TraceGraphs graphs(t, M, groups, false);
  compute_critical_paths(opt, groups, graphs, false, M);
}

}  // namespace tt::analyzer
