// `tracetune info`: what a trace holds — time span, ranks, devices, event counts per kind,
// steps and diagnostics — as a struct, as text for people, and as JSON for scripts and tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tracetune/trace/json_text.h"

#include "tracetune/trace/model.h"

namespace tt::trace {

struct TraceSummary {
  std::string clock_domain;
  Ns start = 0, end = 0;
  std::vector<int> ranks;  // distinct ranks, sorted; empty when unknown
  std::size_t processes = 0, threads = 0, streams = 0;
  struct DeviceInfo {
    int rank = -1;
    int index = 0;
    std::string name;
    int sm_count = -1;
    std::int64_t total_memory = -1;
    int compute_major = -1, compute_minor = -1;
  };
  std::vector<DeviceInfo> devices;
  // kind -> count, with stable, documented keys (docs/trace-format.md)
  std::map<std::string, std::uint64_t> counts;
  std::uint64_t total_events = 0;
  struct StepInfo {
    int rank = -1;
    std::int64_t number = 0;
    Ns start = 0, dur = 0;
  };
  std::vector<StepInfo> steps;
  std::vector<Diagnostic> diagnostics;
};

TraceSummary summarize(const Trace& t);
std::string summary_json(const TraceSummary& s);
// Every key summary_json writes, as dotted paths ("devices.name"); the schema test holds them to
// docs/trace-format.md.
std::vector<std::string> summary_json_fields();
std::string summary_text(const TraceSummary& s);

}  // namespace tt::trace
