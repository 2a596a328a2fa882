// Durations and sizes in reports: the one formatter of each (tracetune/trace/units.h) under
// the short names the report code uses.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tracetune/trace/units.h"

namespace tt::analyzer {

inline std::string dur(std::int64_t ns) { return trace::format_duration(ns); }
inline std::string bytes(std::int64_t b) { return trace::format_bytes(b); }

struct Analysis;
struct Finding;
// "/step" when the finding's rank has steps, else " in the window" (report.cpp)
std::string_view gain_unit(const Analysis& a, const Finding& f);

}  // namespace tt::analyzer
