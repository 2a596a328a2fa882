// libFuzzer target: the raw record reader (collector/src/record_reader.cpp) on arbitrary
// files. Inputs shorter than a header page get a valid header prepended (chunk size 4 KiB),
// so the fuzzer spends its time on record framing, checksums and payloads; longer inputs are
// taken as whole files, header included. Damage must give errors or counts, never a crash.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "tracetune/collector/record_format.h"
#include "tracetune/collector/record_reader.h"

using namespace tt::collector;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    std::string dir = std::filesystem::temp_directory_path() / "tt_fuzz_ttr_XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) std::abort();
    return dir + "/proc-1-1.ttr";
  }();
  std::string file;
  if (size < kHeaderSize) {
    FileHeader h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    // Both readable versions: they differ in the checksum and in IoCompact records.
    h.version = size > 0 && (data[0] & 1) != 0 ? kOldestFormatVersion : kFormatVersion;
    h.header_size = kHeaderSize;
    h.chunk_size = 4096;
    h.pid = 1;
    h.chunks_reserved = static_cast<std::uint32_t>(size / 4096 + 1);
    std::strcpy(h.host, "fuzz");
    file.assign(reinterpret_cast<const char*>(&h), sizeof h);
  }
  file.append(reinterpret_cast<const char*>(data), size);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 0;
  const bool ok = ::write(fd, file.data(), file.size()) == static_cast<ssize_t>(file.size());
  ::close(fd);
  if (ok) {
    auto r = read_record_file(path);
    (void)r;
  }
  return 0;
}
