// Interval arithmetic over time: the unions, intersections and clipped measures every
// analyzer metric is built from. An IntervalSet is a sorted list of disjoint half-open
// intervals [start, end) with a prefix sum of lengths, so the covered time inside any
// window is two binary searches away.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tt::analyzer {

using Ns = std::int64_t;

struct Interval {
  Ns start = 0, end = 0;
  Ns length() const { return end - start; }
};

class IntervalSet {
 public:
  IntervalSet() = default;
  // Builds the union of arbitrary (unsorted, overlapping, empty) intervals. O(n log n).
  static IntervalSet union_of(std::vector<Interval> raw);
  // Union of intervals already sorted by start: O(n), no copy of the input.
  static IntervalSet union_of_sorted(const std::vector<Interval>& sorted_by_start);

  IntervalSet intersect(const IntervalSet& other) const;
  IntervalSet unite(const IntervalSet& other) const;
  IntervalSet subtract(const IntervalSet& other) const;
  // [window.start, window.end) minus this set.
  IntervalSet complement_in(Interval window) const;

  // Total covered time, and covered time inside [t0, t1).
  Ns measure() const { return prefix_.empty() ? 0 : prefix_.back(); }
  Ns measure_in(Ns t0, Ns t1) const;
  // The set restricted to [t0, t1).
  IntervalSet clip(Ns t0, Ns t1) const;

  const std::vector<Interval>& intervals() const { return iv_; }
  bool empty() const { return iv_.empty(); }
  std::size_t size() const { return iv_.size(); }

 private:
  explicit IntervalSet(std::vector<Interval> disjoint_sorted);
  void build_prefix();
  std::vector<Interval> iv_;
  std::vector<Ns> prefix_;  // prefix_[i] = total length of iv_[0..i]
};

}  // namespace tt::analyzer
