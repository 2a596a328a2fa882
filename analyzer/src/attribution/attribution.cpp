// Python hot spots of findings (attribution.h; docs/analysis.md, "Python attribution").
#include "tracetune/analyzer/attribution.h"

#include <algorithm>
#include <limits>
#include <map>
#include <span>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "critical_path.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/analyzer/rules.h"
#include "tracetune/trace/py_stacks.h"

namespace tt::analyzer {

using trace::Ns;
using trace::Trace;

bool is_library_file(std::string_view file) {
  for (std::string_view part : {"/site-packages/", "/dist-packages/", "/lib/python3", "<frozen ", "/tracetune/_"})
    if (file.find(part) != std::string_view::npos) return true;
  return file.ends_with("/sitecustomize.py");
}

namespace {

// A DataLoader fetching a batch: torch's fetcher (a worker's loop, or the main thread without workers).
bool is_fetch_file(std::string_view file) { return file.ends_with("torch/utils/data/_utils/fetch.py"); }

// [first, last) of the samples on `track` with ts in [t0, t1) (the table is sorted by (track, ts)).
std::pair<std::size_t, std::size_t> samples_in(const trace::PySampleTable& s, std::uint32_t track, Ns t0, Ns t1) {
  auto before = [&](std::size_t i, std::pair<std::uint32_t, Ns> key) {
    return std::pair(s.track[i], s.ts[i]) < key;
  };
  std::size_t lo = 0, hi = s.size();
  auto bound = [&](std::pair<std::uint32_t, Ns> key) {
    std::size_t a = lo, b = hi;
    while (a < b) {
      const std::size_t mid = a + (b - a) / 2;
      if (before(mid, key)) a = mid + 1; else b = mid;
    }
    return a;
  };
  return {bound({track, t0}), bound({track, t1})};
}

std::string_view frame_file(const Trace& t, std::uint32_t frame) { return t.strings.get(t.py_frames[frame].file); }

// Whether a sample counts: its stack is not empty and, with `fetching_only`, is inside torch's
// DataLoader fetcher. Memoized per stack node.
class StackFilter {
 public:
  StackFilter(const Trace& t, bool fetching_only) : t_(t), fetching_only_(fetching_only) {}
  bool operator()(std::uint32_t stack) {
    const auto [it, added] = kept_.try_emplace(stack, false);
    if (added) it->second = keep(stack);
    return it->second;
  }

 private:
  bool keep(std::uint32_t stack) const {
    const std::vector<std::uint32_t> frames = trace::py_stack_frames(t_, stack);
    if (frames.empty()) return false;
    return !fetching_only_ ||
           std::any_of(frames.begin(), frames.end(), [&](std::uint32_t f) { return is_fetch_file(frame_file(t_, f)); });
  }
  const Trace& t_;
  bool fetching_only_;
  std::unordered_map<std::uint32_t, bool> kept_;
};

// The frame a (non-empty) stack counts for: its innermost frame of the job's own code, else its
// innermost frame. Memoized per stack node.
class FrameChooser {
 public:
  explicit FrameChooser(const Trace& t) : t_(t) {}
  std::uint32_t operator()(std::uint32_t stack) {
    const auto [it, added] = chosen_.try_emplace(stack, trace::kNone);
    if (added) it->second = choose(stack);
    return it->second;
  }

