// libFuzzer target: SQLite inputs — the bytes are written to a private temporary file and
// opened the way users' files are: format detection, the nsys importer and the trace
// reader. Corrupt pages, foreign schemas, triggers and views must give errors, not crashes.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_file.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = [] {
    std::string dir = std::filesystem::temp_directory_path() / "tt_fuzz_XXXXXX";
    if (::mkdtemp(dir.data()) == nullptr) std::abort();
    return dir + "/input.sqlite";
  }();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return 0;
  tt::fuzz::write_all(fd, data, size);
  ::close(fd);
  switch (tt::trace::detect_format(path)) {
    case tt::trace::InputFormat::NsysSqlite: {
      tt::trace::Trace t;
      if (tt::trace::import_nsys(path, t)) t.finalize();
      break;
    }
    case tt::trace::InputFormat::TracetuneDb: {
      auto t = tt::trace::read_trace(path);
      (void)t;
      break;
    }
    default: break;
  }
  return 0;
}
