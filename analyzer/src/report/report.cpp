// Reports: JSON (for tools), text (for terminals) and Markdown (for sharing).
#include <algorithm>
#include <iterator>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/attribution.h"
#include "tracetune/analyzer/kernel_class.h"
#include "tracetune/trace/summary.h"

#include "escape.h"
#include "format.h"
#include "json_fields.h"

namespace tt::analyzer {

namespace {

double ms(Ns ns) { return static_cast<double>(ns) / 1e6; }
double pct(Ns part, Ns whole) { return 100.0 * trace::share(part, whole); }

using GB = GpuBreakdown;
std::vector<std::pair<std::string_view, Ns>> exclusive(const GB& g) {
  static constexpr std::string_view kNames[8] = {"idle", "compute", "communication", "compute+communication", "memory",
                                                 "compute+memory", "communication+memory", "compute+communication+memory"};
  std::vector<std::pair<std::string_view, Ns>> out;
  for (int i = 0; i < 8; ++i) out.emplace_back(kNames[i], g.exclusive[i]);
  return out;
}
constexpr auto kGpuFields = std::tuple(
    field("span_ns", &GB::span), field("busy_ns", &GB::busy), field("idle_ns", &GB::idle),
    field("compute_ns", &GB::compute), field("non_compute_ns", &GB::non_compute),
    field("communication_ns", &GB::communication), field("memory_ns", &GB::memory),
    field("comm_compute_overlap_ns", &GB::comm_compute_overlap),
    field("comm_memory_overlap_ns", &GB::comm_memory_overlap),
    field("exposed_communication_ns", &GB::exposed_communication),
    field("idle_pct", [](const GB& g) { return pct(g.idle, g.span); }),
    field("compute_pct", [](const GB& g) { return pct(g.compute, g.span); }),
    field("non_compute_pct", [](const GB& g) { return pct(g.non_compute, g.span); }),
    field("comm_compute_overlap_pct", [](const GB& g) { return pct(g.comm_compute_overlap, g.communication); }),
    field("exclusive_ns", exclusive));

// Memory per device (docs/analysis.md, "Memory"); per-step values are -1 where a step had no sample.
using MD = MemoryDevice;
constexpr auto kMemoryFields = std::tuple(
    field("device", &MD::device), field("capacity_bytes", &MD::capacity), field("peak_bytes", &MD::peak),
    field("reserved_peak_bytes", &MD::reserved_peak), field("growth_bytes_per_step", &MD::growth_per_step),
    field("growth_fit", &MD::growth_fit), field("late_growth_bytes_per_step", &MD::late_growth_per_step),
    field("alloc_retries", &MD::alloc_retries), field("ooms", &MD::ooms), field("step_peak_bytes", &MD::step_peak),
    field("step_reserved_bytes", &MD::step_reserved));

// Kernel efficiency (docs/analysis.md); "gemm_ops" (GEMM and convolution ops counted): 0 when
// the trace carries no shapes.
constexpr auto kRooflineFields = std::tuple(
    field("op", &OpRoofline::op), field("dtype", &OpRoofline::dtype), field("calls", &OpRoofline::calls),
    field("flops_per_call", &OpRoofline::flops), field("bytes_per_call", &OpRoofline::bytes),
    field("gpu_time_ns", &OpRoofline::gpu_time), field("achieved_tflops", &OpRoofline::achieved_tflops),
    field("bound_tflops", &OpRoofline::bound_tflops), field("efficiency", &OpRoofline::efficiency));
constexpr auto kEfficiencyFields = std::tuple(
    field("gemm_ops", &Efficiency::ops), field("flops_per_step", &Efficiency::flops_per_step),
    field("achieved_tflops", &Efficiency::achieved_tflops), field("mfu", &Efficiency::mfu),
    field("peak", &Efficiency::peak), field("flops_per_step_by_dtype", &Efficiency::flops_by_dtype),
    field("flops_per_step_by_kind", &Efficiency::flops_by_kind), field("bandwidth_tbs", &Efficiency::bandwidth_tbs),
    array("roofline", &Efficiency::roofline, kRooflineFields));

std::string compute_capability(const RankMetrics& r) {
  return r.compute_major >= 0 ? fmt::format("{}.{}", r.compute_major, r.compute_minor) : std::string();
}
std::size_t step_count(const RankMetrics& r) {
  return r.steps.size();
}
std::string_view collective_side(const CollectiveStats& c) {
  return c.device_side ? "device" : "host";
}

using RM = RankMetrics;
constexpr auto kRankFields =
    std::tuple(field("rank", &RM::rank), field("pid", &RM::pid), field("label", &RM::label),
               field("has_gpu", &RM::has_gpu), field("device", &RM::device),
               field("compute_capability", compute_capability), field("has_steps", &RM::has_steps),
               field("window_start_ns", &RM::window_start), field("window_end_ns", &RM::window_end));
constexpr auto kStepTimeFields = std::tuple(field("count", step_count), field("median_ns", &RM::step_median),
                                            field("p90_ns", &RM::step_p90), field("min_ns", &RM::step_min),
                                            field("max_ns", &RM::step_max));
constexpr auto kWaitFields =
    std::tuple(field("memory_bound_kernels_ns", &RM::memory_bound_kernels),
               field("data_wait_ns", &RM::data_wait), field("sync_wait_ns", &RM::sync_wait),
               field("sync_calls", &RM::sync_calls), field("top_sync_call", &RM::top_sync_call));

using SI = StreamIdle;
constexpr auto kStreamFields =
    std::tuple(field("stream", &SI::stream), field("ops", &SI::ops), field("host_wait_ns", &SI::host_wait),
               field("kernel_wait_ns", &SI::kernel_wait), field("other_ns", &SI::other));

using LS = LaunchStats;
constexpr auto kLaunchFields =
    std::tuple(field("kernels", &LS::kernels), field("correlated", &LS::correlated),
               field("kernel_median_ns", &LS::kernel_median), field("kernel_p90_ns", &LS::kernel_p90),
               field("short_kernel_share", &LS::short_kernel_share),
               field("launch_call_median_ns", &LS::launch_call_median),
               field("launch_delay_median_ns", &LS::launch_delay_median),
               field("launch_delay_p90_ns", &LS::launch_delay_p90), field("queue_mean", &LS::queue_mean),
               field("queue_max", &LS::queue_max));

using TS = TransferStats;
constexpr auto kTransferFields =
    std::tuple(field("h2d_count", &TS::h2d_count), field("h2d_bytes", &TS::h2d_bytes),
               field("h2d_pageable_bytes", &TS::h2d_pageable_bytes), field("h2d_time_ns", &TS::h2d_time),
               field("h2d_pageable_time_ns", &TS::h2d_pageable_time),
               field("h2d_exposed_ns", &TS::h2d_exposed), field("h2d_pageable_gbps", &TS::h2d_pageable_gbps),
               field("h2d_pinned_gbps", &TS::h2d_pinned_gbps), field("d2h_count", &TS::d2h_count),
               field("d2h_bytes", &TS::d2h_bytes), field("d2h_pageable_bytes", &TS::d2h_pageable_bytes),
               field("d2h_time_ns", &TS::d2h_time), field("d2h_gbps", &TS::d2h_gbps));

constexpr auto kIoFields =
    std::tuple(field("calls", &IoStats::calls), field("read_calls", &IoStats::read_calls),
               field("write_calls", &IoStats::write_calls), field("errors", &IoStats::errors),
               field("bytes_read", &IoStats::bytes_read), field("bytes_written", &IoStats::bytes_written),
               field("time_ns", &IoStats::time), field("main_thread_ns", &IoStats::main_thread));
constexpr auto kProcessIoFields =
    std::tuple(field("pid", &ProcessIo::pid), field("name", &ProcessIo::name),
               field("calls", &ProcessIo::calls), field("bytes_read", &ProcessIo::bytes_read),
               field("bytes_written", &ProcessIo::bytes_written), field("time_ns", &ProcessIo::time));

constexpr auto kGemmFields =
    std::tuple(field("fp32_simt_ns", &GemmStats::fp32_simt), field("tensor_core_ns", &GemmStats::tensor_core),
               field("fp64_ns", &GemmStats::fp64), field("unknown_ns", &GemmStats::unknown),
               field("fp32_simt_kernels", &GemmStats::fp32_simt_kernels),
               field("top_fp32_kernel", &GemmStats::top_fp32_kernel));

using CS = CollectiveStats;
constexpr auto kCollectiveFields =
    std::tuple(field("count", &CS::count), field("bytes", &CS::bytes), field("time_ns", &CS::time),
               field("side", collective_side), field("matched", &CS::matched),
               field("arrival_wait_ns", &CS::arrival_wait), field("last_arrivals", &CS::last_arrivals));

constexpr auto kKernelFields =
    std::tuple(field("name", &KernelTotal::name), field("class", &KernelTotal::kernel_class),
               field("count", &KernelTotal::count), field("total_ns", &KernelTotal::total));

constexpr auto kHotFunctionFields =
    std::tuple(field("function", &HotFunction::function), field("file", &HotFunction::file),
               field("line", &HotFunction::line), field("samples", &HotFunction::samples),
               field("share", &HotFunction::share));

// A finding's or a critical-path segment's Python attribution (only where the trace holds
// samples in its stretches).
constexpr auto kHotSpotsFields = std::tuple(field("scope", &HotSpots::scope), field("samples", &HotSpots::samples),
                                            array("top", &HotSpots::top, kHotFunctionFields));
template <class S>
const HotSpots* hot_spots_of(const S& s) {
  return s.hot.samples > 0 ? &s.hot : nullptr;
}

std::optional<Ns> evidence_start(const Evidence& e) { return e.end > e.start ? std::optional(e.start) : std::nullopt; }
std::optional<Ns> evidence_end(const Evidence& e) { return e.end > e.start ? std::optional(e.end) : std::nullopt; }
constexpr auto kEvidenceFields =
    std::tuple(field("what", &Evidence::what), field_if("start_ns", evidence_start),
               field_if("end_ns", evidence_end), field_if("rank", rank_or_null<Evidence>));

using F = Finding;
constexpr auto kFindingFields = std::tuple(
    field("category", [](const F& f) { return to_string(f.category); }),
    field("severity", [](const F& f) { return to_string(f.severity); }), field("rank", rank_or_null<F>),
    field("title", &F::title), field("detail", &F::detail), field("share", &F::share), field("cost_ns", &F::cost),
    field("gain_ns", &F::gain), field("gain_share", &F::gain_share), field("gain_model", &F::gain_model),
    field("leaves_out", &F::leaves_out), field("gain_estimated", &F::gain_estimated),
    array("evidence", &F::evidence, kEvidenceFields), field("knobs", &F::knobs),
    object("hot_functions", hot_spots_of<F>, kHotSpotsFields));

// A finding group with its worst finding's rank.
struct GroupRow {
  FindingGroup g;
  std::int32_t worst_rank;
};
constexpr auto kFindingGroupFields = std::tuple(
    field("category", [](const GroupRow& r) { return to_string(r.g.category); }),
    field("ranks", [](const GroupRow& r) { return r.g.ranks; }),
    field("worst_finding", [](const GroupRow& r) { return r.g.worst; }), field("worst_rank", &GroupRow::worst_rank),
    field("gain_ns_min", [](const GroupRow& r) { return r.g.gain_min; }),
    field("gain_ns_max", [](const GroupRow& r) { return r.g.gain_max; }),
    field("cost_ns_min", [](const GroupRow& r) { return r.g.cost_min; }),
    field("cost_ns_max", [](const GroupRow& r) { return r.g.cost_max; }),
    field("findings", [](const GroupRow& r) { return r.g.findings; }));

// Critical paths (docs/analysis.md, "Critical path"): one object per step.
std::vector<std::pair<std::string_view, Ns>> by_kind(const StepPath& p) {
  std::vector<std::pair<std::string_view, Ns>> out;
  for (std::size_t k = 0; k < kPathKinds; ++k) out.emplace_back(to_string(static_cast<PathKind>(k)), p.by_kind[k]);
  return out;
}
using RankTime = std::pair<std::int32_t, Ns>;
constexpr auto kRankTimeFields = std::tuple(field("rank", &RankTime::first), field("ns", &RankTime::second));
constexpr auto kSegmentFields =
    std::tuple(field("kind", [](const PathSegment& sg) { return to_string(sg.kind); }),
               field("rank", &PathSegment::rank), field("what", &PathSegment::what),
               field("start_ns", &PathSegment::start), field("end_ns", &PathSegment::end),
               object("hot_functions", hot_spots_of<PathSegment>, kHotSpotsFields));
constexpr auto kStepPathFields =
    std::tuple(field("step", &StepPath::step), field("rank", &StepPath::rank), field("start_ns", &StepPath::start),
               field("end_ns", &StepPath::end), field("length_ns", &StepPath::length),
               field("complete", &StepPath::complete), field("by_kind_ns", by_kind),
               array("by_rank", &StepPath::by_rank, kRankTimeFields), array("top", &StepPath::top, kSegmentFields));

using SM = StepMetrics;
constexpr auto kStepFields = std::tuple(
    field("number", &SM::number), field("start_ns", &SM::start), field("end_ns", &SM::end),
    field("wall_ns", &SM::wall), field("gpu_busy_ns", &SM::gpu_busy), field("gpu_idle_ns", &SM::gpu_idle),
    field("compute_ns", &SM::compute), field("communication_ns", &SM::communication),
    field("memory_ns", &SM::memory), field("exposed_communication_ns", &SM::exposed_communication),
    field("data_wait_ns", &SM::data_wait), field("sync_wait_ns", &SM::sync_wait),
    field("io_main_ns", &SM::io_main), field("collective_host_ns", &SM::collective_host), field("h2d_ns", &SM::h2d),
    field("h2d_exposed_ns", &SM::h2d_exposed),
    field("idle_data_ns", &SM::idle_data), field("idle_sync_ns", &SM::idle_sync),
    field("idle_launch_ns", &SM::idle_launch), field("idle_other_ns", &SM::idle_other),
    field("kernels", &SM::kernels));

using CR = CrossRank;
constexpr auto kCrossRankFields = std::tuple(
    field("ranks", &CR::ranks), field("step_median_min_ns", &CR::step_median_min),
    field("step_median_median_ns", &CR::step_median_median),
    field("step_median_max_ns", &CR::step_median_max), field("step_spread", &CR::step_spread),
    field("slowest_rank", &CR::slowest_rank), field("matched_collectives", &CR::matched_collectives),
    field("arrival_skew_median_ns", &CR::arrival_skew_median),
    field("arrival_skew_max_ns", &CR::arrival_skew_max), field("last_arriver", &CR::last_arriver),
    field("last_arriver_share", &CR::last_arriver_share));

constexpr auto kIoDocFields = std::tuple_cat(kIoFields, std::tuple(array("per_process", &IoStats::per_process, kProcessIoFields)));

std::vector<std::pair<std::string_view, Ns>> by_format(const GemmStats& g) {
  std::vector<std::pair<std::string_view, Ns>> out;
  for (int f = 1; f < 10; ++f)
    if (g.by_format[f]) out.emplace_back(to_string(static_cast<GemmFormat>(f)), g.by_format[f]);
  return out;
}
constexpr auto kGemmDocFields = std::tuple_cat(kGemmFields, std::tuple(field("by_format_ns", by_format)));

// the step's length under each what-if change, where the step was replayed
std::optional<std::vector<std::pair<std::string_view, Ns>>> what_if(const StepMetrics& s) {
  if (!s.replayed) return std::nullopt;
  std::vector<std::pair<std::string_view, Ns>> out;
  for (std::size_t k = 0; k < kWhatIfs; ++k) out.emplace_back(to_string(static_cast<WhatIf>(k)), s.what_if[k]);
  return out;
}
constexpr auto kStepDocFields = std::tuple_cat(kStepFields, std::tuple(field_if("what_if_ns", what_if)));

const RankMetrics& itself(const RankMetrics& r) { return r; }
constexpr auto kRankDocFields = std::tuple_cat(
    kRankFields,
    std::tuple(object("step_time", itself, kStepTimeFields), object("gpu", &RM::gpu, kGpuFields),
               array("idle_by_stream", &RM::streams, kStreamFields), object("launch", &RM::launch, kLaunchFields),
               object("transfers", &RM::transfers, kTransferFields), object("io", &RM::io, kIoDocFields),
               object("gemm", &RM::gemm, kGemmDocFields)),
    kWaitFields,
    std::tuple(object("collectives", &RM::collectives, kCollectiveFields),
               array("top_kernels", &RM::top_kernels, kKernelFields), array("steps", &RM::steps, kStepDocFields),
               array("critical_path", &RM::paths, kStepPathFields), array("memory", &RM::memory, kMemoryFields),
               object("efficiency", &RM::efficiency, kEfficiencyFields), field("notes", &RM::notes)));

using HR = HangRank;
constexpr auto kHangRankFields =
    std::tuple(field("rank", &HR::rank), field("pid", &HR::pid), field("state", &HR::state),
               field("communicator", &HR::communicator), field("op", &HR::op), field("seq", &HR::seq),
               field("bytes", &HR::bytes), field("last_seq", &HR::last_seq),
               field("waiting_since_ns", &HR::waiting_since), field("last_event", &HR::last_event),
               field("last_event_end_ns", &HR::last_event_end));
// "hang": only in a report of a trace where some rank is stuck in a collective (hang.h).
constexpr auto kHangFields =
    std::tuple(field("summary", &HangReport::summary), array("ranks", &HangReport::ranks, kHangRankFields));

std::optional<std::vector<std::int64_t>> step_range(const Options& o) {
  if (!o.steps) return std::nullopt;
  return std::vector<std::int64_t>{o.steps->first, o.steps->second};
}
constexpr auto kOptionFields =
    std::tuple(field("hta_compat", &Options::hta_compat), field("rank", rank_or_null<Options>),
               field("steps", step_range), field("kernel_wait_threshold_ns", &Options::kernel_wait_threshold));

// a finding that holds on several ranks, as the text report shows it (indices into findings)
std::vector<GroupRow> finding_groups(const Analysis& a) {
  std::vector<GroupRow> rows;
  for (auto& g : group_findings(a.findings)) {
    const std::int32_t worst_rank = a.findings[g.worst].rank;
    rows.push_back({std::move(g), worst_rank});
  }
  return rows;
}

const HangReport* hang_of(const Analysis& a) { return a.hang ? &*a.hang : nullptr; }

// The ranks whole, read one at a time (whole_rank): what the "ranks" array iterates.
struct WholeRanks {
  const Analysis* a;
  struct iterator {
    const Analysis* a;
    std::size_t i;
    const RankMetrics& operator*() const { return whole_rank(*a, i); }
    iterator& operator++() { ++i; return *this; }
    bool operator!=(const iterator& o) const { return i != o.i; }
  };
  iterator begin() const { return {a, 0}; }
  iterator end() const { return {a, a->metrics.ranks.size()}; }
};

constexpr auto kAnalysisFields = std::tuple(
    field("schema", [](const Analysis&) { return std::string_view("tracetune.analysis"); }),
    field("version", [](const Analysis&) { return kReportVersion; }), field("source", &Analysis::source),
    field("clock_domain", &Analysis::clock_domain), field("events", &Analysis::events),
    object("options", &Analysis::options, kOptionFields), object("hang", hang_of, kHangFields),
    array("findings", &Analysis::findings, kFindingFields), array("finding_groups", finding_groups, kFindingGroupFields),
    array("ranks", [](const Analysis& a) { return WholeRanks{&a}; }, kRankDocFields),
    object("cross_rank", [](const Analysis& a) -> const CrossRank& { return a.metrics.cross; }, kCrossRankFields),
    array("job_critical_path", [](const Analysis& a) -> const std::vector<StepPath>& { return a.metrics.job_paths; },
          kStepPathFields),
    field("notes", [](const Analysis& a) -> const std::vector<std::string>& { return a.metrics.notes; }));

}  // namespace

std::string render_json(const Analysis& a) { return document_json(a, kAnalysisFields); }

void render_json(const Analysis& a, const std::function<void(std::string_view)>& sink) {
  document_json(a, kAnalysisFields, sink);
}

std::vector<std::string> analysis_json_fields() { return document_paths(kAnalysisFields); }

namespace {

// "41% gpu_compute, 30% launch, ..." (kinds of at least 0.5% of total, largest first)
std::string kind_shares(const Ns (&by_kind)[kPathKinds], Ns total) {
  std::vector<std::size_t> order(kPathKinds);
  for (std::size_t k = 0; k < kPathKinds; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return by_kind[a] > by_kind[b]; });
  std::string parts;
  for (std::size_t k : order) {
    if (by_kind[k] == 0 || pct(by_kind[k], total) < 0.5) continue;
    parts += fmt::format("{}{:.0f}% {}", parts.empty() ? "" : ", ", pct(by_kind[k], total), to_string(static_cast<PathKind>(k)));
  }
  return parts;
}

std::size_t largest_kind(const Ns (&by_kind)[kPathKinds]) {
  return static_cast<std::size_t>(std::max_element(std::begin(by_kind), std::end(by_kind)) - std::begin(by_kind));
}

// The median step's own breakdown, when its largest kind is not the pooled one's: one long step
// (a cold first step: cuBLAS's set-up took 121 ms of host work in a two-stream job on the H100,
// beside 19 steps of 3 ms that were 86% GPU compute) can make the total read host-bound.
std::string median_step_line(const std::vector<StepPath>& paths, const Ns (&pooled)[kPathKinds], Ns total) {
  if (paths.size() < 3 || total <= 0) return {};
  std::vector<const StepPath*> by_length;
  for (const auto& p : paths) by_length.push_back(&p);
  std::sort(by_length.begin(), by_length.end(), [](const StepPath* a, const StepPath* b) { return a->length < b->length; });
  const StepPath& median = *by_length[by_length.size() / 2];
  const StepPath& longest = *by_length.back();
  if (median.length <= 0 || largest_kind(median.by_kind) == largest_kind(pooled)) return {};
  return fmt::format("    median step (step {}, {:.2f} ms): {}; the longest, step {} ({:.2f} ms), is {:.0f}% of the total\n",
                     median.step, ms(median.length), kind_shares(median.by_kind, median.length), longest.step,
                     ms(longest.length), pct(longest.length, total));
}

// "critical path (N steps, T): 41% gpu_compute, 30% launch, ...; longest: ..." over all steps
std::string path_summary(std::string_view title, const std::vector<StepPath>& paths) {
  Ns total = 0, by_kind[kPathKinds] = {};
  const PathSegment* longest = nullptr;
  for (const auto& p : paths) {
    total += p.length;
    for (std::size_t k = 0; k < kPathKinds; ++k) by_kind[k] += p.by_kind[k];
    for (const auto& sg : p.top)
      if (!longest || sg.end - sg.start > longest->end - longest->start) longest = &sg;
  }
  std::string o = fmt::format("{} ({} step{}, {:.1f} ms): {}\n", title, paths.size(), paths.size() == 1 ? "" : "s", ms(total),
                              kind_shares(by_kind, total));
  o += median_step_line(paths, by_kind, total);
  if (longest) {
    const std::string what = visible(clip(longest->what, 60));
    o += fmt::format("    longest segment: {:.2f} ms {} on rank {} ({})\n", ms(longest->end - longest->start),
                     to_string(longest->kind), longest->rank, what);
    if (longest->hot.samples > 0)
      o += fmt::format("      python: {} ({} samples)\n", visible(hot_spots_line(longest->hot)), longest->hot.samples);
  }
  return o;
}

// "what-if replay (N steps): data waits removed -3.10 ms (21%), ..." (median step shortening)
std::string what_if_summary(const RankMetrics& r) {
  static constexpr std::string_view kLabels[kWhatIfs] = {"data waits removed", "H2D copies prefetched",
                                                         "FP32 GEMMs on tensor cores", "memory-bound kernels fused",
                                                         "no sync waits"};
  const std::size_t replayed = replayed_steps(r);
  if (replayed == 0) return {};
  if (replayed != r.steps.size())
    return fmt::format("  what-if replay: {} of {} steps (the others' graphs are incomplete); findings use their "
                       "formulas\n",
                       replayed, r.steps.size());
  std::string parts;
  for (std::size_t k = 0; k < kWhatIfs; ++k) {
    const Ns gain = what_if_gain(r, static_cast<WhatIf>(k)).value_or(0);
    if (gain <= 0) continue;
    parts += fmt::format("{}{} -{} ({:.0f}%)", parts.empty() ? "" : ", ", kLabels[k], dur(gain), pct(gain, r.step_median));
  }
  return fmt::format("  what-if replay ({} step{}, median step): {}\n", replayed, replayed == 1 ? "" : "s",
                     parts.empty() ? "no single change shortens it" : parts);
}

struct Style {
  bool color;
  std::string bold(std::string_view s) const { return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s); }
  std::string sev(Severity v) const {
    const std::string_view label = v == Severity::High ? "HIGH" : v == Severity::Medium ? "MED " : "LOW ";
    if (!color) return std::string(label);
    const char* c = v == Severity::High ? "\x1b[1;31m" : v == Severity::Medium ? "\x1b[1;33m" : "\x1b[36m";
    return fmt::format("{}{}\x1b[0m", c, label);
  }
  std::string dim(std::string_view s) const { return color ? fmt::format("\x1b[2m{}\x1b[0m", s) : std::string(s); }
};

