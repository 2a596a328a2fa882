// Which collective records on different ranks are the same collective: one rule, shared by the
// analyzer (arrival skew, stragglers, critical path) and the merger (clock alignment from
// collective end times).
//
// Rule: on each rank, take its collective rows of one side (device-side records when the rank
// has any, else host-side calls), in start order; the k-th row of each (communicator, op) is
// the same collective on every rank. Communicator ids are the same on every rank (NCCL's
// comm hash, the process-group name); where a source does not know it (NCCL NVTX ranges),
// it is 0 everywhere and the rule falls back to op + order.
#pragma once

#include <compare>
#include <cstddef>
#include <span>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::trace {

struct CollectiveKey {
  StringId communicator = 0;
  StringId op = 0;
  std::size_t ordinal = 0;  // k-th of its (communicator, op) on the rank, from 0
  auto operator<=>(const CollectiveKey&) const = default;
};

// The side a rank's collectives are matched on: Device when any of `rows` is device-side.
CollectiveSide matched_side(const CollectiveTable& c, std::span<const std::size_t> rows);

// Sorts `rows` (one rank's collective rows, all of one side) by start (row index on ties) and
// returns the key of each row, in that order.
std::vector<CollectiveKey> collective_keys(const CollectiveTable& c, std::vector<std::size_t>& rows);

}  // namespace tt::trace
