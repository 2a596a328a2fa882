#include "tracetune/trace/units.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

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

namespace {

// "WHAT: 'TEXT' is not WANTED", the text cut and made printable so that the line stays one line.
Error not_a(std::string_view text, std::string_view what, std::string_view wanted) {
  std::string shown;
  for (char c : text.substr(0, 40)) shown += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
  return make_error(fmt::format("{}: '{}{}' is not {}", what, shown, text.size() > 40 ? "..." : "", wanted));
}

}  // namespace

Result<std::uint64_t> parse_unsigned(std::string_view text, std::string_view what, std::uint64_t max) {
  std::uint64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v > max)
    return not_a(text, what, fmt::format("a whole number from 0 to {}", max));
  return v;
}

Result<double> parse_finite(std::string_view text, std::string_view what) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v))
    return not_a(text, what, "a finite number");
  return v;
}

Result<std::uint64_t> parse_byte_count(std::string_view text, std::string_view what) {
  int shift = 0;
  if (!text.empty()) {
    const char unit = text.back();
    shift = unit == 'K' || unit == 'k' ? 10 : unit == 'M' || unit == 'm' ? 20 : unit == 'G' || unit == 'g' ? 30 : 0;
  }
  auto n = parse_unsigned(shift != 0 ? text.substr(0, text.size() - 1) : text, what, UINT64_MAX >> shift);
  if (!n) return not_a(text, what, "a size (bytes, or with a K, M or G suffix: 64K, 512M, 8G)");
  return n.value() << shift;
}

Result<std::uint64_t> env_byte_count(const char* name, std::uint64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return parse_byte_count(v, name);
}

}  // namespace tt::trace
