// Inside tt_trace: a Chrome/Kineto trace file read as a stream, for inputs too large to hold
// (kineto_import.cpp's streaming path). The file (plain, or gzip with any number of members) is
// read in chunks; the top level is split into its fields and the `traceEvents` array into its
// elements, which reach the caller in batches of about kBatchBytes as one JSON array ("[e,e,...]"),
// each batch its own document. Other top-level fields reach it as one small document each
// ({"key": value}). Memory stays at a few batches whatever the file's size. The splitter checks
// only the structure it needs; each batch and field is then parsed (and checked) in full.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>

#include "tracetune/trace/result.h"

namespace tt::trace {

inline constexpr std::size_t kBatchBytes = 8u << 20;
inline constexpr std::size_t kMaxStreamedValue = 256u << 20;  // one event or one top-level field

struct JsonStreamSink {
  // a batch of events (in file order) as one JSON array
  std::function<Status(std::string_view array)> events;
  // a top-level field other than traceEvents, as the document {"key": value}
  std::function<Status(std::string_view object)> field;
  // bytes of the file read so far, of its total size (for a progress bar)
  std::function<void(std::uint64_t read, std::uint64_t total)> progress;
};

// Splits `path`; `saw_events` tells whether a traceEvents array (or a top-level array) was found.
Status stream_trace_json(const std::filesystem::path& path, const JsonStreamSink& sink, bool& saw_events);

}  // namespace tt::trace
