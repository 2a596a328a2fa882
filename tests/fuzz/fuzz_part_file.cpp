// libFuzzer target: a sharded analysis' part file as `analyze --combine` reads it (the index,
// then each rank's graph when the critical paths need it). Truncated, corrupt or hostile parts
// must give an error or a note, never a crash or an out-of-bounds read.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "tracetune/analyzer/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const int fd = memfd_create("part", MFD_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  const std::filesystem::path part[] = {"/proc/self/fd/" + std::to_string(fd)};
  auto r = tt::analyzer::combine_shards(part, 1);
  (void)r;
  ::close(fd);
  return 0;
}
