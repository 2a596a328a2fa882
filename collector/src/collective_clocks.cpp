#include "tracetune/collector/collective_clocks.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#include "tracetune/trace/collective_match.h"
#include "tracetune/trace/units.h"

namespace tt::collector {
using trace::Ns;

namespace {

// One host's collectives: every rank's end time of each matched collective.
struct HostCollectives {
  std::map<trace::CollectiveKey, std::vector<Ns>> ends;
  std::size_t ranks = 0;  // processes of the host that recorded collectives
};

// a - b, stopping at the ends of 64-bit time (crafted files may hold any time).
Ns saturating_sub(Ns a, Ns b) {
  Ns r = 0;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? std::numeric_limits<Ns>::max() : std::numeric_limits<Ns>::min();
}
Ns saturating_add(Ns a, Ns b) {
  Ns r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<Ns>::max() : std::numeric_limits<Ns>::min();
}

// The median (the midpoint of the two middle values for an even count); 0 when empty.
Ns median_of(std::vector<Ns> values) {
  if (values.empty()) return 0;
  const auto upper = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), upper, values.end());
  if (values.size() % 2 == 1) return *upper;
  return std::midpoint(*std::max_element(values.begin(), upper), *upper);
}

// The value that 90% of `values` do not exceed (nearest rank); 0 when empty.
Ns p90_of(std::vector<Ns> values) {
  if (values.empty()) return 0;
  const std::size_t rank = (values.size() * 9 + 9) / 10 - 1;  // ceil(0.9 n) - 1
  const auto it = values.begin() + static_cast<std::ptrdiff_t>(rank);
  std::nth_element(values.begin(), it, values.end());
  return *it;
}

std::map<std::string, HostCollectives> collectives_by_host(const trace::Trace& t) {
  const trace::CollectiveTable& c = t.collectives;
  std::vector<std::vector<std::size_t>> rows_of_process(t.processes.size());
  for (std::size_t i = 0; i < c.size(); ++i)
    if (const std::uint32_t p = t.process_of_track(c.track[i]); p < rows_of_process.size())
      rows_of_process[p].push_back(i);
  std::map<std::string, HostCollectives> hosts;
  for (std::uint32_t p = 0; p < rows_of_process.size(); ++p) {
    std::vector<std::size_t>& rows = rows_of_process[p];
    if (rows.empty()) continue;
    const trace::CollectiveSide side = trace::matched_side(c, rows);
    std::erase_if(rows, [&](std::size_t i) { return c.side[i] != side; });
    const std::vector<trace::CollectiveKey> keys = trace::collective_keys(c, rows);
    HostCollectives& host = hosts[t.processes[p].host];
    ++host.ranks;
    for (std::size_t j = 0; j < rows.size(); ++j) host.ends[keys[j]].push_back(c.end(rows[j]));
  }
  return hosts;
}

// The host the others are aligned to: most ranks with collectives, the first by name on a tie.
const std::string* reference_host(const std::map<std::string, HostCollectives>& hosts) {
  const std::string* best = nullptr;
  std::size_t best_ranks = 0;
  for (const auto& [name, host] : hosts)
    if (host.ranks > best_ranks) {
      best = &name;
      best_ranks = host.ranks;
    }
  return best;
}

// Per collective both hosts ran: reference end - this host's end (medians over their ranks).
std::vector<Ns> end_differences(const HostCollectives& reference, const HostCollectives& host) {
  std::vector<Ns> differences;
  for (const auto& [key, ends] : host.ends)
    if (const auto it = reference.ends.find(key); it != reference.ends.end())
      differences.push_back(saturating_sub(median_of(it->second), median_of(ends)));
  return differences;
}

void apply_correction(HostClock& clock, const std::vector<Ns>& differences, const std::string& reference) {
  clock.collectives = differences.size();
  if (differences.size() < kMinClockCollectives) {
    clock.clock_note = fmt::format("anchor offset kept: {} collective(s) matched with host {}, {} needed",
                                   differences.size(), reference, kMinClockCollectives);
    return;
  }
  clock.correction_ns = median_of(differences);
  std::vector<Ns> residuals;
  residuals.reserve(differences.size());
  for (const Ns d : differences) {
    const Ns residual = saturating_sub(d, clock.correction_ns);
    residuals.push_back(residual == std::numeric_limits<Ns>::min() ? std::numeric_limits<Ns>::max()
                                                                   : (residual < 0 ? -residual : residual));
  }
  clock.residual_ns = p90_of(std::move(residuals));
  clock.offset_ns = saturating_add(clock.anchor_offset_ns, clock.correction_ns);
}

}  // namespace

std::map<std::string, Ns> collective_clock_corrections(const trace::Trace& t, std::vector<HostClock>& hosts) {
  std::map<std::string, Ns> corrections;
  for (HostClock& clock : hosts) corrections[clock.host] = 0;
  if (hosts.size() < 2) return corrections;
  const std::map<std::string, HostCollectives> collectives = collectives_by_host(t);
  const std::string* reference = reference_host(collectives);
  for (HostClock& clock : hosts) {
    const auto own = collectives.find(clock.host);
    if (reference == nullptr || own == collectives.end()) {
      clock.clock_note = "anchor offset kept: no collectives recorded on this host";
      continue;
    }
    if (clock.host == *reference) {
      clock.reference = true;
      clock.collectives = own->second.ends.size();
      continue;
    }
    apply_correction(clock, end_differences(collectives.at(*reference), own->second), *reference);
    corrections[clock.host] = clock.correction_ns;
  }
  return corrections;
}

std::string HostClock::clock_line() const {
  if (reference) return fmt::format("reference clock for {} collectives", collectives);
  if (!clock_note.empty()) return clock_note;
  if (residual_ns < 0) return "";
  return fmt::format("{:+.3f} ms from {} collectives (residual {})", static_cast<double>(correction_ns) / 1e6,
                     collectives, trace::format_duration(residual_ns));
}

}  // namespace tt::collector
