// Softmax + cross-entropy fused per row. Forward reads the logits twice (max, then the sum
// of exponentials) and writes one float per row: the log-softmax matrix PyTorch materialises
// is never written. Backward writes dlogits in one pass from the saved logsumexp, where
// PyTorch writes a one-hot gradient matrix and then a second full matrix.
#include <cmath>
#include <limits>

#include "simd.h"
#include "tracetune_kernels.h"

namespace tt::kernels {
namespace {

float lse_row_scalar(const float* x, int64_t n) {
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) mx = std::fmax(mx, x[i]);
  if (std::isinf(mx)) return mx;
  float s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(x[i] - mx);
  return mx + std::log(s);
}

void xent_bwd_row_scalar(const float* x, float lse, int64_t target, float g, float* dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = std::exp(x[i] - lse) * g;
  dx[target] -= g;
}

#if TT_K_X86
TT_K_AVX2 float lse_row_avx2(const float* x, int64_t n) {
  const int64_t nv = n & ~int64_t{7};
  float mx = -std::numeric_limits<float>::infinity();
  if (nv > 0) {
    __m256 m = _mm256_loadu_ps(x);
    for (int64_t i = 8; i < nv; i += 8) m = _mm256_max_ps(m, _mm256_loadu_ps(x + i));
    mx = hmax256(m);
  }
  for (int64_t i = nv; i < n; ++i) mx = std::fmax(mx, x[i]);
  if (std::isinf(mx)) return mx;
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= nv; i += 16) {
    acc0 = _mm256_add_ps(acc0, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
    acc1 = _mm256_add_ps(acc1, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), vm)));
  }
  for (; i < nv; i += 8) acc0 = _mm256_add_ps(acc0, exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
  float s = hsum256(_mm256_add_ps(acc0, acc1));
  for (int64_t j = nv; j < n; ++j) s += std::exp(x[j] - mx);
  return mx + std::log(s);
}

TT_K_AVX2 void xent_bwd_row_avx2(const float* x, float lse, int64_t target, float g, float* dx, int64_t n) {
  const int64_t nv = n & ~int64_t{7};
  const __m256 vl = _mm256_set1_ps(lse), vg = _mm256_set1_ps(g);
  for (int64_t i = 0; i < nv; i += 8)
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(exp256(_mm256_sub_ps(_mm256_loadu_ps(x + i), vl)), vg));
  for (int64_t i = nv; i < n; ++i) dx[i] = std::exp(x[i] - lse) * g;
  dx[target] -= g;
}
#endif

bool valid_targets(const int64_t* target, int64_t rows, int64_t cols, int64_t ignore_index) {
  for (int64_t r = 0; r < rows; ++r)
    if (target[r] != ignore_index && (target[r] < 0 || target[r] >= cols)) return false;
  return true;
}

}  // namespace
}  // namespace tt::kernels

using namespace tt::kernels;

extern "C" int tt_k_xent_fwd_f32(const float* logits, const int64_t* target, float* loss, float* lse, int64_t rows,
                                 int64_t cols, int64_t ignore_index) {
  if (rows < 0 || cols <= 0 || (rows > 0 && (!logits || !target || !loss || !lse))) return TT_K_EINVAL;
  if (!valid_targets(target, rows, cols, ignore_index)) return TT_K_EINVAL;
  const bool simd = use_avx2();
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * cols;
#if TT_K_X86
    lse[r] = simd ? lse_row_avx2(x, cols) : lse_row_scalar(x, cols);
#else
    lse[r] = lse_row_scalar(x, cols);
#endif
    loss[r] = target[r] == ignore_index ? 0.0f : lse[r] - x[target[r]];
  }
  (void)simd;
  return TT_K_OK;
}

extern "C" int tt_k_xent_bwd_f32(const float* logits, const int64_t* target, const float* lse, const float* row_grad,
                                 float scale, float* dlogits, int64_t rows, int64_t cols, int64_t ignore_index) {
  if (rows < 0 || cols <= 0 || (rows > 0 && (!logits || !target || !lse || !dlogits))) return TT_K_EINVAL;
  if (!valid_targets(target, rows, cols, ignore_index)) return TT_K_EINVAL;
  const bool simd = use_avx2();
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = logits + r * cols;
    float* dx = dlogits + r * cols;
    if (target[r] == ignore_index) {
      for (int64_t i = 0; i < cols; ++i) dx[i] = 0.0f;
      continue;
    }
    const float g = (row_grad ? row_grad[r] : 1.0f) * scale;
#if TT_K_X86
    if (simd) {
      xent_bwd_row_avx2(x, lse[r], target[r], g, dx, cols);
      continue;
    }
#endif
    xent_bwd_row_scalar(x, lse[r], target[r], g, dx, cols);
  }
  (void)simd;
  return TT_K_OK;
}
