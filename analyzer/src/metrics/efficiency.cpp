// Kernel efficiency (docs/analysis.md, "Kernel efficiency"): the model FLOPs of a step's GEMMs,
// convolutions and attention (counters "gemm.flops.<dtype>", "conv.flops.<dtype>" and
// "attention.flops.<dtype>" the Kineto importer derives from record_shapes/with_flops) and the
// model FLOPs utilisation: the time those FLOPs take at the device's peak for their dtype, over
// the step time.
#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <tuple>

#include <fmt/format.h>

#include "tracetune/analyzer/metrics.h"

#include "track_owner.h"

namespace tt::analyzer {
namespace {

// Dense peaks, TFLOP/s, from NVIDIA's datasheets (A100: "NVIDIA A100 Tensor Core GPU" datasheet;
// H100/H200: "NVIDIA H100 Tensor Core GPU" and "H200" datasheets, SXM and PCIe columns; V100:
// "NVIDIA V100 Tensor Core GPU" datasheet, SXM2). fp32 is the CUDA-core rate: an FP32 GEMM that
// runs on tensor cores as TF32 can exceed 100% of it, and the report says which peak it used.
// Memory bandwidth, TB/s, from the same datasheets (GPU memory bandwidth row).
struct Peak {
  std::string_view match;  // substring of the device name; the first match wins
  std::string_view name;
  double fp32, bf16, fp16, fp64;
  double bandwidth;
};
constexpr Peak kPeaks[] = {
    {"H100 PCIe", "H100 PCIe", 51.0, 756.0, 756.0, 25.6, 2.0},
    {"H100", "H100 SXM", 66.9, 989.4, 989.4, 33.5, 3.35},
    {"H200", "H200 SXM", 66.9, 989.4, 989.4, 33.5, 4.8},
    {"A100-SXM4-80GB", "A100 80GB SXM", 19.5, 312.0, 312.0, 9.7, 2.039},
    {"A100 80GB PCIe", "A100 80GB PCIe", 19.5, 312.0, 312.0, 9.7, 1.935},
    {"A100", "A100 40GB", 19.5, 312.0, 312.0, 9.7, 1.555},
    {"V100", "V100 SXM2", 15.7, 125.0, 125.0, 7.8, 0.9},
};

const Peak* peak_of(std::string_view device) {
  for (const auto& p : kPeaks)
    if (device.find(p.match) != std::string_view::npos) return &p;
  return nullptr;
}

double peak_for(const Peak& p, std::string_view dtype) {
  if (dtype == "bf16") return p.bf16;
  if (dtype == "fp16") return p.fp16;
  if (dtype == "fp64") return p.fp64;
  if (dtype == "fp32") return p.fp32;
  return 0;  // "other": not counted against a peak
}

// The step index with start <= ts < end (-1: none); steps are sorted and disjoint.
long step_at(const std::vector<StepMetrics>& steps, Ns ts) {
  auto it = std::upper_bound(steps.begin(), steps.end(), ts, [](Ns v, const StepMetrics& s) { return v < s.end; });
  return it != steps.end() && it->start <= ts ? static_cast<long>(it - steps.begin()) : -1;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// A model-FLOPs counter of the Kineto importer: "<kind>.flops.<dtype>" or "<kind>.bytes.<dtype>".
struct FlopsCounter {
  std::string_view kind, dtype;
  bool bytes = false;
};
std::optional<FlopsCounter> flops_counter(std::string_view name) {
  for (std::string_view kind : {"gemm", "conv", "attention"}) {
    if (!name.starts_with(kind) || name.substr(kind.size()).size() < 7 || name[kind.size()] != '.') continue;
    const std::string_view what = name.substr(kind.size() + 1, 6), dtype = name.substr(kind.size() + 7);
    if (what == "flops.") return FlopsCounter{kind, dtype, false};
    if (what == "bytes.") return FlopsCounter{kind, dtype, true};
  }
  return std::nullopt;
}

// A GEMM or convolution op as the importer describes it: counters at the op's start on its thread.
struct GemmSample {
  std::string dtype;
  double flops = 0, bytes = 0;
};

// The GEMM ops of the process, by (thread track, start time).
std::map<std::pair<std::uint32_t, Ns>, GemmSample> gemm_samples(const trace::Trace& t, std::uint32_t process) {
  std::map<std::pair<std::uint32_t, Ns>, GemmSample> out;
  const auto& c = t.counters;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const auto f = flops_counter(t.strings.get(c.name[i]));
    if (!f || track_process(t, c.track[i]) != process) continue;
    GemmSample& g = out[{c.track[i], c.ts[i]}];
    g.dtype = std::string(f->dtype);
    (f->bytes ? g.bytes : g.flops) += c.value[i];
  }
  return out;
}

// The GPU time of each correlation id's kernels on the process's streams.
std::map<std::uint32_t, Ns> kernel_time_by_correlation(const trace::Trace& t, std::uint32_t process) {
  std::map<std::uint32_t, Ns> out;
  for (const std::uint32_t track : t.tracks_of_process(process))
    if (const trace::TrackSlice* sl = trace::find_slice(t.slices_kernels(), track))
      for (std::uint32_t i = sl->begin; i < sl->end; ++i)
        if (t.kernels.correlation[i] != 0) out[t.kernels.correlation[i]] += std::max<Ns>(0, t.kernels.dur[i]);
  return out;
}

// The first row of a track's slice (rows sorted by start) that starts at or after `ts`.
std::uint32_t first_at_or_after(const std::vector<Ns>& start, const trace::TrackSlice& slice, Ns ts) {
  const auto b = start.begin() + slice.begin, e = start.begin() + slice.end;
  return static_cast<std::uint32_t>(std::lower_bound(b, e, ts) - start.begin());
}

// The GPU time of the innermost op that starts at `ts` on `track`: the kernels of the launch
// calls made inside it on its thread. -1: no op range there. Both lookups are binary searches, so the
// rooflines cost O(ops log events), not O(ops x calls).
Ns op_gpu_time(const trace::Trace& t, std::uint32_t track, Ns ts, const std::map<std::uint32_t, Ns>& kernel_time,
               trace::StringId& name) {
  const trace::TrackSlice* ranges = trace::find_slice(t.slices_ranges(), track);
  if (ranges == nullptr) return -1;
  const auto& r = t.ranges;
  std::uint32_t i = first_at_or_after(r.start, *ranges, ts);
  if (i == ranges->end || r.start[i] != ts) return -1;
  // ranges starting together are ordered outermost first: the GEMM is the innermost (a wrapping
  // aten::matmul or the step's annotation can start in the same microsecond)
  while (i + 1 < ranges->end && r.start[i + 1] == ts) ++i;
  name = r.name[i];
  const Ns end = r.end(i);
  Ns gpu = 0;
  if (const trace::TrackSlice* calls = trace::find_slice(t.slices_api_calls(), track))
    for (std::uint32_t k = first_at_or_after(t.api_calls.start, *calls, ts); k < calls->end && t.api_calls.start[k] < end; ++k)
      if (auto it = kernel_time.find(t.api_calls.correlation[k]); it != kernel_time.end()) gpu += it->second;
  return gpu;
}

// The op kinds (GEMMs, convolutions) with the most GPU time against their rooflines (at most 5).
std::vector<OpRoofline> rooflines(const trace::Trace& t, std::uint32_t process, const Peak& peak) {
  const auto kernel_time = kernel_time_by_correlation(t, process);
  std::map<std::tuple<trace::StringId, std::string, double, double>, OpRoofline> kinds;
  for (const auto& [at, g] : gemm_samples(t, process)) {
    trace::StringId name = trace::kNone;
    const Ns gpu = g.bytes > 0 && g.flops > 0 ? op_gpu_time(t, at.first, at.second, kernel_time, name) : -1;
    if (gpu <= 0) continue;
    OpRoofline& k = kinds[{name, g.dtype, g.flops, g.bytes}];
    k.op = std::string(t.strings.get(name)), k.dtype = g.dtype, k.flops = g.flops, k.bytes = g.bytes;
    ++k.calls;
    k.gpu_time += gpu;
  }
  std::vector<OpRoofline> out;
  for (auto& [key, k] : kinds) {
    const double p = peak_for(peak, k.dtype);
    if (p <= 0) continue;
    k.achieved_tflops = k.flops * static_cast<double>(k.calls) / (static_cast<double>(k.gpu_time) / 1e9) / 1e12;
    k.bound_tflops = std::min(p, k.flops / k.bytes * peak.bandwidth);  // FLOP/B x TB/s = TFLOP/s
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const OpRoofline& a, const OpRoofline& b) { return a.gpu_time > b.gpu_time; });
  if (out.size() > 5) out.resize(5);
  return out;
}

}  // namespace