std::string rank_name(std::int32_t r) { return r >= 0 ? fmt::format("rank {}", r) : std::string("all ranks"); }

// "rank 3", or "8 ranks (0-7), worst rank 5" for a finding that holds on several
std::string group_name(const FindingGroup& g, const Finding& worst) {
  if (g.ranks.size() <= 1) return rank_name(worst.rank);
  return fmt::format("{} ranks ({}), worst rank {}", g.ranks.size(), rank_list(g.ranks), worst.rank);
}

std::size_t total_steps(const Analysis& a) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.metrics.ranks.size(); ++i) n += a.metrics.ranks[i].has_steps ? steps_of(a, i) : 0;
  return n;
}

// "tracetune analyze: SOURCE" and what was analysed
std::string text_header(const Analysis& a, const Style& st) {
  const auto& M = a.metrics;
  std::string o = st.bold(fmt::format("tracetune analyze: {}", visible(a.source))) + "\n";
  o += fmt::format("{} rank{}, {} steps analysed, {} events, clock {}{}\n\n", M.ranks.size(),
                   M.ranks.size() == 1 ? "" : "s", total_steps(a), a.events, visible(a.clock_domain),
                   a.options.hta_compat ? " (HTA-compatible definitions)" : "");
  return o;
}

// "Findings": one entry per finding group, largest estimated gain first
std::string text_findings(const Analysis& a, const Style& st) {
  std::string o = st.bold("Findings") + " (largest estimated gain first)\n";
  if (a.findings.empty()) o += "  none: no rule passed its threshold (see the metrics below)\n";
  int n = 0;
  for (const auto& g : group_findings(a.findings)) {
    const Finding& f = a.findings[g.worst];
    o += fmt::format("{:>3}. [{}] {} · {}\n", ++n, st.sev(f.severity), group_name(g, f), visible(f.title));
    if (g.ranks.size() > 1)
      o += fmt::format(
          "       costs {} to {}{} across these ranks; the lines below are rank {}'s (largest gain)\n",
          dur(g.cost_min), dur(g.cost_max), gain_unit(a, f), f.rank);
    if (f.gain_estimated)
      o += fmt::format("       est. gain {}{} ({:.0f}%): {}{}\n", dur(f.gain), gain_unit(a, f),
                       100 * f.gain_share, visible(f.gain_model),
                       f.leaves_out.empty() ? std::string() : "; leaves out " + visible(f.leaves_out));
    else
      o += fmt::format("       est. gain: {}\n", visible(f.gain_model));
    for (const auto& e : f.evidence) o += fmt::format("       evidence: {}\n", visible(e.what));
    if (f.hot.samples > 0)
      o += fmt::format("       python: {} ({} samples of {})\n", visible(hot_spots_line(f.hot)), f.hot.samples,
                       visible(f.hot.scope));
    o += fmt::format("       fix: {}\n", visible(f.detail));
    if (!f.knobs.empty()) o += fmt::format("       knobs: {}\n", fmt::join(f.knobs, ", "));
  }
  return o;
}

