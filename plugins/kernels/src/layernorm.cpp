// LayerNorm forward and backward over rows. Forward: mean, then the variance of the
// deviations (two passes over a row that sits in L1, more accurate than E[x^2] - mean^2),
// then one normalising pass. Backward: per row, sums of g = dy*gamma and g*xhat give dx in
// one more pass; dgamma/dbeta accumulate across rows in the same pass.
#include <cmath>
#include <cstring>

#include "simd.h"
#include "tracetune_kernels.h"

namespace tt::kernels {
namespace {

void ln_fwd_row_scalar(const float* x, const float* gamma, const float* beta, float* y, float* mean_out,
                       float* rstd_out, int64_t n, float eps) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  float sq = 0;
  for (int64_t i = 0; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  for (int64_t i = 0; i < n; ++i) {
    const float h = (x[i] - mean) * rstd;
    y[i] = gamma ? h * gamma[i] + (beta ? beta[i] : 0.0f) : h + (beta ? beta[i] : 0.0f);
  }
  *mean_out = mean;
  *rstd_out = rstd;
}

void ln_bwd_row_scalar(const float* dy, const float* x, const float* gamma, float mean, float rstd, float* dx,
                       float* dgamma, float* dbeta, int64_t n) {
  float sum_g = 0, sum_gh = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float h = (x[i] - mean) * rstd;
    const float g = gamma ? dy[i] * gamma[i] : dy[i];
    sum_g += g;
    sum_gh += g * h;
    if (dgamma) dgamma[i] += dy[i] * h;
    if (dbeta) dbeta[i] += dy[i];
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  const float a = sum_g * inv_n, b = sum_gh * inv_n;
  for (int64_t i = 0; i < n; ++i) {
    const float h = (x[i] - mean) * rstd;
    const float g = gamma ? dy[i] * gamma[i] : dy[i];
    dx[i] = rstd * (g - a - h * b);
  }
}

#if TT_K_X86
TT_K_AVX2 void ln_fwd_row_avx2(const float* x, const float* gamma, const float* beta, float* y, float* mean_out,
                               float* rstd_out, int64_t n, float eps) {
  const int64_t nv = n & ~int64_t{7};
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nv; i += 8) acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  float sum = hsum256(acc);
  for (int64_t i = nv; i < n; ++i) sum += x[i];
  const float mean = sum / static_cast<float>(n);
  const __m256 vm = _mm256_set1_ps(mean);
  acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nv; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + i), vm);
    acc = _mm256_fmadd_ps(d, d, acc);
  }
  float sq = hsum256(acc);
  for (int64_t i = nv; i < n; ++i) sq += (x[i] - mean) * (x[i] - mean);
  const float rstd = 1.0f / std::sqrt(sq / static_cast<float>(n) + eps);
  const __m256 vr = _mm256_set1_ps(rstd);
  for (int64_t i = 0; i < nv; i += 8) {
    __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vr);
    if (gamma) h = _mm256_mul_ps(h, _mm256_loadu_ps(gamma + i));
    if (beta) h = _mm256_add_ps(h, _mm256_loadu_ps(beta + i));
    _mm256_storeu_ps(y + i, h);
  }
  for (int64_t i = nv; i < n; ++i) {
    const float h = (x[i] - mean) * rstd;
    y[i] = (gamma ? h * gamma[i] : h) + (beta ? beta[i] : 0.0f);
  }
  *mean_out = mean;
  *rstd_out = rstd;
}

