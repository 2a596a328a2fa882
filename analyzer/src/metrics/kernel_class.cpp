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

namespace {

// A name rule: any of its patterns (case-insensitive or exact) in a kernel's name.
struct NameRule {
  GemmFormat format;
  std::array<std::string_view, 5> nocase{};  // unused entries stay empty
  std::array<std::string_view, 5> exact{};
};

bool matches(std::string_view n, const NameRule& r) {
  for (auto p : r.nocase)
    if (!p.empty() && has_nocase(n, p)) return true;
  for (auto p : r.exact)
    if (!p.empty() && has(n, p)) return true;
  return false;
}

// cuBLAS/cuBLASLt/CUTLASS kernel names: volta_sgemm_128x64_nn, ampere_sgemm_*, gemmSN_NN_kernel,
// cutlass_80_simt_sgemm_*, ampere_s16816gemm_* / sm80_xmma_gemm_tf32* (TF32),
// ampere_fp16_s16816gemm_fp16_*, sm90_xmma_gemm_bf16bf16_*, ..._e4m3*, turing_h1688gemm_*.
constexpr NameRule kIsGemm{GemmFormat::Unknown, {"gemm", "matmul"}, {"cutlass", "xmma", "wgmma", "gemv"}};

// The first rule that matches names the format; the order matters.
constexpr NameRule kGemmRules[] = {
    {GemmFormat::Fp64, {"dgemm"}, {"_d884", "fp64"}},
    {GemmFormat::Fp8, {"e4m3", "e5m2", "fp8"}, {}},
    {GemmFormat::Bf16, {"bf16"}, {}},
    {GemmFormat::Tf32, {"tf32"}, {}},
    {GemmFormat::Fp16, {"fp16", "f16f16"}, {"h884", "h1688", "h16816", "hgemm", "_half"}},
    {GemmFormat::Int8, {"int8"}, {"i8816", "imma", "i8i8"}},
    // Ampere+ "s16816"/"s1688" names are FP32-in, tensor-core (TF32) kernels; Volta's s884 is
    // FP16-in with FP32 accumulation.
    {GemmFormat::Tf32, {}, {"s16816", "s1688"}},
    {GemmFormat::Fp16, {}, {"s884"}},
    // cuBLAS's "xmma" family also holds FP32 kernels that multiply on CUDA cores: their names say
    // "ffma" (sm80_xmma_gemm_f32f32_f32f32_f32_..._ffma_..., seen on an H100 with cuBLAS 13).
    {GemmFormat::Fp32Simt, {}, {"_ffma"}},
    {GemmFormat::TensorCore, {"tensorop"}, {"hmma", "wgmma", "xmma"}},
    {GemmFormat::Fp32Simt, {"sgemm"}, {"gemmSN", "gemmk1", "simt", "gemv2T", "gemv2N"}},
};

}  // namespace

GemmFormat classify_gemm(std::string_view n) {
  if (!matches(n, kIsGemm)) return GemmFormat::NotGemm;
  for (const auto& rule : kGemmRules)
    if (matches(n, rule)) return rule.format;
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
