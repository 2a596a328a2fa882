// The report's JSON documents (tracetune.analysis in report.cpp, tracetune.diff in
// diff_report.cpp) are written from field tables: trace/include/tracetune/trace/json_fields.h,
// shared with the trace summary and the tuner's trials file.
#pragma once

#include <cstdint>
#include <optional>

#include "tracetune/trace/json_fields.h"

namespace tt::analyzer {

using trace::json::array;
using trace::json::document_json;
using trace::json::document_paths;
using trace::json::Exact;
using trace::json::field;
using trace::json::field_if;
using trace::json::object;

// A struct's `rank`, null where it is -1 (a cross-rank finding).
template <class S>
std::optional<std::int32_t> rank_or_null(const S& s) {
  return s.rank >= 0 ? std::optional<std::int32_t>(s.rank) : std::nullopt;
}

}  // namespace tt::analyzer
