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
    const Ns d = (*lane.dur)[r], e = lane.start[r] + d;
    return e < t0 || (e == t0 && d > 0);
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

namespace {

// Places `n` start-sorted events (the k-th is table row row_at(k)) on lanes: each on its depth's
// lane, or the next one below where the previous event there still runs. Returns the lane of
// each and the number of lanes.
template <class RowAt>
std::size_t place_on_lanes(const trace::SpanColumns& table, std::uint32_t n, RowAt row_at,
                           const trace::PackedColumn<std::uint16_t>* depth, std::vector<std::uint32_t>& lane_of) {
  std::vector<Ns> lane_end;  // end of the last event placed on each lane
  lane_of.resize(n);
  for (std::uint32_t k = 0; k < n; ++k) {
    const std::uint32_t i = row_at(k);
    std::size_t l = depth ? (*depth)[i] : 0;
    while (l < lane_end.size() && lane_end[l] > table.start[i]) ++l;
    if (l >= lane_end.size()) lane_end.resize(l + 1, INT64_MIN);
    lane_end[l] = std::max(lane_end[l], table.end(i));
    lane_of[k] = static_cast<std::uint32_t>(l);
  }
  return lane_end.size();
}

std::vector<Lane> empty_lanes(const trace::SpanColumns& table, std::size_t n) {
  std::vector<Lane> lanes(n);
  for (auto& lane : lanes) {
    lane.start = table.start.data();
    lane.dur = &table.dur;
  }
  return lanes;
}

template <class RowAt>
void fill_indexed(std::vector<Lane>& lanes, const std::vector<std::uint32_t>& lane_of, RowAt row_at) {
  std::vector<std::uint32_t> counts(lanes.size(), 0);
  for (auto l : lane_of) ++counts[l];
  for (std::size_t l = 0; l < lanes.size(); ++l) lanes[l].index.reserve(counts[l]);
  for (std::uint32_t k = 0; k < lane_of.size(); ++k) lanes[lane_of[k]].index.push_back(row_at(k));
  // A lane made empty by a depth gap (depth jumps) stays as an empty row: harmless.
}

}  // namespace

std::vector<Lane> build_lanes(const trace::SpanColumns& table, std::uint32_t begin, std::uint32_t end,
                              const trace::PackedColumn<std::uint16_t>* depth) {
  std::vector<std::uint32_t> lane_of;
  const auto row_at = [begin](std::uint32_t k) { return begin + k; };
  auto lanes = empty_lanes(table, place_on_lanes(table, end - begin, row_at, depth, lane_of));
  if (std::all_of(lane_of.begin(), lane_of.end(), [](std::uint32_t l) { return l == 0; })) {
    if (!lanes.empty()) {
      lanes[0].begin = begin;
      lanes[0].end = end;
    }
    return lanes;
  }
  fill_indexed(lanes, lane_of, row_at);
  return lanes;
}

std::vector<Lane> build_lanes_of(const trace::SpanColumns& table, const std::vector<std::uint32_t>& rows) {
  std::vector<std::uint32_t> lane_of;
  const auto row_at = [&rows](std::uint32_t k) { return rows[k]; };
  auto lanes = empty_lanes(table, place_on_lanes(table, static_cast<std::uint32_t>(rows.size()), row_at, nullptr, lane_of));
  fill_indexed(lanes, lane_of, row_at);
  return lanes;
}

// ---- counters ----

