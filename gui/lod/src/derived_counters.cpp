#include "tracetune/gui/derived_counters.h"

#include <algorithm>

namespace tt::gui {

BinGrid BinGrid::covering(Ns start, Ns end) {
  const Ns span = std::max<Ns>(1, end - start);
  const Ns need = std::max<Ns>(kMinDerivedBin, (span + kMaxDerivedBins - 1) / kMaxDerivedBins);
  // the smallest 1-2-5 × 10^k at or above `need`; ≥ need keeps n ≤ kMaxDerivedBins
  Ns bin = 1;
  for (Ns p = 1;; p *= 10) {
    if (p >= need) { bin = p; break; }
    if (2 * p >= need) { bin = 2 * p; break; }
    if (5 * p >= need) { bin = 5 * p; break; }
  }
  BinGrid g;
  g.t0 = start;
  g.bin = bin;
  g.n = static_cast<std::uint32_t>((span + bin - 1) / bin);
  return g;
}

BinAccumulator::BinAccumulator(const BinGrid& g)
    : g_(g), inv_bin_(1.0 / static_cast<double>(g.bin)), direct_(g.n, 0.0), diff_(g.n + 1, 0.0) {}

std::size_t BinAccumulator::bin_of(Ns t) const {
  const Ns off = t - g_.t0;
  auto b = static_cast<Ns>(static_cast<double>(off) * inv_bin_);
  // the product may round across a bin edge: step back or forward by one
  if (b * g_.bin > off) --b;
  else if ((b + 1) * g_.bin <= off) ++b;
  return static_cast<std::size_t>(b);
}

void BinAccumulator::add_rate(Ns s, Ns e, double rate) {
  s = std::clamp(s, g_.t0, g_.end());
  e = std::clamp(e, g_.t0, g_.end());
  if (e <= s) return;
  if (s >= last_lo_ && e <= last_hi_) {  // within the last interval's bin
    direct_[last_] += rate * static_cast<double>(e - s);
    return;
  }
  const std::size_t b0 = bin_of(s), b1 = bin_of(e);  // b1 is n when e is the grid's end
  last_ = b0;
  last_lo_ = g_.t0 + static_cast<Ns>(b0) * g_.bin;
  last_hi_ = last_lo_ + g_.bin;
  if (b0 == b1) {
    direct_[b0] += rate * static_cast<double>(e - s);
    return;
  }
  const Ns b0_end = g_.t0 + static_cast<Ns>(b0 + 1) * g_.bin, b1_start = g_.t0 + static_cast<Ns>(b1) * g_.bin;
  direct_[b0] += rate * static_cast<double>(b0_end - s);
  if (b1 < g_.n) direct_[b1] += rate * static_cast<double>(e - b1_start);
  if (b0 + 1 < b1) {  // whole bins b0+1 .. b1-1
    const double full = rate * static_cast<double>(g_.bin);
    diff_[b0 + 1] += full;
    diff_[b1] -= full;
  }
}

void BinAccumulator::add_at(Ns t, double amount) {
  if (t < g_.t0 || t >= g_.end()) return;
  direct_[bin_of(t)] += amount;
}

std::vector<double> BinAccumulator::finish() {
  double running = 0;
  for (std::size_t i = 0; i < direct_.size(); ++i) {
    running += diff_[i];
    // the difference array cancels to rounding error, never below zero for real
    direct_[i] = std::max(0.0, direct_[i] + running);
  }
  diff_ = {};
  return std::move(direct_);
}

std::vector<double> covered_ns_per_bin(std::span<const TableRun> runs, const BinGrid& g) {
  // A min-heap of run cursors by their next start. Runs are start-sorted, so popping the
  // earliest and taking its events up to the next run's start visits all events in start
  // order; runs of one stream usually go in long stretches between heap operations.
  struct Cursor {
    const trace::SpanColumns* t;
    std::uint32_t pos, end;
    Ns next() const { return t->start[pos]; }
  };
  std::vector<Cursor> heap;
  for (const auto& r : runs)
    if (r.table && r.begin < r.end) heap.push_back({r.table, r.begin, r.end});
  auto later = [](const Cursor& a, const Cursor& b) { return a.next() > b.next(); };
  if (heap.empty()) return {};
  std::make_heap(heap.begin(), heap.end(), later);
  BinAccumulator acc(g);
  bool open = false;
  Ns cur_s = 0, cur_e = 0;  // the union interval being grown
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Cursor& c = heap.back();
    const Ns limit = heap.size() > 1 ? heap.front().next() : INT64_MAX;
    do {
      const Ns s = c.t->start[c.pos], e = c.t->end(c.pos);
      if (open && s <= cur_e) {
        cur_e = std::max(cur_e, e);
      } else {
        if (open) acc.add_rate(cur_s, cur_e, 1.0);
        cur_s = s;
        cur_e = e;
        open = true;
      }
      ++c.pos;
    } while (c.pos < c.end && c.next() <= limit);
    if (c.pos < c.end) std::push_heap(heap.begin(), heap.end(), later);
    else heap.pop_back();
  }
  if (open) acc.add_rate(cur_s, cur_e, 1.0);
  return acc.finish();
}

namespace {

void spread(BinAccumulator& acc, Ns start, Ns dur, double amount) {
  if (dur > 0) acc.add_rate(start, start + dur, amount / static_cast<double>(dur));
  else acc.add_at(start, amount);
}

}  // namespace

std::vector<double> copy_bytes_per_bin(const trace::MemcpyTable& m, std::span<const TableRun> runs,
                                       trace::MemcpyDirection dir, const BinGrid& g, std::uint64_t* copies) {
  std::uint64_t n = 0;
  for (const auto& r : runs)
    for (auto i = r.begin; i < r.end; ++i) n += m.direction[i] == dir;
  if (copies) *copies = n;
  if (n == 0) return {};
  BinAccumulator acc(g);
  for (const auto& r : runs)
    for (auto i = r.begin; i < r.end; ++i)
      if (m.direction[i] == dir) spread(acc, m.start[i], m.dur[i], static_cast<double>(m.bytes[i]));
  return acc.finish();
}

std::vector<double> io_bytes_per_bin(const trace::IoTable& io, std::span<const TableRun> runs, const BinGrid& g,
                                     std::uint64_t* calls) {
  std::uint64_t n = 0;
  for (const auto& r : runs)
    for (auto i = r.begin; i < r.end; ++i) n += io.bytes[i] > 0;
  if (calls) *calls = n;
  if (n == 0) return {};
  BinAccumulator acc(g);
  for (const auto& r : runs)
    for (auto i = r.begin; i < r.end; ++i)
      if (io.bytes[i] > 0) spread(acc, io.start[i], io.dur[i], static_cast<double>(io.bytes[i]));
  return acc.finish();
}

}  // namespace tt::gui
