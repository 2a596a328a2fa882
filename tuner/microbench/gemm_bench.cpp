// `tracetune bench gemm`: cuBLAS GEMM throughput in FP32, TF32, BF16 and FP16, cudart and
// cuBLAS loaded with dlopen (gpu_bench.h). Our own declarations of the few things used, with
// the values of the CUDA 13 headers (library_types.h, cublas_api.h, cublas_v2.h):
//   cudaDataType  CUDA_R_32F 0, CUDA_R_16F 2, CUDA_R_16BF 14
//   cublasComputeType_t  CUBLAS_COMPUTE_32F 68, CUBLAS_COMPUTE_32F_FAST_TF32 77
//   cublasOperation_t CUBLAS_OP_N 0; cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT -1
//   cublasCreate / cublasDestroy are the _v2 symbols; cublasStatus_t 0 is success.
// All four are cublasGemmEx with FP32 accumulation; only the input/output type and, for TF32,
// the compute type differ. The matrices hold values in [-1, 1), not zeros (tensor-core power
// and clocks depend on the data).
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "cuda_dl.h"
#include "tracetune/tuner/gpu_bench.h"

namespace tt::tuner {
namespace {

constexpr int kR32F = 0, kR16F = 2, kR16BF = 14;
constexpr int kCompute32F = 68, kCompute32FFastTF32 = 77;
constexpr int kOpN = 0, kGemmDefault = -1;

struct Cublas {
  detail::DlLib lib{"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"};
  int (*Create)(void**) = nullptr;
  int (*Destroy)(void*) = nullptr;
  int (*GemmEx)(void*, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int, const void*,
                void*, int, int, int, int) = nullptr;
  std::string error;
  Cublas() {
    lib.sym(Create, "cublasCreate_v2");
    lib.sym(Destroy, "cublasDestroy_v2");
    lib.sym(GemmEx, "cublasGemmEx");
    error = lib.problem("cuBLAS (libcublas.so)");
  }
};

struct Format {
  const char* name;
  int type;          // A, B and C
  int compute;
  std::size_t elem;  // bytes per element
};
constexpr Format kFormats[] = {
    {"fp32", kR32F, kCompute32F, 4},
    {"tf32", kR32F, kCompute32FFastTF32, 4},
    {"bf16", kR16BF, kCompute32F, 2},
    {"fp16", kR16F, kCompute32F, 2},
};

// Host copies of the inputs in each element type, filled once from a fixed LCG.
struct HostInputs {
  std::vector<float> f32;
  std::vector<std::uint16_t> f16, bf16;
  explicit HostInputs(std::size_t elems) : f32(elems), f16(elems), bf16(elems) {
    std::uint32_t seed = 12345;
    for (auto& v : f32) {
      seed = seed * 1664525u + 1013904223u;
      v = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
    }
    for (std::size_t i = 0; i < elems; ++i) {
      f16[i] = float_to_half_bits(f32[i]);
      bf16[i] = float_to_bf16_bits(f32[i]);
    }
  }
  const void* of(const Format& f) const {
    if (f.elem == 4) return f32.data();
    return f.type == kR16F ? static_cast<const void*>(f16.data()) : static_cast<const void*>(bf16.data());
  }
};

// The device buffers, events and cuBLAS handle of a bench run; `failure` is the first error.
struct GemmRun {
  detail::CudaRuntime& rt;
  Cublas& blas;
  void *a = nullptr, *b = nullptr, *c = nullptr, *handle = nullptr, *ev0 = nullptr, *ev1 = nullptr;
  std::string failure;

  void cuda(int rc, const char* what) {
    if (rc != 0 && failure.empty()) failure = fmt::format("{}: {}", what, rt.why(rc));
  }
  void allocate(std::size_t bytes) {
    for (void** p : {&a, &b, &c}) cuda(rt.Malloc(p, bytes), "cudaMalloc");
    cuda(rt.EventCreate(&ev0), "cudaEventCreate");
    cuda(rt.EventCreate(&ev1), "cudaEventCreate");
    if (failure.empty())
      if (int rc = blas.Create(&handle); rc != 0) failure = fmt::format("cublasCreate: status {}", rc);
  }
  void release() {
    if (handle != nullptr) blas.Destroy(handle);
    for (void* p : {a, b, c})
      if (p != nullptr) rt.Free(p);
    for (void* e : {ev0, ev1})
      if (e != nullptr) rt.EventDestroy(e);
  }
  // The median time of one n x n GEMM in format `f` over `repeats` runs, after 3 warm-ups
  // (cuBLAS picks and loads kernels); nullopt on a failure.
  std::optional<double> time_gemm(const Format& f, int n, const void* src, int repeats) {
    const std::size_t elems = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    // A and B from the same host data: the first n*n values, in this format's type.
    cuda(rt.Memcpy(a, src, elems * f.elem, 1), "cudaMemcpy");
    if (failure.empty()) cuda(rt.Memcpy(b, src, elems * f.elem, 1), "cudaMemcpy");
    const float alpha = 1.0f, beta = 0.0f;
    std::vector<double> secs;
    for (int r = -3; r < repeats && failure.empty(); ++r) {
      rt.EventRecord(ev0, nullptr);
      const int st = blas.GemmEx(handle, kOpN, kOpN, n, n, n, &alpha, a, f.type, n, b, f.type, n, &beta, c, f.type, n,
                                 f.compute, kGemmDefault);
      rt.EventRecord(ev1, nullptr);
      if (st != 0) {
        failure = fmt::format("cublasGemmEx ({}, n={}): status {}", f.name, n, st);
        break;
      }
      cuda(rt.EventSynchronize(ev1), "cudaEventSynchronize");
      float ms = 0;
      if (failure.empty()) cuda(rt.EventElapsedTime(&ms, ev0, ev1), "cudaEventElapsedTime");
      if (r >= 0) secs.push_back(ms / 1e3);
    }
    if (!failure.empty()) return std::nullopt;
    return median(secs);
  }
};

}  // namespace

Result<std::vector<GemmTrial>> run_gemm_bench(const GemmBenchOptions& opt) {
  if (opt.sizes.empty() || opt.repeats < 1) return make_error("no sizes or repeats");
  detail::CudaRuntime rt;
  if (!rt.error.empty()) return make_error(rt.error);
  Cublas blas;
  if (!blas.error.empty()) return make_error(blas.error);
  auto cuda = [&](int rc, const char* what) -> std::string { return rc == 0 ? "" : fmt::format("{}: {}", what, rt.why(rc)); };
  if (auto e = cuda(rt.SetDevice(opt.device), "cudaSetDevice"); !e.empty()) return make_error(e);

  int max_n = 0;
  for (int n : opt.sizes) max_n = std::max(max_n, n);
  const std::size_t max_elems = static_cast<std::size_t>(max_n) * static_cast<std::size_t>(max_n);
  const HostInputs inputs(max_elems);
  GemmRun run{rt, blas};
  run.allocate(max_elems * 4);
  std::vector<GemmTrial> out;
  for (int n : opt.sizes)
    for (const Format& f : kFormats) {
      if (!run.failure.empty()) break;
      if (auto secs = run.time_gemm(f, n, inputs.of(f), opt.repeats)) out.push_back({f.name, n, *secs});
    }
  run.release();
  if (!run.failure.empty()) return make_error(run.failure);
  return out;
}

}  // namespace tt::tuner
