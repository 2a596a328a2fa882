// What a flight recorder's dump keeps of each process (raw_crop.cpp): record --ring Nsteps; and
// which ended processes' record files the launcher may remove while the job runs (window.cpp).
#include <gtest/gtest.h>

#include <climits>

#include "tracetune/collector/merge.h"
#include "tracetune/collector/record_reader.h"
#include "tracetune/collector/window.h"

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

// A record file's header as the launcher reads it: `steps` Step records written, cut at `cut`,
// ended at `end` (0: still running).
std::pair<std::filesystem::path, RecordFileHeader> file(const char* name, const char* host, std::int64_t steps,
                                                        std::int64_t cut, std::int64_t end) {
  RecordFileHeader h;
  h.host = host;
  h.ring_steps_written = steps;
  h.ring_cut_ns = cut;
  h.end_mono_ns = end;
  if (end > 0) h.flags = kExited;
  return {name, h};
}

std::vector<std::string> names(const std::vector<std::filesystem::path>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(p.string());
  std::sort(out.begin(), out.end());
  return out;
}

WindowRequest ring_of_steps(std::int64_t n) {
  WindowRequest w;
  w.ring_steps = n;
  return w;
}

TEST(RingSteps, EndedProcessesWithoutStepsBeforeTheHostsEarliestCutAreRemoved) {
  const std::vector files = {
      file("rank0", "h", 50, 1000, 0),  file("rank1", "h", 40, 800, 0),  // cuts 1000 and 800: the host's is 800
      file("old worker", "h", 0, 0, 700), file("recent worker", "h", 0, 0, 900), file("live worker", "h", 0, 0, 0),
      file("other host's worker", "g", 0, 0, 10)};  // no stepping process on g: nothing to cut by
  EXPECT_EQ(names(ring_files_out_of_span(files, ring_of_steps(30), 5000)), (std::vector<std::string>{"old worker"}));
}

TEST(RingSteps, NothingIsRemovedWhileASteppingProcessHoldsFewerThanNSteps) {
  const std::vector files = {file("rank0", "h", 50, 1000, 0), file("rank1", "h", 10, 0, 0),
                             file("old worker", "h", 0, 0, 700)};
  EXPECT_TRUE(ring_files_out_of_span(files, ring_of_steps(30), 5000).empty());
}

TEST(RingSteps, AnEndedSteppingProcessIsKept) {
  const std::vector files = {file("rank0", "h", 50, 1000, 0), file("ended rank", "h", 50, 900, 950),
                             file("old worker", "h", 0, 0, 700)};
  EXPECT_EQ(names(ring_files_out_of_span(files, ring_of_steps(30), 5000)), (std::vector<std::string>{"old worker"}));
}

TEST(RingSeconds, ProcessesEndedBeforeTheSpanAreRemoved) {
  WindowRequest w;
  w.ring_s = 1;
  const std::vector files = {file("rank0", "h", 50, 1000, 0), file("old", "h", 0, 0, 3'000'000'000),
                             file("recent", "h", 0, 0, 4'500'000'000)};
  EXPECT_EQ(names(ring_files_out_of_span(files, w, 5'000'000'000)), (std::vector<std::string>{"old"}));
}

}  // namespace
}  // namespace tt::collector
