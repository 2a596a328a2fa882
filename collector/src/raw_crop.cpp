// Cutting a process's records to a time span (merge.h, MergeOptions::keep_from_ns): what a flight
// recorder's dump and a capture's trace hold.
#include <algorithm>
#include <climits>
#include <map>
#include <string>
#include <vector>

#include "tracetune/collector/merge.h"
#include "tracetune/collector/record_reader.h"

namespace tt::collector {
namespace {

template <class T, class Span>
void keep_overlapping(std::vector<ThreadRecord<T>>& records, std::int64_t from, std::int64_t to, Span span) {
  std::erase_if(records, [&](const ThreadRecord<T>& r) {
    const auto [start, end] = span(r.rec);
    return end < from || start > to;
  });
}

auto spanned = [](const auto& r) { return std::pair{r.start_ns, r.end_ns}; };
auto instant = [](const auto& r) { return std::pair{r.ts_ns, r.ts_ns}; };

// The start of the `n`-th last Step record of `p` (ring chunks are not in time order: by end);
// INT64_MIN when it holds fewer: then it keeps all it holds.
std::int64_t last_steps_start(const RawProcess& p, std::int64_t n) {
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // (end, start)
  for (const auto& s : p.steps)
    if (s.rec.kind == StepKind::Step) steps.emplace_back(s.rec.end_ns, s.rec.start_ns);
  if (static_cast<std::int64_t>(steps.size()) < n) return INT64_MIN;
  const auto nth = steps.end() - n;
  std::nth_element(steps.begin(), nth, steps.end());
  return nth->second;
}

bool has_steps(const RawProcess& p) {
  return std::any_of(p.steps.begin(), p.steps.end(), [](const auto& s) { return s.rec.kind == StepKind::Step; });
}

}  // namespace

void crop_to_last_steps(std::span<RawProcess*> processes, std::int64_t steps) {
  std::map<std::string, std::int64_t> host_from;  // the earliest start kept by a stepping process of each host
  std::vector<std::int64_t> from(processes.size(), INT64_MIN);
  for (std::size_t i = 0; i < processes.size(); ++i) {
    if (!has_steps(*processes[i])) continue;
    from[i] = last_steps_start(*processes[i], steps);
    auto [it, fresh] = host_from.emplace(processes[i]->header.host, from[i]);
    if (!fresh) it->second = std::min(it->second, from[i]);
  }
  for (std::size_t i = 0; i < processes.size(); ++i) {
    RawProcess& p = *processes[i];
    if (!has_steps(p)) {
      const auto host = host_from.find(p.header.host);
      if (host != host_from.end()) crop_raw_process(p, host->second, INT64_MAX);
      continue;
    }
    crop_raw_process(p, from[i], INT64_MAX);
    // whole steps only: the step that ended as the first kept one began is out
    std::erase_if(p.steps, [&](const ThreadRecord<StepRecord>& s) { return s.rec.start_ns < from[i]; });
  }
}

void crop_raw_process(RawProcess& p, std::int64_t from, std::int64_t to) {
  keep_overlapping(p.io, from, to, spanned);
  keep_overlapping(p.ranges, from, to, spanned);
  keep_overlapping(p.marks, from, to, instant);
  keep_overlapping(p.steps, from, to, spanned);
  keep_overlapping(p.counters, from, to, instant);
  // device-side operations are on the GPU's clock: kept (the merger places them with host pairs)
  keep_overlapping(p.nccl_colls, from, to, [](const NcclCollRecord& r) {
    return r.side == NcclSide::Device ? std::pair{INT64_MIN, INT64_MAX} : std::pair{r.start_ns, r.end_ns};
  });
}

}  // namespace tt::collector
