// Inside the analyzer: what metrics.cpp shares with critical_path.cpp (not a public header).
#pragma once

#include <string_view>
#include <vector>

#include "tracetune/analyzer/metrics.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

bool is_data_wait_name(std::string_view n);
bool is_sync_call_name(std::string_view n);

// One rank's arrival at a collective matched across ranks (metrics.cpp's cross_rank): a
// communication kernel or device-side record (host = false), or a host-side call.
struct Arrival {
  Ns start = 0, end = 0;
  std::size_t rank = 0;  // index into Metrics::ranks
  std::uint32_t track = 0;
  bool host = false;
};
using CollectiveGroups = std::vector<std::vector<Arrival>>;

// Fills RankMetrics::paths and Metrics::job_paths (docs/analysis.md, "Critical path").
void compute_critical_paths(const trace::Trace& t, const Options& opt, const CollectiveGroups& groups, Metrics& M);

}  // namespace tt::analyzer
