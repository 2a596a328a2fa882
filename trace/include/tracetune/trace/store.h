// The trace file: SQLite, schema v1 (docs/trace-format.md). write_trace() stores a Trace,
// read_trace() loads one back into the columnar model. Both sides list the columns once,
// in store.cpp, so they cannot drift apart.
#pragma once

#include <filesystem>
#include <string_view>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::trace {

// Version 2 added ranges.args_id. Files of every version from kOldestSchemaVersion on are
// read: a column newer than the file reads as its "none" value.
inline constexpr int kSchemaVersion = 2;
inline constexpr int kOldestSchemaVersion = 1;

// The DDL of the current schema (tables, enum tables, no indexes).
std::string_view schema_sql();

// Writes `t` (finalized on the way) to `path` atomically: a 0600 temporary in the same
// directory, renamed over `path` only when complete. `created_by` goes into meta.
Status write_trace(Trace& t, const std::filesystem::path& path, std::string_view created_by);

// Loads a tracetune trace DB (opened read-only and defensively). The result is finalized.
Result<Trace> read_trace(const std::filesystem::path& path);

}  // namespace tt::trace
