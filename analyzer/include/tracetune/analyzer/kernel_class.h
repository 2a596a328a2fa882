// What a GPU operation is, from its name and table: the class the temporal breakdown uses
// (compute / communication / memory / other), the numeric format a GEMM runs in (for the
// precision rule) and whether a compute kernel is an elementwise/reduction kernel (for the
// memory-bound rule). Definitions: docs/analysis.md.
#pragma once

#include <cstdint>
#include <string_view>

namespace tt::analyzer {

enum class KernelClass : std::uint8_t { Compute = 0, Communication = 1, Memory = 2, Other = 3 };
std::string_view to_string(KernelClass);

// Our definition: NCCL/RCCL/HCCL kernels by name (ncclKernel_*, ncclDevKernel_*, rccl*),
// copies and sets by table (or Memcpy/Memset/dma names), GPU-side sync markers as Other,
// everything else Compute.
KernelClass classify_kernel(std::string_view name);

// HTA 0.6's name patterns exactly (--hta-compat), applied to every GPU row whatever its
// table: communication `^nccl|^hip|^hccl|ncclKernel`, memory `^(hip)?Memcpy|^(hip)?Memset|^dma`,
// compute = none of its exclusion patterns, the rest Other.
KernelClass classify_kernel_hta(std::string_view name);

enum class GemmFormat : std::uint8_t {
  NotGemm = 0,
  Fp32Simt,       // FP32 on CUDA cores (sgemm): the precision opportunity
  Tf32,           // tensor cores, TF32 inputs
  Fp16,           // tensor cores, FP16 inputs
  Bf16,           // tensor cores, BF16 inputs
  Fp8,            // tensor cores, FP8 (e4m3/e5m2)
  Int8,           // tensor cores, INT8
  TensorCore,     // tensor cores, format not recognisable from the name
  Fp64,           // double precision GEMM (dgemm)
  Unknown,        // a GEMM whose format the name does not tell
};
std::string_view to_string(GemmFormat);
GemmFormat classify_gemm(std::string_view kernel_name);
inline bool uses_tensor_cores(GemmFormat f) {
  return f == GemmFormat::Tf32 || f == GemmFormat::Fp16 || f == GemmFormat::Bf16 || f == GemmFormat::Fp8 ||
         f == GemmFormat::Int8 || f == GemmFormat::TensorCore;
}

// Elementwise, reduction, normalisation, copy and indexing kernels: little arithmetic per
// byte, the ones kernel fusion (torch.compile) removes.
bool is_memory_bound_kernel(std::string_view kernel_name);

}  // namespace tt::analyzer
