// The columnar model: sorting, nesting depth, per-track slices, range queries (checked
// against brute force on a real trace) and the per-event memory budget.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "tracetune/trace/importers.h"

using namespace tt::trace;

namespace {

Trace real_trace() {
  Trace t;
  const std::filesystem::path p[] = {std::filesystem::path(TT_SHARED_DATA_DIR) / "kineto/hta/nccl_data.json.gz"};
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
  EXPECT_EQ(t.ranges.depth, (std::vector<std::uint16_t>{0, 1, 2, 1, 0, 0}));
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
