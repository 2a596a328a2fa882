#include "tracetune/trace/collective_match.h"

#include <algorithm>
#include <map>
#include <utility>

namespace tt::trace {

CollectiveSide matched_side(const CollectiveTable& c, std::span<const std::size_t> rows) {
  const bool any_device =
      std::any_of(rows.begin(), rows.end(), [&](std::size_t i) { return c.side[i] == CollectiveSide::Device; });
  return any_device ? CollectiveSide::Device : CollectiveSide::Host;
}

std::vector<CollectiveKey> collective_keys(const CollectiveTable& c, std::vector<std::size_t>& rows) {
  std::sort(rows.begin(), rows.end(), [&](std::size_t a, std::size_t b) {
    return c.start[a] != c.start[b] ? c.start[a] < c.start[b] : a < b;
  });
  std::map<std::pair<StringId, StringId>, std::size_t> next_ordinal;  // (communicator, op) -> k
  std::vector<CollectiveKey> keys;
  keys.reserve(rows.size());
  for (const std::size_t i : rows) {
    const std::size_t k = next_ordinal[{c.communicator[i], c.op[i]}]++;
    keys.push_back({c.communicator[i], c.op[i], k});
  }
  return keys;
}

}  // namespace tt::trace
