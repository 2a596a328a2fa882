// Epoch facts from the "tracetune.epoch <JSON>" ranges the Python integration writes.
#include "tracetune/analyzer/epochs.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <string_view>
#include <vector>

namespace tt::analyzer {

namespace {

constexpr std::string_view kEpochPrefix = "tracetune.epoch ";

// The text after `"key": ` in the mark's JSON (as Python's json.dumps writes it), "" if absent.
std::string_view json_field(std::string_view json, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\": ";
  const auto at = json.find(quoted);
  if (at == std::string_view::npos) return {};
  std::string_view rest = json.substr(at + quoted.size());
  return rest.substr(0, rest.find_first_of(",}"));
}

int int_field(std::string_view json, std::string_view key) {
  const std::string_view v = json_field(json, key);
  int out = 0;
  std::from_chars(v.data(), v.data() + v.size(), out);
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct EpochStart {
  trace::Ns start = 0, end = 0;
  int workers = 0;
  bool persistent = false;
  int prefetch = 0, threads = 0;
};

// Epoch ranges by track, in time order.
std::map<std::uint32_t, std::vector<EpochStart>> epoch_ranges(const trace::Trace& t) {
  std::map<std::uint32_t, std::vector<EpochStart>> out;
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    const std::string_view name = t.strings.get(t.ranges.name[i]);
    if (!name.starts_with(kEpochPrefix)) continue;
    const std::string_view json = name.substr(kEpochPrefix.size());
    out[t.ranges.track[i]].push_back(
        EpochStart{t.ranges.start[i], t.ranges.end(i), int_field(json, "workers"), json_field(json, "persistent") == "true",
                   int_field(json, "prefetch"), int_field(json, "threads")});
  }
  for (auto& [track, v] : out) std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.start < b.start; });
  return out;
}

// Each epoch's restart wait (after the first), its steps, and the run they measure.
void measure_epochs(const trace::Trace& t, std::uint32_t track, const std::vector<EpochStart>& starts, EpochFacts& f) {
  std::vector<std::pair<trace::Ns, trace::Ns>> steps;  // start, duration of this track's steps
  for (std::size_t i = 0; i < t.steps.size(); ++i)
    if (t.steps.track[i] == track) steps.emplace_back(t.steps.start[i], t.steps.dur[i]);
  std::sort(steps.begin(), steps.end());
  std::vector<double> ms;
  for (const auto& s : steps) ms.push_back(static_cast<double>(s.second) / 1e6);
  f.step_ms = median(ms);
  std::vector<double> lengths;
  for (std::size_t e = 0; e < starts.size(); ++e) {
    const trace::Ns from = starts[e].start, to = e + 1 < starts.size() ? starts[e + 1].start : trace::Ns{-1};
    const auto first = std::lower_bound(steps.begin(), steps.end(), std::make_pair(from, trace::Ns{0}));
    std::size_t n = 0;
    for (auto it = first; it != steps.end() && (to < 0 || it->first < to); ++it) ++n;
    if (e + 1 < starts.size()) lengths.push_back(static_cast<double>(n));
    f.run_ms += static_cast<double>(starts[e].end - starts[e].start) / 1e6;
    if (e == 0 || n == 0) continue;
    const double wait = static_cast<double>(starts[e].end - starts[e].start + first->second) / 1e6 - f.step_ms;
    f.restart_wait_ms += std::max(0.0, wait);
    f.largest_restart_ms = std::max(f.largest_restart_ms, std::max(0.0, wait));
    ++f.restarts;
  }
  for (double m : ms) f.run_ms += m;
  f.steps_per_epoch = median(lengths);
}

}  // namespace

double EpochFacts::persistent_speedup() const {
  const double saving = persistent_saving_ms();
  if (saving <= 0 || run_ms <= 0) return 1;
  return run_ms / (run_ms - std::min(saving, 0.9 * run_ms));
}

EpochFacts epoch_facts(const trace::Trace& t) {
  EpochFacts f;
  const auto by_track = epoch_ranges(t);
  const auto busiest = std::max_element(by_track.begin(), by_track.end(),
                                        [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  if (busiest == by_track.end()) return f;
  const auto& starts = busiest->second;
  f.epochs = starts.size();
  f.workers = starts.front().workers;
  f.persistent = starts.front().persistent;
  f.prefetch = starts.front().prefetch;
  f.threads = starts.front().threads;
  measure_epochs(t, busiest->first, starts, f);
  return f;
}

}  // namespace tt::analyzer
