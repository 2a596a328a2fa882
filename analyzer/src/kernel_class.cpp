#include "tracetune/analyzer/kernel_class.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tt::analyzer {
namespace {

bool starts(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool has(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

bool has_nocase(std::string_view s, std::string_view p) {
  if (p.size() > s.size()) return false;
  for (std::size_t i = 0; i + p.size() <= s.size(); ++i) {
    bool ok = true;
    for (std::size_t j = 0; j < p.size() && ok; ++j)
      ok = std::tolower(static_cast<unsigned char>(s[i + j])) == static_cast<unsigned char>(p[j]);
    if (ok) return true;
  }
  return false;
}

template <std::size_t N>
bool any_of_nocase(std::string_view s, const std::array<std::string_view, N>& ps) {
  return std::any_of(ps.begin(), ps.end(), [&](std::string_view p) { return has_nocase(s, p); });
}

}  // namespace

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::Compute: return "compute";
    case KernelClass::Communication: return "communication";
    case KernelClass::Memory: return "memory";
    case KernelClass::Other: return "other";
  }
  return "other";
}

KernelClass classify_kernel(std::string_view n) {
  if (starts(n, "nccl") || has(n, "ncclKernel") || has(n, "ncclDevKernel") || starts(n, "rccl") ||
      starts(n, "hccl") || has(n, "cross_device_reduce") || has(n, "all_reduce_kernel"))
    return KernelClass::Communication;
  if (starts(n, "Memcpy") || starts(n, "Memset") || starts(n, "hipMemcpy") || starts(n, "hipMemset") ||
      starts(n, "dma"))
    return KernelClass::Memory;
  if (n == "Event Sync" || n == "Context Sync" || n == "Stream Sync" || starts(n, "Stream Wait Event"))
    return KernelClass::Other;
  return KernelClass::Compute;
}

KernelClass classify_kernel_hta(std::string_view n) {
  if (starts(n, "nccl") || starts(n, "hip") || starts(n, "hccl") || has(n, "ncclKernel"))
    return KernelClass::Communication;
  if (starts(n, "Memcpy") || starts(n, "hipMemcpy") || starts(n, "Memset") || starts(n, "hipMemset") ||
      starts(n, "dma"))
    return KernelClass::Memory;
  // HTA's ComputeKernelGroupingPattern, inverted: re.match() anchors at the start, so
  // `.*X` means "contains X" and a bare `X` means "starts with X".
  const bool excluded =
      starts(n, "nccl") || has(n, "Memcpy") || has(n, "Memset") || has(n, "dma") || has(n, "Sync") ||
      starts(n, "Stream Wait Event") || (starts(n, "cuda") && has(n.substr(4), "LaunchKernel")) ||
      starts(n, "runFunction") || starts(n, "hip") || starts(n, "job_exe") || starts(n, "packet") ||
      starts(n, "pe_exe") || starts(n, "cpum_exe_subgraph") || starts(n, "hccl") ||
      starts(n, "collective_subgraph_execution");
  return excluded ? KernelClass::Other : KernelClass::Compute;
}

std::string_view to_string(GemmFormat f) {
  switch (f) {
    case GemmFormat::NotGemm: return "not_gemm";
    case GemmFormat::Fp32Simt: return "fp32_simt";
    case GemmFormat::Tf32: return "tf32";
    case GemmFormat::Fp16: return "fp16";
    case GemmFormat::Bf16: return "bf16";
    case GemmFormat::Fp8: return "fp8";
    case GemmFormat::Int8: return "int8";
    case GemmFormat::TensorCore: return "tensor_core";
    case GemmFormat::Fp64: return "fp64";
    case GemmFormat::Unknown: return "unknown";
  }
  return "unknown";
}

GemmFormat classify_gemm(std::string_view n) {
  // cuBLAS/cuBLASLt/CUTLASS kernel names: volta_sgemm_128x64_nn, ampere_sgemm_*, gemmSN_NN_kernel,
  // cutlass_80_simt_sgemm_*, ampere_s16816gemm_* / sm80_xmma_gemm_tf32* (TF32),
  // ampere_fp16_s16816gemm_fp16_*, sm90_xmma_gemm_bf16bf16_*, ..._e4m3*, turing_h1688gemm_*.
  const bool gemm = has_nocase(n, "gemm") || has_nocase(n, "matmul") || has(n, "cutlass") || has(n, "xmma") ||
                    has(n, "wgmma") || has(n, "gemv");
  if (!gemm) return GemmFormat::NotGemm;
  if (has_nocase(n, "dgemm") || has(n, "_d884") || has(n, "fp64")) return GemmFormat::Fp64;
  if (has_nocase(n, "e4m3") || has_nocase(n, "e5m2") || has_nocase(n, "fp8")) return GemmFormat::Fp8;
  if (has_nocase(n, "bf16")) return GemmFormat::Bf16;
  if (has_nocase(n, "tf32")) return GemmFormat::Tf32;
  if (has_nocase(n, "fp16") || has_nocase(n, "f16f16") || has(n, "h884") || has(n, "h1688") || has(n, "h16816") ||
      has(n, "hgemm") || has(n, "_half"))
    return GemmFormat::Fp16;
  if (has(n, "i8816") || has(n, "imma") || has_nocase(n, "int8") || has(n, "i8i8")) return GemmFormat::Int8;
  // Ampere+ "s16816"/"s1688" names are FP32-in, tensor-core (TF32) kernels; Volta's s884 is
  // FP16-in with FP32 accumulation.
  if (has(n, "s16816") || has(n, "s1688")) return GemmFormat::Tf32;
  if (has(n, "s884")) return GemmFormat::Fp16;
  // cuBLAS's "xmma" family also holds FP32 kernels that multiply on CUDA cores: their names say
  // "ffma" (sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_..., seen on an H100 with cuBLAS 13).
  if (has(n, "_ffma")) return GemmFormat::Fp32Simt;
  if (has_nocase(n, "tensorop") || has(n, "hmma") || has(n, "wgmma") || has(n, "xmma")) return GemmFormat::TensorCore;
  if (has_nocase(n, "sgemm") || has(n, "gemmSN") || has(n, "gemmk1") || has(n, "simt") || has(n, "gemv2T") ||
      has(n, "gemv2N"))
    return GemmFormat::Fp32Simt;
  return GemmFormat::Unknown;
}

bool is_memory_bound_kernel(std::string_view n) {
  static constexpr std::array<std::string_view, 18> kPatterns = {
      "elementwise", "reduce_kernel", "catarraybatchedcopy", "fill_kernel", "copy_kernel", "softmax",
      "layer_norm", "layernorm", "batch_norm", "batchnorm", "index_select", "indexing", "gather",
      "scatter", "triton_poi", "triton_red", "triton_per", "transpose"};
  return any_of_nocase(n, kPatterns);
}

}  // namespace tt::analyzer
