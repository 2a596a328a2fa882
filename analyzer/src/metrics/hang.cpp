// Hang diagnosis across ranks (hang.h).
#include "tracetune/analyzer/hang.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <set>

#include <fmt/format.h>

namespace tt::analyzer {
namespace {

using trace::Ns;
using trace::Trace;

constexpr std::string_view kEnterPrefix = "tracetune.collective.enter ";

// "tracetune.collective.enter AllReduce comm=00ab... seq=50 bytes=4096"
struct Entry {
  std::uint32_t process = 0;
  std::string op, comm;
  std::int64_t seq = -1, bytes = -1;
  Ns at = 0;
};

std::optional<std::int64_t> field(std::string_view text, std::string_view key) {
  const auto at = text.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const char* begin = text.data() + at + key.size();
  std::int64_t v = 0;
  const auto r = std::from_chars(begin, text.data() + text.size(), v);
  if (r.ec != std::errc()) return std::nullopt;
  return v;
}

std::optional<Entry> parse_entry(std::string_view name) {
  if (!name.starts_with(kEnterPrefix)) return std::nullopt;
  name.remove_prefix(kEnterPrefix.size());
  Entry e;
  e.op = std::string(name.substr(0, name.find(' ')));
  const auto comm_at = name.find("comm=");
  if (comm_at == std::string_view::npos) return std::nullopt;
  e.comm = std::string(name.substr(comm_at + 5, name.find(' ', comm_at) - comm_at - 5));
  const auto seq = field(name, "seq=");
  if (!seq) return std::nullopt;
  e.seq = *seq;
  e.bytes = field(name, "bytes=").value_or(-1);
  return e;
}

// The communicator's name from the trace's nccl_comm:<id> entries, else its id.
std::string comm_name(const Trace& t, const std::string& id) {
  for (const auto& [k, v] : t.metadata)
    if (k == "nccl_comm:" + id) return v;
  return id;
}

// Each process's last event (its end and what it was), over ranges, I/O and collectives; the
// collectives' enter marks are not activity of the job.
struct LastEvent {
  Ns end = 0;
  std::string what;
};
std::map<std::uint32_t, LastEvent> last_events(const Trace& t) {
  std::map<std::uint32_t, LastEvent> out;
  auto note = [&](const trace::SpanColumns& c, std::size_t i, std::string_view kind) {
    const std::uint32_t p = t.process_of_track(c.track[i]);
    const std::string_view name = t.strings.get(c.name[i]);
    if (p == trace::kNone || name.starts_with(kEnterPrefix) || name.starts_with("tracetune.window")) return;
    LastEvent& e = out[p];
    if (c.end(i) >= e.end) e = {c.end(i), fmt::format("{} {}", kind, name)};
  };
  for (std::size_t i = 0; i < t.ranges.size(); ++i) note(t.ranges, i, "range");
  for (std::size_t i = 0; i < t.io_calls.size(); ++i) note(t.io_calls, i, "I/O call");
  for (std::size_t i = 0; i < t.collectives.size(); ++i) note(t.collectives, i, "collective");
  for (std::size_t i = 0; i < t.steps.size(); ++i) note(t.steps, i, "step");
  return out;
}

std::string who(const trace::Process& p) {
  return p.rank >= 0 ? fmt::format("rank {}", p.rank) : fmt::format("pid {}", p.pid);
}

}  // namespace

std::optional<HangReport> diagnose_hang(const Trace& t) {
  // entered and completed (communicator, seq) per process
  std::vector<Entry> entries;
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    auto e = parse_entry(t.strings.get(t.ranges.name[i]));
    if (!e) continue;
    e->process = t.process_of_track(t.ranges.track[i]);
    e->at = t.ranges.start[i];
    if (e->process != trace::kNone) entries.push_back(std::move(*e));
  }
  if (entries.empty()) return std::nullopt;
  std::set<std::tuple<std::uint32_t, std::string, std::int64_t>> completed;
  for (std::size_t i = 0; i < t.collectives.size(); ++i)
    completed.emplace(t.process_of_track(t.collectives.track[i]), std::string(t.strings.get(t.collectives.communicator[i])),
                      t.collectives.seq[i]);
  // per communicator: the processes in it, each one's last entry, and the stuck ones
  std::map<std::string, std::map<std::uint32_t, const Entry*>> last_entry;
  for (const Entry& e : entries) {
    const Entry*& cur = last_entry[e.comm][e.process];
    if (cur == nullptr || e.seq > cur->seq) cur = &e;
  }
  // a member whose calls on it were all completed before the recorded span's entries: known from its rows
  std::map<std::pair<std::uint32_t, std::string>, std::int64_t> last_completed;
  for (const auto& [p, comm, seq] : completed) {
    auto& v = last_completed[{p, comm}];
    v = std::max(v, seq);
  }
  std::vector<Entry> from_rows;
  from_rows.reserve(last_completed.size());
  for (const auto& [key, seq] : last_completed)
    if (last_entry.contains(key.second) && !last_entry[key.second].contains(key.first) && key.first != trace::kNone)
      from_rows.push_back(Entry{key.first, "", key.second, seq, -1, 0});
  for (const Entry& e : from_rows) last_entry[e.comm][e.process] = &e;
  const auto last = last_events(t);
  HangReport report;
  std::vector<std::string> stuck_words, missing_words;
  for (const auto& [comm, members] : last_entry) {
    const Entry* waited = nullptr;  // the highest sequence number some rank waits in
    for (const auto& [p, e] : members)
      if (!completed.contains({p, comm, e->seq}) && (waited == nullptr || e->seq > waited->seq)) waited = e;
    if (waited == nullptr) continue;
    for (const auto& [p, e] : members) {
      HangRank r;
      r.rank = t.processes[p].rank;
      r.pid = t.processes[p].pid;
      r.communicator = comm_name(t, comm);
      r.op = waited->op;
      r.seq = waited->seq;
      r.bytes = waited->bytes;
      r.last_seq = e->seq;
      if (const auto it = last.find(p); it != last.end()) r.last_event_end = it->second.end, r.last_event = it->second.what;
      if (e->seq >= waited->seq && !completed.contains({p, comm, e->seq})) {
        r.state = "stuck in collective";
        r.waiting_since = e->at;
        stuck_words.push_back(who(t.processes[p]));
      } else if (e->seq < waited->seq) {
        r.state = "never arrived";
        missing_words.push_back(fmt::format("{} (last entered #{}; last event: {})", who(t.processes[p]), e->seq,
                                            r.last_event.empty() ? "none" : r.last_event));
      } else {
        r.state = "arrived";
      }
      report.ranks.push_back(std::move(r));
    }
    report.summary += fmt::format("{}{} stuck in {} #{} on {} ({} bytes); never arrived: {}", report.summary.empty() ? "" : "; ",
                                  fmt::join(stuck_words, ", "), waited->op, waited->seq, comm_name(t, comm), waited->bytes,
                                  missing_words.empty() ? "no rank (all entered; none completed)" : fmt::format("{}", fmt::join(missing_words, ", ")));
    stuck_words.clear();
    missing_words.clear();
  }
  if (report.ranks.empty()) return std::nullopt;
  std::stable_sort(report.ranks.begin(), report.ranks.end(), [](const HangRank& a, const HangRank& b) { return a.rank < b.rank; });
  return report;
}

}  // namespace tt::analyzer