Efficiency efficiency_of(const trace::Trace& t, const RankMetrics& r) {
  Efficiency e;
  const auto& c = t.counters;
  std::map<std::string, std::vector<double>> per_step, per_kind;  // dtype / kind -> FLOPs per step
  for (std::size_t i = 0; i < c.size(); ++i) {
    const auto f = flops_counter(t.strings.get(c.name[i]));
    if (!f || f->bytes || track_process(t, c.track[i]) != r.process) continue;
    const long s = step_at(r.steps, c.ts[i]);
    if (s < 0) continue;
    for (auto* v : {&per_step[std::string(f->dtype)], &per_kind[std::string(f->kind)]}) {
      v->resize(r.steps.size(), 0.0);
      (*v)[static_cast<std::size_t>(s)] += c.value[i];
    }
    ++e.ops;
  }
  if (e.ops == 0 || r.steps.empty()) return e;
  for (const auto& [kind, v] : per_kind) e.flops_by_kind.emplace_back(kind, median(v));
  const Peak* peak = peak_of(r.device);
  std::vector<double> flops(r.steps.size(), 0.0), ideal(r.steps.size(), 0.0), util;
  for (const auto& [dtype, v] : per_step) {
    e.flops_by_dtype.emplace_back(dtype, median(v));
    const double p = peak ? peak_for(*peak, dtype) : 0;
    for (std::size_t s = 0; s < v.size(); ++s) {
      flops[s] += v[s];
      if (p > 0) ideal[s] += v[s] / (p * 1e12);  // seconds at the peak
    }
  }
  for (std::size_t s = 0; s < r.steps.size(); ++s)
    if (r.steps[s].wall() > 0) util.push_back(ideal[s] / (static_cast<double>(r.steps[s].wall()) / 1e9));
  e.flops_per_step = median(flops);
  e.achieved_tflops = r.step_median > 0 ? e.flops_per_step / (static_cast<double>(r.step_median) / 1e9) / 1e12 : 0;
  if (peak) {
    e.bandwidth_tbs = peak->bandwidth;
    e.roofline = rooflines(t, r.process, *peak);
    e.mfu = median(util);
    e.peak = fmt::format("{} (from \"{}\"): FP32 {} / BF16 {} / FP16 {} TFLOP/s dense, {} TB/s, NVIDIA datasheet",
                         peak->name, r.device, peak->fp32, peak->bf16, peak->fp16, peak->bandwidth);
  }
  return e;
}

}  // namespace tt::analyzer
