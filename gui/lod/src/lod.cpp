#include "tracetune/gui/lod.h"

#include <algorithm>
#include <cmath>

namespace tt::gui {

namespace {

// First lane position k in [lo, n) with pred(k) false, for a monotone predicate (true, then false).
template <class Pred>
std::uint32_t partition_point(std::uint32_t lo, std::uint32_t n, Pred pred) {
  std::uint32_t count = n - lo;
  while (count > 0) {
    const std::uint32_t step = count / 2, mid = lo + step;
    if (pred(mid)) {
      lo = mid + 1;
      count -= step + 1;
    } else {
      count = step;
    }
  }
  return lo;
}

}  // namespace

std::pair<std::uint32_t, std::uint32_t> lane_range(const Lane& lane, Ns t0, Ns t1) {
  const std::uint32_t n = lane.size();
  // Disjoint, start-sorted events have sorted ends: "ends before the window" is a prefix.
  // An instant exactly at t0 is inside the window.
  const std::uint32_t first = partition_point(0, n, [&](std::uint32_t k) {
    const auto r = lane.row(k);
    const Ns e = lane.start[r] + lane.dur[r];
    return e < t0 || (e == t0 && lane.dur[r] > 0);
  });
  const std::uint32_t last = partition_point(first, n, [&](std::uint32_t k) { return lane.start_of(k) < t1; });
  return {first, last};
}

void lod_query(const Lane& lane, const LodWindow& w, std::vector<LodItem>& out) {
  if (w.t1 <= w.t0 || w.width_px <= 0) return;
  const auto [first, last] = lane_range(lane, w.t0, w.t1);
  const double npp = w.ns_per_px();
  // Durations below `narrow` ns are narrower than min_px; gaps below it join a run.
  const Ns narrow = std::max<Ns>(1, static_cast<Ns>(std::ceil(npp * w.min_px)));
  std::uint32_t k = first;
  while (k < last) {
    const Ns s = lane.start_of(k), e = lane.end_of(k);
    if (e - s >= narrow) {
      out.push_back({k, 1, s, e});
      ++k;
      continue;
    }
    // A narrow event: extend a run while the next event starts within `narrow` of the run's
    // end. Jump with a binary search: every event starting before run_end + narrow joins,
    // and only the last of them can be wide (the others lie between run_end and its start).
    std::uint32_t run_last = k;  // last lane position in the run
    Ns run_end = e;
    while (run_last + 1 < last) {
      const std::uint32_t j = partition_point(run_last + 1, last, [&](std::uint32_t q) {
        return lane.start_of(q) < run_end + narrow;
      });
      if (j == run_last + 1) break;  // the next event starts too far away
      const std::uint32_t cand = j - 1;
      if (lane.end_of(cand) - lane.start_of(cand) >= narrow) {
        // the last one in reach is wide: the run stops before it, it becomes a Block next
        run_last = cand - 1;
        run_end = std::max(run_end, lane.end_of(run_last));
        break;
      }
      run_last = cand;
      run_end = std::max(run_end, lane.end_of(cand));
    }
    out.push_back({k, run_last - k + 1, s, run_end});
    k = run_last + 1;
  }
}

std::vector<Lane> build_lanes(const trace::SpanColumns& table, std::uint32_t begin, std::uint32_t end,
                              const std::uint16_t* depth) {
  std::vector<Lane> lanes;
  std::vector<Ns> lane_end;  // end of the last event placed on each lane
  std::vector<std::uint32_t> lane_of(end - begin);
  bool single = true;
  for (std::uint32_t i = begin; i < end; ++i) {
    std::size_t l = depth ? depth[i] : 0;
    while (l < lane_end.size() && lane_end[l] > table.start[i]) ++l;
    if (l >= lane_end.size()) lane_end.resize(l + 1, INT64_MIN);
    lane_end[l] = std::max(lane_end[l], table.end(i));
    lane_of[i - begin] = static_cast<std::uint32_t>(l);
    single = single && l == 0;
  }
  lanes.resize(lane_end.size());
  for (auto& lane : lanes) {
    lane.start = table.start.data();
    lane.dur = table.dur.data();
  }
  if (single) {
    if (!lanes.empty()) {
      lanes[0].begin = begin;
      lanes[0].end = end;
    }
    return lanes;
  }
  std::vector<std::uint32_t> counts(lanes.size(), 0);
  for (auto l : lane_of) ++counts[l];
  for (std::size_t l = 0; l < lanes.size(); ++l) lanes[l].index.reserve(counts[l]);
  for (std::uint32_t i = begin; i < end; ++i) lanes[lane_of[i - begin]].index.push_back(i);
  // A lane made empty by a depth gap (depth jumps) stays as an empty row: harmless.
  return lanes;
}

// ---- counters ----

CounterSeries build_counter_series(const trace::CounterTable& c, std::vector<std::uint32_t> rows) {
  CounterSeries s;
  s.rows = std::move(rows);
  const std::size_t blocks = (s.rows.size() + CounterSeries::kBlock - 1) / CounterSeries::kBlock;
  s.block_min.resize(blocks);
  s.block_max.resize(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    double lo = INFINITY, hi = -INFINITY;
    const std::size_t e = std::min(s.rows.size(), (b + 1) * CounterSeries::kBlock);
    for (std::size_t k = b * CounterSeries::kBlock; k < e; ++k) {
      const double v = c.value[s.rows[k]];
      if (!std::isfinite(v)) continue;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    s.block_min[b] = lo;
    s.block_max[b] = hi;
  }
  if (blocks > 0) {
    s.lo = *std::min_element(s.block_min.begin(), s.block_min.end());
    s.hi = *std::max_element(s.block_max.begin(), s.block_max.end());
    if (!std::isfinite(s.lo)) s.lo = s.hi = 0;
  }
  return s;
}

namespace {

// min/max of the series' values at positions [a, b).
std::pair<double, double> series_range(const trace::CounterTable& c, const CounterSeries& s, std::uint32_t a,
                                       std::uint32_t b) {
  constexpr auto B = CounterSeries::kBlock;
  double lo = INFINITY, hi = -INFINITY;
  auto take = [&](double v) {
    if (!std::isfinite(v)) return;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  };
  while (a < b && a % B != 0) take(c.value[s.rows[a++]]);
  while (a + B <= b) {
    if (s.block_min[a / B] <= s.block_max[a / B]) {
      lo = std::min(lo, s.block_min[a / B]);
      hi = std::max(hi, s.block_max[a / B]);
    }
    a += B;
  }
  while (a < b) take(c.value[s.rows[a++]]);
  return {lo, hi};
}

}  // namespace

void counter_query(const trace::CounterTable& c, const CounterSeries& s, const LodWindow& w,
                   std::vector<CounterColumn>& out) {
  if (w.t1 <= w.t0 || w.width_px <= 0 || s.rows.empty()) return;
  const auto n = static_cast<std::uint32_t>(s.rows.size());
  const double npp = w.ns_per_px();
  const int width = static_cast<int>(std::ceil(w.width_px));
  auto ts_at = [&](std::uint32_t k) { return c.ts[s.rows[k]]; };
  // position of the first sample at or after t
  auto lower = [&](std::uint32_t from, Ns t) {
    return partition_point(from, n, [&](std::uint32_t k) { return ts_at(k) < t; });
  };
  std::uint32_t k = lower(0, w.t0);
  for (int x = 0; x < width;) {
    const Ns ca = w.t0 + static_cast<Ns>(x * npp);
    const Ns cb = w.t0 + static_cast<Ns>((x + 1) * npp);
    const std::uint32_t kb = lower(k, std::max(cb, ca + 1));
    if (kb > k) {  // samples in this column
      auto [lo, hi] = series_range(c, s, k, kb);
      if (k > 0) {  // the value held at the column's left edge is drawn too
        const double held = c.value[s.rows[k - 1]];
        if (std::isfinite(held)) { lo = std::min(lo, held); hi = std::max(hi, held); }
      }
      if (lo <= hi) out.push_back({static_cast<float>(x), static_cast<float>(x + 1), lo, hi});
      k = kb;
      ++x;
      continue;
    }
    // No sample here: the held value stays until the next sample's column.
    const int next_x = k < n ? static_cast<int>(std::min<double>(width, std::floor((ts_at(k) - w.t0) / npp)))
                             : width;
    const int x_end = std::max(next_x, x + 1);
    if (k > 0) {
      const double held = c.value[s.rows[k - 1]];
      if (std::isfinite(held)) out.push_back({static_cast<float>(x), static_cast<float>(x_end), held, held});
    }
    x = x_end;
  }
}

}  // namespace tt::gui