namespace {

// The two series kinds seen through one interface: sample k's time and value, and the
// position of the first sample at or after t (from `from` on).
struct SampleView {
  static constexpr bool kAlwaysFinite = false;  // a recorded value may be NaN or infinite
  const trace::CounterTable& c;
  const CounterSeries& s;
  Ns ts(std::uint32_t k) const { return c.ts[s.rows[k]]; }
  double value(std::uint32_t k) const { return c.value[s.rows[k]]; }
  Ns end() const { return INT64_MAX; }  // the last sample holds for ever
  std::uint32_t lower(std::uint32_t from, Ns t) const {
    return partition_point(from, s.size(), [&](std::uint32_t k) { return ts(k) < t; });
  }
};
struct BinView {
  static constexpr bool kAlwaysFinite = true;  // computed from the events
  const CounterSeries& s;
  Ns ts(std::uint32_t k) const { return s.t0 + static_cast<Ns>(k) * s.bin; }
  double value(std::uint32_t k) const { return s.bins[k]; }
  Ns end() const { return s.end(); }
  std::uint32_t lower(std::uint32_t from, Ns t) const {  // arithmetic: bins are evenly spaced
    if (t <= s.t0) return from;
    const Ns k = (t - s.t0 + s.bin - 1) / s.bin;
    return static_cast<std::uint32_t>(std::clamp<Ns>(k, from, s.size()));
  }
};

template <class View>
void summarise(CounterSeries& s, const View& v) {
  const std::uint32_t n = s.size();
  const std::size_t blocks = (n + CounterSeries::kBlock - 1) / CounterSeries::kBlock;
  s.block_min.resize(blocks);
  s.block_max.resize(blocks);
  for (std::size_t b = 0; b < blocks; ++b) {
    double lo = INFINITY, hi = -INFINITY;
    const std::size_t e = std::min<std::size_t>(n, (b + 1) * CounterSeries::kBlock);
    for (std::size_t k = b * CounterSeries::kBlock; k < e; ++k) {
      const double x = v.value(static_cast<std::uint32_t>(k));
      if (!std::isfinite(x)) continue;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    }
    s.block_min[b] = lo;
    s.block_max[b] = hi;
  }
  if (blocks > 0) {
    s.lo = *std::min_element(s.block_min.begin(), s.block_min.end());
    s.hi = *std::max_element(s.block_max.begin(), s.block_max.end());
    if (!std::isfinite(s.lo)) s.lo = s.hi = 0;
  }
}

// min/max of the series' values at positions [a, b).
template <class View>
std::pair<double, double> series_range(const View& v, const CounterSeries& s, std::uint32_t a, std::uint32_t b) {
  constexpr auto B = CounterSeries::kBlock;
  double lo = INFINITY, hi = -INFINITY;
  auto take = [&](double x) {
    if (!View::kAlwaysFinite && !std::isfinite(x)) return;
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  };
  while (a < b && a % B != 0) take(v.value(a++));
  while (a + B <= b) {
    if (s.block_min[a / B] <= s.block_max[a / B]) {
      lo = std::min(lo, s.block_min[a / B]);
      hi = std::max(hi, s.block_max[a / B]);
    }
    a += B;
  }
  while (a < b) take(v.value(a++));
  return {lo, hi};
}

template <class View>
void query(const View& v, const CounterSeries& s, const LodWindow& w, std::vector<CounterColumn>& out) {
  const std::uint32_t n = s.size();
  if (w.t1 <= w.t0 || w.width_px <= 0 || n == 0) return;
  const double npp = w.ns_per_px();
  const int width = static_cast<int>(std::ceil(w.width_px));
  // the pixel column holding time t, clamped to [0, width]
  auto column_of = [&](Ns t, bool round_up) {
    const double x = static_cast<double>(t - w.t0) / npp;
    return static_cast<int>(std::clamp(round_up ? std::ceil(x) : std::floor(x), 0.0, static_cast<double>(width)));
  };
  // the held value ends where the series ends (Bins) or never (Samples)
  const int end_x = v.end() == INT64_MAX || v.end() >= w.t1 ? width : column_of(v.end(), true);
  auto lower = [&](std::uint32_t from, Ns t) { return v.lower(from, t); };
  // a column with the same range as the one before it (a flat stretch) widens that one
  const std::size_t first = out.size();
  auto emit = [&](int x0, int x1, double lo, double hi) {
    if (out.size() > first && out.back().x1 == static_cast<float>(x0) && out.back().min == lo && out.back().max == hi)
      out.back().x1 = static_cast<float>(x1);
    else
      out.push_back({static_cast<float>(x0), static_cast<float>(x1), lo, hi});
  };
  auto held = [&](std::uint32_t k, double& lo, double& hi) {  // widen by the value held before sample k
    if (k == 0) return;
    const double x = v.value(k - 1);
    if (std::isfinite(x)) { lo = std::min(lo, x); hi = std::max(hi, x); }
  };
  std::uint32_t k = lower(0, w.t0);
  for (int x = 0; x < std::min(width, end_x);) {
    const Ns ca = w.t0 + static_cast<Ns>(x * npp);
    const Ns cb = w.t0 + static_cast<Ns>((x + 1) * npp);
    const std::uint32_t kb = lower(k, std::max(cb, ca + 1));
    if (kb > k) {  // samples in this column
      auto [lo, hi] = series_range(v, s, k, kb);
      held(k, lo, hi);  // the value held at the column's left edge is drawn too
      if (lo <= hi) emit(x, x + 1, lo, hi);
      k = kb;
      ++x;
      continue;
    }
    // No sample here: the held value stays until the next sample's column (or the end).
    const int next_x = k < n ? std::min(column_of(v.ts(k), false), end_x) : end_x;
    const int x_end = std::max(next_x, x + 1);
    double lo = INFINITY, hi = -INFINITY;
    held(k, lo, hi);
    if (lo <= hi) emit(x, x_end, lo, hi);
    x = x_end;
  }
}

}  // namespace

CounterSeries build_counter_series(const trace::CounterTable& c, std::vector<std::uint32_t> rows) {
  CounterSeries s;
  s.rows = std::move(rows);
  summarise(s, SampleView{c, s});
  return s;
}

CounterSeries build_binned_series(std::vector<float> values, Ns t0, Ns bin, const char* unit) {
  CounterSeries s;
  s.kind = CounterSeries::Kind::Bins;
  s.bins = std::move(values);
  s.t0 = t0;
  s.bin = std::max<Ns>(1, bin);
  s.unit = unit;
  summarise(s, BinView{s});
  return s;
}

void counter_query(const trace::CounterTable& c, const CounterSeries& s, const LodWindow& w,
                   std::vector<CounterColumn>& out) {
  if (s.derived()) query(BinView{s}, s, w, out);
  else query(SampleView{c, s}, s, w, out);
}

bool counter_value_at(const trace::CounterTable& c, const CounterSeries& s, Ns t, double& value) {
  if (s.derived()) {
    if (t < s.t0 || t >= s.end()) return false;
    value = s.bins[static_cast<std::size_t>((t - s.t0) / s.bin)];
    return true;
  }
  const SampleView v{c, s};
  const std::uint32_t k = partition_point(0, s.size(), [&](std::uint32_t q) { return v.ts(q) <= t; });
  if (k == 0 || !std::isfinite(v.value(k - 1))) return false;
  value = v.value(k - 1);
  return true;
}

}  // namespace tt::gui
