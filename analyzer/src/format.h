// Durations in reports: the unit follows the size (842 ns, 12.3 µs, 4.56 ms, 2.31 s), so a
// microsecond-scale trace does not read "0.0 ms".
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

namespace tt::analyzer {

inline std::string dur(std::int64_t ns) {
  const double a = std::abs(static_cast<double>(ns));
  const double v = static_cast<double>(ns);
  if (a < 1e3) return fmt::format("{} ns", ns);
  if (a < 1e6) return fmt::format("{:.1f} µs", v / 1e3);
  if (a < 1e9) return fmt::format("{:.{}f} ms", v / 1e6, a < 1e7 ? 2 : 1);
  return fmt::format("{:.2f} s", v / 1e9);
}

// Sizes in reports: 512 B, 12.3 KiB, 4.56 MiB, 2.31 GiB (binary units, as allocators count).
inline std::string bytes(std::int64_t b) {
  const double a = std::abs(static_cast<double>(b)), v = static_cast<double>(b);
  if (a < 1024) return fmt::format("{} B", b);
  if (a < 1024.0 * 1024) return fmt::format("{:.1f} KiB", v / 1024);
  if (a < 1024.0 * 1024 * 1024) return fmt::format("{:.1f} MiB", v / (1024.0 * 1024));
  return fmt::format("{:.2f} GiB", v / (1024.0 * 1024 * 1024));
}

}  // namespace tt::analyzer
