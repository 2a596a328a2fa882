// The Python attribution of findings (analyzer/src/attribution/attribution.cpp) on hand-built samples.
#include "tracetune/analyzer/attribution.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "tracetune/trace/py_stacks.h"

namespace tt::analyzer {
namespace {

struct Samples {
  trace::Trace t;
  trace::PyStackBuilder b{t};
  std::uint32_t track = t.add_thread({trace::kNone, 1, "main"});
  std::uint32_t frame(std::string_view fn, std::string_view file, std::int32_t line) {
    return b.frame({t.strings.intern(fn), t.strings.intern(file), line});
  }
  void sample(trace::Ns ts, const std::vector<std::uint32_t>& innermost_first, std::uint32_t on = trace::kNone) {
    t.py_samples.ts.push_back(ts);
    t.py_samples.track.push_back(on == trace::kNone ? track : on);
    t.py_samples.stack.push_back(b.stack(innermost_first));
  }
};

TEST(Attribution, CountsTheJobsInnermostFrameAndItsHottestLine) {
  Samples s;
  const auto module = s.frame("<module>", "/job/train.py", 10);
  const auto augment88 = s.frame("augment", "/job/data.py", 88);
  const auto augment90 = s.frame("augment", "/job/data.py", 90);
  const auto numpy = s.frame("mean", "/usr/lib/python3/dist-packages/numpy/core/_methods.py", 5);
  const auto step = s.frame("step", "/opt/tt/plugins/python/tracetune/_autostep.py", 3);
  for (int i = 0; i < 6; ++i) s.sample(100 + i, {augment88, module});
  for (int i = 0; i < 2; ++i) s.sample(200 + i, {augment90, module});
  s.sample(300, {numpy, augment88, module});     // library code counts for the job's caller
  s.sample(400, {step, module});                 // tracetune's own frames too
  s.sample(500, {augment88, module});            // outside the window
  s.t.finalize();
  const HotSpots h = hot_spots(s.t, {{s.track, 0, 450}}, false);
  EXPECT_EQ(h.samples, 10u);
  ASSERT_EQ(h.top.size(), 2u);
  EXPECT_EQ(h.top[0].function, "augment");
  EXPECT_EQ(h.top[0].line, 88);
  EXPECT_EQ(h.top[0].samples, 9u);
  EXPECT_DOUBLE_EQ(h.top[0].share, 0.9);
  EXPECT_EQ(h.top[1].function, "<module>");
  EXPECT_EQ(hot_spots_line(h), "90% in augment() at job/data.py:88, 10% in <module>() at job/train.py:10");
}

TEST(Attribution, FetchingOnlyKeepsBatchesBeingMadeAndOverlapsCountOnce) {
  Samples s;
  const auto loop = s.frame("_worker_loop", "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", 300);
  const auto fetch = s.frame("fetch", "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", 51);
  const auto get = s.frame("get", "/usr/lib/python3.11/multiprocessing/queues.py", 100);
  const auto slow = s.frame("slow_augment", "/job/train.py", 31);
  for (int i = 0; i < 4; ++i) s.sample(10 * i, {slow, fetch, loop});
  for (int i = 0; i < 5; ++i) s.sample(10 * i + 5, {get, loop});  // idle worker: waiting for indices
  s.t.finalize();
  const HotSpots h = hot_spots(s.t, {{s.track, 0, 30}, {s.track, 20, 100}}, true);
  EXPECT_EQ(h.samples, 4u);
  ASSERT_EQ(h.top.size(), 1u);
  EXPECT_EQ(h.top[0].function, "slow_augment");
  EXPECT_EQ(hot_spots(s.t, {{s.track, 0, 100}}, false).samples, 9u);
}

TEST(Attribution, SamplesInWindowsAreTheSamplesHotSpotsCounts) {
  Samples s;
  const auto loop = s.frame("_worker_loop", "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/worker.py", 300);
  const auto fetch = s.frame("fetch", "/venv/lib/python3.11/site-packages/torch/utils/data/_utils/fetch.py", 51);
  const auto slow = s.frame("slow_augment", "/job/train.py", 31);
  const std::uint32_t other = s.t.add_thread({trace::kNone, 2, "other"});
  for (int i = 0; i < 4; ++i) s.sample(10 * i, {slow, fetch, loop});  // samples 0-3 (main, ts 0..30)
  s.sample(15, {loop});                                                // 4: idle worker loop
  s.sample(17, {});                                                    // 5: no Python frame
  s.sample(20, {slow, fetch, loop}, other);                            // 6: another thread
  s.t.finalize();
  const std::vector<SampleWindow> w = {{s.track, 0, 25}, {s.track, 10, 100}, {other, 0, 100}};
  const std::vector<std::uint32_t> all = samples_in_windows(s.t, w, false);
  ASSERT_EQ(all.size(), 6u);  // each once, the empty stack left out
  for (std::uint32_t i : all) EXPECT_NE(s.t.py_samples.stack[i], trace::kNone);
  EXPECT_TRUE(std::is_sorted(all.begin(), all.end()));
  const std::vector<std::uint32_t> fetching = samples_in_windows(s.t, w, true);
  EXPECT_EQ(fetching.size(), 5u);
  EXPECT_EQ(hot_spots(s.t, w, true).samples, fetching.size());
  EXPECT_EQ(hot_spots(s.t, w, false).samples, all.size());
  EXPECT_TRUE(samples_in_windows(s.t, {{s.track, 100, 200}}, false).empty());
}

TEST(Attribution, LibraryFiles) {
  EXPECT_TRUE(is_library_file("/usr/lib/python3/dist-packages/torch/nn/modules/module.py"));
  EXPECT_TRUE(is_library_file("/venv/lib/python3.11/site-packages/numpy/core/fromnumeric.py"));
  EXPECT_TRUE(is_library_file("/usr/lib/python3.11/threading.py"));
  EXPECT_TRUE(is_library_file("<frozen importlib._bootstrap>"));
  EXPECT_TRUE(is_library_file("/build/plugins/python/tracetune/_autostep.py"));
  EXPECT_FALSE(is_library_file("/home/me/job/train.py"));
  EXPECT_FALSE(is_library_file("train.py"));
}

}  // namespace
}  // namespace tt::analyzer
