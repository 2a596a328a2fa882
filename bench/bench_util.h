// Shared by the benchmarks: medians of repeated timings (figures, never assertions).
#pragma once

#include <algorithm>
#include <chrono>
#include <vector>

namespace tt::bench {

using Clock = std::chrono::steady_clock;

// Median wall time in seconds of `reps` calls of f.
template <class F>
double median_seconds(int reps, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace tt::bench
