// Memory per step (docs/analysis.md, "Memory"): counter samples named "<device> memory.<kind>"
// on the rank's own process, by step. Sources: the Python integration samples the allocator
// and the RSS at every step's end (stamped with the end time); Kineto's [memory] events become
// samples at every allocation (imported by trace/src/import/kineto/kineto_import.cpp). A sample belongs to
// the step with start < ts <= end.
#include <algorithm>
#include <map>
#include <string_view>

#include "tracetune/analyzer/metrics.h"

#include "track_owner.h"

namespace tt::analyzer {
namespace {

using trace::Trace;

std::int64_t capacity_of(const Trace& t, std::string_view device, std::uint32_t process) {
  if (!device.starts_with("cuda:")) return -1;
  int index = -1;
  for (char c : device.substr(5)) {
    if (c < '0' || c > '9') return -1;
    index = (index < 0 ? 0 : index * 10) + (c - '0');
  }
  std::int64_t any = -1;
  for (const auto& d : t.devices) {
    if (d.index != index || d.total_memory <= 0) continue;
    if (d.process == process) return d.total_memory;
    any = d.total_memory;
  }
  return any;
}

// Least squares of y over 0..n-1: (slope, R²).
std::pair<double, double> line_fit(const std::vector<std::int64_t>& y) {
  const double n = static_cast<double>(y.size());
  if (y.size() < 2) return {0, 0};
  double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double x = static_cast<double>(i), v = static_cast<double>(y[i]);
    sx += x, sy += v, sxx += x * x, sxy += x * v, syy += v * v;
  }
  const double vx = sxx - sx * sx / n, vy = syy - sy * sy / n, cxy = sxy - sx * sy / n;
  if (vx <= 0) return {0, 0};
  const double slope = cxy / vx;
  return {slope, vy > 0 ? (cxy * cxy) / (vx * vy) : 1.0};
}

// The step index with start < ts <= end (-1: none); steps are sorted and disjoint.
long step_of(const std::vector<StepMetrics>& steps, Ns ts) {
  auto it = std::lower_bound(steps.begin(), steps.end(), ts, [](const StepMetrics& s, Ns v) { return s.end < v; });
  return it != steps.end() && it->start < ts ? static_cast<long>(it - steps.begin()) : -1;
}

}  // namespace

std::vector<MemoryDevice> memory_by_device(const Trace& t, const RankMetrics& r) {
  std::map<std::string, MemoryDevice> by_device;
  const auto& c = t.counters;
  const std::size_t steps = r.steps.size();
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::string_view name = t.strings.get(c.name[i]);
    const auto cut = name.find(" memory.");
    if (cut == std::string_view::npos || track_process(t, c.track[i]) != r.process) continue;
    const std::string_view kind = name.substr(cut + 8);
    const auto value = static_cast<std::int64_t>(c.value[i]);
    MemoryDevice& m = by_device[std::string(name.substr(0, cut))];
    if (kind == "max_allocated") m.peak = std::max(m.peak, value);
    else if (kind == "alloc_retries") m.alloc_retries = std::max(m.alloc_retries, value);
    else if (kind == "ooms") m.ooms = std::max(m.ooms, value);
    const bool used = kind == "allocated" || kind == "rss", reserved = kind == "reserved";
    if (!used && !reserved) continue;
    (used ? m.peak : m.reserved_peak) = std::max(used ? m.peak : m.reserved_peak, value);
    const long s = step_of(r.steps, c.ts[i]);
    if (s < 0) continue;
    auto& per_step = used ? m.step_peak : m.step_reserved;
    if (per_step.empty()) per_step.assign(steps, -1);
    per_step[static_cast<std::size_t>(s)] = std::max(per_step[static_cast<std::size_t>(s)], value);
  }
  std::vector<MemoryDevice> out;
  for (auto& [device, m] : by_device) {
    m.device = device;
    if (m.step_peak.empty() && !m.step_reserved.empty()) {  // only reserved recorded (an nsys export): use it
      m.step_peak = m.step_reserved;
      m.peak = std::max(m.peak, m.reserved_peak);
    }
    m.capacity = capacity_of(t, device, r.process);
    std::vector<std::int64_t> seen;  // steps with a sample, in order
    for (auto v : m.step_peak)
      if (v >= 0) seen.push_back(v);
    std::tie(m.growth_per_step, m.growth_fit) = line_fit(seen);
    m.late_growth_per_step = line_fit(std::vector<std::int64_t>(seen.begin() + static_cast<long>(seen.size() / 2), seen.end())).first;
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tt::analyzer
