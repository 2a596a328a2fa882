// The LOD engine (gui/lod) against brute force: random lanes and windows, and every row of a
// real Kineto trace from ../shared/data. No Qt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "tracetune/gui/lod.h"
#include "tracetune/gui/timeline_index.h"
#include "tracetune/trace/importers.h"

namespace tt::gui {
namespace {

using trace::Ns;

// The definition in lod.h, one event at a time (O(n)).
std::vector<LodItem> brute_force(const Lane& lane, const LodWindow& w) {
  std::vector<LodItem> out;
  const Ns narrow = std::max<Ns>(1, static_cast<Ns>(std::ceil(w.ns_per_px() * w.min_px)));
  std::vector<std::uint32_t> vis;
  for (std::uint32_t k = 0; k < lane.size(); ++k) {
    const Ns s = lane.start_of(k), e = lane.end_of(k);
    if (s < w.t1 && (e > w.t0 || (e == s && s >= w.t0))) vis.push_back(k);
  }
  for (std::size_t i = 0; i < vis.size();) {
    const auto k = vis[i];
    const Ns s = lane.start_of(k), e = lane.end_of(k);
    if (e - s >= narrow) {
      out.push_back({k, 1, s, e});
      ++i;
      continue;
    }
    std::size_t j = i;
    Ns run_end = e;
    while (j + 1 < vis.size()) {
      const auto q = vis[j + 1];
      if (lane.start_of(q) >= run_end + narrow || lane.end_of(q) - lane.start_of(q) >= narrow) break;
      run_end = std::max(run_end, lane.end_of(q));
      ++j;
    }
    out.push_back({k, static_cast<std::uint32_t>(j - i + 1), s, run_end});
    i = j + 1;
  }
  return out;
}

void expect_same(const std::vector<LodItem>& a, const std::vector<LodItem>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first) << i;
    EXPECT_EQ(a[i].count, b[i].count) << i;
    EXPECT_EQ(a[i].start, b[i].start) << i;
    EXPECT_EQ(a[i].end, b[i].end) << i;
  }
}

std::size_t item_bound(const LodWindow& w) { return static_cast<std::size_t>(2 * (w.width_px / w.min_px) + 4); }

// A random disjoint lane of n events: a mix of dense bursts of tiny events, long ones,
// instants and touching neighbours.
trace::SpanColumns random_lane_table(std::mt19937_64& rng, std::size_t n) {
  trace::SpanColumns c;
  std::uniform_int_distribution<int> kind(0, 9);
  Ns t = 1000;
  for (std::size_t i = 0; i < n; ++i) {
    const int k = kind(rng);
    Ns gap = k < 5 ? static_cast<Ns>(rng() % 50) : static_cast<Ns>(rng() % 20000);
    if (k == 9) gap = 0;
    Ns dur = k < 6 ? static_cast<Ns>(rng() % 100) : static_cast<Ns>(rng() % 100000);
    if (k == 8) dur = 0;
    t += gap;
    c.push_span(t, dur, 0, 0);
    t += dur;
  }
  return c;
}

TEST(Lod, MatchesBruteForceOnRandomLanes) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const auto table = random_lane_table(rng, 1 + rng() % 5000);
    const auto lanes = build_lanes(table, 0, static_cast<std::uint32_t>(table.size()));
    ASSERT_EQ(lanes.size(), 1u);  // disjoint input stays one index-free lane
    EXPECT_TRUE(lanes[0].index.empty());
    const Ns lo = table.start.front() - 5000, hi = table.end(table.size() - 1) + 5000;
    for (int q = 0; q < 40; ++q) {
      Ns a = lo + static_cast<Ns>(rng() % static_cast<std::uint64_t>(hi - lo));
      Ns b = lo + static_cast<Ns>(rng() % static_cast<std::uint64_t>(hi - lo));
      if (a > b) std::swap(a, b);
      if (a == b) ++b;
      LodWindow w{a, b, static_cast<double>(50 + rng() % 2000), q % 3 == 0 ? 1.0 : 3.0};
      std::vector<LodItem> got;
      lod_query(lanes[0], w, got);
      expect_same(got, brute_force(lanes[0], w));
      EXPECT_LE(got.size(), item_bound(w));
    }
  }
}

