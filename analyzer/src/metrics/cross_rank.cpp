// What needs every rank: collectives matched across ranks (arrival skew, last arrivers) and the
// per-rank step-time spread. Definitions: docs/analysis.md, "Across ranks".
#include "cross_rank.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "tracetune/analyzer/kernel_class.h"
#include "tracetune/trace/collective_match.h"

namespace tt::analyzer {

using trace::Trace;

ArrivalRows::ArrivalRows(const Trace& t) {
  const std::size_t processes = t.processes.size();
  collectives.resize(processes);
  comm_kernels.resize(processes);
  const auto& c = t.collectives;
  for (std::size_t i = 0; i < c.size(); ++i)
    if (const std::uint32_t p = t.process_of_track(c.track[i]); p < processes) collectives[p].push_back(i);
  std::unordered_map<trace::StringId, bool> is_comm;
  const auto& k = t.kernels;
  for (std::size_t i = 0; i < k.size(); ++i) {
    auto [it, fresh] = is_comm.try_emplace(k.name[i], false);
    if (fresh) it->second = classify_kernel(t.strings.get(k.name[i])) == KernelClass::Communication;
    if (!it->second) continue;
    if (const std::uint32_t p = t.process_of_track(k.track[i]); p < processes) comm_kernels[p].push_back(i);
  }
}

namespace {

const std::vector<std::size_t>& rows_of(const std::vector<std::vector<std::size_t>>& by_process, std::uint32_t process) {
  static const std::vector<std::size_t> none;
  return process < by_process.size() ? by_process[process] : none;
}

// A rank without collective records (a Kineto trace without NCCL annotations) is matched by
// its communication kernels: the k-th ncclKernel_X on every rank is the same collective, and
// a kernel starts when its stream reaches it, i.e. when the rank arrives.
std::vector<RankArrival> kernel_arrivals(const Trace& t, std::vector<std::size_t> rows) {
  const auto& k = t.kernels;
  std::sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) { return k.start[a] < k.start[b]; });
  std::unordered_map<trace::StringId, std::uint64_t> ordinal;
  std::vector<RankArrival> out;
  for (std::size_t i : rows)
    out.push_back({true, {}, std::string(t.strings.get(k.name[i])), ordinal[k.name[i]]++, k.start[i], k.end(i), k.track[i], false});
  return out;
}

}  // namespace

std::vector<RankArrival> rank_arrivals(const Trace& t, const ArrivalRows& index, const RankMetrics& r) {
  // The k-th collective of each (communicator, op) on every rank is the same collective
  // (trace/collective_match.h, the rule the merger's clock alignment uses too).
  const auto& c = t.collectives;
  const auto want = r.collectives.device_side ? trace::CollectiveSide::Device : trace::CollectiveSide::Host;
  std::vector<std::size_t> rows;
  for (std::size_t i : rows_of(index.collectives, r.process))
    if (c.side[i] == want) rows.push_back(i);
  if (rows.empty()) return kernel_arrivals(t, rows_of(index.comm_kernels, r.process));
  const std::vector<trace::CollectiveKey> keys = trace::collective_keys(c, rows);  // sorts rows
  std::vector<RankArrival> out;
  out.reserve(rows.size());
  for (std::size_t j = 0; j < rows.size(); ++j) {
    const std::size_t i = rows[j];
    out.push_back({false, std::string(t.strings.get(keys[j].communicator)), std::string(t.strings.get(keys[j].op)),
                   keys[j].ordinal, c.start[i], c.end(i), c.track[i], c.side[i] == trace::CollectiveSide::Host});
  }
  return out;
}

namespace {

void step_spread(Metrics& M) {
  auto& X = M.cross;
  std::vector<std::pair<Ns, std::int32_t>> med;
  for (const auto& r : M.ranks)
    if (r.has_steps || r.has_gpu) med.push_back({r.step_median, r.rank});
  if (med.size() < 2) return;
  std::sort(med.begin(), med.end());
  X.step_median_min = med.front().first;
  X.step_median_max = med.back().first;
  X.step_median_median = med[(med.size() - 1) / 2].first;
  X.slowest_rank = med.back().second;
  X.step_spread = X.step_median_median > 0
                      ? static_cast<double>(X.step_median_max - X.step_median_median) / static_cast<double>(X.step_median_median)
                      : 0;
}

}  // namespace

void ArrivalMatcher::add(std::size_t rank, const std::vector<RankArrival>& arrivals) {
  for (const RankArrival& a : arrivals) {
    const auto [it, fresh] = keys_.try_emplace({a.by_kernel, a.communicator, a.op}, static_cast<std::uint32_t>(keys_.size()));
    entries_.push_back({a.ordinal, entries_.size(), {a.start, a.end, rank, a.track, a.host}, it->second});
  }
}

