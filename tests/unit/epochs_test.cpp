// analyzer::epoch_facts on a hand-built trace: epoch ranges as the Python integration writes
// them, steps between them, and the restart waits persistent workers would save.
#include <gtest/gtest.h>

#include <string>

#include "tracetune/analyzer/epochs.h"

using namespace tt;

namespace {

constexpr trace::Ns kMs = 1'000'000;

// `epochs` epochs of `per_epoch` 10 ms steps on track 0; each epoch's iter() takes `iter_ms`
// and its first step `first_ms` (the workers' start-up and first batch).
trace::Trace loader_trace(int epochs, int per_epoch, double iter_ms, double first_ms, bool persistent) {
  trace::Trace t;
  const auto step = t.strings.intern("step");
  const auto domain = t.strings.intern("tracetune");
  trace::Ns now = 0;
  for (int e = 0; e < epochs; ++e) {
    const std::string name = "tracetune.epoch {\"epoch\": " + std::to_string(e) + ", \"persistent\": " +
                             (persistent ? "true" : "false") + ", \"prefetch\": 2, \"threads\": 3, \"workers\": 2}";
    const auto iter = static_cast<trace::Ns>(iter_ms * kMs);
    t.ranges.push(now, iter, 0, t.strings.intern(name), trace::RangeKind::UserAnnotation, domain);
    now += iter;
    for (int s = 0; s < per_epoch; ++s) {
      const auto d = s == 0 ? static_cast<trace::Ns>(first_ms * kMs) : 10 * kMs;
      t.steps.push_span(now, d, 0, step);
      t.steps.number.push_back(e * per_epoch + s);
      now += d;
    }
  }
  return t;
}

}  // namespace

TEST(EpochFacts, RestartWaitsOfWorkersForkedEachEpoch) {
  // 4 epochs of 5 steps; each iter() 20 ms, each first step 70 ms: each later epoch waits
  // 20 + 70 - 10 = 80 ms beyond a step, 3 of them
  const auto f = analyzer::epoch_facts(loader_trace(4, 5, 20, 70, false));
  EXPECT_EQ(f.epochs, 4u);
  EXPECT_DOUBLE_EQ(f.steps_per_epoch, 5);
  EXPECT_EQ(f.workers, 2);
  EXPECT_FALSE(f.persistent);
  EXPECT_EQ(f.prefetch, 2);
  EXPECT_EQ(f.threads, 3);
  EXPECT_DOUBLE_EQ(f.step_ms, 10);
  EXPECT_EQ(f.restarts, 3u);
  EXPECT_NEAR(f.restart_wait_ms, 240, 1e-9);
  EXPECT_NEAR(f.largest_restart_ms, 80, 1e-9);
  const double run = 4 * 20 + 4 * (70 + 4 * 10);  // 520 ms
  EXPECT_NEAR(f.run_ms, run, 1e-9);
  EXPECT_NEAR(f.persistent_speedup(), run / (run - 240), 1e-12);
}

TEST(EpochFacts, NothingToSaveWhenKeptAliveOrWithoutEpochs) {
  EXPECT_DOUBLE_EQ(analyzer::epoch_facts(loader_trace(4, 5, 20, 70, true)).persistent_speedup(), 1);
  const auto none = analyzer::epoch_facts(trace::Trace{});
  EXPECT_EQ(none.epochs, 0u);
  EXPECT_DOUBLE_EQ(none.persistent_speedup(), 1);
  // first steps no slower than the others: no wait, no gain
  EXPECT_DOUBLE_EQ(analyzer::epoch_facts(loader_trace(4, 5, 0, 10, false)).persistent_speedup(), 1);
}

// A mark from an integration before the prefetch and threads fields: they read as 0 (unknown).
TEST(EpochFacts, AMarkWithoutPrefetchOrThreadsLeavesThemUnknown) {
  trace::Trace t;
  const auto domain = t.strings.intern("tracetune");
  t.ranges.push(0, 1'000'000, 0, t.strings.intern("tracetune.epoch {\"epoch\": 0, \"persistent\": true, \"workers\": 4}"),
                trace::RangeKind::UserAnnotation, domain);
  const auto f = analyzer::epoch_facts(t);
  EXPECT_EQ(f.workers, 4);
  EXPECT_TRUE(f.persistent);
  EXPECT_EQ(f.prefetch, 0);
  EXPECT_EQ(f.threads, 0);
}
