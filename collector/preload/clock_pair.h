// One (TSC, CLOCK_MONOTONIC) pair for a ClockSyncRecord (record_format.h), from which the
// reader maps every TSC-timed I/O record to CLOCK_MONOTONIC.
//
// The TSC is read between two CLOCK_MONOTONIC reads and the pair takes their middle, so its
// error is at most half the window between the two reads: ~25 ns normally. A thread preempted
// inside that window (a loaded machine, an ASan build) makes the window, and the error,
// milliseconds, and every I/O time interpolated through that pair moves with it
// (collector_processes' bracketed preads then fell outside the program's own clock reads). So
// the pair is taken again, up to kClockPairTries times, until its window is under
// kClockPairMaxWindowNs, and the tightest is kept. Header-only, no allocation: the clocks are the caller's (tests fake them).
#pragma once

#include <cstdint>

#include "tracetune/collector/record_format.h"

namespace tt::collector {

inline constexpr int kClockPairTries = 16;
inline constexpr std::int64_t kClockPairMaxWindowNs = 1000;

// `mono()` and `tsc()` read the two clocks.
template <class Mono, class Tsc>
ClockSyncRecord tight_clock_pair(Mono&& mono, Tsc&& tsc) {
  ClockSyncRecord best{0, 0};
  std::int64_t best_window = INT64_MAX;
  for (int i = 0; i < kClockPairTries && best_window > kClockPairMaxWindowNs; ++i) {
    const std::int64_t m0 = mono();
    const std::int64_t t = tsc();
    const std::int64_t window = mono() - m0;
    if (window < best_window) {
      best_window = window;
      best = ClockSyncRecord{t, m0 + window / 2};
    }
  }
  return best;
}

}  // namespace tt::collector
