// Inside the collector: the second step of the merger's clock alignment (merge.cpp does the
// first, from the files' realtime anchors). Not a public header.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tracetune/collector/merge.h"
#include "tracetune/trace/model.h"

namespace tt::collector {

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
