// GPU micro-benchmarks that need only the CUDA runtime, loaded with dlopen at run time (so
// the tracetune binary runs everywhere; on a machine without a GPU or driver the bench says
// "no GPU" in one line and exits kNoGpuExit). `tracetune bench h2d`: host<->device copy
// bandwidth, pageable vs pinned memory, by size; `bench gemm`: cuBLAS GEMM TFLOP/s in FP32,
// TF32, BF16 and FP16; `bench launch`: kernel launch cost vs CUDA-graph replay (driver API,
// a kernel written in PTX); `bench nccl`: an NCCL sweep over the local GPUs in one process,
// written in the sweep format `bench model` reads (collective_model.h). The run_* functions
// need a GPU; everything else here (parsing, formulas, output) is pure and unit-tested.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tracetune/trace/result.h"
#include "tracetune/tuner/collective_model.h"

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

// ---- shared helpers (pure) ----

// "8,1K,64M" -> bytes, each via parse_size (1 byte to 1G); an error names the bad item.
Result<std::vector<std::uint64_t>> parse_size_list(std::string_view text);
// The median of the values (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> values);

// ---- bench gemm ----

struct GemmBenchOptions {
  int device = 0;
  std::vector<int> sizes = {1024, 4096, 8192};  // square M = N = K
  int repeats = 20;  // timed GEMMs per format and size (after 3 warm-ups), median reported
};

inline const std::vector<std::string>& gemm_formats() {
  static const std::vector<std::string> f = {"fp32", "tf32", "bf16", "fp16"};
  return f;
}

struct GemmTrial {
  std::string format;  // one of gemm_formats()
  int n = 0;           // M = N = K
  double seconds_median = 0;
  double tflops() const;  // gemm_tflops(n, n, n, seconds_median)
};

// A GEMM (beta = 0) does 2 M N K floating-point operations: TFLOP/s = 2 M N K / s / 1e12.
double gemm_tflops(double m, double n, double k, double seconds);
// "1024,4096" -> sizes from 16 to 32768.
Result<std::vector<int>> parse_gemm_sizes(std::string_view text);
// IEEE binary32 -> binary16 / bfloat16 bits, round to nearest even (inputs: finite values).
std::uint16_t float_to_half_bits(float f);
std::uint16_t float_to_bf16_bits(float f);

Result<std::vector<GemmTrial>> run_gemm_bench(const GemmBenchOptions& options);
// Per size: each format's TFLOP/s and its speedup over FP32 of the same size.
std::string gemm_bench_text(const std::vector<GemmTrial>& trials);
std::string gemm_bench_json(const std::vector<GemmTrial>& trials);

// ---- bench launch ----

struct LaunchBenchOptions {
  int device = 0;
  int kernels = 1000;  // tiny kernels per repetition
  int repeats = 10;    // repetitions, medians reported
};

// Per kernel, in microseconds: the median over repetitions of (time for N kernels) / N.
struct LaunchResult {
  int kernels = 0;
  int repeats = 0;
  double direct_host_us = 0;  // issuing N cuLaunchKernel calls (host side, no wait)
  double direct_e2e_us = 0;   // first launch until the stream has finished them all
  double direct_gpu_us = 0;   // CUDA events around the N kernels
  double graph_host_us = 0;   // one cuGraphLaunch of a graph of the same N kernels, / N
  double graph_e2e_us = 0;
  double graph_gpu_us = 0;
  double graph_speedup() const { return graph_e2e_us > 0 ? direct_e2e_us / graph_e2e_us : 0; }
};

Result<LaunchResult> run_launch_bench(const LaunchBenchOptions& options);
std::string launch_bench_text(const LaunchResult& r);
std::string launch_bench_json(const LaunchResult& r);
// The PTX of the tiny kernel (an empty `tt_empty` entry), JIT-compiled by the driver.
std::string_view launch_kernel_ptx();

// ---- bench nccl ----

struct NcclBenchOptions {
  std::vector<std::uint64_t> sizes;  // nccl-tests' "size" per operation; default_nccl_sizes()
  std::vector<std::string> algos = {"Ring", "Tree"};
  std::vector<std::string> protos = {"LL", "LL128", "Simple"};
  std::vector<std::string> collectives = {"allreduce", "allgather", "reducescatter"};
  int gpus = 0;  // 0: all visible
  int iters = 20;
  int warmup = 5;
};

// 8 bytes to 1 GiB, doubling (nccl-tests' -b 8 -e 1G -f 2).
std::vector<std::uint64_t> default_nccl_sizes();
// Case-insensitive names NCCL_ALGO / NCCL_PROTO accept, normalised to NCCL's spelling
// (Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT; LL, LL128, Simple).
Result<std::vector<std::string>> parse_nccl_algos(std::string_view text);
Result<std::vector<std::string>> parse_nccl_protos(std::string_view text);
Result<std::vector<std::string>> parse_nccl_collectives(std::string_view text);  // allreduce, allgather, reducescatter

// Element counts for one operation of `bytes` (nccl-tests' size) with float32 elements, as
// nccl-tests sizes them: all-reduce count = bytes/4 (send and receive that much); all-gather
// sends bytes/(4n) per rank and receives n times that; reduce-scatter sends n x recvcount
// and receives recvcount = bytes/(4n). `bytes` is rounded down to what the counts cover;
// count 0 means the size is too small for this collective and rank count.
struct NcclCounts {
  std::size_t count = 0;       // the count argument of the NCCL call
  std::uint64_t bytes = 0;     // the size reported (nccl-tests' size column)
  std::uint64_t send_bytes = 0, recv_bytes = 0;  // per rank
};
NcclCounts nccl_counts(const std::string& collective, std::uint64_t bytes, int ranks);

struct NcclSkip {
  std::string collective, algorithm, protocol;  // empty collective: the whole combination
  std::uint64_t bytes = 0;
  std::string error;
};
struct NcclSweep {
  int nccl_version = 0;  // ncclGetVersion, e.g. 22809
  int ranks = 0;
  std::vector<SweepPoint> points;  // algorithm and protocol lower-case, as bench model reads them
  std::vector<NcclSkip> skipped;   // combinations NCCL refused
};

Result<NcclSweep> run_nccl_bench(const NcclBenchOptions& options);
// Bus and algorithm bandwidth per point as nccl-tests defines them (collective_model.h).
std::string nccl_bench_text(const NcclSweep& sweep);
// {"bench": "nccl", ..., "points": [{collective, algorithm, protocol, bytes, ranks, time_us,
// algbw_gbs, busbw_gbs}], "skipped": [...]}: parse_sweep_json reads it back.
std::string nccl_bench_json(const NcclSweep& sweep);

}  // namespace tt::tuner
