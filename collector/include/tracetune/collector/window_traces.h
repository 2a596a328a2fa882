// The traces a recording window writes while the job runs (flight recorder dumps, captures):
// the job's record files merged (merge.h) and cropped to the window's span. Apart from window.h
// so that the window itself does not depend on the merger, which reads the window's metadata.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tracetune/collector/merge.h"
#include "tracetune/collector/window.h"
#include "tracetune/trace/result.h"

namespace tt::collector {

// A trace of what the job's processes hold now (while they keep running): the record files of
// `raw_dir` merged with only the events in [from_ns, to_ns], written to <output stem><suffix><ext>
// (trace.db, ".dump-1" -> trace.dump-1.db) with `metadata` added. Flight recorder dumps and
// captures' traces. Returns the path written.
Result<std::filesystem::path> write_partial_trace(const std::filesystem::path& raw_dir, const std::filesystem::path& output,
                                                  const std::string& suffix, std::int64_t from_ns, std::int64_t to_ns,
                                                  std::vector<std::pair<std::string, std::string>> metadata);
// The same with the span a flight recorder keeps up to `at_ns`: its last ring_s seconds, or each
// stepping process's last ring_steps steps (MergeOptions::keep_last_steps).
Result<std::filesystem::path> write_ring_dump(const std::filesystem::path& raw_dir, const std::filesystem::path& output,
                                              const std::string& suffix, const WindowRequest& ring, std::int64_t at_ns,
                                              std::vector<std::pair<std::string, std::string>> metadata);

// What a flight recorder's dump or final trace at `at_ns` keeps (write_ring_dump).
MergeOptions ring_span(const WindowRequest& ring, std::int64_t at_ns);

}  // namespace tt::collector
