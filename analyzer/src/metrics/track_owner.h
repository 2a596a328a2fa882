// The process a trace track belongs to, whatever its kind (threads, streams and devices name
// theirs). Shared by the analyses that read counters of one rank (memory, efficiency).
#pragma once

#include <cstdint>

#include "tracetune/trace/model.h"

namespace tt::analyzer {

inline std::uint32_t track_process(const trace::Trace& t, std::uint32_t track) {
  if (track >= t.tracks.size()) return trace::kNone;
  const auto& tr = t.tracks[track];
  switch (tr.type) {
    case trace::TrackType::Thread: return t.threads[tr.owner].process;
    case trace::TrackType::Process: return tr.owner;
    case trace::TrackType::Device: return t.devices[tr.owner].process;
    case trace::TrackType::Stream: {
      const auto dev = t.streams[tr.owner].device;
      return dev == trace::kNone ? trace::kNone : t.devices[dev].process;
    }
  }
  return trace::kNone;
}

}  // namespace tt::analyzer
