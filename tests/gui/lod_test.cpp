// The LOD engine (gui/lod) against brute force: random lanes and windows, and every row of a
// real Kineto trace from tests/data/corpus; the derived counters (GPU busy %, copy bandwidth,
// I/O throughput) against brute-force references and a real GPU trace. No Qt.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "tracetune/gui/derived_counters.h"
#include "tracetune/gui/lod.h"
#include "tracetune/gui/timeline_index.h"
#include "tracetune/trace/importers.h"

namespace tt::gui {
namespace {

// A Kineto trace from tests/data/corpus, imported and finalised; nullopt when the file is missing.
std::optional<trace::Trace> shared_trace(const char* rel) {
  const std::filesystem::path p = std::filesystem::path(TT_CORPUS_DIR) / rel;
  if (!std::filesystem::exists(p)) return std::nullopt;
  trace::Trace t;
  EXPECT_TRUE(trace::import_kineto(p, t).ok()) << p;
  t.finalize();
  return t;
}

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
                 const std::vector<Lane>& lanes, const trace::PackedColumn<std::uint16_t>* depth) {
  std::set<std::uint32_t> seen;
  for (std::size_t l = 0; l < lanes.size(); ++l) {
    const auto& lane = lanes[l];
    for (std::uint32_t k = 0; k < lane.size(); ++k) {
      const auto r = lane.row(k);
      EXPECT_TRUE(seen.insert(r).second) << "row " << r << " twice";
      EXPECT_GE(r, begin);
      EXPECT_LT(r, end);
      if (depth) {
        EXPECT_GE(l, (*depth)[r]);
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
  const auto lanes = build_lanes(t.ranges, 0, n, &t.ranges.depth);
  EXPECT_GT(lanes.size(), 1u);
  check_lanes(0, n, lanes, &t.ranges.depth);
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

// A stream with collectives of two communicators (a data-parallel and a tensor-parallel group)
// gets one row per communicator, each holding exactly its events; a stream with one keeps one.
TEST(TimelineIndex, CollectivesSplitByCommunicator) {
  trace::Trace t;
  trace::Process p;
  p.pid = 9;
  const auto pi = t.add_process(p);
  trace::Device d;
  d.process = pi;
  const auto di = t.add_device(d);
  const auto mixed = t.add_stream({di, 7, ""}), plain = t.add_stream({di, 8, ""});
  const auto dp = t.strings.intern("dp"), tp = t.strings.intern("tp"), op = t.strings.intern("allreduce");
  auto coll = [&](std::uint32_t track, Ns s, Ns dur, trace::StringId comm) {
    t.collectives.push(s, dur, track, op, op, 1024, 256, 0, 2, comm, trace::CollectiveSide::Device, 0);
  };
  coll(mixed, 0, 100, dp);
  coll(mixed, 50, 100, tp);   // overlaps the dp one: separate rows need no stacking
  coll(mixed, 60, 100, tp);   // overlaps the previous tp one: a second lane in the tp row
  coll(mixed, 300, 50, dp);
  coll(mixed, 400, 50, tp);
  coll(plain, 0, 10, dp);
  coll(plain, 20, 10, dp);
  t.finalize();
  const auto idx = build_timeline_index(t);
  std::map<std::string, const TimelineRow*> rows;
  for (const auto& r : idx.rows)
    if (r.table == Table::Collectives) rows[r.label + (r.track == plain ? " (plain)" : "")] = &r;
  ASSERT_EQ(rows.size(), 3u);
  ASSERT_TRUE(rows.count("NCCL · comm dp") && rows.count("NCCL · comm tp") && rows.count("NCCL (plain)"));
  std::multiset<std::uint32_t> seen;
  for (const auto& [label, r] : rows) {
    std::uint64_t n = 0;
    for (const auto& lane : r->lanes)
      for (std::uint32_t k = 0; k < lane.size(); ++k) {
        const auto row = lane.row(k);
        seen.insert(row);
        ++n;
        if (label != "NCCL (plain)") {
          EXPECT_EQ(t.strings.get(t.collectives.communicator[row]), label.substr(label.size() - 2));
        }
        if (k > 0) {
          EXPECT_LE(lane.end_of(k - 1), lane.start_of(k)) << label;  // a lane never overlaps itself
        }
      }
    EXPECT_EQ(n, r->events) << label;
  }
  EXPECT_EQ(rows["NCCL · comm tp"]->lanes.size(), 2u);
  EXPECT_EQ(rows["NCCL · comm dp"]->lanes.size(), 1u);
  ASSERT_EQ(seen.size(), t.collectives.size());
  for (std::uint32_t i = 0; i < t.collectives.size(); ++i) EXPECT_EQ(seen.count(i), 1u) << i;
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
  auto loaded = shared_trace("kineto/hta/ns_resolution_rank_0.json.gz");
  ASSERT_TRUE(loaded) << "kineto/hta/ns_resolution_rank_0.json.gz missing from tests/data/corpus";
  const trace::Trace& t = *loaded;
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

// ---- derived counters ----

TEST(TimelineIndexRealTrace, KinetoPseudoProcessesFoldIntoOneCollapsedGroup) {
  auto loaded = shared_trace("kineto/hta/ns_resolution_rank_0.json.gz");
  ASSERT_TRUE(loaded) << "kineto/hta/ns_resolution_rank_0.json.gz missing from tests/data/corpus";
  const trace::Trace& t = *loaded;
  const auto idx = build_timeline_index(t);
  std::vector<std::uint32_t> folded;
  for (std::uint32_t g = 0; g < idx.groups.size(); ++g)
    if (idx.groups[g].start_collapsed) folded.push_back(g);
  ASSERT_EQ(folded.size(), 1u);
  const auto pseudo = folded[0];
  EXPECT_EQ(idx.groups[pseudo].label, "profiler pseudo-processes");
  EXPECT_EQ(idx.groups[pseudo].level, 1);
  auto under = [&](std::uint32_t g) {
    for (; g != trace::kNone; g = idx.groups[g].parent)
      if (g == pseudo) return true;
    return false;
  };
  std::size_t pseudo_rows = 0;
  for (const auto& row : idx.rows) {
    if (row.process == trace::kNone) continue;
    const bool is_pseudo = t.processes[row.process].pid < 0;  // "Spans", "Traces", "<unnamed>"
    EXPECT_EQ(under(row.group), is_pseudo) << row.label << " of pid " << t.processes[row.process].pid;
    pseudo_rows += is_pseudo;
  }
  EXPECT_GT(pseudo_rows, 0u);
}

TEST(DerivedCounters, BinWidthFromTheSpan) {
  for (Ns span : {Ns(0), Ns(1), Ns(999), Ns(1'000'000), Ns(1'048'576'000), Ns(1'048'576'001), Ns(3'600'000'000'000),
                  Ns(86'400'000'000'000)}) {
    const auto g = BinGrid::covering(5000, 5000 + span);
    EXPECT_EQ(g.t0, 5000);
    EXPECT_GE(g.bin, kMinDerivedBin) << span;
    EXPECT_LE(g.n, kMaxDerivedBins) << span;
    EXPECT_GE(g.n, 1u);
    EXPECT_GE(g.end(), 5000 + span) << span;               // covers the trace
    EXPECT_LT(g.end() - g.bin, 5000 + std::max<Ns>(1, span));  // with no spare bin
    Ns m = g.bin;                                           // a 1-2-5 × 10^k width
    while (m % 10 == 0) m /= 10;
    EXPECT_TRUE(m == 1 || m == 2 || m == 5) << g.bin;
  }
  EXPECT_EQ(BinGrid::covering(0, 1'000'000).bin, 1000);        // 1 ms: the 1 µs floor
  EXPECT_EQ(BinGrid::covering(0, 100'000'000'000).bin, 100'000);  // 100 s: 95.4 µs → 100 µs
}

// Per bin, the union of the intervals clipped to it, sorted and merged: O(bins · n log n).
std::vector<double> brute_force_busy(const std::vector<std::pair<Ns, Ns>>& spans, const BinGrid& g) {
  std::vector<double> out(g.n, 0.0);
  for (std::uint32_t b = 0; b < g.n; ++b) {
    const Ns lo = g.t0 + static_cast<Ns>(b) * g.bin, hi = lo + g.bin;
    std::vector<std::pair<Ns, Ns>> in;
    for (auto [s, e] : spans)
      if (std::max(s, lo) < std::min(e, hi)) in.emplace_back(std::max(s, lo), std::min(e, hi));
    std::sort(in.begin(), in.end());
    Ns covered = 0, cs = 0, ce = INT64_MIN;
    for (auto [s, e] : in) {
      if (s > ce) {
        if (ce != INT64_MIN) covered += ce - cs;
        cs = s;
        ce = e;
      } else {
        ce = std::max(ce, e);
      }
    }
    if (ce != INT64_MIN) covered += ce - cs;
    out[b] = static_cast<double>(covered);
  }
  return out;
}

TEST(DerivedCounters, BusyIsTheUnionOfOverlappingStreams) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 40; ++trial) {
    const BinGrid g{10'000 + static_cast<Ns>(rng() % 5000), 1000 + static_cast<Ns>(rng() % 3) * 500,
                    static_cast<std::uint32_t>(20 + rng() % 200)};
    // several streams in one table (contiguous runs, like a finalized table) plus one in another
    trace::SpanColumns a, b;
    std::vector<TableRun> runs;
    std::vector<std::pair<Ns, Ns>> spans;
    const int streams = 1 + static_cast<int>(rng() % 4);
    for (int st = 0; st <= streams; ++st) {
      auto& table = st == streams ? b : a;
      const auto begin = static_cast<std::uint32_t>(table.size());
      Ns t = g.t0 - 2000 + static_cast<Ns>(rng() % 3000);  // some start before the grid
      for (int i = 0, n = static_cast<int>(rng() % 300); i < n; ++i) {
        t += static_cast<Ns>(rng() % 1500);  // start-sorted; durations make them overlap
        const int kind = static_cast<int>(rng() % 6);
        const Ns dur = kind == 0 ? 0 : kind == 1 ? static_cast<Ns>(rng() % 20 * g.bin) : static_cast<Ns>(rng() % 3000);
        table.push_span(t, dur, static_cast<std::uint32_t>(st), 0);
        spans.emplace_back(t, t + dur);
      }
      runs.push_back({&table, begin, static_cast<std::uint32_t>(table.size())});
    }
    const auto got = covered_ns_per_bin(runs, g);
    if (spans.empty()) {
      EXPECT_TRUE(got.empty());
      continue;
    }
    const auto want = brute_force_busy(spans, g);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], want[i]) << "trial " << trial << " bin " << i;  // integers: exact
      EXPECT_LE(got[i], static_cast<double>(g.bin));
    }
  }
}

TEST(DerivedCounters, BusyOfHandPickedCases) {
  const BinGrid g{0, 1000, 4};
  trace::SpanColumns s0, s1;
  s0.push_span(500, 1000, 0, 0);    // half of bin 0, half of bin 1
  s0.push_span(900, 200, 0, 0);     // inside the first (same stream, overlapping)
  s0.push_span(2000, 0, 0, 0);      // zero-length: covers nothing
  s1.push_span(1200, 300, 1, 0);    // overlaps s0's first on another stream: counts once
  s1.push_span(2500, 10'000, 1, 0); // runs past the grid's end
  const TableRun runs[] = {{&s0, 0, 3}, {&s1, 0, 2}};
  const auto got = covered_ns_per_bin(runs, g);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0], 500);
  EXPECT_EQ(got[1], 500);
  EXPECT_EQ(got[2], 500);
  EXPECT_EQ(got[3], 1000);
  EXPECT_TRUE(covered_ns_per_bin({}, g).empty());
}

trace::MemcpyTable random_copies(std::mt19937_64& rng, const BinGrid& g, std::size_t n) {
  trace::MemcpyTable m;
  Ns t = g.t0;
  for (std::size_t i = 0; i < n; ++i) {
    t += static_cast<Ns>(rng() % 2000);
    const int kind = static_cast<int>(rng() % 5);
    const Ns dur = kind == 0 ? 0 : kind == 1 ? static_cast<Ns>(rng() % 30) * g.bin : static_cast<Ns>(1 + rng() % 2500);
    if (t + dur > g.end()) break;  // every copy inside the grid: all its bytes land in a bin
    m.push_span(t, dur, 0, 0);
    m.bytes.push_back(rng() % (1ull << 30));
    m.correlation.push_back(0);
    m.direction.push_back(static_cast<trace::MemcpyDirection>(rng() % 4));
    m.src_kind.push_back(trace::MemoryKind::Unknown);
    m.dst_kind.push_back(trace::MemoryKind::Unknown);
    m.async.push_back(2);
  }
  return m;
}

TEST(DerivedCounters, CopyBandwidthConservesBytes) {
  std::mt19937_64 rng(33);
  for (int trial = 0; trial < 30; ++trial) {
    const BinGrid g{1'000'000, 1000, static_cast<std::uint32_t>(50 + rng() % 500)};
    const auto m = random_copies(rng, g, 1 + rng() % 400);
    const auto n = static_cast<std::uint32_t>(m.size());
    const TableRun runs[] = {{&m, 0, n / 2}, {&m, n / 2, n}};
    for (auto dir : {trace::MemcpyDirection::HtoD, trace::MemcpyDirection::DtoH}) {
      std::uint64_t copies = 0;
      const auto got = copy_bytes_per_bin(m, runs, dir, g, &copies);
      double total = 0;
      std::uint64_t want_copies = 0;
      std::vector<double> want(g.n, 0.0);  // brute force: each copy's share of every bin
      for (std::uint32_t i = 0; i < n; ++i) {
        if (m.direction[i] != dir) continue;
        ++want_copies;
        total += static_cast<double>(m.bytes[i]);
        for (std::uint32_t b = 0; b < g.n; ++b) {
          const Ns lo = g.t0 + static_cast<Ns>(b) * g.bin, hi = lo + g.bin;
          if (m.dur[i] == 0) {
            if (m.start[i] >= lo && m.start[i] < hi) want[b] += static_cast<double>(m.bytes[i]);
          } else {
            const Ns ov = std::min(hi, m.end(i)) - std::max(lo, m.start[i]);
            if (ov > 0) want[b] += static_cast<double>(m.bytes[i]) * static_cast<double>(ov) / static_cast<double>(m.dur[i]);
          }
        }
      }
      EXPECT_EQ(copies, want_copies);
      if (want_copies == 0) {
        EXPECT_TRUE(got.empty());
        continue;
      }
      ASSERT_EQ(got.size(), g.n);
      double sum = 0;
      for (std::uint32_t b = 0; b < g.n; ++b) {
        sum += got[b];
        EXPECT_NEAR(got[b], want[b], 1e-6 * (1 + total)) << "bin " << b;
      }
      EXPECT_NEAR(sum, total, 1e-9 * total) << "trial " << trial;  // conservation
    }
  }
}

TEST(DerivedCounters, IoThroughputCountsOnlyCallsWithBytes) {
  const BinGrid g{0, 1000, 10};
  trace::IoTable io;
  auto push = [&](Ns s, Ns d, std::int64_t bytes) {
    io.push_span(s, d, 0, 0);
    io.op.push_back(trace::IoOp::Read);
    io.fd.push_back(3);
    io.path.push_back(0);
    io.bytes.push_back(bytes);
    io.offset.push_back(-1);
    io.result.push_back(bytes);
    io.err.push_back(0);
  };
  push(100, 50, -1);      // an open: no bytes
  push(200, 0, 0);        // a zero-byte read
  const TableRun all[] = {{&io, 0, 2}};
  std::uint64_t calls = 9;
  EXPECT_TRUE(io_bytes_per_bin(io, all, g, &calls).empty());
  EXPECT_EQ(calls, 0u);
  push(500, 2000, 4000);  // 2000 bytes/µs over [500, 2500)
  push(3000, 0, 77);      // instant: all in bin 3
  const TableRun more[] = {{&io, 0, 4}};
  const auto got = io_bytes_per_bin(io, more, g, &calls);
  EXPECT_EQ(calls, 2u);
  ASSERT_EQ(got.size(), 10u);
  EXPECT_DOUBLE_EQ(got[0], 1000);
  EXPECT_DOUBLE_EQ(got[1], 2000);
  EXPECT_DOUBLE_EQ(got[2], 1000);
  EXPECT_DOUBLE_EQ(got[3], 77);
  EXPECT_DOUBLE_EQ(got[4], 0);
}

// Every bin that holds somewhere in a column's time range lies in the column's [min, max], and
// the column's extremes are values of bins that hold there (or touch it): tight, not just safe.
TEST(DerivedCounters, LodColumnsBoundEveryBinInTheirPixel) {
  std::mt19937_64 rng(17);
  const BinGrid g{2'000'000, 1000, 50'000};
  std::vector<float> v(g.n);
  for (auto& x : v) x = static_cast<float>(rng() % 10'000) / 100.0f;
  for (std::size_t i = 20'000; i < 20'100; ++i) v[i] = 0;  // an idle stretch
  const auto s = build_binned_series(v, g.t0, g.bin, "%");
  EXPECT_EQ(s.size(), g.n);
  EXPECT_EQ(s.hi, *std::max_element(v.begin(), v.end()));
  const trace::CounterTable none;
  for (int q = 0; q < 60; ++q) {
    // windows from a few bins to the whole series, some hanging off either end
    const Ns span = 1 + static_cast<Ns>(rng() % static_cast<std::uint64_t>(q % 3 == 0 ? 3000 : 80'000'000));
    const Ns a = g.t0 - span / 4 + static_cast<Ns>(rng() % static_cast<std::uint64_t>(g.end() - g.t0));
    LodWindow w{a, a + span, static_cast<double>(100 + rng() % 1500), 3};
    std::vector<CounterColumn> cols;
    counter_query(none, s, w, cols);
    EXPECT_LE(cols.size(), static_cast<std::size_t>(std::ceil(w.width_px)));
    const double npp = w.ns_per_px();
    // each pixel overlapping the bins is in exactly one column; the others in none
    const int width = static_cast<int>(std::ceil(w.width_px));
    for (int x = 0; x < width; ++x) {
      const Ns ca = w.t0 + static_cast<Ns>(x * npp), cb = std::max(ca + 1, w.t0 + static_cast<Ns>((x + 1) * npp));
      const bool has_bins = ca < g.end() && cb > g.t0;
      const auto n_cols = std::count_if(cols.begin(), cols.end(), [&](const CounterColumn& c) { return c.x0 <= x && x < c.x1; });
      EXPECT_EQ(n_cols, has_bins ? 1 : 0) << "q " << q << " x " << x;
    }
    for (const auto& c : cols) {
      const Ns ca = w.t0 + static_cast<Ns>(c.x0 * npp), cb = std::max(ca + 1, w.t0 + static_cast<Ns>(c.x1 * npp));
      const Ns b0 = std::max<Ns>(0, (ca - g.t0) / g.bin), b1 = std::min<Ns>(g.n, (cb - 1 - g.t0) / g.bin + 1);
      ASSERT_LT(b0, b1) << "a column with no bin";
      bool min_seen = false, max_seen = false;
      for (Ns b = b0; b < b1; ++b) {
        EXPECT_LE(c.min, v[b]) << "bin " << b;
        EXPECT_GE(c.max, v[b]) << "bin " << b;
      }
      // the column may also show the bin ending exactly at its left edge (the step into it)
      for (Ns b = std::max<Ns>(0, b0 - 1); b < b1; ++b) {
        min_seen = min_seen || c.min == v[b];
        max_seen = max_seen || c.max == v[b];
      }
      EXPECT_TRUE(min_seen && max_seen);
    }
  }
  // the readout: the bin holding t, nothing outside the bins
  double x = -1;
  EXPECT_TRUE(counter_value_at(none, s, g.t0 + 1500, x));
  EXPECT_EQ(x, v[1]);
  EXPECT_FALSE(counter_value_at(none, s, g.t0 - 1, x));
  EXPECT_FALSE(counter_value_at(none, s, g.end(), x));
}

// A small trace built by hand: which derived rows exist, and where they sit in the tree.
struct TraceBuilder {
  trace::Trace t;
  void kernel(std::uint32_t track, Ns s, Ns d) {
    t.kernels.push_span(s, d, track, 0);
    t.kernels.correlation.push_back(0);
    t.kernels.external_id.push_back(0);
    t.kernels.config.push_back(trace::kNone);
    t.kernels.graph_id.push_back(0);
  }
  void copy(std::uint32_t track, Ns s, Ns d, std::uint64_t bytes, trace::MemcpyDirection dir) {
    auto& m = t.memcpys;
    m.push_span(s, d, track, 0);
    m.bytes.push_back(bytes);
    m.correlation.push_back(0);
    m.direction.push_back(dir);
    m.src_kind.push_back(trace::MemoryKind::Pinned);
    m.dst_kind.push_back(trace::MemoryKind::Device);
    m.async.push_back(1);
  }
  void io(std::uint32_t track, Ns s, Ns d, std::int64_t bytes) {
    auto& c = t.io_calls;
    c.push_span(s, d, track, 0);
    c.op.push_back(bytes > 0 ? trace::IoOp::Read : trace::IoOp::Open);
    c.fd.push_back(3);
    c.path.push_back(0);
    c.bytes.push_back(bytes);
    c.offset.push_back(-1);
    c.result.push_back(bytes);
    c.err.push_back(0);
  }
};

std::vector<const TimelineRow*> derived_rows(const TimelineIndex& idx) {
  std::vector<const TimelineRow*> out;
  for (const auto& r : idx.rows)
    if (r.table == Table::Counters && r.counter.derived()) out.push_back(&r);
  return out;
}

// Stage 0: a CPU-only process with an I/O call that moved no bytes; 1: plus a GPU with
// kernels on two overlapping streams; 2: plus a host-to-device copy and a read of 4 KiB.
std::unique_ptr<TraceBuilder> staged_trace(int stage) {
  auto b = std::make_unique<TraceBuilder>();
  trace::Process p;
  p.pid = 7;
  const auto pi = b->t.add_process(p);
  const auto th = b->t.add_thread({pi, 7, "main"});
  b->t.ranges.push(0, 1'000'000, th, 0, trace::RangeKind::CpuOp, 0);
  b->io(th, 10, 5, -1);
  if (stage >= 1) {
    trace::Device d;
    d.process = pi;
    d.index = 3;
    const auto di = b->t.add_device(d);
    const auto s0 = b->t.add_stream({di, 7, ""}), s1 = b->t.add_stream({di, 8, ""});
    b->kernel(s0, 100'000, 50'000);
    b->kernel(s1, 120'000, 50'000);  // overlaps: busy counts [100, 170) µs once
    if (stage >= 2) {
      b->copy(s1, 300'000, 10'000, 1 << 20, trace::MemcpyDirection::HtoD);
      b->io(th, 500'000, 1000, 4096);
    }
  }
  b->t.finalize();
  return b;
}

TEST(DerivedCounters, RowsOnlyWhereThereIsData) {
  EXPECT_TRUE(derived_rows(build_timeline_index(staged_trace(0)->t)).empty());  // CPU only, no bytes moved
  {
    const auto b = staged_trace(1);
    const auto idx = build_timeline_index(b->t);
    const auto rows = derived_rows(idx);
    ASSERT_EQ(rows.size(), 1u);  // busy only: no copies, no I/O bytes
    EXPECT_EQ(rows[0]->label, "GPU busy %");
    EXPECT_STREQ(rows[0]->counter.unit, "%");
    EXPECT_EQ(idx.groups[rows[0]->group].label, "GPU 3");
    EXPECT_EQ(rows[0]->process, 0u);
    double sum = 0;
    for (float v : rows[0]->counter.bins) sum += v * static_cast<double>(rows[0]->counter.bin) / 100.0;
    EXPECT_NEAR(sum, 70'000, 1e-3);
  }
  const auto b = staged_trace(2);
  const auto idx = build_timeline_index(b->t);
  const auto rows = derived_rows(idx);
  std::vector<std::string> labels;
  for (auto* r : rows) labels.push_back(r->label);
  ASSERT_EQ(labels, (std::vector<std::string>{"I/O MB/s", "GPU busy %", "H2D GB/s"}));  // no D2H
  // I/O right under the process; the GPU rows first in the GPU's group, before its streams
  EXPECT_EQ(idx.groups[rows[0]->group].level, 1);
  EXPECT_STREQ(rows[0]->counter.unit, "MB/s");
  EXPECT_STREQ(rows[2]->counter.unit, "GB/s");
  std::uint32_t first_gpu_row = trace::kNone, first_stream_row = trace::kNone;
  for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
    if (&idx.rows[r] == rows[1]) first_gpu_row = r;
    if (idx.rows[r].table == Table::Kernels && first_stream_row == trace::kNone) first_stream_row = r;
  }
  ASSERT_NE(first_stream_row, trace::kNone);
  EXPECT_LT(first_gpu_row, first_stream_row);
  EXPECT_EQ(idx.groups[idx.rows[first_stream_row].group].parent, rows[1]->group);
  // 1 MiB over 10 µs is 104.9 GB/s while it runs; the read's 4096 B all land in the I/O row
  EXPECT_NEAR(rows[2]->counter.hi, 1048576.0 / 10'000, 1e-3);
  double io_bytes = 0;
  for (float v : rows[0]->counter.bins) io_bytes += v * static_cast<double>(rows[0]->counter.bin) / 1e3;
  EXPECT_NEAR(io_bytes, 4096, 1e-3);
  // the index accounts for the series
  std::size_t series = 0;
  for (auto* r : rows) series += r->counter.heap_bytes();
  EXPECT_GE(idx.index_bytes, series);
}

// A real GPU trace: a busy row per device whose time-weighted mean is the device's busy
// share computed from its kernels, copies and sets directly.
TEST(DerivedCountersRealTrace, GpuBusyMatchesTheKernels) {
  auto loaded = shared_trace("kineto/hta/ns_resolution_rank_0.json.gz");
  ASSERT_TRUE(loaded) << "kineto/hta/ns_resolution_rank_0.json.gz missing from tests/data/corpus";
  const trace::Trace& t = *loaded;
  const auto idx = build_timeline_index(t);
  int busy_rows = 0;
  for (const auto* row : derived_rows(idx)) {
    if (row->label != "GPU busy %") continue;
    ++busy_rows;
    const auto dev = t.streams[t.tracks[row->track].owner].device;
    std::vector<std::pair<Ns, Ns>> spans;
    auto take = [&](const trace::SpanColumns& c) {
      for (std::uint32_t i = 0; i < c.size(); ++i) {
        const auto& tr = t.tracks[c.track[i]];
        if (tr.type == trace::TrackType::Stream && t.streams[tr.owner].device == dev) spans.emplace_back(c.start[i], c.end(i));
      }
    };
    take(t.kernels);
    take(t.memcpys);
    take(t.memsets);
    ASSERT_FALSE(spans.empty());
    std::sort(spans.begin(), spans.end());
    Ns busy = 0, cs = spans[0].first, ce = spans[0].second;
    for (auto [s, e] : spans) {
      if (s > ce) { busy += ce - cs; cs = s; ce = e; }
      else ce = std::max(ce, e);
    }
    busy += ce - cs;
    const auto& c = row->counter;
    double weighted = 0;  // ∫ busy% dt over the bins
    for (float v : c.bins) weighted += static_cast<double>(v) * static_cast<double>(c.bin);
    const double span = static_cast<double>(idx.end - idx.start);
    const double share = static_cast<double>(busy) / span, mean = weighted / 100.0 / span;
    EXPECT_GT(share, 0.01);
    EXPECT_NEAR(mean, share, 1e-5) << "busy " << busy << " ns of " << span;
    EXPECT_LE(c.hi, 100.0 + 1e-3);
    EXPECT_GE(c.lo, 0.0);
    EXPECT_LE(c.size(), kMaxDerivedBins);
  }
  EXPECT_GE(busy_rows, 1);
}

TEST(DerivedCountersRealTrace, CpuOnlyTraceHasNoGpuRows) {
  auto loaded = shared_trace("kineto/hta/cpu_only_gloo.json.gz");
  ASSERT_TRUE(loaded) << "kineto/hta/cpu_only_gloo.json.gz missing from tests/data/corpus";
  const trace::Trace& t = *loaded;
  ASSERT_EQ(t.kernels.size() + t.memcpys.size() + t.memsets.size(), 0u);
  EXPECT_TRUE(derived_rows(build_timeline_index(t)).empty());
}

// The critical-path overlay draws only the pieces in the view (pieces_in_window): exactly the
// pieces the full loop drew (end >= t0 and start <= t1), over random runs of touching,
// gapped and zero-length pieces and windows before, inside, across and after them.
TEST(PiecesInWindow, AreThePiecesABruteForceScanKeeps) {
  struct Piece {
    Ns start, end;
  };
  std::mt19937_64 rng(7);
  for (int run_no = 0; run_no < 200; ++run_no) {
    std::vector<Piece> run;
    Ns t = static_cast<Ns>(rng() % 100);
    const int n = static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      if (rng() % 3 == 0) t += static_cast<Ns>(rng() % 50);  // a gap, else touching
      const Ns len = rng() % 5 == 0 ? 0 : static_cast<Ns>(1 + rng() % 30);
      run.push_back({t, t + len});
      t += len;
    }
    for (int w = 0; w < 50; ++w) {
      const Ns a = static_cast<Ns>(rng() % static_cast<std::uint64_t>(t + 120)) - 10;
      const Ns b = a + static_cast<Ns>(rng() % 200);
      std::vector<std::size_t> want;
      for (std::size_t i = 0; i < run.size(); ++i)
        if (!(run[i].end < a || run[i].start > b)) want.push_back(i);
      const auto got = pieces_in_window(std::span<const Piece>(run), a, b);
      std::vector<std::size_t> got_idx;
      for (const Piece& p : got) got_idx.push_back(static_cast<std::size_t>(&p - run.data()));
      ASSERT_EQ(got_idx, want) << "run " << run_no << ", window [" << a << ", " << b << "]";
    }
  }
}

}  // namespace
}  // namespace tt::gui