// "Per rank": one row per rank, GPU columns as shares of the window, waits per step
std::string text_rank_table(const Analysis& a, const Style& st) {
  std::string o = "\n" + st.bold("Per rank") + "\n";
  o += fmt::format("  {:<6} {:>6} {:>11} {:>9} {:>9} {:>8} {:>9} {:>10} {:>10} {:>8} {:>8}\n", "rank",
                   "steps", "step med", "step p90", "GPU busy", "idle", "compute", "comm exp.", "data wait",
                   "sync", "I/O");
  for (std::size_t i = 0; i < a.metrics.ranks.size(); ++i) {
    const RankMetrics& r = a.metrics.ranks[i];
    const std::size_t steps = steps_of(a, i);
    const Ns span = r.gpu.span;
    o += fmt::format(
        "  {:<6} {:>6} {:>9.1f}ms {:>7.1f}ms {:>8.1f}% {:>7.1f}% {:>8.1f}% {:>9.1f}% {:>8.1f}ms {:>6.1f}ms "
        "{:>6.1f}ms\n",
        r.rank, r.has_steps ? steps : 0, ms(r.step_median), ms(r.step_p90),
        r.has_gpu ? pct(r.gpu.busy, span) : 0.0, r.has_gpu ? pct(r.gpu.idle, span) : 0.0,
        r.has_gpu ? pct(r.gpu.compute, span) : 0.0, r.has_gpu ? pct(r.gpu.exposed_communication, span) : 0.0,
        ms(r.data_wait) / static_cast<double>(std::max<std::size_t>(1, steps)),
        ms(r.sync_wait) / static_cast<double>(std::max<std::size_t>(1, steps)),
        ms(r.io.main_thread) / static_cast<double>(std::max<std::size_t>(1, steps)));
  }
  o += st.dim("  (GPU columns: % of the analysed window; waits: per step on the main thread)") + "\n";
  return o;
}

