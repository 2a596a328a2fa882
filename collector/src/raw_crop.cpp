// Cutting a process's records to a time span (merge.h, MergeOptions::keep_from_ns): what a flight
// recorder's dump and a capture's trace hold.
#include <algorithm>
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

}  // namespace

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
