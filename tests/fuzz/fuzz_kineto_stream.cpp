// libFuzzer target: a Kineto file read by the streaming import (json_stream.cpp's splitter and
// the batches it hands the importer), the path inputs from 256 MiB on take. Any bytes, plain or
// gzip, must give a trace or a one-line error: never a crash, a hang or unbounded memory.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "tracetune/trace/importers.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const bool streaming = [] { return ::setenv("TRACETUNE_STREAM_FROM_BYTES", "0", 1) == 0; }();
  if (!streaming) std::abort();
  const int fd = memfd_create("kineto", MFD_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  tt::trace::Trace t;
  auto st = tt::trace::import_kineto("/proc/self/fd/" + std::to_string(fd), t);
  if (st) t.finalize();
  ::close(fd);
  return 0;
}
