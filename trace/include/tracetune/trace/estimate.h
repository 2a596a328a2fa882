// How much memory loading a trace will take, estimated before reading it from what is cheap
// to learn: SQLite row counts (max(rowid), one b-tree descent per table), the gzip ISIZE
// trailer, file sizes. The GUI refuses a trace over its memory cap with this before it starts
// reading, so a user with a 4 GiB cap does not wait for (or get OOM-killed by) a 20 GiB load.
//
// The figures lean low: SQLite rows are counted at the model's column bytes per event
// (RowBytes: no strings, no vector slack), Kineto JSON at the lowest model bytes per JSON byte
// measured on real traces. So a trace the estimate puts over a cap really needs more.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "tracetune/trace/result.h"

namespace tt::trace {

struct LoadEstimate {
  std::uint64_t events = 0;           // about how many events the model will hold; 0: not known (JSON)
  std::uint64_t model_bytes = 0;      // their columns (what Trace::event_bytes() mostly counts)
  std::uint64_t transient_bytes = 0;  // held only while reading (a Kineto file's text, a table read in chunks)
  std::string basis;                  // how it was estimated, for messages ("rows of 11 event tables")
  std::uint64_t total() const { return model_bytes + transient_bytes; }
};

// Model bytes per byte of Kineto JSON text: the lowest figure measured on the multi-MB traces
// of tests/data/corpus/kineto (see estimate.cpp for the table).
inline constexpr double kKinetoModelBytesPerJsonByte = 0.07;
// A .json.gz whose ISIZE is below this many times its compressed size has wrapped (ISIZE is
// the size mod 2^32; Kineto JSON compresses 7.5x to 29x); it is then estimated at
// kKinetoGzipRatio times the compressed size.
inline constexpr double kMinPlausibleGzipRatio = 5.0;
inline constexpr double kKinetoGzipRatio = 13.0;

// Estimates loading `path` (a tracetune DB, an nsys SQLite export, a Kineto .json/.json.gz or
// a directory of them); an error for what detect_format() does not recognise or cannot be
// opened. Reads no events: for SQLite a few b-tree descents, for JSON 4 bytes per file.
Result<LoadEstimate> estimate_load(const std::filesystem::path& path);

}  // namespace tt::trace