void ArrivalMatcher::renumber(const std::vector<std::size_t>& to) {
  for (Entry& e : entries_) e.arrival.rank = to[e.arrival.rank];
}

CollectiveGroups ArrivalMatcher::match(Metrics& M) {
  auto& X = M.cross;
  X.ranks = M.ranks.size();
  step_spread(M);
  CollectiveGroups groups;
  if (M.ranks.size() < 2) {
    entries_ = {};
    keys_.clear();
    return groups;
  }
  // The keys' order: (by_kernel, communicator, op), then the ordinal; within a key, the ranks
  // in order and each rank's arrivals in its own order.
  std::vector<std::uint32_t> key_order(keys_.size());
  std::uint32_t n = 0;
  for (const auto& [key, id] : keys_) key_order[id] = n++;
  std::sort(entries_.begin(), entries_.end(), [&](const Entry& a, const Entry& b) {
    return std::tie(key_order[a.key], a.ordinal, a.arrival.rank, a.seq) <
           std::tie(key_order[b.key], b.ordinal, b.arrival.rank, b.seq);
  });
  std::vector<Ns> skews;
  std::vector<std::uint64_t> last_count(M.ranks.size(), 0);
  for (std::size_t lo = 0, hi = 0; lo < entries_.size(); lo = hi) {
    for (hi = lo + 1; hi < entries_.size() && entries_[hi].key == entries_[lo].key && entries_[hi].ordinal == entries_[lo].ordinal;)
      ++hi;
    if (hi - lo < 2) continue;
    std::vector<Arrival> v;
    v.reserve(hi - lo);
    for (std::size_t i = lo; i < hi; ++i) v.push_back(entries_[i].arrival);
    auto [first, last] = std::minmax_element(v.begin(), v.end(), [](const Arrival& a, const Arrival& b) { return a.start < b.start; });
    skews.push_back(last->start - first->start);
    ++last_count[last->rank];
    for (const auto& a : v) {
      auto& cs = M.ranks[a.rank].collectives;
      ++cs.matched;
      cs.arrival_wait += last->start - a.start;
    }
    groups.push_back(std::move(v));
  }
  entries_ = {};
  keys_.clear();
  for (std::size_t r = 0; r < M.ranks.size(); ++r) M.ranks[r].collectives.last_arrivals = last_count[r];
  X.matched_collectives = skews.size();
  if (!skews.empty()) {
    X.arrival_skew_median = percentile(skews, 0.5);
    X.arrival_skew_max = *std::max_element(skews.begin(), skews.end());
    const auto best = std::max_element(last_count.begin(), last_count.end()) - last_count.begin();
    X.last_arriver = M.ranks[static_cast<std::size_t>(best)].rank;
    X.last_arriver_share = static_cast<double>(last_count[static_cast<std::size_t>(best)]) / static_cast<double>(skews.size());
  }
  return groups;
}

CollectiveGroups cross_rank(const std::vector<std::vector<RankArrival>>& arrivals, Metrics& M) {
  ArrivalMatcher matcher;
  for (std::size_t r = 0; r < arrivals.size(); ++r) matcher.add(r, arrivals[r]);
  return matcher.match(M);
}

void keep_rank(const Trace& t, std::vector<std::uint32_t>& ranks, std::int32_t rank) {
  if (rank < 0) return;
  std::erase_if(ranks, [&](std::uint32_t p) {
    const auto& pr = t.processes[p];
    return (pr.rank >= 0 ? pr.rank : static_cast<std::int32_t>(p)) != rank;
  });
}

std::string no_ranks_note(std::int32_t rank) {
  return rank >= 0 ? fmt::format("no rank {} in this trace", rank) : "the trace has no events to analyse";
}

void missing_rank_notes(Metrics& M) {
  // Ranks are numbered 0..N-1: a gap means a rank's file or records are missing.
  std::set<std::int32_t> present;
  for (const auto& r : M.ranks)
    if (r.rank_from_trace) present.insert(r.rank);
  if (present.size() == 1 && *present.begin() > 0) {
    M.notes.push_back(fmt::format("only rank {} is in the trace: no cross-rank comparison", *present.begin()));
    return;
  }
  if (present.empty()) return;
  std::vector<std::int32_t> missing;
  for (std::int32_t r = 0; r < *present.rbegin(); ++r)
    if (!present.count(r)) missing.push_back(r);
  if (missing.empty()) return;
  std::string list;
  for (std::size_t i = 0; i < std::min<std::size_t>(missing.size(), 16); ++i) list += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > 16) list += fmt::format(" and {} more", missing.size() - 16);
  M.notes.push_back(fmt::format("rank{} {} missing from the trace (ranks go up to {}): the cross-rank comparison "
                                "covers the {} present",
                                missing.size() == 1 ? "" : "s", list, *present.rbegin(), present.size()));
}

}  // namespace tt::analyzer