// A rank's GPU: device, time breakdown, stream idle, launches, copies, GEMMs and top kernels
std::string text_rank_gpu(const RankMetrics& r) {
  std::string o;
  const auto& g = r.gpu;
  if (!r.device.empty())
    o += fmt::format("  device: {}{}\n", visible(r.device),
                     r.compute_major >= 0
                         ? fmt::format(" (compute capability {}.{})", r.compute_major, r.compute_minor)
                         : std::string());
  o += fmt::format(
      "  GPU: span {} · idle {:.2f}% · compute {:.2f}% · non-compute {:.2f}% · communication {} "
      "({:.1f}% overlapped with compute) · copies/sets {}\n",
      dur(g.span), pct(g.idle, g.span), pct(g.compute, g.span), pct(g.non_compute, g.span),
      dur(g.communication), pct(g.comm_compute_overlap, g.communication), dur(g.memory));
  for (const auto& s : r.streams)
    o += fmt::format("  stream {:<4} {:>8} ops · idle: host wait {}, kernel wait {}, other {}\n", s.stream,
                     s.ops, dur(s.host_wait), dur(s.kernel_wait), dur(s.other));
  const auto& L = r.launch;
  o += fmt::format(
      "  launches: {} kernels (median {:.1f} µs, {:.0f}% < 10 µs), launch call median {:.1f} µs, "
      "launch→start median {:.1f} µs, queue depth mean {:.1f} max {}\n",
      L.kernels, static_cast<double>(L.kernel_median) / 1e3, 100 * L.short_kernel_share,
      static_cast<double>(L.launch_call_median) / 1e3, static_cast<double>(L.launch_delay_median) / 1e3,
      L.queue_mean, L.queue_max);
  const auto& T = r.transfers;
  if (T.h2d_count || T.d2h_count)
    o += fmt::format(
        "  copies: H2D {} × {:.1f} MB ({:.0f}% pageable; pageable {:.2f} GB/s, pinned {:.2f} GB/s; {} "
        "exposed) · D2H {} × {:.1f} MB\n",
        T.h2d_count, static_cast<double>(T.h2d_bytes) / 1e6,
        T.h2d_bytes ? 100.0 * static_cast<double>(T.h2d_pageable_bytes) / static_cast<double>(T.h2d_bytes)
                    : 0.0,
        T.h2d_pageable_gbps, T.h2d_pinned_gbps, dur(T.h2d_exposed), T.d2h_count,
        static_cast<double>(T.d2h_bytes) / 1e6);
  if (r.gemm.fp32_simt || r.gemm.tensor_core)
    o += fmt::format("  GEMMs: FP32 on CUDA cores {}, on tensor cores {}\n", dur(r.gemm.fp32_simt),
                     dur(r.gemm.tensor_core));
  if (!r.top_kernels.empty()) {
    o += "  top kernels:\n";
    for (std::size_t i = 0; i < std::min<std::size_t>(5, r.top_kernels.size()); ++i) {
      const auto& k = r.top_kernels[i];
      o += fmt::format("    {:>9.2f} ms {:>7}× {:<13} {}\n", ms(k.total), k.count, k.kernel_class, visible(clip(k.name, 70)));
    }
  }
  return o;
}

