#include "tracetune/trace/file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <random>

#include <libdeflate.h>

namespace tt::trace {
namespace fs = std::filesystem;

namespace {

Error io_error(const fs::path& p, std::string_view what) {
  return make_error(p.string() + ": " + std::string(what));
}

std::uint32_t le32(const unsigned char* p) {
  return std::uint32_t(p[0]) | std::uint32_t(p[1]) << 8 | std::uint32_t(p[2]) << 16 |
         std::uint32_t(p[3]) << 24;
}

// DEFLATE cannot expand data more than 1032:1, so a size claim beyond that is a lie (a
// corrupt or hostile trailer); never allocate for it.
std::size_t max_inflated_size(std::size_t compressed) { return compressed * 1032 + 4096; }

bool is_gzip(std::string_view d) {
  return d.size() >= 2 && static_cast<unsigned char>(d[0]) == 0x1f &&
         static_cast<unsigned char>(d[1]) == 0x8b;
}

// Decompress every gzip member of `in` into `out` (appending). `reserve` guides sizing.
Result<void> gunzip_into(std::string_view in, std::string& out) {
  struct Free { void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); } };
  std::unique_ptr<libdeflate_decompressor, Free> dec(libdeflate_alloc_decompressor());
  if (!dec) return make_error("out of memory");
  std::size_t pos = 0;
  while (pos < in.size()) {
    const std::string_view member = in.substr(pos);
    if (!is_gzip(member)) {
      // Trailing zero padding after the last member is tolerated; anything else is not gzip.
      if (pos > 0 && member.find_first_not_of('\0') == std::string_view::npos) break;
      return make_error(pos == 0 ? "not a gzip stream" : "garbage after gzip data");
    }
    if (member.size() < 18) return make_error("truncated gzip stream");
    // ISIZE (the last 4 bytes of a member) is the size mod 2^32 when this is the only
    // member; use it as a first guess and grow on demand.
    std::size_t guess = le32(reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4));
    if (guess < member.size()) guess = member.size() * 4;
    guess = std::min(guess, max_inflated_size(member.size()));
    for (;;) {
      const std::size_t base = out.size();
      out.resize(base + guess);
      std::size_t in_used = 0, out_used = 0;
      const auto r = libdeflate_gzip_decompress_ex(dec.get(), member.data(), member.size(),
                                                   out.data() + base, guess, &in_used, &out_used);
      if (r == LIBDEFLATE_SUCCESS) {
        out.resize(base + out_used);
        pos += in_used;
        break;
      }
      out.resize(base);
      if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
        if (guess > (std::size_t{1} << 40)) return make_error("gzip stream too large");
        guess *= 2;
        continue;
      }
      // libdeflate cannot tell a cut-off stream from a corrupt one; a stream that ends
      // early is by far the common case (an interrupted copy), so say both.
      return make_error("truncated or corrupt gzip stream");
    }
  }
  return {};
}

Result<std::string> read_all(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path, S_ISDIR(st.st_mode) ? "is a directory" : "not a regular file");
  }
  std::string data;
  data.resize(static_cast<std::size_t>(st.st_size));
  std::size_t got = 0;
  while (got < data.size()) {
    const ssize_t n = ::read(fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return io_error(path, n == 0 ? "file shrank while reading" : std::strerror(e));
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return data;
}

}  // namespace

Result<std::string> gunzip(std::string_view data) {
  std::string out;
  auto r = gunzip_into(data, out);
  if (!r) return make_error(r.error());
  return out;
}

Result<GzipProbe> probe_gzip(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, std::strerror(errno));
  GzipProbe g;
  struct stat st {};
  unsigned char head[2] = {}, tail[4] = {};
  bool ok = ::fstat(fd, &st) == 0;
  if (ok) {
    g.file_size = static_cast<std::uint64_t>(st.st_size);
    g.gzip = ::pread(fd, head, 2, 0) == 2 && is_gzip({reinterpret_cast<const char*>(head), 2});
    if (g.gzip && st.st_size >= 18) ok = ::pread(fd, tail, 4, st.st_size - 4) == 4;
    if (g.gzip && ok && st.st_size >= 18) g.isize = le32(tail);
  }
  const int err = errno;
  ::close(fd);
  if (!ok) return io_error(path, std::strerror(err));
  return g;
}

Result<simdjson::padded_string> read_maybe_gzip(const fs::path& path) {
  auto raw = read_all(path);
  if (!raw) return make_error(raw.error());
  std::string& data = raw.value();
  if (!is_gzip(data)) return simdjson::padded_string(data);
  // Fast path: one gzip member whose ISIZE trailer is the true size (< 4 GiB) decompresses
  // straight into the padded buffer the JSON parser needs, with no second copy.
  // (A cut-off file ends in arbitrary bytes: an implausible size sends it down the general
  // path, which names the problem.)
  const std::size_t isize =
      data.size() >= 18 ? le32(reinterpret_cast<const unsigned char*>(data.data() + data.size() - 4)) : 0;
  if (data.size() >= 18 && isize <= max_inflated_size(data.size())) {
    simdjson::padded_string padded(isize);
    struct Free { void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); } };
    std::unique_ptr<libdeflate_decompressor, Free> dec(libdeflate_alloc_decompressor());
    std::size_t in_used = 0, out_used = 0;
    if (dec && padded.data() != nullptr &&
        libdeflate_gzip_decompress_ex(dec.get(), data.data(), data.size(), padded.data(), isize, &in_used,
                                      &out_used) == LIBDEFLATE_SUCCESS &&
        in_used == data.size() && out_used == isize)
      return padded;
  }
  std::string plain;
  auto r = gunzip_into(data, plain);
  if (!r) return io_error(path, r.error());
  data.clear();
  data.shrink_to_fit();
  return simdjson::padded_string(plain);
}

Result<AtomicOutput> AtomicOutput::create(const fs::path& final_path) {
  fs::path dir = final_path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return io_error(final_path, "directory does not exist");
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%08x", rd());
    fs::path tmp = final_path;
    tmp += suffix;
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
      ::close(fd);
      return AtomicOutput(final_path, tmp);
    }
    if (errno != EEXIST) return io_error(final_path, std::strerror(errno));
  }
  return io_error(final_path, "cannot create a temporary file");
}

AtomicOutput::AtomicOutput(AtomicOutput&& o) noexcept
    : final_(std::move(o.final_)), temp_(std::move(o.temp_)), committed_(o.committed_) {
  o.committed_ = true;  // the moved-from object owns nothing
}

AtomicOutput::~AtomicOutput() {
  if (committed_) return;
  std::error_code ec;
  fs::remove(temp_, ec);
  for (const char* side : {"-journal", "-wal", "-shm"}) {
    fs::path p = temp_;
    p += side;
    fs::remove(p, ec);
  }
}

Status AtomicOutput::commit() {
  if (::chmod(temp_.c_str(), 0600) != 0) return io_error(temp_, std::strerror(errno));
  if (::rename(temp_.c_str(), final_.c_str()) != 0) return io_error(final_, std::strerror(errno));
  committed_ = true;
  return {};
}

}  // namespace tt::trace
