// Durations, sizes and shares as people read them, one way everywhere: reports, `tracetune info`, the
// GUI. The unit follows the size, so a microsecond-scale trace never reads "0.0 ms".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "tracetune/trace/result.h"

namespace tt::trace {

// 842 ns, 12.3 µs, 4.56 ms, 45.6 ms, 2.31 s
std::string format_duration(std::int64_t ns);

// part / whole, 0 when whole is not positive (an empty window or step has no shares).
inline double share(std::int64_t part, std::int64_t whole) {
  return whole > 0 ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

// 512 B, 12.3 KiB, 4.6 MiB, 2.31 GiB (binary units, as allocators and file systems count)
std::string format_bytes(std::int64_t bytes);

// Numbers people type, in flags and environment variables: one strict parser per kind. The whole
// text must be the number: no sign where none is allowed, no trailing text, no overflow (a
// 4294967297 is not read as 1), nothing but finite values (a nan or inf would disable a
// timeout or a threshold). Errors are one line naming `what`, the flag or variable:
// "--shard: '4294967297' is not a whole number from 0 to 4294967295".
Result<std::uint64_t> parse_unsigned(std::string_view text, std::string_view what, std::uint64_t max = UINT64_MAX);
Result<double> parse_finite(std::string_view text, std::string_view what);
// "123", "64K", "512M", "8G" (binary units) -> bytes.
Result<std::uint64_t> parse_byte_count(std::string_view text, std::string_view what);
// A size in the environment variable `name`: `fallback` when unset or empty, an error naming the
// variable when malformed.
Result<std::uint64_t> env_byte_count(const char* name, std::uint64_t fallback);

}  // namespace tt::trace