// Model FLOPs per step ("GEMM FLOPs", "GEMM + conv FLOPs"), MFU and each op kind's place under
// the roofline
std::string text_efficiency(const Efficiency& e) {
  std::string o;
  std::string kinds;
  for (const auto& [kind, flops] : e.flops_by_kind) kinds += (kinds.empty() ? "" : " + ") + (kind == "gemm" ? "GEMM" : kind);
  if (e.ops)
    o += fmt::format("  {} FLOPs: {:.3g} GFLOP per step ({} ops with shapes), {:.2f} TFLOP/s achieved{}\n", kinds,
                     e.flops_per_step / 1e9, e.ops, e.achieved_tflops,
                     e.mfu >= 0 ? fmt::format("; MFU {:.1f}% of {}", 100 * e.mfu, visible(e.peak))
                                : std::string("; MFU unknown (no peak for this device)"));
  for (const auto& op : e.roofline)
    o += fmt::format(
        "    roofline: {} {} x{} ({:.3g} GFLOP, {:.1f} FLOP/B): {:.2f} of {:.2f} TFLOP/s bound ({:.0f}%{}), "
        "{} on the GPU\n",
        visible(op.op), visible(op.dtype), op.calls, op.flops / 1e9, op.flops / op.bytes, op.achieved_tflops, op.bound_tflops,
        100 * op.efficiency(), op.efficiency() < 0.5 ? ", far under" : "", dur(op.gpu_time));
  return o;
}

