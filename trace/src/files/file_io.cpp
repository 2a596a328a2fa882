#include "tracetune/trace/file_io.h"
#include "tracetune/trace/units.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <utility>

#include <fmt/format.h>
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

std::string mib(std::uint64_t bytes) { return fmt::format("{} MiB", bytes >> 20); }

std::string over_limit(std::uint64_t limit) {
  return fmt::format("gzip data inflates to more than {} (the inflate limit, set from available memory; "
                     "TRACETUNE_MAX_INFLATE=SIZE raises it)",
                     limit >= (1u << 20) ? mib(limit) : fmt::format("{} bytes", limit));
}

// Decompress every gzip member of `in` into `out` (appending), never letting `out` pass
// `max_out` bytes: each attempt gets an output buffer no larger than what is left of the
// budget, so a bomb fails with INSUFFICIENT_SPACE before it is inflated any further.
Result<void> gunzip_into(std::string_view in, std::string& out, std::uint64_t max_out) {
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
    const std::size_t left = out.size() >= max_out ? 0 : static_cast<std::size_t>(max_out - out.size());
    // ISIZE (the last 4 bytes of a member) is the size mod 2^32 when this is the only
    // member; use it as a first guess and grow on demand, within the budget.
    std::size_t guess = le32(reinterpret_cast<const unsigned char*>(in.data() + in.size() - 4));
    if (guess < member.size()) guess = member.size() * 4;
    guess = std::min({guess, max_inflated_size(member.size()), left});
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
        if (guess >= left) return make_error(over_limit(max_out));
        guess = std::min(guess * 2, left);
        continue;
      }
      // libdeflate cannot tell a cut-off stream from a corrupt one; a stream that ends
      // early is by far the common case (an interrupted copy), so say both.
      return make_error("truncated or corrupt gzip stream");
    }
  }
  return {};
}

// "a FIFO", "a character device", ...: what a path names when it is not a regular file.
std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "a special file";
}

// Opens an input for reading without blocking (a FIFO's open() waits for a writer) and
// refuses anything but a regular file. Returns the descriptor and its size.
Result<std::pair<int, std::uint64_t>> open_regular(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return io_error(path, errno == ELOOP ? "too many levels of symbolic links (a symlink loop)" : std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error(path, S_ISDIR(st.st_mode) ? std::string("is a directory")
                                              : fmt::format("not a regular file ({}): refused", file_kind(st.st_mode)));
  }
  return std::pair{fd, static_cast<std::uint64_t>(st.st_size)};
}

std::uint64_t available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib)
    if (key == "MemAvailable:") return kib << 10;
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}


constexpr std::uint64_t kMaxJsonBytes = 0xFFFFFFFFull - 64;  // simdjson's document limit, less its padding
std::atomic<std::uint64_t> g_inflate_limit{0};             // 0: not decided yet
thread_local std::uint64_t t_inflate_scope = 0;            // 0: no InflateLimitScope

// A malformed TRACETUNE_MAX_INFLATE was refused by check_environment() before any load.
std::uint64_t default_inflate_limit() {
  if (auto n = env_byte_count(kMaxInflateVariable, 0); n && n.value() > 0) return n.value();
  return std::clamp<std::uint64_t>(available_memory() / 8, std::uint64_t{256} << 20, kMaxJsonBytes);
}

