// Counter tracks every trace gets, derived from its events when the timeline index is built
// (timeline_index.h places them as rows): GPU busy % per device, host↔device copy bandwidth
// per device, and I/O throughput per process. Each is an evenly binned series over the
// trace's span (lod.h `CounterSeries::Kind::Bins`), drawn and queried like recorded counters.
//
// Bin width (BinGrid::covering): the smallest 1-2-5 × 10^k ns width that is at least 1 µs and
// gives at most 2^20 bins over the span. 2^20 bins bound a series at 4 MiB of floats plus
// 256 KiB of block summaries whatever the trace's length; the 1 µs floor keeps short traces
// from paying for bins finer than a GPU timestamp means anything at (Kineto records µs).
// A 1-2-5 width keeps the readout ("bin 200 µs") readable.
//
// Cost: O(events + bins) per series and no per-pixel work afterwards. An interval adds its
// share to the two bins it partly covers directly and to the whole bins between them through
// a difference array, so a long event costs O(1), not O(bins it spans).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::gui {

using trace::Ns;

inline constexpr std::uint32_t kMaxDerivedBins = 1u << 20;
inline constexpr Ns kMinDerivedBin = 1000;  // 1 µs

// Bins [t0 + i·bin, t0 + (i+1)·bin) for i in [0, n); the last may reach past the trace's end.
struct BinGrid {
  Ns t0 = 0, bin = kMinDerivedBin;
  std::uint32_t n = 0;
  Ns end() const { return t0 + static_cast<Ns>(n) * bin; }
  // The grid for a trace spanning [start, end) (see the header comment); n ≥ 1.
  static BinGrid covering(Ns start, Ns end);
};

// Sums per bin. add_rate spreads `rate` per ns over [s, e) (clipped to the grid) in O(1);
// add_at puts `amount` in the bin holding t. finish() resolves the difference array: O(bins).
class BinAccumulator {
 public:
  explicit BinAccumulator(const BinGrid& g);
  void add_rate(Ns s, Ns e, double rate);
  void add_at(Ns t, double amount);
  std::vector<double> finish();

 private:
  std::size_t bin_of(Ns t) const;  // t in [t0, end()]; n for end()
  BinGrid g_;
  double inv_bin_;  // 1 / bin: a multiply, not a 64-bit division, per interval end
  // the bin the last interval fell in: events arrive roughly in time order and most fit in
  // one bin, so most intervals need no bin lookup at all
  std::size_t last_ = 0;
  Ns last_lo_ = 0, last_hi_ = 0;
  std::vector<double> direct_, diff_;
};

// A start-sorted run of rows [begin, end) of one table (one track's slice after finalize()).
struct TableRun {
  const trace::SpanColumns* table = nullptr;
  std::uint32_t begin = 0, end = 0;
};

// Nanoseconds of each bin covered by the union of the runs' events: an instant covered by
// events on several runs (overlapping streams, a kernel beside a copy) counts once.
// Merges the runs by start (a heap over k runs): O(n log k + bins). Empty when the runs are.
std::vector<double> covered_ns_per_bin(std::span<const TableRun> runs, const BinGrid& g);

// Bytes per bin of the memcpys in `runs` (rows of t.memcpys) going `dir`, each copy's bytes
// spread uniformly over its duration (a zero-length copy: all in the bin of its start).
// `copies` (optional) receives how many copies contributed. Empty when none did.
std::vector<double> copy_bytes_per_bin(const trace::MemcpyTable& m, std::span<const TableRun> runs,
                                       trace::MemcpyDirection dir, const BinGrid& g, std::uint64_t* copies = nullptr);

// Bytes per bin moved by the I/O calls in `runs` (rows of t.io_calls) that report bytes
// (bytes > 0: reads and writes), spread the same way. `calls` and emptiness as above.
std::vector<double> io_bytes_per_bin(const trace::IoTable& io, std::span<const TableRun> runs, const BinGrid& g,
                                     std::uint64_t* calls = nullptr);

}  // namespace tt::gui
