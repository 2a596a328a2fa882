// Reports: JSON (for tools), text (for terminals) and Markdown (for sharing).
#include <algorithm>
#include <functional>
#include <tuple>

#include <fmt/format.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/attribution.h"
#include "tracetune/analyzer/kernel_class.h"
#include "tracetune/trace/summary.h"

#include "escape.h"
#include "format.h"
#include "json_writer.h"

namespace tt::analyzer {

namespace {

double ms(Ns ns) { return static_cast<double>(ns) / 1e6; }
double pct(Ns part, Ns whole) { return 100.0 * trace::share(part, whole); }

void write_breakdown(Json& j, const GpuBreakdown& g) {
  j.key("gpu").begin_object();
  j.kv("span_ns", g.span);
  j.kv("busy_ns", g.busy);
  j.kv("idle_ns", g.idle);
  j.kv("compute_ns", g.compute);
  j.kv("non_compute_ns", g.non_compute);
  j.kv("communication_ns", g.communication);
  j.kv("memory_ns", g.memory);
  j.kv("comm_compute_overlap_ns", g.comm_compute_overlap);
  j.kv("comm_memory_overlap_ns", g.comm_memory_overlap);
  j.kv("exposed_communication_ns", g.exposed_communication);
  j.kv("idle_pct", pct(g.idle, g.span));
  j.kv("compute_pct", pct(g.compute, g.span));
  j.kv("non_compute_pct", pct(g.non_compute, g.span));
  j.kv("comm_compute_overlap_pct", pct(g.comm_compute_overlap, g.communication));
  j.key("exclusive_ns").begin_object();
  static constexpr const char* kNames[8] = {"idle", "compute", "communication", "compute+communication", "memory",
                                            "compute+memory", "communication+memory", "compute+communication+memory"};
  for (int i = 0; i < 8; ++i) j.kv(kNames[i], g.exclusive[i]);
  j.end_object();
  j.end_object();
}

// Critical paths (docs/analysis.md, "Critical path"): one object per step.
void json_hot_functions(Json& j, const HotSpots& h);

void write_paths(Json& j, std::string_view key, const std::vector<StepPath>& paths) {
  j.key(key).begin_array();
  for (const auto& p : paths) {
    j.begin_object();
    j.kv("step", p.step);
    j.kv("rank", p.rank);
    j.kv("start_ns", p.start);
    j.kv("end_ns", p.end);
    j.kv("length_ns", p.length);
    j.kv("complete", p.complete);
    j.key("by_kind_ns").begin_object();
    for (std::size_t k = 0; k < kPathKinds; ++k) j.kv(to_string(static_cast<PathKind>(k)), p.by_kind[k]);
    j.end_object();
    j.key("by_rank").begin_array();
    for (const auto& [rank, ns] : p.by_rank) {
      j.begin_object();
      j.kv("rank", rank);
      j.kv("ns", ns);
      j.end_object();
    }
    j.end_array();
    j.key("top").begin_array();
    for (const auto& sg : p.top) {
      j.begin_object();
      j.kv("kind", to_string(sg.kind));
      j.kv("rank", sg.rank);
      j.kv("what", sg.what);
      j.kv("start_ns", sg.start);
      j.kv("end_ns", sg.end);
      if (sg.hot.samples > 0) json_hot_functions(j, sg.hot);
      j.end_object();
    }
    j.end_array();
    j.end_object();
  }
  j.end_array();
}

// Memory per device (docs/analysis.md, "Memory"); per-step values are -1 where a step had no sample.
void write_memory(Json& j, const std::vector<MemoryDevice>& memory) {
  j.key("memory").begin_array();
  for (const auto& m : memory) {
    j.begin_object();
    j.kv("device", m.device);
    j.kv("capacity_bytes", m.capacity);
    j.kv("peak_bytes", m.peak);
    j.kv("reserved_peak_bytes", m.reserved_peak);
    j.kv("growth_bytes_per_step", m.growth_per_step);
    j.kv("growth_fit", m.growth_fit);
    j.kv("late_growth_bytes_per_step", m.late_growth_per_step);
    j.kv("alloc_retries", m.alloc_retries);
    j.kv("ooms", m.ooms);
    j.key("step_peak_bytes").begin_array();
    for (auto v : m.step_peak) j.num(v);
    j.end_array();
    j.key("step_reserved_bytes").begin_array();
    for (auto v : m.step_reserved) j.num(v);
    j.end_array();
    j.end_object();
  }
  j.end_array();
}

// Kernel efficiency (docs/analysis.md); "gemm_ops" (GEMM and convolution ops counted): 0 when
// the trace carries no shapes.
void write_efficiency(Json& j, const Efficiency& e) {
  j.key("efficiency").begin_object();
  j.kv("gemm_ops", e.ops);
  j.kv("flops_per_step", e.flops_per_step);
  j.kv("achieved_tflops", e.achieved_tflops);
  j.kv("mfu", e.mfu);
  j.kv("peak", e.peak);
  j.key("flops_per_step_by_dtype").begin_object();
  for (const auto& [dtype, flops] : e.flops_by_dtype) j.kv(dtype, flops);
  j.end_object();
  j.key("flops_per_step_by_kind").begin_object();
  for (const auto& [kind, flops] : e.flops_by_kind) j.kv(kind, flops);
  j.end_object();
  j.kv("bandwidth_tbs", e.bandwidth_tbs);
  j.key("roofline").begin_array();
  for (const auto& op : e.roofline) {
    j.begin_object();
    j.kv("op", op.op);
    j.kv("dtype", op.dtype);
    j.kv("calls", op.calls);
    j.kv("flops_per_call", op.flops);
    j.kv("bytes_per_call", op.bytes);
    j.kv("gpu_time_ns", op.gpu_time);
    j.kv("achieved_tflops", op.achieved_tflops);
    j.kv("bound_tflops", op.bound_tflops);
    j.kv("efficiency", op.efficiency());
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

// A scalar of a metrics struct in the JSON: its key and where its value comes from (a member, a
// member function, or a function of the struct), described once as the store describes its
// columns (trace/src/store/store.cpp).
template <class Get>
struct Field {
  std::string_view key;
  Get get;
};

template <class Get>
constexpr Field<Get> field(std::string_view key, Get get) {
  return {key, get};
}

// "key": value for each of `fields`, in order.
template <class S, class Fields>
void write_fields(Json& j, const S& s, const Fields& fields) {
  std::apply([&](const auto&... f) { (j.kv(f.key, std::invoke(f.get, s)), ...); }, fields);
}

// "key": {fields of s}
template <class S, class Fields>
void write_object(Json& j, std::string_view key, const S& s, const Fields& fields) {
  j.key(key).begin_object();
  write_fields(j, s, fields);
  j.end_object();
}

// "key": [{fields of each item}, ...]
template <class S, class Fields>
void write_objects(Json& j, std::string_view key, const std::vector<S>& items, const Fields& fields) {
  j.key(key).begin_array();
  for (const auto& s : items) {
    j.begin_object();
    write_fields(j, s, fields);
    j.end_object();
  }
  j.end_array();
}

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

void write_io(Json& j, const IoStats& io) {
  j.key("io").begin_object();
  write_fields(j, io, kIoFields);
  write_objects(j, "per_process", io.per_process, kProcessIoFields);
  j.end_object();
}

void write_gemm(Json& j, const GemmStats& g) {
  j.key("gemm").begin_object();
  write_fields(j, g, kGemmFields);
  j.key("by_format_ns").begin_object();
  for (int f = 1; f < 10; ++f)
    if (g.by_format[f]) j.kv(to_string(static_cast<GemmFormat>(f)), g.by_format[f]);
  j.end_object();
  j.end_object();
}

void write_steps(Json& j, const std::vector<StepMetrics>& steps) {
  j.key("steps").begin_array();
  for (const auto& s : steps) {
    j.begin_object();
    write_fields(j, s, kStepFields);
    if (s.replayed) {  // the step's length under each what-if change
      j.key("what_if_ns").begin_object();
      for (std::size_t k = 0; k < kWhatIfs; ++k) j.kv(to_string(static_cast<WhatIf>(k)), s.what_if[k]);
      j.end_object();
    }
    j.end_object();
  }
  j.end_array();
}

void write_rank(Json& j, const RankMetrics& r) {
  j.begin_object();
  write_fields(j, r, kRankFields);
  write_object(j, "step_time", r, kStepTimeFields);
  write_breakdown(j, r.gpu);
  write_objects(j, "idle_by_stream", r.streams, kStreamFields);
  write_object(j, "launch", r.launch, kLaunchFields);
  write_object(j, "transfers", r.transfers, kTransferFields);
  write_io(j, r.io);
  write_gemm(j, r.gemm);
  write_fields(j, r, kWaitFields);
  write_object(j, "collectives", r.collectives, kCollectiveFields);
  write_objects(j, "top_kernels", r.top_kernels, kKernelFields);
  write_steps(j, r.steps);
  write_paths(j, "critical_path", r.paths);
  write_memory(j, r.memory);
  write_efficiency(j, r.efficiency);
  j.key("notes").begin_array();
  for (const auto& n : r.notes) j.str(n);
  j.end_array();
  j.end_object();
}

// A finding's Python attribution (only where the trace holds samples in its stretches).
void json_hot_functions(Json& j, const HotSpots& h) {
  j.key("hot_functions").begin_object();
  j.kv("scope", h.scope);
  j.kv("samples", h.samples);
  write_objects(j, "top", h.top, kHotFunctionFields);
  j.end_object();
}

}  // namespace

// "hang": only in a report of a trace where some rank is stuck in a collective (hang.h).
void write_hang(Json& j, const HangReport& h) {
  j.key("hang").begin_object();
  j.kv("summary", h.summary);
  j.key("ranks").begin_array();
  for (const auto& r : h.ranks) {
    j.begin_object();
    j.kv("rank", r.rank);
    j.kv("pid", r.pid);
    j.kv("state", r.state);
    j.kv("communicator", r.communicator);
    j.kv("op", r.op);
    j.kv("seq", r.seq);
    j.kv("bytes", r.bytes);
    j.kv("last_seq", r.last_seq);
    j.kv("waiting_since_ns", r.waiting_since);
    j.kv("last_event", r.last_event);
    j.kv("last_event_end_ns", r.last_event_end);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

std::string render_json(const Analysis& a) {
  Json j;
  j.begin_object();
  j.kv("schema", std::string_view("tracetune.analysis"));
  j.kv("version", kReportVersion);
  j.kv("source", a.source);
  j.kv("clock_domain", a.clock_domain);
  j.kv("events", a.events);
  j.key("options").begin_object();
  j.kv("hta_compat", a.options.hta_compat);
  if (a.options.rank >= 0) j.kv("rank", a.options.rank); else { j.key("rank"); j.null(); }
  if (a.options.steps) {
    j.key("steps").begin_array();
    j.num(a.options.steps->first);
    j.num(a.options.steps->second);
    j.end_array();
  } else {
    j.key("steps");
    j.null();
  }
  j.kv("kernel_wait_threshold_ns", a.options.kernel_wait_threshold);
  j.end_object();
  if (a.hang) write_hang(j, *a.hang);
  j.key("findings").begin_array();
  for (const auto& f : a.findings) {
    j.begin_object();
    j.kv("category", to_string(f.category));
    j.kv("severity", to_string(f.severity));
    if (f.rank >= 0) j.kv("rank", f.rank); else { j.key("rank"); j.null(); }
    j.kv("title", f.title);
    j.kv("detail", f.detail);
    j.kv("share", f.share);
    j.kv("cost_ns", f.cost);
    j.kv("gain_ns", f.gain);
    j.kv("gain_share", f.gain_share);
    j.kv("gain_model", f.gain_model);
    j.kv("leaves_out", f.leaves_out);
    j.kv("gain_estimated", f.gain_estimated);
    j.key("evidence").begin_array();
    for (const auto& e : f.evidence) {
      j.begin_object();
      j.kv("what", e.what);
      if (e.end > e.start) {
        j.kv("start_ns", e.start);
        j.kv("end_ns", e.end);
      }
      if (e.rank >= 0) j.kv("rank", e.rank);
      j.end_object();
    }
    j.end_array();
    j.key("knobs").begin_array();
    for (const auto& k : f.knobs) j.str(k);
    j.end_array();
    if (f.hot.samples > 0) json_hot_functions(j, f.hot);
    j.end_object();
  }
  j.end_array();
  // a finding that holds on several ranks, as the text report shows it (indices into findings)
  j.key("finding_groups").begin_array();
  for (const auto& g : group_findings(a.findings)) {
    j.begin_object();
    j.kv("category", to_string(g.category));
    j.key("ranks").begin_array();
    for (auto r : g.ranks) j.num(r);
    j.end_array();
    j.kv("worst_finding", g.worst);
    j.kv("worst_rank", a.findings[g.worst].rank);
    j.kv("gain_ns_min", g.gain_min);
    j.kv("gain_ns_max", g.gain_max);
    j.kv("cost_ns_min", g.cost_min);
    j.kv("cost_ns_max", g.cost_max);
    j.key("findings").begin_array();
    for (auto i : g.findings) j.num(static_cast<std::int64_t>(i));
    j.end_array();
    j.end_object();
  }
  j.end_array();
  j.key("ranks").begin_array();
  for (const auto& r : a.metrics.ranks) write_rank(j, r);
  j.end_array();
  write_object(j, "cross_rank", a.metrics.cross, kCrossRankFields);
  write_paths(j, "job_critical_path", a.metrics.job_paths);
  j.key("notes").begin_array();
  for (const auto& n : a.metrics.notes) j.str(n);
  j.end_array();
  j.end_object();
  j.out += '\n';
  return j.out;
}

namespace {

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
  std::vector<std::size_t> order(kPathKinds);
  for (std::size_t k = 0; k < kPathKinds; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return by_kind[a] > by_kind[b]; });
  std::string parts;
  for (std::size_t k : order) {
    if (by_kind[k] == 0 || pct(by_kind[k], total) < 0.5) continue;
    parts += fmt::format("{}{:.0f}% {}", parts.empty() ? "" : ", ", pct(by_kind[k], total), to_string(static_cast<PathKind>(k)));
  }
  std::string o = fmt::format("{} ({} step{}, {:.1f} ms): {}\n", title, paths.size(), paths.size() == 1 ? "" : "s", ms(total), parts);
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
  for (const auto& r : a.metrics.ranks) n += r.has_steps ? r.steps.size() : 0;
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
std::string text_rank_table(const Metrics& M, const Style& st) {
  std::string o = "\n" + st.bold("Per rank") + "\n";
  o += fmt::format("  {:<6} {:>6} {:>11} {:>9} {:>9} {:>8} {:>9} {:>10} {:>10} {:>8} {:>8}\n", "rank",
                   "steps", "step med", "step p90", "GPU busy", "idle", "compute", "comm exp.", "data wait",
                   "sync", "I/O");
  for (const auto& r : M.ranks) {
    const Ns span = r.gpu.span;
    o += fmt::format(
        "  {:<6} {:>6} {:>9.1f}ms {:>7.1f}ms {:>8.1f}% {:>7.1f}% {:>8.1f}% {:>9.1f}% {:>8.1f}ms {:>6.1f}ms "
        "{:>6.1f}ms\n",
        r.rank, r.has_steps ? r.steps.size() : 0, ms(r.step_median), ms(r.step_p90),
        r.has_gpu ? pct(r.gpu.busy, span) : 0.0, r.has_gpu ? pct(r.gpu.idle, span) : 0.0,
        r.has_gpu ? pct(r.gpu.compute, span) : 0.0, r.has_gpu ? pct(r.gpu.exposed_communication, span) : 0.0,
        ms(r.data_wait) / static_cast<double>(std::max<std::size_t>(1, r.steps.size())),
        ms(r.sync_wait) / static_cast<double>(std::max<std::size_t>(1, r.steps.size())),
        ms(r.io.main_thread) / static_cast<double>(std::max<std::size_t>(1, r.steps.size())));
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
  std::string o = text_header(a, st) + text_hang(a, st) + text_findings(a, st) + text_rank_table(M, st);
  for (const auto& r : M.ranks) o += text_rank(r, st);
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
  for (const auto& r : M.ranks) {
    const double steps = static_cast<double>(std::max<std::size_t>(1, r.steps.size()));
    o += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.1f} |\n", r.rank,
                     r.has_steps ? r.steps.size() : 0, ms(r.step_median), pct(r.gpu.busy, r.gpu.span),
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
