// Python hot spots of a finding (docs/analysis.md, "Python attribution"): where the trace holds
// Python stack samples (`record --trace pystack`), the functions and lines the samples taken
// inside a finding's stretches of time fall in, with their share of those samples.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "tracetune/analyzer/hot_spots.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {


struct Finding;
struct Metrics;
struct RankMetrics;
struct StepMetrics;

// Fills Finding::hot for the findings whose evidence is host time: data loading (the DataLoader
// workers' and the main thread's samples that are fetching a batch, during the rank's data
// waits), CPU bound and launch bound (the rank's samples on the threads and during the host
// segments of its steps' critical paths); and PathSegment::hot for the longest segments of each
// rank's step paths (host compute and launch: the samples on their threads; data wait: as for
// data loading). No-op for a trace without samples.
void attribute_findings(const trace::Trace& t, Metrics& m, std::vector<Finding>& findings);

// The attribution of the samples on `tracks` inside `windows` (sorted, disjoint [start, end) on
// each track, given per track), keeping only samples whose stack passes `keep` (nullptr: all).
// Each sample counts for the innermost frame of the job's own code (not under site-packages,
// dist-packages, the Python library or tracetune's integration), else its innermost frame.
struct SampleWindow {
  std::uint32_t track = trace::kNone;
  trace::Ns start = 0, end = 0;
};
HotSpots hot_spots(const trace::Trace& t, std::vector<SampleWindow> windows, bool fetching_only);

// The samples hot_spots counts for these windows: indices into Trace::py_samples, in table
// order, each once (overlapping windows on a track count a sample once), none with an empty
// stack, and with `fetching_only` only those whose stack is inside torch's DataLoader fetcher.
std::vector<std::uint32_t> samples_in_windows(const trace::Trace& t, std::vector<SampleWindow> windows,
                                              bool fetching_only);

// Which samples an attribution covers: the windows, the fetching filter and the scope's phrase
// (HotSpots::scope). What the GUI's flame graph draws for a finding or a step.
struct SampleScope {
  std::vector<SampleWindow> windows;
  bool fetching_only = false;
  std::string scope;
};
// The scope of Finding::hot for `f` (as attribute_findings fills it); nullopt for a finding
// that gets no attribution (its category is not host time, or its rank has no main thread).
std::optional<SampleScope> finding_sample_scope(const trace::Trace& t, const Metrics& m, const Finding& f);
// Every thread of the rank's process and of its DataLoader workers during the step.
SampleScope step_sample_scope(const trace::Trace& t, const Metrics& m, const RankMetrics& r, const StepMetrics& s);

// What the attribution of one rank reads of the trace besides the samples: the threads of its
// process and of its descendants that are not ranks (`rank_processes`: every rank's process),
// and its main thread's data waits, in time order. A sharded analysis keeps them in its part
// file with the rank's samples, and attributes at the combine (docs/scale.md).
struct RankThreads {
  std::vector<std::uint32_t> tracks;
  std::vector<std::pair<trace::Ns, trace::Ns>> data_waits;
};
RankThreads rank_threads(const trace::Trace& t, std::span<const std::uint32_t> rank_processes, const RankMetrics& r);

// The findings attribute_findings gives to `r`: those naming its rank, when it is the first
// rank of `m` with that number.
std::vector<Finding*> findings_of(const Metrics& m, const RankMetrics& r, std::vector<Finding>& findings);

// attribute_findings for one rank: its path segments and `findings` (findings_of). `t` needs
// only the samples, and the tracks of r's path pieces (a thread is a Thread track).
void attribute_rank(const trace::Trace& t, const RankThreads& th, RankMetrics& r, std::span<Finding* const> findings);

// "61% in augment() at data.py:88, 20% in ..." (the first `n` functions).
std::string hot_spots_line(const HotSpots& h, std::size_t n = 3);

// True for code outside the job's own: site-packages, dist-packages, the Python library,
// frozen modules and tracetune's Python integration.
bool is_library_file(std::string_view file);

}  // namespace tt::analyzer
