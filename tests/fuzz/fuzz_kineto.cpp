// libFuzzer target: the Kineto JSON importer on arbitrary bytes. It must never crash, hang
// or leak; errors are fine.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tracetune/trace/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  tt::trace::Trace t;
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  if (tt::trace::import_kineto_buffer(json, "fuzz", t)) t.finalize();
  return 0;
}