// I/O of the rank's process and its workers, per process when there are several
std::string text_io(const IoStats& io) {
  std::string o;
  if (io.calls)
    o += fmt::format(
        "  I/O (process and workers): {} calls, {:.1f} MB read, {:.1f} MB written, {} in calls, "
        "{} on the main thread\n",
        io.calls, static_cast<double>(io.bytes_read) / 1e6, static_cast<double>(io.bytes_written) / 1e6,
        dur(io.time), dur(io.main_thread));
  if (io.per_process.size() > 1)
    for (const auto& p : io.per_process)
      o += fmt::format("    pid {:<8} {:<16} {:>7} calls {:>9.1f} MB read {:>9.1f} ms\n", p.pid, visible(p.name),
                       p.calls, static_cast<double>(p.bytes_read) / 1e6, ms(p.time));
  return o;
}

// Collectives, and the rank's wait for the last arriver at those matched across ranks
std::string text_collectives(const CollectiveStats& c) {
  std::string o;
  if (c.count)
    o += fmt::format("  collectives: {} ({} side), {:.1f} MB, {}\n", c.count, c.device_side ? "GPU" : "host",
                     static_cast<double>(c.bytes) / 1e6, dur(c.time));
  if (c.matched)
    o += fmt::format(
        "  collective wait: {} at {} collectives matched across ranks, waiting for the last rank to "
        "arrive; last to arrive {} times\n",
        dur(c.arrival_wait), c.matched, c.last_arrivals);
  return o;
}

