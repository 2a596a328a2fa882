// The fuzz targets that read files: the input's bytes written to one (whole, or as far as the
// writes go).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tt::fuzz {

inline void write_all(int fd, const std::uint8_t* data, std::size_t size) {
  std::size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
}

// An anonymous in-memory file holding the bytes, and the path that opens it (-1 on failure).
struct MemFile {
  int fd = -1;
  std::string path;
  MemFile(const std::uint8_t* data, std::size_t size) : fd(memfd_create("fuzz", MFD_CLOEXEC)) {
    if (fd < 0) return;
    write_all(fd, data, size);
    path = "/proc/self/fd/" + std::to_string(fd);
  }
  ~MemFile() {
    if (fd >= 0) ::close(fd);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
};

}  // namespace tt::fuzz
