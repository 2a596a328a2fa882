// Hang diagnosis across ranks: the desync report of PyTorch's NCCL Flight Recorder, from our own
// records (docs/analysis.md, "Hangs"). Input: a trace whose host-side collectives say when they
// started (record --ring writes a `tracetune.collective.enter` mark at each gloo/MPI call) and
// completed (the collective's row). A rank that entered a collective it never completed is stuck
// in it; a rank of that communicator that never entered that sequence number never arrived.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::analyzer {

struct HangRank {
  std::int32_t rank = -1;              // -1: the process has no rank; pid then names it
  std::int64_t pid = 0;
  std::string state;                   // "stuck in collective", "never arrived", "arrived"
  // The collective concerned: where a stuck rank waits; for one that never arrived, the one the
  // others wait in.
  std::string communicator;            // its name (c10d:gloo:0), else its id
  std::int64_t seq = -1;
  std::string op;                      // AllReduce, Broadcast, ...
  std::int64_t bytes = -1;             // -1 unknown
  trace::Ns waiting_since = 0;         // stuck: when it entered (trace clock)
  std::int64_t last_seq = -1;          // never arrived: the last sequence number it entered on it
  trace::Ns last_event_end = 0;        // its last recorded event, and what it was
  std::string last_event;
};

struct HangReport {
  std::vector<HangRank> ranks;         // every rank of the stuck communicators, by rank
  std::string summary;                 // one sentence
};

// nullopt when no rank is inside a collective it never completed.
std::optional<HangReport> diagnose_hang(const trace::Trace& t);

}  // namespace tt::analyzer
