#include "tracetune/trace/units.h"

#include <cmath>

#include <fmt/format.h>

namespace tt::trace {

std::string format_duration(std::int64_t ns) {
  const double v = static_cast<double>(ns), a = std::abs(v);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.1f} µs", v / 1e3);
  if (a < 1e9) return fmt::format("{:.{}f} ms", v / 1e6, a < 1e7 ? 2 : 1);
  return fmt::format("{:.2f} s", v / 1e9);
}

std::string format_bytes(std::int64_t bytes) {
  const double v = static_cast<double>(bytes), a = std::abs(v);
  constexpr double kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  if (a < kKiB) return fmt::format("{} B", bytes);
  if (a < kMiB) return fmt::format("{:.1f} KiB", v / kKiB);
  if (a < kGiB) return fmt::format("{:.1f} MiB", v / kMiB);
  return fmt::format("{:.2f} GiB", v / kGiB);
}

}  // namespace tt::trace
