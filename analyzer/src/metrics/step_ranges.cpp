// Steps from named ranges (see step_ranges.h and docs/analysis.md, "Steps from ranges").
#include "tracetune/analyzer/step_ranges.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <regex>
#include <set>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace tt::analyzer {
namespace {

using trace::Ns;
using trace::RangeKind;
using trace::Trace;

// Common ways of naming a training iteration, tried in this order by detect_step_ranges.
constexpr const char* kConventions[] = {
    R"(^ProfilerStep#\d+$)",
    R"(^(train[_ ]?)?step([ _#:]*\d+)?$)",
    R"(^iter(ation)?[ _#:]*\d+$)",
};

bool named_by_user(RangeKind k) {
  return k == RangeKind::Nvtx || k == RangeKind::UserAnnotation || k == RangeKind::Other ||
         k == RangeKind::ProfilerSpan;
}

// The last run of digits in a name, if any.
std::optional<std::int64_t> trailing_number(std::string_view name) {
  auto end = name.find_last_of("0123456789");
  if (end == std::string_view::npos) return std::nullopt;
  auto begin = name.find_last_not_of("0123456789", end);
  begin = begin == std::string_view::npos ? 0 : begin + 1;
  std::int64_t v = 0;
  const auto r = std::from_chars(name.data() + begin, name.data() + end + 1, v);
  if (r.ec != std::errc()) return std::nullopt;
  return v;
}

// Rows of t.ranges whose names match, grouped by process, then by thread track.
using MatchesByTrack = std::map<std::uint32_t, std::vector<std::size_t>>;
std::map<std::uint32_t, MatchesByTrack> matching_ranges(const Trace& t, const std::regex& re, bool user_kinds_only) {
  std::unordered_map<trace::StringId, bool> name_matches;  // names repeat: one regex search per name
  std::map<std::uint32_t, MatchesByTrack> out;
  const auto& r = t.ranges;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (user_kinds_only && !named_by_user(r.kind[i])) continue;
    if (t.tracks[r.track[i]].type != trace::TrackType::Thread) continue;
    auto [it, fresh] = name_matches.try_emplace(r.name[i], false);
    if (fresh) it->second = std::regex_search(std::string(t.strings.get(r.name[i])), re);
    if (it->second) out[t.process_of_track(r.track[i])][r.track[i]].push_back(i);
  }
  return out;
}

// The kept matches of one track: in start order, skipping any inside the last kept one.
std::vector<std::size_t> outermost(const Trace& t, std::vector<std::size_t> rows) {
  std::sort(rows.begin(), rows.end(), [&](auto a, auto b) { return t.ranges.start[a] < t.ranges.start[b]; });
  std::vector<std::size_t> kept;
  for (std::size_t i : rows)
    if (kept.empty() || t.ranges.start[i] >= t.ranges.end(kept.back())) kept.push_back(i);
  return kept;
}

// Step numbers: the names' trailing numbers when present and distinct, else 0, 1, 2...
std::vector<std::int64_t> step_numbers(const Trace& t, const std::vector<std::size_t>& rows) {
  std::vector<std::int64_t> numbers;
  std::set<std::int64_t> seen;
  for (std::size_t i : rows) {
    const auto n = trailing_number(t.strings.get(t.ranges.name[i]));
    if (!n || !seen.insert(*n).second) {
      numbers.clear();
      break;
    }
    numbers.push_back(*n);
  }
  if (numbers.size() != rows.size())
    for (std::size_t k = 0; k < rows.size(); ++k) numbers.push_back(static_cast<std::int64_t>(k));
  return numbers;
}

// Replaces t.steps with the kept matches of each process's busiest matching thread, in the
// table's order (track, start). Processes with fewer than `min_per_process` matches get none.
StepRangeResult make_steps(Trace& t, const std::map<std::uint32_t, MatchesByTrack>& matches, std::size_t min_per_process) {
  trace::StepTable steps;
  StepRangeResult res;
  std::vector<std::pair<std::uint32_t, std::vector<std::size_t>>> chosen;  // (track, rows)
  for (const auto& [process, by_track] : matches) {
    std::vector<std::size_t> best;
    std::uint32_t best_track = 0;
    for (const auto& [track, rows] : by_track)
      if (auto kept = outermost(t, rows); kept.size() > best.size()) best = std::move(kept), best_track = track;
    if (best.size() >= min_per_process) chosen.emplace_back(best_track, std::move(best));
  }
  std::sort(chosen.begin(), chosen.end());
  for (const auto& [track, rows] : chosen) {
    const auto numbers = step_numbers(t, rows);
    for (std::size_t k = 0; k < rows.size(); ++k) {
      steps.push_span(t.ranges.start[rows[k]], t.ranges.dur[rows[k]], track, t.ranges.name[rows[k]]);
      steps.number.push_back(numbers[k]);
    }
    res.steps += rows.size();
    ++res.processes;
  }
  t.steps = std::move(steps);
  return res;
}

}  // namespace

std::string step_range_note(const StepRangeResult& r) {
  if (r.chosen)
    return fmt::format("steps from ranges matching '{}' (--step-range): {} steps on {} processes", r.pattern, r.steps,
                       r.processes);
  return fmt::format("the trace marks no steps: {} steps on {} processes taken from ranges named like '{}' "
                     "(--step-range REGEX chooses others)", r.steps, r.processes, r.pattern);
}

namespace {

Result<std::regex> step_range_regex(std::string_view pattern) {
  try {
    return std::regex(std::string(pattern), std::regex::ECMAScript | std::regex::icase);
  } catch (const std::regex_error& e) {
    return make_error(fmt::format("--step-range '{}': not a valid regular expression ({})", pattern, e.what()));
  }
}

}  // namespace

Status check_step_range(std::string_view pattern) {
  if (auto re = step_range_regex(pattern); !re) return make_error(re.error());
  return {};
}

Result<StepRangeResult> steps_from_ranges(Trace& t, std::string_view pattern) {
  auto re = step_range_regex(pattern);
  if (!re) return make_error(re.error());
  const auto matches = matching_ranges(t, re.value(), false);
  if (matches.empty())
    return make_error(fmt::format("--step-range '{}': no range on a thread of the trace has a matching name", pattern));
  StepRangeResult res = make_steps(t, matches, 1);
  res.pattern = std::string(pattern);
  res.chosen = true;
  res.note = step_range_note(res);
  return res;
}

std::optional<StepRangeResult> detect_step_ranges(Trace& t) {
  if (t.steps.size() > 0) return std::nullopt;
  for (const char* convention : kConventions) {
    const std::regex re(convention, std::regex::ECMAScript | std::regex::icase);
    const auto matches = matching_ranges(t, re, true);
    if (matches.empty()) continue;
    StepRangeResult res = make_steps(t, matches, 2);
    if (res.steps == 0) continue;
    res.pattern = convention;
    res.note = step_range_note(res);
    return res;
  }
  return std::nullopt;
}

Result<std::optional<std::string>> choose_step_source(Trace& t, const std::string& step_range) {
  if (!step_range.empty()) {
    auto r = steps_from_ranges(t, step_range);
    if (!r) return make_error(r.error());
    return std::optional<std::string>(r->note);
  }
  if (auto d = detect_step_ranges(t)) return std::optional<std::string>(d->note);
  return std::optional<std::string>();
}

}  // namespace tt::analyzer