// One rank's section, under its label
// One line per device with memory samples: peak (of its capacity), reserved peak, growth per
// step, and the allocator's retries and OOMs when there were any
std::string text_memory(const std::vector<MemoryDevice>& memory) {
  std::string o;
  for (const auto& m : memory) {
    o += fmt::format("  memory: {} peak {}", visible(m.device), bytes(m.peak));
    if (m.capacity > 0) o += fmt::format(" of {} ({:.0f}%)", bytes(m.capacity), pct(m.peak, m.capacity));
    if (m.reserved_peak > 0) o += fmt::format(", reserved peak {}", bytes(m.reserved_peak));
    if (m.step_peak.size() >= 2)
      o += fmt::format(", {}{} per step over {} steps (R² {:.2f})", m.growth_per_step >= 0 ? "+" : "",
                       bytes(static_cast<std::int64_t>(m.growth_per_step)), m.step_peak.size(), m.growth_fit);
    if (m.alloc_retries > 0 || m.ooms > 0) o += fmt::format("; {} allocation retries, {} OOMs", m.alloc_retries, m.ooms);
    o += "\n";
  }
  return o;
}

std::string text_rank(const RankMetrics& r, const Style& st) {
  std::string o = "\n" + st.bold(visible(r.label)) + "\n";
  if (r.has_gpu) o += text_rank_gpu(r);
  o += text_efficiency(r.efficiency);
  o += text_memory(r.memory);
  o += text_io(r.io);
  o += text_collectives(r.collectives);
  if (!r.paths.empty()) o += path_summary("  critical path", r.paths);
  o += what_if_summary(r);
  for (const auto& note : r.notes) o += st.dim(fmt::format("  note: {}", visible(note))) + "\n";
  return o;
}

// "Across ranks" (two ranks or more): step time spread, arrival skew, the job's critical path
std::string text_across_ranks(const Metrics& M, const Style& st) {
  const auto& X = M.cross;
  std::string o = "\n" + st.bold("Across ranks") + "\n";
  o += fmt::format("  median step: fastest {}, median {}, slowest {} (rank {}, +{:.1f}%)\n",
                   dur(X.step_median_min), dur(X.step_median_median), dur(X.step_median_max), X.slowest_rank,
                   100 * X.step_spread);
  if (X.matched_collectives)
    o += fmt::format(
        "  collective arrival skew: median {}, max {} over {} collectives; last to arrive: "
        "rank {} ({:.0f}%)\n",
        dur(X.arrival_skew_median), dur(X.arrival_skew_max), X.matched_collectives, X.last_arriver,
        100 * X.last_arriver_share);
  if (!M.job_paths.empty()) o += path_summary("  job critical path", M.job_paths);
  return o;
}

}  // namespace