Result<std::string> read_all(const fs::path& path) {
  auto opened = open_regular(path);
  if (!opened) return make_error(opened.error());
  const auto [fd, size] = opened.value();
  std::string data;
  data.resize(static_cast<std::size_t>(size));
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

Status check_environment() {
  for (const char* name : {kMaxInflateVariable, kStreamFromBytesVariable})
    if (auto n = env_byte_count(name, 0); !n) return make_error(n.error());
  if (auto n = env_byte_count(kMaxInflateVariable, 1); n && n.value() == 0)
    return make_error(fmt::format("{}: must be more than 0 bytes", kMaxInflateVariable));
  return {};
}

std::uint64_t inflate_limit() {
  std::uint64_t v = g_inflate_limit.load(std::memory_order_relaxed);
  if (v == 0) {
    std::uint64_t expected = 0;
    g_inflate_limit.compare_exchange_strong(expected, default_inflate_limit());
    v = g_inflate_limit.load(std::memory_order_relaxed);
  }
  return t_inflate_scope != 0 ? std::min(v, t_inflate_scope) : v;
}

InflateLimitScope::InflateLimitScope(std::uint64_t bytes) : saved_(t_inflate_scope) {
  t_inflate_scope = std::max<std::uint64_t>(1, saved_ != 0 ? std::min(saved_, bytes) : bytes);
}
InflateLimitScope::~InflateLimitScope() { t_inflate_scope = saved_; }

Status check_input_path(const fs::path& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ELOOP) return io_error(path, "too many levels of symbolic links (a symlink loop)");
    if (errno == ENOENT) return io_error(path, "no such file or directory");
    return io_error(path, std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
    return io_error(path, fmt::format("not a regular file ({}): refused", file_kind(st.st_mode)));
  return {};
}

Result<std::vector<fs::path>> list_trace_files(const fs::path& dir) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string n = p.filename().string();
    if (!n.ends_with(".json") && !n.ends_with(".json.gz")) continue;
    std::error_code entry_ec;
    const bool regular = it->is_regular_file(entry_ec);
    if (entry_ec) {
      if (auto st = check_input_path(p); !st) return make_error(st.error());
      return io_error(p, entry_ec.message());
    }
    if (regular) files.push_back(p);
  }
  if (ec) return io_error(dir, ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

Status check_output_not_input(std::span<const fs::path> inputs, const fs::path& output) {
  struct stat out{};
  if (::stat(output.c_str(), &out) != 0) return {};  // a new file cannot be an input
  auto same = [&](const fs::path& p) {
    struct stat in{};
    return ::stat(p.c_str(), &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino;
  };
  for (const auto& in : inputs) {
    std::vector<fs::path> files{in};
    std::error_code ec;
    if (fs::is_directory(in, ec))
      if (auto listed = list_trace_files(in)) files = std::move(listed.value());
    for (const auto& f : files)
      if (same(f))
        return io_error(output, "is the input " + f.string() + "; writing it would destroy the input: write the output elsewhere");
  }
  return {};
}

Result<std::string> gunzip(std::string_view data, std::uint64_t max_out) {
  std::string out;
  auto r = gunzip_into(data, out, max_out);
  if (!r) return make_error(r.error());
  return out;
}

Result<GzipProbe> probe_gzip(const fs::path& path) {
  auto opened = open_regular(path);
  if (!opened) return make_error(opened.error());
  const int fd = opened->first;
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
  const std::uint64_t limit = inflate_limit();
  const std::size_t isize =
      data.size() >= 18 ? le32(reinterpret_cast<const unsigned char*>(data.data() + data.size() - 4)) : 0;
  if (data.size() >= 18 && isize <= max_inflated_size(data.size()) && isize <= limit) {
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
  auto r = gunzip_into(data, plain, limit);
  if (!r) return io_error(path, r.error());
  data.clear();
  data.shrink_to_fit();
  return simdjson::padded_string(plain);
}

Status check_output_target(const fs::path& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0) {  // follows a symlink: one to a device is refused too
    if (errno == ENOENT) return {};       // nothing there, or a dangling symlink the rename replaces
    if (errno == ELOOP) return io_error(path, "too many levels of symbolic links (a symlink loop)");
    return io_error(path, std::strerror(errno));
  }
  if (S_ISREG(st.st_mode)) return {};
  return io_error(path, fmt::format("not a regular file ({}): refused as an output, which would replace it with a "
                                    "file; name a regular file{}",
                                    file_kind(st.st_mode), S_ISDIR(st.st_mode) ? "" : " (-o - writes to stdout where the format allows)"));
}

Result<AtomicOutput> AtomicOutput::create(const fs::path& final_path) {
  fs::path dir = final_path.parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return io_error(final_path, "directory does not exist");
  if (auto st = check_output_target(final_path); !st) return make_error(st.error());
  std::random_device rd;
  for (int attempt = 0; attempt < 16; ++attempt) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, ".tmp-%08x", rd());
    fs::path tmp = final_path;
    tmp += suffix;
    // O_EXCL | O_NOFOLLOW: a name planted in advance (a symlink, a file) is never opened.
    const int fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) return AtomicOutput(final_path, tmp, fd);
    if (errno != EEXIST) return io_error(final_path, std::strerror(errno));
  }
  return io_error(final_path, "cannot create a temporary file");
}

AtomicOutput::AtomicOutput(AtomicOutput&& o) noexcept
    : final_(std::move(o.final_)), temp_(std::move(o.temp_)), fd_(std::exchange(o.fd_, -1)), committed_(o.committed_) {
  o.committed_ = true;  // the moved-from object owns nothing
}

AtomicOutput::~AtomicOutput() {
  if (!committed_) {
    std::error_code ec;
    // only our own file: never remove one swapped in under the temporary's name
    if (check_temp()) fs::remove(temp_, ec);
    for (const char* side : {"-journal", "-wal", "-shm"}) {
      fs::path p = temp_;
      p += side;
      fs::remove(p, ec);
    }
  }
  if (fd_ >= 0) ::close(fd_);
}

Status AtomicOutput::write(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd_, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error(final_, fmt::format("cannot write: {}", n < 0 ? std::strerror(errno) : "no progress"));
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return {};
}

Status AtomicOutput::check_temp() const {
  struct stat ours{}, named{};
  if (fd_ < 0 || ::fstat(fd_, &ours) != 0 || ::lstat(temp_.c_str(), &named) != 0 || ours.st_dev != named.st_dev ||
      ours.st_ino != named.st_ino)
    return io_error(final_, "the temporary " + temp_.string() + " was replaced while it was written: not committed");
  return {};
}

Status AtomicOutput::commit() {
  if (::fchmod(fd_, 0600) != 0) return io_error(temp_, std::strerror(errno));
  if (auto st = check_temp(); !st) return st;
  // again at the end: the target may have become a device or FIFO while we worked
  if (auto st = check_output_target(final_); !st) return st;
  if (::rename(temp_.c_str(), final_.c_str()) != 0) return io_error(final_, std::strerror(errno));
  committed_ = true;
  return {};
}

Status write_file_atomic(const fs::path& path, std::string_view text) {
  auto out = AtomicOutput::create(path);
  if (!out) return make_error(out.error());
  if (auto st = out->write(text); !st) return st;
  return out->commit();
}

fs::path self_exe_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

}  // namespace tt::trace
