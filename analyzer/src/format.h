// Durations and sizes in reports: the one formatter of each (tracetune/trace/units.h) under
// the short names the report code uses.
#pragma once

#include <cstdint>
#include <string>

#include "tracetune/trace/units.h"

namespace tt::analyzer {

inline std::string dur(std::int64_t ns) { return trace::format_duration(ns); }
inline std::string bytes(std::int64_t b) { return trace::format_bytes(b); }

}  // namespace tt::analyzer
