// Steps from named ranges (analyzer/step_ranges.h): explicit --step-range, the detected
// conventions, nesting, numbering, the kinds detection ignores, and the errors.
#include <gtest/gtest.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/step_ranges.h"

namespace tt::analyzer {
namespace {

using trace::Ns;
using trace::RangeKind;
using trace::Trace;

struct TwoThreads {
  Trace t;
  std::uint32_t main, worker;
  TwoThreads() {
    trace::Process p;
    p.pid = 10;
    const auto proc = t.add_process(p);
    main = t.add_thread({proc, 10, "main"});
    worker = t.add_thread({proc, 11, "worker"});
  }
  void range(std::uint32_t track, Ns s, Ns e, const std::string& name, RangeKind k = RangeKind::Nvtx) {
    t.ranges.push(s, e - s, track, t.strings.intern(name), k, 0);
  }
  std::vector<std::pair<std::int64_t, Ns>> steps() const {
    std::vector<std::pair<std::int64_t, Ns>> out;
    for (std::size_t i = 0; i < t.steps.size(); ++i) out.emplace_back(t.steps.number[i], t.steps.start[i]);
    return out;
  }
};

TEST(StepRanges, ExplicitPatternTakesTheBusiestThreadAndSkipsNestedMatches) {
  TwoThreads b;
  for (int i = 0; i < 3; ++i) {
    b.range(b.main, 1000 * i, 1000 * i + 900, "train_step " + std::to_string(i + 5));
    b.range(b.main, 1000 * i + 100, 1000 * i + 200, "train_step inner");  // inside: skipped
  }
  b.range(b.worker, 0, 50, "train_step 1");  // fewer on this thread
  b.t.finalize();
  auto r = steps_from_ranges(b.t, "^TRAIN_STEP");  // case-insensitive
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->steps, 3u);
  EXPECT_EQ(r->processes, 1u);
  EXPECT_EQ(b.steps(), (std::vector<std::pair<std::int64_t, Ns>>{{5, 0}, {6, 1000}, {7, 2000}}));
  for (std::size_t i = 0; i < b.t.steps.size(); ++i) EXPECT_EQ(b.t.steps.track[i], b.main);
}

TEST(StepRanges, DuplicateOrMissingNumbersNumberByOrder) {
  TwoThreads b;
  b.range(b.main, 0, 10, "iteration 1");
  b.range(b.main, 20, 30, "iteration 1");
  b.range(b.main, 40, 50, "iteration");
  b.t.finalize();
  ASSERT_TRUE(steps_from_ranges(b.t, "iteration").ok());
  EXPECT_EQ(b.steps(), (std::vector<std::pair<std::int64_t, Ns>>{{0, 0}, {1, 20}, {2, 40}}));
}

TEST(StepRanges, ExplicitPatternReplacesExistingSteps) {
  TwoThreads b;
  b.t.steps.push_span(0, 100, b.main, b.t.strings.intern("ProfilerStep#0"));
  b.t.steps.number.push_back(0);
  b.range(b.main, 0, 40, "fwd 1");
  b.range(b.main, 50, 90, "fwd 2");
  b.t.finalize();
  ASSERT_TRUE(steps_from_ranges(b.t, "^fwd").ok());
  EXPECT_EQ(b.steps(), (std::vector<std::pair<std::int64_t, Ns>>{{1, 0}, {2, 50}}));
}

TEST(StepRanges, Errors) {
  TwoThreads b;
  b.range(b.main, 0, 10, "step 1");
  b.t.finalize();
  auto bad = steps_from_ranges(b.t, "(unclosed");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("not a valid regular expression"), std::string::npos) << bad.error();
  auto none = steps_from_ranges(b.t, "^epoch");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("'^epoch'"), std::string::npos) << none.error();
}

TEST(StepRanges, DetectsConventionsOnlyWithoutStepsAndOnlyOnUserNamedRanges) {
  TwoThreads b;
  for (int i = 0; i < 4; ++i) b.range(b.main, 100 * i, 100 * i + 90, "Step #" + std::to_string(i), RangeKind::UserAnnotation);
  for (int i = 0; i < 6; ++i) b.range(b.worker, 100 * i, 100 * i + 90, "step " + std::to_string(i), RangeKind::CpuOp);
  b.t.finalize();
  auto d = detect_step_ranges(b.t);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->steps, 4u);  // the cpu_op ranges (more of them) are not a convention
  EXPECT_NE(d->note.find("--step-range"), std::string::npos);
  EXPECT_FALSE(detect_step_ranges(b.t).has_value());  // now the trace has steps
}

TEST(StepRanges, OneMatchIsNotAConventionAndOptimizerSpansAreNotSteps) {
  TwoThreads b;
  b.range(b.main, 0, 10, "step 1");
  b.range(b.main, 20, 30, "optimizer.step", RangeKind::UserAnnotation);
  b.range(b.main, 40, 50, "optimizer.step", RangeKind::UserAnnotation);
  b.t.finalize();
  EXPECT_FALSE(detect_step_ranges(b.t).has_value());
  EXPECT_EQ(b.t.steps.size(), 0u);
}

TEST(StepRanges, AnalysisSeesTheDerivedSteps) {
  TwoThreads b;
  for (int i = 0; i < 5; ++i) b.range(b.main, 1'000'000 * i, 1'000'000 * i + 800'000, "iteration " + std::to_string(i));
  b.t.finalize();
  auto note = choose_step_source(b.t, "");
  ASSERT_TRUE(note.ok());
  ASSERT_TRUE(note.value().has_value());
  const Analysis a = analyze(b.t, {}, "test");
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  EXPECT_TRUE(a.metrics.ranks[0].has_steps);
  EXPECT_EQ(a.metrics.ranks[0].steps.size(), 5u);
}

}  // namespace
}  // namespace tt::analyzer
