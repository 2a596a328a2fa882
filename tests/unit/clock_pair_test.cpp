// The (TSC, CLOCK_MONOTONIC) pairs the collector writes for TSC-timed I/O (clock_pair.h), on
// fake clocks: a thread preempted between the two CLOCK_MONOTONIC reads must not put a pair
// milliseconds off (which moved every I/O time mapped through it: collector_processes'
// "893 preads outside their brackets" under ASan load).
#include "clock_pair.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace tt::collector {
namespace {

// A machine on which true time is `now`; the TSC ticks 1 per ns from 0, and each read costs
// 10 ns. `pauses[i]` is a preemption (ns) just before the i-th TSC read.
struct FakeMachine {
  std::int64_t now = 1'000'000'000;
  std::vector<std::int64_t> pauses;
  int tsc_reads = 0, mono_reads = 0;

  std::int64_t mono() {
    ++mono_reads;
    return now += 10;
  }
  std::int64_t tsc() {
    if (tsc_reads < static_cast<int>(pauses.size())) now += pauses[tsc_reads];
    ++tsc_reads;
    return now += 10;  // the TSC shows true time
  }
};

std::int64_t pair_error(const ClockSyncRecord& r) { return r.mono_ns - r.tsc; }  // TSC == true time

TEST(ClockPair, QuietMachineTakesOneTry) {
  FakeMachine m;
  const ClockSyncRecord r = tight_clock_pair([&] { return m.mono(); }, [&] { return m.tsc(); });
  EXPECT_EQ(m.tsc_reads, 1);
  EXPECT_LE(std::abs(pair_error(r)), 10);
}

TEST(ClockPair, APreemptedTryIsTakenAgain) {
  FakeMachine m;
  m.pauses = {4'000'000};  // 4 ms off the CPU between the first mono read and the TSC read
  const ClockSyncRecord r = tight_clock_pair([&] { return m.mono(); }, [&] { return m.tsc(); });
  // One try would have put mono at the window's middle, ~2 ms before the TSC reading.
  EXPECT_EQ(m.tsc_reads, 2);
  EXPECT_LE(std::abs(pair_error(r)), 10) << "pair " << r.tsc << " " << r.mono_ns;
}

TEST(ClockPair, UnderSustainedLoadTheTightestTryIsKept) {
  FakeMachine m;
  for (int i = 0; i < kClockPairTries; ++i) m.pauses.push_back(i == 11 ? 3'000 : 5'000'000);
  const ClockSyncRecord r = tight_clock_pair([&] { return m.mono(); }, [&] { return m.tsc(); });
  EXPECT_EQ(m.tsc_reads, kClockPairTries);  // bounded: a pair never spins on a loaded machine
  EXPECT_LE(std::abs(pair_error(r)), 1'600);  // the 3 us try: half its window
}

}  // namespace
}  // namespace tt::collector