 private:
  std::uint32_t choose(std::uint32_t stack) const {
    const std::vector<std::uint32_t> frames = trace::py_stack_frames(t_, stack);
    for (std::uint32_t f : frames)
      if (!is_library_file(frame_file(t_, f))) return f;
    return frames.front();
  }
  const Trace& t_;
  std::unordered_map<std::uint32_t, std::uint32_t> chosen_;
};

}  // namespace

std::vector<std::uint32_t> samples_in_windows(const Trace& t, std::vector<SampleWindow> windows, bool fetching_only) {
  std::vector<std::uint32_t> out;
  if (t.py_samples.size() == 0) return out;
  std::sort(windows.begin(), windows.end(),
            [](const SampleWindow& a, const SampleWindow& b) { return std::pair(a.track, a.start) < std::pair(b.track, b.start); });
  StackFilter keep(t, fetching_only);
  Ns covered_to = 0;  // overlapping windows on a track count each sample once
  std::uint32_t covered_track = trace::kNone;
  for (const SampleWindow& w : windows) {
    if (w.track != covered_track) covered_track = w.track, covered_to = w.start;
    const Ns from = std::max(w.start, covered_to);
    if (w.end <= from) continue;
    covered_to = w.end;
    const auto [first, last] = samples_in(t.py_samples, w.track, from, w.end);
    for (std::size_t i = first; i < last; ++i)
      if (keep(t.py_samples.stack[i])) out.push_back(static_cast<std::uint32_t>(i));
  }
  return out;
}

HotSpots hot_spots(const Trace& t, std::vector<SampleWindow> windows, bool fetching_only) {
  HotSpots out;
  FrameChooser choose(t);
  struct Counts {
    std::uint64_t samples = 0;
    std::map<std::int32_t, std::uint64_t> lines;
  };
  std::map<std::pair<trace::StringId, trace::StringId>, Counts> by_function;
  for (std::uint32_t i : samples_in_windows(t, std::move(windows), fetching_only)) {
    const trace::PyFrame& f = t.py_frames[choose(t.py_samples.stack[i])];
    Counts& c = by_function[{f.function, f.file}];
    ++c.samples;
    ++c.lines[f.line];
    ++out.samples;
  }
  for (const auto& [key, c] : by_function) {
    HotFunction h;
    h.function = std::string(t.strings.get(key.first));
    h.file = std::string(t.strings.get(key.second));
    h.samples = c.samples;
    h.share = static_cast<double>(c.samples) / static_cast<double>(out.samples);
    h.line = std::max_element(c.lines.begin(), c.lines.end(), [](const auto& a, const auto& b) { return a.second < b.second; })->first;
    out.top.push_back(std::move(h));
  }
  // most samples first; ties by name, so the order does not depend on string ids
  std::sort(out.top.begin(), out.top.end(), [](const HotFunction& a, const HotFunction& b) {
    return a.samples != b.samples ? a.samples > b.samples : std::tie(a.function, a.file, a.line) < std::tie(b.function, b.file, b.line);
  });
  if (out.top.size() > kTopHotFunctions) out.top.resize(kTopHotFunctions);
  return out;
}

std::string hot_spots_line(const HotSpots& h, std::size_t n) {
  std::string o;
  for (std::size_t i = 0; i < h.top.size() && i < n; ++i) {
    const HotFunction& f = h.top[i];
    o += fmt::format("{}{:.0f}% in {}() at {}{}", i == 0 ? "" : ", ", 100 * f.share, f.function,
                     trace::short_file(f.file), f.line >= 0 ? fmt::format(":{}", f.line) : std::string());
  }
  return o;
}

namespace {

// The thread tracks of the rank's process and its descendants that are not ranks themselves
// (DataLoader workers).
std::vector<std::uint32_t> rank_thread_tracks(const Trace& t, std::span<const std::uint32_t> rank_process_list,
                                              const RankMetrics& r) {
  const std::unordered_set<std::uint32_t> rank_processes(rank_process_list.begin(), rank_process_list.end());
  std::unordered_set<std::uint32_t> tree{r.process};
  for (bool grew = true; grew;) {  // few processes: a fixed point is cheap
    grew = false;
    for (std::uint32_t p = 0; p < t.processes.size(); ++p) {
      if (tree.contains(p) || rank_processes.contains(p)) continue;
      for (std::uint32_t q : tree)
        if (q < t.processes.size() && t.processes[q].pid == t.processes[p].parent_pid &&
            t.processes[q].host == t.processes[p].host) {
          tree.insert(p);
          grew = true;
          break;
        }
    }
  }
  std::vector<std::uint32_t> out;
  for (std::uint32_t k = 0; k < t.tracks.size(); ++k)
    if (t.tracks[k].type == trace::TrackType::Thread && tree.contains(t.threads[t.tracks[k].owner].process)) out.push_back(k);
  return out;
}

std::vector<std::uint32_t> rank_processes(const Metrics& m) {
  std::vector<std::uint32_t> out;
  for (const RankMetrics& r : m.ranks) out.push_back(r.process);
  return out;
}

// The rank's data waits clipped to [t0, t1).
std::vector<std::pair<Ns, Ns>> clip(const std::vector<std::pair<Ns, Ns>>& waits, Ns t0, Ns t1) {
  std::vector<std::pair<Ns, Ns>> out;
  for (const auto& [s, e] : waits)
    if (s < t1 && e > t0) out.emplace_back(std::max(t0, s), std::min(t1, e));
  return out;
}

SampleScope fetching_scope(const RankThreads& th, const std::vector<std::pair<Ns, Ns>>& waits) {
  SampleScope s{{}, true, "DataLoader workers and main thread fetching a batch during the data waits"};
  for (std::uint32_t track : th.tracks)
    for (const auto& [a, b] : waits) s.windows.push_back({track, a, b});
  return s;
}

HotSpots hot_spots_of(const Trace& t, SampleScope s) {
  HotSpots h = hot_spots(t, std::move(s.windows), s.fetching_only);
  h.scope = std::move(s.scope);
  return h;
}

bool is_host_piece(const Trace& t, const PathPiece& piece) {
  return (piece.kind == PathKind::HostCompute || piece.kind == PathKind::Launch) && piece.track < t.tracks.size() &&
         t.tracks[piece.track].type == trace::TrackType::Thread;
}

// The longest segments of each of the rank's step paths: a host segment by the samples on its
// pieces' threads, a data wait by the workers fetching during it.
void attribute_segments(const Trace& t, const RankThreads& th, RankMetrics& r) {
  for (StepPath& p : r.paths)
    for (PathSegment& sg : p.top) {
      if (sg.kind == PathKind::DataWait) {
        sg.hot = hot_spots_of(t, fetching_scope(th, clip(th.data_waits, sg.start, sg.end)));
        continue;
      }
      if (sg.kind != PathKind::HostCompute && sg.kind != PathKind::Launch) continue;
      std::vector<SampleWindow> windows;
      for (const PathPiece& piece : p.pieces)
        if (piece.kind == sg.kind && is_host_piece(t, piece) && piece.start < sg.end && piece.end > sg.start)
          windows.push_back({piece.track, std::max(piece.start, sg.start), std::min(piece.end, sg.end)});
      sg.hot = hot_spots_of(t, {std::move(windows), false, "the segment's thread"});
    }
}

SampleScope host_scope(const Trace& t, const RankMetrics& r) {
  SampleScope s{{}, false, "the host segments of the steps' critical paths"};
  for (const StepPath& p : r.paths)
    for (const PathPiece& piece : p.pieces)
      if (is_host_piece(t, piece))
        s.windows.push_back({piece.track, piece.start, piece.end});
  if (!s.windows.empty()) return s;
  s.scope = "the main thread during the steps";
  for (const StepMetrics& st : r.steps) s.windows.push_back({r.main_track, st.start, st.end});
  if (r.steps.empty()) s.windows.push_back({r.main_track, r.window_start, r.window_end});
  return s;
}

std::optional<SampleScope> finding_scope(const Trace& t, const RankThreads& th, const RankMetrics& r, const Finding& f) {
  if (f.category == Category::DataLoading) return fetching_scope(th, th.data_waits);
  if (f.category == Category::CpuBound || f.category == Category::LaunchBound) return host_scope(t, r);
  return std::nullopt;
}

const RankMetrics* rank_of(const Metrics& m, const Finding& f) {
  const auto r = std::find_if(m.ranks.begin(), m.ranks.end(), [&](const RankMetrics& x) { return x.rank == f.rank; });
  return f.rank < 0 || r == m.ranks.end() ? nullptr : &*r;
}

}  // namespace

RankThreads rank_threads(const Trace& t, std::span<const std::uint32_t> rank_process_list, const RankMetrics& r) {
  RankThreads th;
  th.tracks = rank_thread_tracks(t, rank_process_list, r);
  for (const trace::TrackSlice& s : t.slices_ranges())
    if (s.track == r.main_track)
      for (std::uint32_t i = s.begin; i < s.end; ++i)
        if (is_data_wait_name(t.strings.get(t.ranges.name[i]))) th.data_waits.emplace_back(t.ranges.start[i], t.ranges.end(i));
  return th;
}

std::vector<Finding*> findings_of(const Metrics& m, const RankMetrics& r, std::vector<Finding>& findings) {
  std::vector<Finding*> out;
  for (Finding& f : findings)
    if (rank_of(m, f) == &r) out.push_back(&f);
  return out;
}

void attribute_rank(const Trace& t, const RankThreads& th, RankMetrics& r, std::span<Finding* const> findings) {
  if (t.py_samples.size() == 0 || r.main_track == trace::kNone) return;
  attribute_segments(t, th, r);
  for (Finding* f : findings)
    if (auto scope = finding_scope(t, th, r, *f)) f->hot = hot_spots_of(t, std::move(*scope));
}

std::optional<SampleScope> finding_sample_scope(const Trace& t, const Metrics& m, const Finding& f) {
  const RankMetrics* r = rank_of(m, f);
  if (!r || r->main_track == trace::kNone) return std::nullopt;
  return finding_scope(t, rank_threads(t, rank_processes(m), *r), *r, f);
}

SampleScope step_sample_scope(const Trace& t, const Metrics& m, const RankMetrics& r, const StepMetrics& s) {
  SampleScope out{{}, false, "the rank's threads and its DataLoader workers during the step"};
  for (std::uint32_t track : rank_thread_tracks(t, rank_processes(m), r)) out.windows.push_back({track, s.start, s.end});
  return out;
}

void attribute_findings(const Trace& t, Metrics& m, std::vector<Finding>& findings) {
  if (t.py_samples.size() == 0) return;
  const std::vector<std::uint32_t> processes = rank_processes(m);
  for (RankMetrics& r : m.ranks)
    if (r.main_track != trace::kNone) attribute_rank(t, rank_threads(t, processes, r), r, findings_of(m, r, findings));
}

}  // namespace tt::analyzer
