// GPU micro-benchmarks that need only the CUDA runtime, loaded with dlopen at run time (so
// the tracetune binary runs everywhere; on a machine without a GPU or driver the bench says
// "no GPU" in one line and exits kNoGpuExit). `tracetune bench h2d`: host<->device copy
// bandwidth, pageable vs pinned memory, by size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracetune/trace/result.h"

namespace tt::tuner {

inline constexpr int kNoGpuExit = 3;  // distinct from 1 (failed) and 2 (usage)

struct CopyBenchOptions {
  int device = 0;
  std::vector<std::uint64_t> sizes = {4 << 10, 64 << 10, 1 << 20, 16 << 20, 64 << 20};
  int repeats = 10;
};

struct CopyTrial {
  std::string direction;  // "h2d" or "d2h"
  bool pinned = false;
  std::uint64_t bytes = 0;
  double seconds_median = 0;  // one copy
  double gbs() const { return seconds_median > 0 ? static_cast<double>(bytes) / seconds_median / 1e9 : 0; }
};

// Why there is no usable GPU ("" when there is one): no libcudart, no driver, no device.
std::string gpu_unavailable_reason();

Result<std::vector<CopyTrial>> run_copy_bench(const CopyBenchOptions& options);
std::string copy_bench_text(const std::vector<CopyTrial>& trials);
std::string copy_bench_json(const std::vector<CopyTrial>& trials);

}  // namespace tt::tuner
