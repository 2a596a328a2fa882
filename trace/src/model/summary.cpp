#include "tracetune/trace/summary.h"

#include <algorithm>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "tracetune/trace/json_fields.h"
#include "tracetune/trace/units.h"

namespace tt::trace {

namespace {
// end - start, saturating: a trace whose events span the whole 64-bit range has a duration of
// INT64_MAX ns, not a wrapped negative one.
Ns span_ns(const TraceSummary& s) {
  Ns d = 0;
  return __builtin_sub_overflow(s.end, s.start, &d) ? std::numeric_limits<Ns>::max() : d;
}
}  // namespace

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) out += fmt::format("\\u{:04x}", c);
        else out += ch;
    }
  }
  out += '"';
}

TraceSummary summarize(const Trace& t) {
  TraceSummary s;
  s.clock_domain = t.clock_domain;
  std::tie(s.start, s.end) = t.time_bounds();
  std::set<int> ranks;
  for (const auto& p : t.processes)
    if (p.rank >= 0) ranks.insert(p.rank);
  s.ranks.assign(ranks.begin(), ranks.end());
  s.processes = t.processes.size();
  s.threads = t.threads.size();
  s.streams = t.streams.size();
  for (const auto& d : t.devices) {
    const int rank = d.process != kNone ? t.processes[d.process].rank : -1;
    s.devices.push_back({rank, d.index, d.name, d.sm_count, d.total_memory, d.compute_major, d.compute_minor});
  }
  auto& c = s.counts;
  c["kernels"] = t.kernels.size();
  c["memcpys"] = t.memcpys.size();
  c["memsets"] = t.memsets.size();
  c["syncs"] = t.syncs.size();
  c["steps"] = t.steps.size();
  c["io_calls"] = t.io_calls.size();
  c["counters"] = t.counters.size();
  c["flows"] = t.flows.size();
  c["api_calls"] = t.api_calls.size();
  for (auto a : t.api_calls.api) ++c["api_calls." + std::string(to_string(a))];
  c["ranges"] = t.ranges.size();
  for (auto k : t.ranges.kind) ++c["ranges." + std::string(to_string(k))];
  c["collectives"] = t.collectives.size();
  for (auto side : t.collectives.side) ++c["collectives." + std::string(to_string(side))];
  for (std::size_t i = 0; i < t.memcpys.size(); ++i)
    ++c["memcpys." + std::string(to_string(t.memcpys.direction[i])) + "." +
        std::string(to_string(t.memcpys.src_kind[i])) + "_to_" + std::string(to_string(t.memcpys.dst_kind[i]))];
  s.total_events = t.event_count();
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    const auto proc = t.process_of_track(t.steps.track[i]);
    s.steps.push_back({proc != kNone ? t.processes[proc].rank : -1, t.steps.number[i], t.steps.start[i], t.steps.dur[i]});
  }
  std::sort(s.steps.begin(), s.steps.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.start < b.start;
  });
  s.diagnostics = t.diagnostics;
  return s;
}

namespace {

using json::field;
using json::Lines;
using DeviceInfo = TraceSummary::DeviceInfo;
using StepInfo = TraceSummary::StepInfo;

constexpr auto kDeviceFields = std::tuple(
    field("rank", &DeviceInfo::rank), field("index", &DeviceInfo::index), field("name", &DeviceInfo::name),
    field("sm_count", &DeviceInfo::sm_count), field("total_memory", &DeviceInfo::total_memory),
    field("compute_capability", [](const DeviceInfo& d) { return fmt::format("{}.{}", d.compute_major, d.compute_minor); }));
constexpr auto kStepFields = std::tuple(field("rank", &StepInfo::rank), field("number", &StepInfo::number),
                                        field("start_ns", &StepInfo::start), field("duration_ns", &StepInfo::dur));
constexpr auto kDiagnosticFields =
    std::tuple(field("kind", [](const Diagnostic& d) { return to_string(d.kind); }), field("source", &Diagnostic::source),
               field("reason", &Diagnostic::reason), field("count", &Diagnostic::count));
// `info --json` (docs/trace-format.md, section 7)
constexpr auto kSummaryFields = std::tuple(
    field("clock_domain", &TraceSummary::clock_domain), field("start_ns", &TraceSummary::start),
    field("end_ns", &TraceSummary::end), field("duration_ns", span_ns), field("ranks", &TraceSummary::ranks),
    field("processes", &TraceSummary::processes), field("threads", &TraceSummary::threads),
    field("streams", &TraceSummary::streams), json::array("devices", &TraceSummary::devices, kDeviceFields).one_per_line(),
    field("counts", &TraceSummary::counts).one_per_line(Lines::each_even_empty),
    field("total_events", &TraceSummary::total_events),
    json::array("steps", &TraceSummary::steps, kStepFields).one_per_line(),
    json::array("diagnostics", &TraceSummary::diagnostics, kDiagnosticFields).one_per_line());

}  // namespace

std::string summary_json(const TraceSummary& s) { return json::document_json(s, kSummaryFields, json::Style::indented); }

std::vector<std::string> summary_json_fields() { return json::document_paths(kSummaryFields); }

std::string summary_text(const TraceSummary& s) {
  std::string o;
  o += fmt::format("duration     {}  ({} events, clock {})\n", format_duration(span_ns(s)), s.total_events, s.clock_domain);
  std::string ranks;
  for (int r : s.ranks) ranks += fmt::format("{}{}", ranks.empty() ? "" : ",", r);
  o += fmt::format("ranks        {}\n", ranks.empty() ? "unknown" : ranks);
  o += fmt::format("processes    {}  threads {}  GPU streams {}\n", s.processes, s.threads, s.streams);
  for (const auto& d : s.devices)
    o += fmt::format("device       rank {} #{} {}{}\n", d.rank, d.index, d.name.empty() ? "(unnamed)" : d.name,
                     d.sm_count > 0 ? fmt::format(" ({} SMs, {:.1f} GiB, sm_{}{})", d.sm_count,
                                                  static_cast<double>(d.total_memory) / (1 << 30), d.compute_major, d.compute_minor)
                                    : std::string());
  o += "events\n";
  for (const auto& [k, v] : s.counts) {
    if (v == 0) continue;
    const bool sub = k.find('.') != std::string::npos;
    o += fmt::format("  {:<40} {:>10}\n", sub ? "  " + k.substr(k.find('.') + 1) : k, v);
  }
  if (!s.steps.empty()) {
    std::vector<Ns> d;
    for (const auto& st : s.steps) d.push_back(st.dur);
    std::sort(d.begin(), d.end());
    o += fmt::format("steps        {} (median {}, min {}, max {})\n", s.steps.size(), format_duration(d[d.size() / 2]),
                     format_duration(d.front()), format_duration(d.back()));
  } else {
    o += "steps        none found\n";
  }
  if (!s.diagnostics.empty()) {
    o += "diagnostics\n";
    for (const auto& dg : s.diagnostics)
      o += fmt::format("  {:<9} {:>9}  {} ({})\n", to_string(dg.kind), dg.count, dg.reason, dg.source);
  }
  return o;
}

}  // namespace tt::trace
