// libFuzzer target: gzip decoding of arbitrary bytes (truncated, multi-member, garbage).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tracetune/trace/file_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto r = tt::trace::gunzip(std::string_view(reinterpret_cast<const char*>(data), size));
  (void)r;
  return 0;
}
