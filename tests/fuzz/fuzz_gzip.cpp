// libFuzzer target: gzip decoding of arbitrary bytes (truncated, multi-member, garbage, bombs).
// A small inflate budget, so that a bomb seed is small and its refusal path is exercised.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tracetune/trace/file_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  constexpr std::uint64_t kBudget = 1 << 20;
  auto r = tt::trace::gunzip(std::string_view(reinterpret_cast<const char*>(data), size), kBudget);
  (void)r;
  return 0;
}
