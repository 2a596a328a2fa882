// `tracetune bench storage PATH`: read throughput of the job's data path as a function of
// reader threads and block size, the way a DataLoader reads it (whole files, one file per
// reader at a time). It tells whether more DataLoader workers can help (storage scales with
// readers) or the storage itself is the limit. Figures only, never pass/fail.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "tracetune/trace/result.h"

namespace tt::tuner {

struct StorageBenchOptions {
  std::filesystem::path path;               // a directory (read recursively) or one file
  std::vector<int> threads = {1, 2, 4, 8};
  std::vector<std::uint64_t> blocks = {64 << 10, 1 << 20};
  std::uint64_t max_bytes = 1ull << 30;     // read at most this much per trial
  bool drop_cache = true;                   // posix_fadvise(DONTNEED) every file before each trial
};

struct StorageTrial {
  std::uint64_t block = 0;
  int threads = 0;
  std::uint64_t bytes = 0;
  std::uint64_t files = 0;
  double seconds = 0;
  double mib_per_s() const { return seconds > 0 ? static_cast<double>(bytes) / (1 << 20) / seconds : 0; }
  double files_per_s() const { return seconds > 0 ? static_cast<double>(files) / seconds : 0; }
};

struct StorageBenchResult {
  std::uint64_t files = 0, bytes = 0;   // what one trial reads
  std::uint64_t files_found = 0;        // regular files under the path
  bool cache_dropped = false;
  std::vector<StorageTrial> trials;     // blocks x threads, in option order
};

// "64K", "1M", "4096", "2G" (binary units) -> bytes; an error for anything else or 0.
Result<std::uint64_t> parse_size(std::string_view text);

Result<StorageBenchResult> run_storage_bench(const StorageBenchOptions& options);

std::string storage_bench_text(const StorageBenchOptions& options, const StorageBenchResult& result);
std::string storage_bench_json(const StorageBenchOptions& options, const StorageBenchResult& result);

}  // namespace tt::tuner
