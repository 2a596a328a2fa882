// Durations, sizes and shares as people read them, one way everywhere: reports, `tracetune info`, the
// GUI. The unit follows the size, so a microsecond-scale trace never reads "0.0 ms".
#pragma once

#include <cstdint>
#include <string>

namespace tt::trace {

// 842 ns, 12.3 µs, 4.56 ms, 45.6 ms, 2.31 s
std::string format_duration(std::int64_t ns);

// part / whole, 0 when whole is not positive (an empty window or step has no shares).
inline double share(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// 512 B, 12.3 KiB, 4.6 MiB, 2.31 GiB (binary units, as allocators and file systems count)
std::string format_bytes(std::int64_t bytes);

}  // namespace tt::trace