std::string_view gain_unit(const Analysis& a, const Finding& f) {
  for (const auto& r : a.metrics.ranks)
    if (r.rank == f.rank) return r.has_steps ? "/step" : " in the window";
  return "/step";
}

std::string text_hang(const Analysis& a, const Style& st) {
  if (!a.hang) return {};
  std::string o = st.bold("Hang") + "\n  " + visible(a.hang->summary) + "\n";
  for (const auto& r : a.hang->ranks)
    o += fmt::format("  {:>8}  {:<20} last entered #{}, last event: {}\n",
                     r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("pid {}", r.pid), r.state, r.last_seq,
                     visible(r.last_event.empty() ? std::string("none") : r.last_event));
  return o + "\n";
}

std::string render_text(const Analysis& a, bool color) {
  const Style st{color};
  const auto& M = a.metrics;
  std::string o = text_header(a, st) + text_hang(a, st) + text_findings(a, st) + text_rank_table(a, st);
  for (std::size_t i = 0; i < M.ranks.size(); ++i) o += text_rank(whole_rank(a, i), st);
  if (M.cross.ranks >= 2) o += text_across_ranks(M, st);
  for (const auto& note : M.notes) o += st.dim(fmt::format("note: {}", visible(note))) + "\n";
  return o;
}

std::string markdown_hang(const Analysis& a) {
  if (!a.hang) return {};
  std::string o = "## Hang\n\n" + md_text(a.hang->summary) +
                  "\n\n| rank | state | communicator | collective | seq | bytes | last entered | last event |\n"
                  "|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : a.hang->ranks)
    o += fmt::format("| {} | {} | {} | {} | #{} | {} | #{} | {} |\n",
                     r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("pid {}", r.pid), md_text(r.state),
                     md_code(r.communicator, MdPlace::TableCell), md_text(r.op), r.seq,
                     r.bytes >= 0 ? std::to_string(r.bytes) : std::string("unknown"), r.last_seq,
                     md_text(r.last_event.empty() ? std::string("none") : r.last_event));
  return o + "\n";
}

// Every trace-derived string goes through md_text or md_code (escape.h); the rest is ours.
std::string render_markdown(const Analysis& a) {
  std::string o;
  const auto& M = a.metrics;
  o += fmt::format("# tracetune analysis: {}\n\n", md_code(a.source, MdPlace::Inline));
  o += fmt::format("{} rank(s), {} steps analysed, {} events, clock {}{}.\n\n", M.ranks.size(), total_steps(a), a.events,
                   md_code(a.clock_domain, MdPlace::Inline), a.options.hta_compat ? ", HTA-compatible definitions" : "");
  o += markdown_hang(a);
  o += "## Findings\n\n";
  if (a.findings.empty()) o += "No rule passed its threshold.\n\n";
  int n = 0;
  for (const auto& g : group_findings(a.findings)) {
    const Finding& f = a.findings[g.worst];
    o += fmt::format("{}. **{}** ({}, {}): {}\n", ++n, to_string(f.category), to_string(f.severity), group_name(g, f),
                     md_text(f.title));
    if (g.ranks.size() > 1)
      o += fmt::format("   - Costs {} to {}{} across these ranks; the lines below are rank {}'s (largest gain)\n",
                       dur(g.cost_min), dur(g.cost_max), gain_unit(a, f), f.rank);
    if (f.gain_estimated)
      o += fmt::format("   - Estimated gain: {}{} ({:.0f}%): {}\n", dur(f.gain), gain_unit(a, f), 100 * f.gain_share,
                       md_text(f.gain_model));
    else
      o += fmt::format("   - Estimated gain: {}\n", md_text(f.gain_model));
    for (const auto& e : f.evidence) o += fmt::format("   - Evidence: {}\n", md_text(e.what));
    if (f.hot.samples > 0)
      o += fmt::format("   - Python: {} ({} samples of {})\n", md_text(hot_spots_line(f.hot)), f.hot.samples,
                       md_text(f.hot.scope));
    o += fmt::format("   - Fix: {}\n", md_text(f.detail));
    if (!f.knobs.empty()) {
      std::string knobs;
      for (const auto& k : f.knobs) knobs += (knobs.empty() ? "" : ", ") + md_code(k, MdPlace::Inline);
      o += fmt::format("   - Knobs: {}\n", knobs);
    }
  }
  o += "\n## Per rank\n\n| rank | steps | median step (ms) | GPU busy % | idle % | compute % | exposed comm % | data wait (ms/step) | "
       "sync (ms/step) |\n|---|---|---|---|---|---|---|---|---|\n";
  for (std::size_t i = 0; i < M.ranks.size(); ++i) {
    const RankMetrics& r = M.ranks[i];
    const double steps = static_cast<double>(std::max<std::size_t>(1, steps_of(a, i)));
    o += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", r.rank,
                     r.has_steps ? steps_of(a, i) : 0, ms(r.step_median), pct(r.gpu.busy, r.gpu.span),
                     pct(r.gpu.idle, r.gpu.span), pct(r.gpu.compute, r.gpu.span),
                     pct(r.gpu.exposed_communication, r.gpu.span), ms(r.data_wait) / steps, ms(r.sync_wait) / steps);
  }
  bool any_notes = !M.notes.empty();
  for (const auto& r : M.ranks) any_notes = any_notes || !r.notes.empty();
  if (any_notes) {
    o += "\n## Notes\n\n";
    for (const auto& note : M.notes) o += fmt::format("- {}\n", md_text(note));
    for (const auto& r : M.ranks)
      for (const auto& note : r.notes) o += fmt::format("- {}: {}\n", md_text(r.label), md_text(note));
  }
  return o;
}

}  // namespace tt::analyzer