TEST(Lod, OutputScalesWithPixelsNotEvents) {
  // a million back-to-back 10 ns events seen whole on 1000 px: one merged run
  trace::SpanColumns c;
  for (Ns i = 0; i < 1'000'000; ++i) c.push_span(i * 10, 10, 0, 0);
  const auto lanes = build_lanes(c, 0, static_cast<std::uint32_t>(c.size()));
  std::vector<LodItem> got;
  LodWindow w{0, 10'000'000, 1000, 3};
  lod_query(lanes[0], w, got);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].count, 1'000'000u);
  EXPECT_EQ(got[0].end, 10'000'000);
  // spaced 100 px apart at this zoom: every one stays a block of its own
  got.clear();
  LodWindow zoomed{0, 1000, 1000, 3};
  lod_query(lanes[0], zoomed, got);
  EXPECT_EQ(got.size(), 100u);
  for (const auto& it : got) EXPECT_FALSE(it.merged());
}

TEST(Lod, EmptyAndDegenerateWindows) {
  trace::SpanColumns c;
  c.push_span(100, 50, 0, 0);
  c.push_span(200, 0, 0, 0);  // an instant
  const auto lanes = build_lanes(c, 0, 2);
  std::vector<LodItem> got;
  lod_query(lanes[0], {300, 300, 100, 3}, got);
  EXPECT_TRUE(got.empty());
  lod_query(lanes[0], {150, 200, 100, 3}, got);  // ends exactly at t0: out; starts at t1: out
  EXPECT_TRUE(got.empty());
  lod_query(lanes[0], {200, 201, 100, 3}, got);  // the instant at t0 is in
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].first, 1u);
  Lane empty;
  got.clear();
  lod_query(empty, {0, 100, 100, 3}, got);
  EXPECT_TRUE(got.empty());
}

// Lanes: every event exactly once, each lane start-sorted and disjoint, nesting respected.
void check_lanes(std::uint32_t begin, std::uint32_t end,
                 const std::vector<Lane>& lanes, const std::uint16_t* depth) {
  std::set<std::uint32_t> seen;
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    const auto& lane = lanes[l];
    for (std::uint32_t k = 0; k < lane.size(); ++k) {
      const auto r = lane.row(k);
      EXPECT_TRUE(seen.insert(r).second) << "row " << r << " twice";
      EXPECT_GE(r, begin);
      EXPECT_LT(r, end);
      if (depth) {
        EXPECT_GE(l, depth[r]);
      }
      if (k > 0) {
        EXPECT_LE(lane.end_of(k - 1), lane.start_of(k)) << "lane " << l << " overlaps at " << k;
      }
    }
  }
  EXPECT_EQ(seen.size(), end - begin);
}

