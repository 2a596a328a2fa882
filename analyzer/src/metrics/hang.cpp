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

bool has_metadata(const Trace& t, std::string_view key) {
  return std::any_of(t.metadata.begin(), t.metadata.end(), [&](const auto& kv) { return kv.first == key; });
}

// A collective recorded by the NCCL profiler plugin (docs/collector.md §8.3): its host-side row
// is written when NCCL enqueued it (the rank entered it), its device-side row when every channel
// of its kernel stopped (it completed). Rows of a communicator c10d names for another backend
// (gloo, MPI: one row per call, written when it returned), of NCCL's NVTX ranges (no
// communicator, no sequence number) and of operations without channels (NCCL 2.28's
// symmetric-memory collectives, which get no device row) are not.
bool nccl_plugin_row(const Trace& t, std::size_t i) {
  const auto& c = t.collectives;
  if (c.seq[i] < 0 || c.communicator[i] == 0 || !t.strings.get(c.name[i]).starts_with("nccl")) return false;
  const std::string name = comm_name(t, std::string(t.strings.get(c.communicator[i])));
  return !(name.starts_with("c10d:") && !name.starts_with("c10d:nccl"));
}

using Key = std::tuple<std::uint32_t, std::string, std::int64_t>;  // process, communicator id, seq

// What each process entered (the --ring enter marks of host collectives; the host-side rows of
// NCCL operations) and completed (every other collective row).
struct Calls {
  std::vector<Entry> entered;
  std::set<Key> completed;
  std::set<std::string> nccl_comms;  // communicators whose operations complete on the GPU
};

Calls calls_of(const Trace& t) {
  Calls out;
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    auto e = parse_entry(t.strings.get(t.ranges.name[i]));
    if (!e) continue;
    e->process = t.process_of_track(t.ranges.track[i]);
    e->at = t.ranges.start[i];
    if (e->process != trace::kNone) out.entered.push_back(std::move(*e));
  }
  const auto& c = t.collectives;
  for (std::size_t i = 0; i < c.size(); ++i) {
    const std::uint32_t p = t.process_of_track(c.track[i]);
    std::string comm(t.strings.get(c.communicator[i]));
    const bool nccl = nccl_plugin_row(t, i);
    if (nccl) out.nccl_comms.insert(comm);
    if (!nccl || c.side[i] == trace::CollectiveSide::Device) {
      out.completed.emplace(p, std::move(comm), c.seq[i]);
    } else if (c.channels[i] > 0 && p != trace::kNone) {
      std::string op(t.strings.get(c.name[i]).substr(4));  // "ncclAllReduce" -> "AllReduce"
      out.entered.push_back(Entry{p, std::move(op), std::move(comm), c.seq[i], static_cast<std::int64_t>(c.bytes[i]), c.start[i]});
    }
  }
  return out;
}

// One process on one communicator: the last call it entered, and the one it is stuck in: on a
// host collective its last call if that did not complete (the call blocks); on NCCL the first it
// entered without completing (NCCL enqueues ahead of the GPU: later operations wait behind it).
struct Member {
  const Entry* last = nullptr;
  const Entry* pending = nullptr;
};
using Members = std::map<std::uint32_t, Member>;

std::map<std::string, Members> members_of(const Calls& calls, std::vector<Entry>& from_rows) {
  std::map<std::string, Members> out;
  for (const Entry& e : calls.entered) {
    Member& m = out[e.comm][e.process];
    if (m.last == nullptr || e.seq > m.last->seq) m.last = &e;
    if (calls.nccl_comms.contains(e.comm) && !calls.completed.contains({e.process, e.comm, e.seq}) &&
        (m.pending == nullptr || e.seq < m.pending->seq))
      m.pending = &e;
  }
  for (auto& [comm, members] : out)
    for (auto& [p, m] : members)
      if (!calls.nccl_comms.contains(comm) && !calls.completed.contains({p, comm, m.last->seq})) m.pending = m.last;
  // a member whose calls on it were all completed before the recorded span's entries: known from its rows
  std::map<std::pair<std::uint32_t, std::string>, std::int64_t> last_completed;
  for (const auto& [p, comm, seq] : calls.completed) {
    auto& v = last_completed[{p, comm}];
    v = std::max(v, seq);
  }
  from_rows.reserve(last_completed.size());  // no reallocation: members point into it
  for (const auto& [key, seq] : last_completed)
    if (out.contains(key.second) && !out[key.second].contains(key.first) && key.first != trace::kNone)
      from_rows.push_back(Entry{key.first, "", key.second, seq, -1, 0});
  for (const Entry& e : from_rows) out[e.comm][e.process].last = &e;
  return out;
}

// The call the stuck members wait in: the highest one some member entered and did not complete.
const Entry* waited_call(const Members& members) {
  const Entry* waited = nullptr;
  for (const auto& [p, m] : members)
    if (m.pending != nullptr && (waited == nullptr || m.pending->seq > waited->seq)) waited = m.pending;
  return waited;
}

}  // namespace

std::optional<HangReport> diagnose_hang(const Trace& t) {
  const Calls calls = calls_of(t);
  if (calls.entered.empty()) return std::nullopt;
  std::vector<Entry> from_rows;
  const auto communicators = members_of(calls, from_rows);
  const auto last = last_events(t);
  // An NCCL operation of every member in flight at the end of a whole run is not a hang: a
  // flight recorder's dump, taken while the job runs, says it is.
  const bool dump = has_metadata(t, "dump.reason");
  HangReport report;
  for (const auto& [comm, members] : communicators) {
    const Entry* waited = waited_call(members);
    if (waited == nullptr) continue;
    std::vector<std::string> stuck_words, missing_words;
    std::vector<HangRank> ranks;
    for (const auto& [p, m] : members) {
      HangRank r;
      r.rank = t.processes[p].rank;
      r.pid = t.processes[p].pid;
      r.communicator = comm_name(t, comm);
      r.op = waited->op;
      r.seq = waited->seq;
      r.bytes = waited->bytes;
      r.last_seq = m.last->seq;
      if (const auto it = last.find(p); it != last.end()) r.last_event_end = it->second.end, r.last_event = it->second.what;
      if (m.pending != nullptr && m.pending->seq == waited->seq) {
        r.state = "stuck in collective";
        r.waiting_since = m.pending->at;
        stuck_words.push_back(who(t.processes[p]));
      } else if (m.last->seq < waited->seq) {
        r.state = "never arrived";
        missing_words.push_back(fmt::format("{} (last entered #{}; last event: {})", who(t.processes[p]), m.last->seq,
                                            r.last_event.empty() ? "none" : r.last_event));
      } else {
        r.state = "arrived";
      }
      ranks.push_back(std::move(r));
    }
    if (missing_words.empty() && calls.nccl_comms.contains(comm) && !dump) continue;
    report.ranks.insert(report.ranks.end(), std::make_move_iterator(ranks.begin()), std::make_move_iterator(ranks.end()));
    report.summary += fmt::format("{}{} stuck in {} #{} on {} ({} bytes); never arrived: {}", report.summary.empty() ? "" : "; ",
                                  fmt::join(stuck_words, ", "), waited->op, waited->seq, comm_name(t, comm), waited->bytes,
                                  missing_words.empty() ? "no rank (all entered; none completed)" : fmt::format("{}", fmt::join(missing_words, ", ")));
  }
  if (report.ranks.empty()) return std::nullopt;
  std::stable_sort(report.ranks.begin(), report.ranks.end(), [](const HangRank& a, const HangRank& b) { return a.rank < b.rank; });
  return report;
}

}  // namespace tt::analyzer
