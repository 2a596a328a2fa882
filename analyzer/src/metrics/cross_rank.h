// Inside the analyzer's metrics stage: what needs every rank (not a public header): each
// rank's arrivals at collectives, matched across ranks, and the rank selection's notes.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "tracetune/analyzer/metrics.h"
#include "tracetune/trace/model.h"
#include "tracetune/trace/store.h"

namespace tt::analyzer {

// One rank's arrival at a collective matched across ranks (cross_rank()): a communication
// kernel or device-side record (host = false), or a host-side call.
struct Arrival {
  Ns start = 0, end = 0;
  std::size_t rank = 0;  // index into Metrics::ranks
  std::uint32_t track = 0;
  bool host = false;
};
using CollectiveGroups = std::vector<std::vector<Arrival>>;

// One rank's arrival at a collective, keyed so that the same collective has the same key on
// every rank (trace/collective_match.h's rule, with names rather than string ids so that keys
// from different traces compare).
struct RankArrival {
  bool by_kernel = false;    // matched by its communication kernel (the rank has no collective records)
  std::string communicator;  // by_kernel: empty
  std::string op;            // by_kernel: the kernel's name
  std::uint64_t ordinal = 0; // k-th of its (communicator, op) on the rank
  Ns start = 0, end = 0;
  std::uint32_t track = 0;
  bool host = false;         // a host-side call
};

// Each process's collective rows and communication-kernel rows (in row order), indexed once
// for all ranks so that finding a rank's arrivals reads its own rows only.
struct ArrivalRows {
  explicit ArrivalRows(const trace::Trace& t);
  std::vector<std::vector<std::size_t>> collectives, comm_kernels;  // [process] -> rows
};

// The rank's collective rows (device-side when it has any, else host-side calls) or, without
// any, its communication kernels, with their keys.
std::vector<RankArrival> rank_arrivals(const trace::Trace& t, const ArrivalRows& index, const RankMetrics& r);

// Keeps the ranks numbered `rank` (the job's rank, else the process index; -1 keeps all).
void keep_rank(const trace::Trace& t, std::vector<std::uint32_t>& ranks, std::int32_t rank);

// The note when no rank is left to analyse: none numbered `rank` (>= 0), or no events at all.
std::string no_ranks_note(std::int32_t rank);

// Metrics::cross and each rank's CollectiveStats' cross-rank fields, from every rank's arrivals;
// returns the matched collectives (the critical path's cross-rank edges).
CollectiveGroups cross_rank(const std::vector<std::vector<RankArrival>>& arrivals, Metrics& M);

// The same, fed one rank at a time (the sharded combine reads each rank's arrivals from its
// part and drops them): each arrival is kept as its interned key, its ordinal and its Arrival
// (64 bytes, no strings); each distinct key's names are kept once.
class ArrivalMatcher {
 public:
  // `rank`: the rank's index into Metrics::ranks (any order of calls; renumber() may change it).
  void add(std::size_t rank, const std::vector<RankArrival>& arrivals);
  // Gives each arrival added as rank r the index to[r] instead (to.size(): the ranks added).
  void renumber(const std::vector<std::size_t>& to);
  // cross_rank() over everything added; empties the matcher.
  CollectiveGroups match(Metrics& M);
  std::size_t arrivals() const { return entries_.size(); }

 private:
  struct Entry {
    std::uint64_t ordinal = 0, seq = 0;  // seq: the order added (a rank's arrivals keep theirs)
    Arrival arrival;
    std::uint32_t key = 0;
  };
  std::map<std::tuple<bool, std::string, std::string>, std::uint32_t> keys_;  // (by_kernel, communicator, op)
  std::vector<Entry> entries_;
};

// The notes on ranks missing from 0..N-1 (only ranks whose number the trace gave count).
void missing_rank_notes(Metrics& M);

}  // namespace tt::analyzer