TEST(Lod, LanesOfNestedAndOverlappingEvents) {
  // nested ranges (depth from finalize) and partial overlaps, plus concurrent "kernels"
  trace::Trace t;
  t.add_process({});
  const auto th = t.add_thread({0, 1, "main"});
  std::mt19937_64 rng(3);
  for (int i = 0; i < 3000; ++i) {
    const Ns s = static_cast<Ns>(rng() % 1'000'000);
    t.ranges.push(s, static_cast<Ns>(rng() % 50'000), th, 0, trace::RangeKind::CpuOp, 0);
  }
  t.finalize();
  const auto n = static_cast<std::uint32_t>(t.ranges.size());
  const auto lanes = build_lanes(t.ranges, 0, n, t.ranges.depth.data());
  EXPECT_GT(lanes.size(), 1u);
  check_lanes(0, n, lanes, t.ranges.depth.data());
  const auto stacked = build_lanes(t.ranges, 0, n);
  check_lanes(0, n, stacked, nullptr);
  // and the LOD on an indexed lane still matches brute force
  for (const auto& lane : lanes) {
    for (int q = 0; q < 20; ++q) {
      Ns a = static_cast<Ns>(rng() % 1'000'000), b = a + 1 + static_cast<Ns>(rng() % 500'000);
      LodWindow w{a, b, 800, 3};
      std::vector<LodItem> got;
      lod_query(lane, w, got);
      expect_same(got, brute_force(lane, w));
    }
  }
}

TEST(Lod, CounterColumnsBoundEverySample) {
  trace::CounterTable c;
  std::mt19937_64 rng(11);
  std::vector<std::uint32_t> rows;
  Ns ts = 0;
  for (std::uint32_t i = 0; i < 100'000; ++i) {
    ts += 1 + static_cast<Ns>(rng() % 1000);
    c.ts.push_back(ts);
    c.track.push_back(0);
    c.name.push_back(0);
    c.value.push_back(static_cast<double>(rng() % 10000) - 5000);
    rows.push_back(i);
  }
  const auto s = build_counter_series(c, rows);
  for (int q = 0; q < 30; ++q) {
    Ns a = static_cast<Ns>(rng() % static_cast<std::uint64_t>(ts)), b = a + 1 + static_cast<Ns>(rng() % 20'000'000);
    LodWindow w{a, b, static_cast<double>(100 + rng() % 1500), 3};
    std::vector<CounterColumn> cols;
    counter_query(c, s, w, cols);
    EXPECT_LE(cols.size(), static_cast<std::size_t>(std::ceil(w.width_px)));
    // every sample in the window lies in its column's [min, max]
    const double npp = w.ns_per_px();
    for (std::uint32_t i = 0; i < c.size(); ++i) {
      if (c.ts[i] < a || c.ts[i] >= b) continue;
      const double x = std::floor((c.ts[i] - a) / npp);
      auto it = std::find_if(cols.begin(), cols.end(), [&](const CounterColumn& col) { return col.x0 <= x && x < col.x1; });
      ASSERT_NE(it, cols.end()) << "sample " << i << " at x " << x;
      EXPECT_LE(it->min, c.value[i]);
      EXPECT_GE(it->max, c.value[i]);
    }
  }
}

// A real trace: every row's lanes hold all of its events, and LOD = brute force on each.
TEST(LodRealTrace, EveryRowOfAKinetoTrace) {
  trace::Trace t;
  const std::filesystem::path p = TT_SHARED_DATA_DIR "/kineto/hta/ns_resolution_rank_0.json.gz";
  if (!std::filesystem::exists(p)) GTEST_SKIP() << p << " missing";
  ASSERT_TRUE(trace::import_kineto(p, t).ok());
  t.finalize();
  const auto idx = build_timeline_index(t);
  ASSERT_FALSE(idx.rows.empty());
  std::uint64_t events = 0;
  std::set<Table> tables;
  std::mt19937_64 rng(5);
  for (const auto& row : idx.rows) {
    events += row.events;
    tables.insert(row.table);
    if (row.table == Table::Counters) continue;
    std::uint64_t in_lanes = 0;
    for (const auto& lane : row.lanes) in_lanes += lane.size();
    EXPECT_EQ(in_lanes, row.events) << row.label;
    for (const auto& lane : row.lanes) {
      for (int q = 0; q < 8; ++q) {
        const Ns span = idx.end - idx.start;
        Ns a = idx.start + static_cast<Ns>(rng() % static_cast<std::uint64_t>(span));
        Ns b = a + 1 + static_cast<Ns>(rng() % static_cast<std::uint64_t>(span / (1 + q * 10)));
        if (q == 0) { a = idx.start; b = idx.end; }
        LodWindow w{a, b, 1200, 3};
        std::vector<LodItem> got;
        lod_query(lane, w, got);
        expect_same(got, brute_force(lane, w));
        EXPECT_LE(got.size(), item_bound(w));
      }
    }
  }
  // every span event of the trace is on exactly one row (steps and collectives included)
  const std::uint64_t span_events = t.kernels.size() + t.memcpys.size() + t.memsets.size() + t.api_calls.size() +
                                    t.syncs.size() + t.ranges.size() + t.steps.size() + t.collectives.size() +
                                    t.io_calls.size() + t.counters.size();
  EXPECT_EQ(events, span_events);
  EXPECT_TRUE(tables.count(Table::Kernels));
  EXPECT_TRUE(tables.count(Table::Ranges));
  EXPECT_TRUE(tables.count(Table::ApiCalls));
  // locate() finds a row for events of every table
  for (auto table : tables) {
    if (table == Table::Counters) continue;
    const auto* cols = span_columns(t, table);
    for (std::uint32_t r = 0; r < cols->size(); r += 1 + cols->size() / 50) {
      const auto pos = locate(idx, t, {table, r});
      ASSERT_NE(pos.row, trace::kNone);
      EXPECT_EQ(idx.rows[pos.row].lanes[pos.lane].row(pos.pos), r);
    }
  }
}

}  // namespace
}  // namespace tt::gui
