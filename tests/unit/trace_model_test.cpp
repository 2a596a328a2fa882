// The columnar model: sorting, nesting depth, per-track slices, range queries (checked
// against brute force on a real trace) and the per-event memory budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <initializer_list>
#include <random>
#include <vector>

#include "tracetune/trace/importers.h"

using namespace tt::trace;

namespace {

Trace real_trace() {
  Trace t;
  const std::filesystem::path p[] = {std::filesystem::path(TT_CORPUS_DIR) / "kineto/hta/nccl_data.json.gz"};
  auto st = import_any(p, t);
  EXPECT_TRUE(st.ok()) << st.error();
  t.finalize();
  return t;
}

}  // namespace

TEST(TraceModel, FinalizeSortsByTrackThenStartAndNests) {
  Trace t;
  const auto p = t.add_process({});
  const auto a = t.add_thread({p, 1, ""});
  const auto b = t.add_thread({p, 2, ""});
  auto add = [&](std::uint32_t track, Ns start, Ns dur, const char* name) {
    t.ranges.push(start, dur, track, t.strings.intern(name), RangeKind::CpuOp, 0);
  };
  add(b, 50, 10, "b1");
  add(a, 20, 5, "child2");
  add(a, 10, 100, "parent");
  add(a, 12, 3, "child1");
  add(a, 12, 1, "grandchild");  // same start as child1 but shorter: nested inside it
  add(a, 200, 1, "after");
  t.finalize();
  std::vector<std::string> order;
  for (std::size_t i = 0; i < t.ranges.size(); ++i) order.emplace_back(t.strings.get(t.ranges.name[i]));
  EXPECT_EQ(order, (std::vector<std::string>{"parent", "child1", "grandchild", "child2", "after", "b1"}));
  EXPECT_EQ(std::vector<std::uint16_t>(t.ranges.depth.begin(), t.ranges.depth.end()),
            (std::vector<std::uint16_t>{0, 1, 2, 1, 0, 0}));
  ASSERT_EQ(t.slices_ranges().size(), 2u);
  EXPECT_EQ(t.slices_ranges()[0].track, a);
  EXPECT_EQ(t.slices_ranges()[0].end, 5u);
  EXPECT_EQ(t.slices_ranges()[0].max_dur, 100);
}

TEST(TraceModel, RangeQueriesFindExactlyTheOverlappingEvents) {
  const Trace t = real_trace();
  std::mt19937 rng(7);
  const auto [lo, hi] = t.time_bounds();
  ASSERT_LT(lo, hi);
  std::uniform_int_distribution<Ns> pos(lo, hi);
  std::size_t checked = 0;
  for (const auto& slice : t.slices_ranges()) {
    for (int q = 0; q < 20; ++q) {
      Ns a = pos(rng), b = pos(rng);
      if (a > b) std::swap(a, b);
      if (q == 0) { a = lo; b = hi + 1; }
      const auto [first, last] = query_range(t.ranges, t.slices_ranges(), slice.track, a, b);
      std::size_t via_query = 0, brute = 0;
      // overlap: starts before b and ends after a; an instant (zero-length) event counts
      // when it lies in [a, b)
      auto overlaps = [&](std::uint32_t i) {
        return t.ranges.start[i] < b && (t.ranges.end(i) > a || (t.ranges.dur[i] == 0 && t.ranges.start[i] >= a));
      };
      for (auto i = first; i < last; ++i) via_query += overlaps(i);
      for (auto i = slice.begin; i < slice.end; ++i) brute += overlaps(i);
      ASSERT_EQ(via_query, brute) << "track " << slice.track << " window " << a << ".." << b;
      EXPECT_GE(first, slice.begin);
      EXPECT_LE(last, slice.end);
      ++checked;
    }
  }
  EXPECT_GT(checked, 20u);
}

TEST(TraceModel, StaysWithinTheByteBudgetPerEvent) {
  const Trace t = real_trace();
  const double per_event = static_cast<double>(t.event_bytes()) / static_cast<double>(t.event_count());
  EXPECT_LE(per_event, 48.0) << t.event_bytes() << " bytes for " << t.event_count() << " events";
}

TEST(TraceModel, EmptyTraceIsFine) {
  Trace t;
  t.finalize();
  EXPECT_EQ(t.event_count(), 0u);
  EXPECT_EQ(t.time_bounds(), (std::pair<Ns, Ns>{0, 0}));
  const auto r = query_range(t.kernels, t.slices_kernels(), 0, 0, 100);
  EXPECT_EQ(r.first, r.second);
}

// shift_process_times moves one process's events in every table (threads and its devices'
// streams), its start/end, and nothing of the other process.
TEST(TraceModel, ShiftProcessTimesMovesEveryTableOfThatProcessOnly) {
  Trace t;
  Process a, b;
  a.start = 100;
  a.end = 900;
  b.start = 200;
  b.end = 800;
  const auto pa = t.add_process(a), pb = t.add_process(b);
  const auto ta = t.add_thread({pa, 1, ""}), tb = t.add_thread({pb, 2, ""});
  Device d;
  d.process = pb;
  const auto sb = t.add_stream({t.add_device(d), 7, ""});
  for (const auto track : {ta, tb}) {
    t.api_calls.push_span(10, 5, track, 0);
    t.syncs.push_span(10, 5, track, 0);
    t.ranges.push(10, 5, track, 0, RangeKind::Nvtx, 0);
    t.steps.push_span(10, 5, track, 0);
    t.collectives.push(10, 5, track, 0, 0, 0, 0, 0, -1, 0, CollectiveSide::Host, 0);
    t.io_calls.push_span(10, 5, track, 0);
    t.counters.ts.push_back(10);
    t.counters.track.push_back(track);
    t.flows.ts.push_back(10);
    t.flows.track.push_back(track);
  }
  for (SpanColumns* gpu : std::initializer_list<SpanColumns*>{&t.kernels, &t.memcpys, &t.memsets})
    gpu->push_span(10, 5, sb, 0);
  const std::vector<Ns> shift = {0, -3};
  shift_process_times(t, shift);
  EXPECT_EQ(t.processes[pa].start, 100);
  EXPECT_EQ(t.processes[pb].start, 197);
  EXPECT_EQ(t.processes[pb].end, 797);
  for (const SpanColumns* table : std::initializer_list<const SpanColumns*>{
           &t.api_calls, &t.syncs, &t.ranges, &t.steps, &t.collectives, &t.io_calls}) {
    EXPECT_EQ(table->start[0], 10);  // process a
    EXPECT_EQ(table->start[1], 7);   // process b
    EXPECT_EQ(table->dur[1], 5);
  }
  EXPECT_EQ(t.counters.ts[0], 10);
  EXPECT_EQ(t.counters.ts[1], 7);
  EXPECT_EQ(t.flows.ts[1], 7);
  EXPECT_EQ(t.kernels.start[0], 7);
  EXPECT_EQ(t.memcpys.start[0], 7);
  EXPECT_EQ(t.memsets.start[0], 7);
}
