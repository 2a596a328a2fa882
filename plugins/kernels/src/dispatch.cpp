// The ABI's version and the run-time CPU dispatch shared by every CPU kernel.
#include <atomic>

#include "simd.h"
#include "tracetune_kernels.h"

namespace tt::kernels {
namespace {
std::atomic<bool> g_force_scalar{false};

bool cpu_has_avx2() {
#if TT_K_X86
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
#else
  return false;
#endif
}
}  // namespace

bool use_avx2() { return cpu_has_avx2() && !g_force_scalar.load(std::memory_order_relaxed); }
}  // namespace tt::kernels

extern "C" {
int tt_k_abi_version(void) { return TT_K_ABI_VERSION; }
int tt_k_cpu_simd(void) { return tt::kernels::use_avx2() ? 1 : 0; }
void tt_k_set_force_scalar(int force) { tt::kernels::g_force_scalar.store(force != 0); }
}
