// The timeline's level-of-detail engine: what to draw for one lane of one track in a time
// window, at a given resolution, with output that scales with pixels, not events.
//
// A *lane* is a start-sorted run of pairwise disjoint events (touching allowed) of one trace
// table: a nesting depth of a thread's ranges, or one overlap-stacked level of a GPU stream.
// Because its events are disjoint, their ends are sorted too, so the first visible event is a
// binary search and a run of narrow events can be skipped with another (Tracy's technique, see
// ../shared/research/gui.md §5): an event at least `min_px` wide is a Block; consecutive
// events narrower than that, each starting less than `min_px` after the previous one ended,
// fold into one Merged item that carries their count. A narrow event with no such neighbour
// stays a Block (the renderer gives it a 1 px minimum).
//
// Output bound: Blocks are ≥ min_px wide and disjoint, and two Merged items are separated by
// ≥ min_px of empty space or a Block, so a query returns at most 2·(width_px / min_px) + 4
// items whatever the number of events. Cost: O(items · log n). No Qt here: the GUI, the
// tests and the benchmark all use this header alone.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::gui {

using trace::Ns;

// One lane: events of a table given by their indices (or, when `index` is empty, the
// contiguous table rows [begin, end): the common single-lane case costs no memory).
struct Lane {
  const Ns* start = nullptr;  // the table's start column
  const trace::PackedColumn<Ns>* dur = nullptr;  // the table's duration column
  std::uint32_t begin = 0, end = 0;
  std::vector<std::uint32_t> index;

  std::uint32_t size() const { return index.empty() ? end - begin : static_cast<std::uint32_t>(index.size()); }
  std::uint32_t row(std::uint32_t k) const { return index.empty() ? begin + k : index[k]; }
  Ns start_of(std::uint32_t k) const { return start[row(k)]; }
  Ns end_of(std::uint32_t k) const { const auto r = row(k); return start[r] + (*dur)[r]; }
};

// The view: [t0, t1) mapped onto `width_px` pixels.
struct LodWindow {
  Ns t0 = 0, t1 = 1;
  double width_px = 1;
  double min_px = 3;  // narrower than this folds into merged runs
  double ns_per_px() const { return static_cast<double>(t1 - t0) / width_px; }
};

struct LodItem {
  std::uint32_t first = 0;  // lane position of the first event (Lane::row() gives the table row)
  std::uint32_t count = 1;  // 1: a Block; > 1: a Merged run of `count` consecutive lane events
  Ns start = 0, end = 0;    // extent: the first event's start to the last event's end
  bool merged() const { return count > 1; }
};

// Appends to `out` the items of `lane` visible in `w`: every event with start < t1 and
// (end > t0, or a zero-length event at ≥ t0) is covered exactly once, in lane order.
void lod_query(const Lane& lane, const LodWindow& w, std::vector<LodItem>& out);

// The lane positions [first, last) of the events overlapping [t0, t1) (same rule as above).
std::pair<std::uint32_t, std::uint32_t> lane_range(const Lane& lane, Ns t0, Ns t1);

// Splits the rows [begin, end) of a finalized table (one track's slice) into lanes of
// disjoint events. `depth` (optional, same length as the table) gives each event's minimum
// lane, so nested ranges land on their nesting depth; an event that overlaps the previous one
// on that lane (a partial overlap, or concurrent GPU work) goes to the next free lane below.
// A slice that fits on one lane keeps the index-free form.
std::vector<Lane> build_lanes(const trace::SpanColumns& table, std::uint32_t begin, std::uint32_t end,
                              const trace::PackedColumn<std::uint16_t>* depth = nullptr);
// The same for a subset of a table's rows (start-sorted, e.g. one communicator's collectives
// on a track); every lane holds an index.
std::vector<Lane> build_lanes_of(const trace::SpanColumns& table, const std::vector<std::uint32_t>& rows);

// ---- counters: one value series, drawn as a min/max band per pixel column ----
//
// A counter row holds one of two kinds of series, both step functions (a value holds until
// the next one) queried by the same per-pixel min/max code over the same block summaries:
//   - Samples: rows of the trace's counter table (one counter name on one track), at their
//     recorded timestamps; the last value holds to the right edge of any view.
//   - Bins: a series derived from the events (derived_counters.h), evenly binned: value[i]
//     holds over [t0 + i·bin, t0 + (i+1)·bin), nothing before t0 or after the last bin.
//     Timestamps are implicit, so a bin costs 4 bytes (a float).

struct CounterSeries {
  enum class Kind : std::uint8_t { Samples, Bins };
  Kind kind = Kind::Samples;
  // Samples: counter table rows of this (track, name), by time
  std::vector<std::uint32_t> rows;
  // Bins: the values (in `unit`), their first bin's start and the bin width
  std::vector<float> bins;
  Ns t0 = 0, bin = 1;
  const char* unit = "";  // "%", "GB/s", "MB/s"; "B" for memory samples; empty for other samples
  // min/max of the values over blocks of kBlock consecutive samples or bins, so a column that
  // covers many costs O(blocks) instead of O(samples).
  static constexpr std::uint32_t kBlock = 64;
  std::vector<double> block_min, block_max;
  double lo = 0, hi = 0;  // value range over the whole series

  bool derived() const { return kind == Kind::Bins; }
  std::uint32_t size() const {
    return static_cast<std::uint32_t>(derived() ? bins.size() : rows.size());
  }
  Ns end() const { return t0 + static_cast<Ns>(bins.size()) * bin; }  // Bins: after the last bin
  std::size_t heap_bytes() const {
    return rows.capacity() * sizeof(std::uint32_t) + bins.capacity() * sizeof(float) +
           (block_min.capacity() + block_max.capacity()) * sizeof(double);
  }
};

struct CounterColumn {
  float x0 = 0, x1 = 0;      // pixel extent of the column
  double min = 0, max = 0;   // value range in it (a sample, or the value held from before)
};

// A series of the counter table's `rows` (one counter name on one track, in time order).
CounterSeries build_counter_series(const trace::CounterTable& c, std::vector<std::uint32_t> rows);
// A derived series: `values[i]` over [t0 + i·bin, t0 + (i+1)·bin), in `unit`.
CounterSeries build_binned_series(std::vector<float> values, Ns t0, Ns bin, const char* unit);

// One column per pixel with samples (or bins) starting in it, plus the held value of the last
// one before each empty stretch (a counter is a step function). `c` is read for Samples only.
// Every value that holds somewhere in a column's time range lies in its [min, max].
// O(width · (log n + kBlock)).
void counter_query(const trace::CounterTable& c, const CounterSeries& s, const LodWindow& w,
                   std::vector<CounterColumn>& out);

// The value holding at time `t`: the last sample at or before t, or the bin containing t.
// False when there is none (before the first sample, outside the bins, or a NaN sample).
bool counter_value_at(const trace::CounterTable& c, const CounterSeries& s, Ns t, double& value);

// The pieces of a run that reach into the window [t0, t1] (end >= t0 and start <= t1), for a
// run in time order whose starts and ends both ascend (disjoint pieces, touching allowed: a
// step's critical-path pieces): two binary searches, so a frame costs the pieces it shows,
// not every piece of the run.
template <class Piece>
std::span<const Piece> pieces_in_window(std::span<const Piece> run, Ns t0, Ns t1) {
  const auto lo = std::partition_point(run.begin(), run.end(), [&](const Piece& p) { return p.end < t0; });
  const auto hi = std::partition_point(lo, run.end(), [&](const Piece& p) { return p.start <= t1; });
  return {lo, hi};
}

}  // namespace tt::gui