TT_K_AVX2 void ln_bwd_row_avx2(const float* dy, const float* x, const float* gamma, float mean, float rstd, float* dx,
                               float* dgamma, float* dbeta, int64_t n) {
  const int64_t nv = n & ~int64_t{7};
  const __m256 vm = _mm256_set1_ps(mean), vr = _mm256_set1_ps(rstd);
  __m256 ag = _mm256_setzero_ps(), agh = _mm256_setzero_ps();
  for (int64_t i = 0; i < nv; i += 8) {
    const __m256 d = _mm256_loadu_ps(dy + i);
    const __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vr);
    const __m256 g = gamma ? _mm256_mul_ps(d, _mm256_loadu_ps(gamma + i)) : d;
    ag = _mm256_add_ps(ag, g);
    agh = _mm256_fmadd_ps(g, h, agh);
    if (dgamma) _mm256_storeu_ps(dgamma + i, _mm256_fmadd_ps(d, h, _mm256_loadu_ps(dgamma + i)));
    if (dbeta) _mm256_storeu_ps(dbeta + i, _mm256_add_ps(d, _mm256_loadu_ps(dbeta + i)));
  }
  float sum_g = hsum256(ag), sum_gh = hsum256(agh);
  for (int64_t i = nv; i < n; ++i) {
    const float h = (x[i] - mean) * rstd;
    const float g = gamma ? dy[i] * gamma[i] : dy[i];
    sum_g += g;
    sum_gh += g * h;
    if (dgamma) dgamma[i] += dy[i] * h;
    if (dbeta) dbeta[i] += dy[i];
  }
  const float inv_n = 1.0f / static_cast<float>(n);
  const float a = sum_g * inv_n, b = sum_gh * inv_n;
  const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
  for (int64_t i = 0; i < nv; i += 8) {
    const __m256 d = _mm256_loadu_ps(dy + i);
    const __m256 h = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vr);
    const __m256 g = gamma ? _mm256_mul_ps(d, _mm256_loadu_ps(gamma + i)) : d;
    _mm256_storeu_ps(dx + i, _mm256_mul_ps(vr, _mm256_sub_ps(_mm256_sub_ps(g, va), _mm256_mul_ps(h, vb))));
  }
  for (int64_t i = nv; i < n; ++i) {
    const float h = (x[i] - mean) * rstd;
    const float g = gamma ? dy[i] * gamma[i] : dy[i];
    dx[i] = rstd * (g - a - h * b);
  }
}
#endif

}  // namespace
}  // namespace tt::kernels

using namespace tt::kernels;

extern "C" int tt_k_layernorm_fwd_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                      float* rstd, int64_t rows, int64_t cols, float eps) {
  if (rows < 0 || cols <= 0 || (rows > 0 && (!x || !y || !mean || !rstd))) return TT_K_EINVAL;
  const bool simd = use_avx2();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * cols;
#if TT_K_X86
    if (simd) {
      ln_fwd_row_avx2(x + o, gamma, beta, y + o, mean + r, rstd + r, cols, eps);
      continue;
    }
#endif
    ln_fwd_row_scalar(x + o, gamma, beta, y + o, mean + r, rstd + r, cols, eps);
  }
  (void)simd;
  return TT_K_OK;
}

extern "C" int tt_k_layernorm_bwd_f32(const float* dy, const float* x, const float* gamma, const float* mean,
                                      const float* rstd, float* dx, float* dgamma, float* dbeta, int64_t rows,
                                      int64_t cols) {
  if (rows < 0 || cols <= 0 || (rows > 0 && (!dy || !x || !mean || !rstd || !dx))) return TT_K_EINVAL;
  if (dgamma) std::memset(dgamma, 0, sizeof(float) * static_cast<size_t>(cols));
  if (dbeta) std::memset(dbeta, 0, sizeof(float) * static_cast<size_t>(cols));
  const bool simd = use_avx2();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t o = r * cols;
#if TT_K_X86
    if (simd) {
      ln_bwd_row_avx2(dy + o, x + o, gamma, mean[r], rstd[r], dx + o, dgamma, dbeta, cols);
      continue;
    }
#endif
    ln_bwd_row_scalar(dy + o, x + o, gamma, mean[r], rstd[r], dx + o, dgamma, dbeta, cols);
  }
  (void)simd;
  return TT_K_OK;
}
