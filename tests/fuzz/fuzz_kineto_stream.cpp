// libFuzzer target: a Kineto file read by the streaming import (json_stream.cpp's splitter and
// the batches it hands the importer), the path inputs from 256 MiB on take. Any bytes, plain or
// gzip, must give a trace or a one-line error: never a crash, a hang or unbounded memory.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "fuzz_file.h"
#include "tracetune/trace/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool streaming = [] { return ::setenv("TRACETUNE_STREAM_FROM_BYTES", "0", 1) == 0; }();
  if (!streaming) std::abort();
  const tt::fuzz::MemFile file(data, size);
  if (file.fd < 0) return 0;
  tt::trace::Trace t;
  if (tt::trace::import_kineto(file.path, t)) t.finalize();
  return 0;
}
