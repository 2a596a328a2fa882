// The Python functions and lines behind a stretch of time (docs/analysis.md, "Python
// attribution"): the type that findings (rules.h) and critical-path segments (metrics.h) carry
// and the attribution stage (attribution.h) fills.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tt::analyzer {

struct HotFunction {
  std::string function;   // as Python names it (co_qualname)
  std::string file;       // as recorded (co_filename)
  std::int32_t line = -1; // the function's most-sampled line (-1: unknown)
  std::uint64_t samples = 0;
  double share = 0;       // of HotSpots::samples
};

struct HotSpots {
  std::string scope;         // which threads, during what (one phrase)
  std::uint64_t samples = 0; // samples taken in the finding's stretches; 0: no attribution
  std::vector<HotFunction> top;  // at most kTopHotFunctions, most samples first
};
inline constexpr std::size_t kTopHotFunctions = 5;

}  // namespace tt::analyzer
