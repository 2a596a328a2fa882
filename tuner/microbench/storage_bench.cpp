// The storage read micro-benchmark. Each trial reads the same set of files completely: N
// reader threads take the next unread file from a shared counter and read it with pread() in
// blocks of the trial's size into a private buffer. Before each trial every file is dropped
// from the page cache (posix_fadvise DONTNEED, best effort: it works for clean pages on local
// file systems; network file systems may keep their own caches), so trials measure the
// storage rather than memory.
#include "tracetune/trace/json_text.h"
#include "tracetune/tuner/storage_bench.h"

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>

#include <fmt/format.h>

namespace tt::tuner {
namespace fs = std::filesystem;

namespace {

struct File {
  std::string path;
  std::uint64_t size;
};

Result<std::vector<File>> list_files(const fs::path& root, std::uint64_t max_bytes, std::uint64_t& found) {
  std::vector<File> all;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    all.push_back({root.string(), fs::file_size(root, ec)});
  } else if (fs::is_directory(root, ec)) {
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code e2;
      if (it->is_regular_file(e2) && !it->is_symlink(e2)) all.push_back({it->path().string(), it->file_size(e2)});
    }
    if (ec) return make_error(fmt::format("{}: {}", root.string(), ec.message()));
  } else {
    return make_error(fmt::format("{}: not a file or directory", root.string()));
  }
  found = all.size();
  std::sort(all.begin(), all.end(), [](const File& a, const File& b) { return a.path < b.path; });
  std::vector<File> chosen;
  std::uint64_t total = 0;
  for (auto& f : all) {
    if (f.size == 0) continue;
    if (total >= max_bytes) break;
    total += f.size;
    chosen.push_back(std::move(f));
  }
  if (chosen.empty()) return make_error(fmt::format("{}: no non-empty regular files to read", root.string()));
  return chosen;
}

// tmpfs/ramfs files live in the page cache: there is nothing to drop, reads are memory reads.
bool in_memory_fs(const std::string& path) {
  struct statfs st {};
  if (::statfs(path.c_str(), &st) != 0) return false;
  return st.f_type == 0x01021994 /* TMPFS_MAGIC */ || st.f_type == static_cast<decltype(st.f_type)>(0x858458f6) /* RAMFS_MAGIC */;
}

bool drop_from_cache(const std::vector<File>& files) {
  bool all = true;
  for (const auto& f : files) {
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      all = false;
      continue;
    }
    all &= ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 && !in_memory_fs(f.path);
    ::close(fd);
  }
  return all;
}

Result<StorageTrial> trial(const std::vector<File>& files, std::uint64_t block, int threads) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::uint64_t> bytes{0}, done{0};
  std::atomic<int> failed_errno{0};
  std::string failed_path;
  std::atomic_flag failed_once = ATOMIC_FLAG_INIT;
  auto reader = [&] {
    std::unique_ptr<char, decltype(&std::free)> buf(static_cast<char*>(std::aligned_alloc(4096, (block + 4095) / 4096 * 4096)),
                                                    &std::free);
    if (!buf) {
      failed_errno = ENOMEM;
      return;
    }
    for (std::size_t i; (i = next.fetch_add(1)) < files.size() && failed_errno.load() == 0;) {
      const int fd = ::open(files[i].path.c_str(), O_RDONLY | O_CLOEXEC);
      std::uint64_t got = 0;
      int err = fd < 0 ? errno : 0;
      while (err == 0) {
        const ssize_t n = ::pread(fd, buf.get(), block, static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) err = errno;
        if (n <= 0) break;
        got += static_cast<std::uint64_t>(n);
      }
      if (fd >= 0) ::close(fd);
      if (err != 0) {
        if (!failed_once.test_and_set()) failed_path = files[i].path;
        failed_errno = err;
        return;
      }
      bytes += got;
      ++done;
    }
  };
  const auto t0 = std::chrono::steady_clock::now();
  {
    std::vector<std::jthread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(reader);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (failed_errno.load() != 0)
    return make_error(fmt::format("{}: {}", failed_path.empty() ? "read buffer" : failed_path, std::strerror(failed_errno.load())));
  return StorageTrial{block, threads, bytes.load(), done.load(), secs};
}

std::string size_text(std::uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1ull << 10) && b % (1ull << 10) == 0) return fmt::format("{}K", b >> 10);
  return std::to_string(b);
}

}  // namespace

