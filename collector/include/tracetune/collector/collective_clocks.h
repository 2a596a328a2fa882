// The merger's clock alignment across hosts (merge.h does the first step, from the files'
// realtime anchors; this is the second, from collectives matched across hosts): each host's
// clock as the merge report shows it, and the corrections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::collector {

struct HostClock {
  std::string host;
  std::int64_t offset_ns = 0;  // added to this host's monotonic times to reach the trace clock
  std::size_t files = 0;

  // With several hosts: the anchor offset refined from collectives matched across hosts
  // (their ends agree on every rank). offset_ns = anchor_offset_ns + correction_ns.
  std::int64_t anchor_offset_ns = 0;  // from the files' (monotonic, realtime) anchors only
  std::int64_t correction_ns = 0;     // added from matched collectives; 0 when not applied
  std::size_t collectives = 0;        // collectives matched with the reference host
  std::int64_t residual_ns = -1;      // p90 of |end difference - correction| over them; -1: not applied
  bool reference = false;             // the host the others were aligned to
  std::string clock_note;             // why the anchor offset was kept; "" otherwise

  // "+5.002 ms from 40 collectives (residual 3.0 µs)", "reference clock for 40 collectives",
  // "anchor offset kept: ..."; "" with one host.
  std::string clock_line() const;
};

// A host's anchor offset is refined only from at least this many matched collectives.
inline constexpr std::size_t kMinClockCollectives = 3;

// A collective ends at (nearly) the same instant on every rank: all wait for the last one to
// arrive. From `t` (already on the anchor-aligned clock) this matches collectives across
// ranks with trace/collective_match.h and, for each host but the reference (the one with most
// ranks that recorded collectives; the first by name on a tie), takes as its correction the
// median over matched collectives of (reference host's end - this host's end), each host's
// end being the median over its ranks. A host with fewer than kMinClockCollectives matches
// keeps its anchor offset. Fills the correction fields of `hosts` (offset_ns included) and
// returns the correction of each host by name (0 where none is applied).
std::map<std::string, trace::Ns> collective_clock_corrections(const trace::Trace& t, std::vector<HostClock>& hosts);

}  // namespace tt::collector
