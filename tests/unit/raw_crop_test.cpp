// What a flight recorder's dump keeps of each process (raw_crop.cpp): record --ring Nsteps.
#include <gtest/gtest.h>

#include <climits>

#include "tracetune/collector/merge.h"
#include "tracetune/collector/record_reader.h"

namespace tt::collector {
namespace {

// A process that stepped `steps` times, 10 ns a step from t = 100, a mark in each step.
RawProcess stepping(const char* host, int steps, std::int64_t t0 = 100) {
  RawProcess p;
  p.header.host = host;
  for (int i = 0; i < steps; ++i) {
    const std::int64_t start = t0 + 10 * i;
    p.steps.push_back({1, StepRecord{start, start + 10, i, StepKind::Step, {}}});
    p.marks.push_back({1, MarkRecord{start + 1, 0, 0, 0, RangeSource::Python, {}}});
  }
  std::swap(p.steps.front(), p.steps.back());  // ring chunks are not in time order
  return p;
}

RawProcess worker(const char* host, std::int64_t from, std::int64_t to) {
  RawProcess p;
  p.header.host = host;
  for (std::int64_t t = from; t < to; t += 5) p.marks.push_back({2, MarkRecord{t, 0, 0, 0, RangeSource::Python, {}}});
  return p;
}

std::vector<std::int64_t> step_numbers(const RawProcess& p) {
  std::vector<std::int64_t> out;
  for (const auto& s : p.steps) out.push_back(s.rec.number);
  std::sort(out.begin(), out.end());
  return out;
}

std::int64_t first_mark(const RawProcess& p) {
  std::int64_t t = INT64_MAX;
  for (const auto& m : p.marks) t = std::min(t, m.rec.ts_ns);
  return t;
}

TEST(RingSteps, EachSteppingProcessKeepsItsLastNCompleteSteps) {
  RawProcess a = stepping("h", 10), b = stepping("h", 8, 130);
  RawProcess* ps[] = {&a, &b};
  crop_to_last_steps(ps, 3);
  EXPECT_EQ(step_numbers(a), (std::vector<std::int64_t>{7, 8, 9}));  // the step ending at 7's start is out
  EXPECT_EQ(step_numbers(b), (std::vector<std::int64_t>{5, 6, 7}));
  EXPECT_EQ(first_mark(a), 171);
  EXPECT_EQ(first_mark(b), 181);
}

TEST(RingSteps, AProcessWithoutStepsKeepsFromTheEarliestCutOfItsHost) {
  RawProcess a = stepping("h", 10), b = stepping("h", 8, 130), w = worker("h", 0, 300), other = worker("g", 0, 300);
  RawProcess* ps[] = {&a, &w, &b, &other};
  crop_to_last_steps(ps, 3);
  EXPECT_EQ(first_mark(w), 170);     // a's step 7 starts at 170, before b's step 5 (180)
  EXPECT_EQ(first_mark(other), 0);   // no stepping process on host g: nothing to cut by
}

TEST(RingSteps, AProcessHoldingFewerStepsKeepsAllItHolds) {
  RawProcess a = stepping("h", 2), w = worker("h", 0, 300);
  RawProcess* ps[] = {&a, &w};
  crop_to_last_steps(ps, 3);
  EXPECT_EQ(step_numbers(a), (std::vector<std::int64_t>{0, 1}));
  EXPECT_EQ(first_mark(w), 0);
}

}  // namespace
}  // namespace tt::collector
