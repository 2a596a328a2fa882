#include "tracetune/analyzer/intervals.h"

#include <algorithm>

namespace tt::analyzer {

// The set operations reserve their output's usual size (one allocation, no regrowth copies of
// large vectors); a result under half of it gives the slack back here, so a set kept long
// holds little.
IntervalSet::IntervalSet(std::vector<Interval> disjoint_sorted) : iv_(std::move(disjoint_sorted)) {
  if (iv_.size() < iv_.capacity() / 2) iv_.shrink_to_fit();
  build_prefix();
}

void IntervalSet::build_prefix() {
  prefix_.reserve(iv_.size());
  Ns sum = 0;
  for (const Interval& x : iv_) prefix_.push_back(sum += x.length());
}

IntervalSet IntervalSet::union_of_sorted(const std::vector<Interval>& in) {
  std::vector<Interval> out;
  out.reserve(in.size());
  for (const Interval& x : in) {
    if (x.end <= x.start) continue;
    if (!out.empty() && x.start <= out.back().end) {
      out.back().end = std::max(out.back().end, x.end);
    } else {
      out.push_back(x);
    }
  }
  return IntervalSet(std::move(out));
}

IntervalSet IntervalSet::union_of(std::vector<Interval> raw) {
  const auto by_start = [](const Interval& a, const Interval& b) { return a.start < b.start; };
  // the union is the same whatever the order among equal starts: sorted input stays as it is
  if (!std::is_sorted(raw.begin(), raw.end(), by_start)) std::sort(raw.begin(), raw.end(), by_start);
  // merged in place: the union never has more intervals than were read
  std::size_t n = 0;
  for (const Interval& x : raw) {
    if (x.end <= x.start) continue;
    if (n > 0 && x.start <= raw[n - 1].end) raw[n - 1].end = std::max(raw[n - 1].end, x.end);
    else raw[n++] = x;
  }
  raw.resize(n);
  return IntervalSet(std::move(raw));
}

IntervalSet IntervalSet::intersect(const IntervalSet& o) const {
  std::vector<Interval> out;
  out.reserve(std::min(iv_.size(), o.iv_.size()));  // usually enough
  std::size_t i = 0, j = 0;
  while (i < iv_.size() && j < o.iv_.size()) {
    const Ns s = std::max(iv_[i].start, o.iv_[j].start);
    const Ns e = std::min(iv_[i].end, o.iv_[j].end);
    if (s < e) out.push_back({s, e});
    if (iv_[i].end < o.iv_[j].end) ++i; else ++j;
  }
  return IntervalSet(std::move(out));
}

IntervalSet IntervalSet::unite(const IntervalSet& o) const {
  if (o.iv_.empty()) return *this;
  if (iv_.empty()) return o;
  // both sets' intervals merged by start and joined where they touch, without a merged copy
  std::vector<Interval> out;
  out.reserve(iv_.size() + o.iv_.size());
  std::size_t i = 0, j = 0;
  while (i < iv_.size() || j < o.iv_.size()) {
    const bool mine = j == o.iv_.size() || (i < iv_.size() && !(o.iv_[j].start < iv_[i].start));
    const Interval& x = mine ? iv_[i++] : o.iv_[j++];
    if (!out.empty() && x.start <= out.back().end) out.back().end = std::max(out.back().end, x.end);
    else out.push_back(x);
  }
  return IntervalSet(std::move(out));
}

IntervalSet IntervalSet::subtract(const IntervalSet& o) const {
  std::vector<Interval> out;
  out.reserve(iv_.size());  // usually enough: few of ours are split
  std::size_t j = 0;
  for (Interval x : iv_) {
    while (j < o.iv_.size() && o.iv_[j].end <= x.start) ++j;
    std::size_t k = j;
    Ns cur = x.start;
    while (k < o.iv_.size() && o.iv_[k].start < x.end) {
      if (o.iv_[k].start > cur) out.push_back({cur, o.iv_[k].start});
      cur = std::max(cur, o.iv_[k].end);
      ++k;
    }
    if (cur < x.end) out.push_back({cur, x.end});
  }
  return IntervalSet(std::move(out));
}

IntervalSet IntervalSet::complement_in(Interval w) const {
  if (w.end <= w.start) return {};
  return IntervalSet(std::vector<Interval>{w}).subtract(*this);
}

Ns IntervalSet::measure_in(Ns t0, Ns t1) const {
  if (t1 <= t0 || iv_.empty()) return 0;
  // first interval ending after t0, first interval starting at or after t1
  auto lo = std::partition_point(iv_.begin(), iv_.end(), [&](const Interval& x) { return x.end <= t0; });
  auto hi = std::partition_point(lo, iv_.end(), [&](const Interval& x) { return x.start < t1; });
  if (lo == hi) return 0;
  const std::size_t a = static_cast<std::size_t>(lo - iv_.begin());
  const std::size_t b = static_cast<std::size_t>(hi - iv_.begin()) - 1;
  Ns total = prefix_[b] - (a == 0 ? 0 : prefix_[a - 1]);
  if (iv_[a].start < t0) total -= t0 - iv_[a].start;
  if (iv_[b].end > t1) total -= iv_[b].end - t1;
  return total;
}

IntervalSet IntervalSet::clip(Ns t0, Ns t1) const {
  std::vector<Interval> out;
  if (t1 <= t0) return {};
  auto lo = std::partition_point(iv_.begin(), iv_.end(), [&](const Interval& x) { return x.end <= t0; });
  for (auto it = lo; it != iv_.end() && it->start < t1; ++it)
    out.push_back({std::max(it->start, t0), std::min(it->end, t1)});
  return IntervalSet(std::move(out));
}

}  // namespace tt::analyzer
