// libFuzzer target: the Kineto JSON importer on arbitrary bytes. It must never crash, hang
// or leak; errors are fine. The same bytes read in small windows (kineto_import.cpp, "reading
// in windows") must give the same outcome as one document: the same error, or as many events.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tracetune/trace/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  tt::trace::Trace whole, windowed;
  const auto a = tt::trace::import_kineto_buffer(json, "fuzz", whole, -1, std::size_t{1} << 40);
  const auto b = tt::trace::import_kineto_buffer(json, "fuzz", windowed, -1, 32);
  if (a.ok() != b.ok() || (!a.ok() && a.error() != b.error())) std::abort();
  if (a.ok() && (whole.event_count() != windowed.event_count() || whole.diagnostics.size() != windowed.diagnostics.size() ||
                 whole.strings.size() != windowed.strings.size()))
    std::abort();
  if (a) whole.finalize();
  return 0;
}