Result<std::uint64_t> parse_size(std::string_view text) {
  if (text.empty()) return make_error("empty size");
  std::uint64_t mult = 1;
  std::string_view digits = text;
  switch (text.back()) {
    case 'k': case 'K': mult = 1ull << 10; break;
    case 'm': case 'M': mult = 1ull << 20; break;
    case 'g': case 'G': mult = 1ull << 30; break;
    default: break;
  }
  if (mult != 1) digits.remove_suffix(1);
  if (digits.empty() || digits.size() > 12 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return make_error(fmt::format("'{}' is not a size (like 4096, 64K, 1M)", text));
  const std::uint64_t v = std::stoull(std::string(digits)) * mult;
  if (v == 0 || v > (1ull << 30)) return make_error(fmt::format("'{}': block sizes go from 1 byte to 1G", text));
  return v;
}

Result<StorageBenchResult> run_storage_bench(const StorageBenchOptions& opt) {
  if (opt.threads.empty() || opt.blocks.empty()) return make_error("bench storage: no thread counts or block sizes");
  for (int t : opt.threads)
    if (t < 1 || t > 256) return make_error(fmt::format("bench storage: {} threads (1 to 256)", t));
  StorageBenchResult res;
  auto files = list_files(opt.path, opt.max_bytes, res.files_found);
  if (!files) return make_error("bench storage: " + files.error());
  res.files = files->size();
  for (const auto& f : files.value()) res.bytes += f.size;
  res.cache_dropped = opt.drop_cache;
  for (std::uint64_t block : opt.blocks)
    for (int threads : opt.threads) {
      if (opt.drop_cache) res.cache_dropped &= drop_from_cache(files.value());
      auto t = trial(files.value(), block, threads);
      if (!t) return make_error("bench storage: " + t.error());
      res.trials.push_back(t.value());
    }
  return res;
}

std::string storage_bench_text(const StorageBenchOptions& opt, const StorageBenchResult& r) {
  std::string s = fmt::format("storage read benchmark: {}\n{} files, {:.1f} MiB per trial{}; page cache {}\n", opt.path.string(),
                              r.files, static_cast<double>(r.bytes) / (1 << 20),
                              r.files < r.files_found ? fmt::format(" (first {} of {} files, --max-bytes)", r.files, r.files_found) : "",
                              !opt.drop_cache ? "kept (warm: measures memory, not storage)"
                              : r.cache_dropped ? "dropped before each trial" : "could not be dropped for every file (a memory file system such as tmpfs, or fadvise refused): figures are cached reads");
  s += fmt::format("{:>8} {:>8} {:>10} {:>10} {:>12}\n", "block", "threads", "MiB/s", "files/s", "vs 1 thread");
  const StorageTrial* best = nullptr;
  for (const auto& t : r.trials) {
    const StorageTrial* base = nullptr;
    for (const auto& b : r.trials)
      if (b.block == t.block && b.threads == opt.threads.front()) base = &b;
    s += fmt::format("{:>8} {:>8} {:>10.1f} {:>10.1f} {:>11.2f}x\n", size_text(t.block), t.threads, t.mib_per_s(), t.files_per_s(),
                     base != nullptr && base->mib_per_s() > 0 ? t.mib_per_s() / base->mib_per_s() : 0.0);
    if (best == nullptr || t.mib_per_s() > best->mib_per_s()) best = &t;
  }
  if (best != nullptr)
    s += fmt::format("fastest: {} threads, {} blocks ({:.1f} MiB/s)\n", best->threads, size_text(best->block), best->mib_per_s());
  return s;
}

std::string storage_bench_json(const StorageBenchOptions& opt, const StorageBenchResult& r) {
  std::string s = fmt::format("{{\n  \"benchmark\": \"storage\",\n  \"path\": {},\n  \"files\": {},\n  \"files_found\": {},\n"
                              "  \"bytes\": {},\n  \"cache\": \"{}\",\n  \"trials\": [",
                              trace::json_quote(opt.path.string()), r.files, r.files_found, r.bytes,
                              !opt.drop_cache ? "kept" : r.cache_dropped ? "dropped" : "drop_failed");
  for (std::size_t i = 0; i < r.trials.size(); ++i) {
    const auto& t = r.trials[i];
    s += fmt::format("{}\n    {{\"block\": {}, \"threads\": {}, \"bytes\": {}, \"files\": {}, \"seconds\": {:.6f}, "
                     "\"mib_per_s\": {:.3f}, \"files_per_s\": {:.3f}}}",
                     i == 0 ? "" : ",", t.block, t.threads, t.bytes, t.files, t.seconds, t.mib_per_s(), t.files_per_s());
  }
  return s + "\n  ]\n}\n";
}

}  // namespace tt::tuner
