// Kernel efficiency (docs/analysis.md, "Kernel efficiency"): the model FLOPs of a step's GEMMs
// (counters "gemm.flops.<dtype>" the Kineto importer derives from record_shapes/with_flops) and
// the model FLOPs utilisation: the time those FLOPs take at the device's peak for their dtype,
// over the step time.
#include <algorithm>
#include <map>
#include <string_view>

#include <fmt/format.h>

#include "tracetune/analyzer/metrics.h"

#include "track_owner.h"

namespace tt::analyzer {
namespace {

// Dense peaks, TFLOP/s, from NVIDIA's datasheets (A100: "NVIDIA A100 Tensor Core GPU" datasheet;
// H100/H200: "NVIDIA H100 Tensor Core GPU" and "H200" datasheets, SXM and PCIe columns; V100:
// "NVIDIA V100 Tensor Core GPU" datasheet, SXM2). fp32 is the CUDA-core rate: an FP32 GEMM that
// runs on tensor cores as TF32 can exceed 100% of it, and the report says which peak it used.
struct Peak {
  std::string_view match;  // substring of the device name; the first match wins
  std::string_view name;
  double fp32, bf16, fp16, fp64;
};
constexpr Peak kPeaks[] = {
    {"H100 PCIe", "H100 PCIe", 51.0, 756.0, 756.0, 25.6},
    {"H100", "H100 SXM", 66.9, 989.4, 989.4, 33.5},
    {"H200", "H200 SXM", 66.9, 989.4, 989.4, 33.5},
    {"A100", "A100", 19.5, 312.0, 312.0, 9.7},
    {"V100", "V100 SXM2", 15.7, 125.0, 125.0, 7.8},
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

}  // namespace

Efficiency efficiency_of(const trace::Trace& t, const RankMetrics& r) {
  Efficiency e;
  const auto& c = t.counters;
  std::map<std::string, std::vector<double>> per_step;  // dtype -> FLOPs per step
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::string_view name = t.strings.get(c.name[i]);
    if (!name.starts_with("gemm.flops.") || track_process(t, c.track[i]) != r.process) continue;
    const long s = step_at(r.steps, c.ts[i]);
    if (s < 0) continue;
    auto& v = per_step[std::string(name.substr(11))];
    v.resize(r.steps.size(), 0.0);
    v[static_cast<std::size_t>(s)] += c.value[i];
    ++e.ops;
  }
  if (e.ops == 0 || r.steps.empty()) return e;
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
    e.mfu = median(util);
    e.peak = fmt::format("{} (from \"{}\"): FP32 {} / BF16 {} / FP16 {} TFLOP/s dense, NVIDIA datasheet", peak->name,
                         r.device, peak->fp32, peak->bf16, peak->fp16);
  }
  return e;
}

}  // namespace tt::analyzer
