// Fused optimizer steps: one pass over each parameter reads param, grad and state once and
// writes them once (PyTorch's per-parameter loop makes 5-7 passes and a Python call per op).
// The element formulas are torch.optim's (Adam/AdamW: amsgrad=False, maximize=False), with
// the scalar factors computed in double as PyTorch computes them in Python floats.
#include <cmath>

#include "simd.h"
#include "tracetune_kernels.h"

namespace tt::kernels {
namespace {

struct AdamScalars {
  float lr, beta1, beta2, eps, wd, decay, step_size, inv_bc2_sqrt;
  bool decoupled;
};

AdamScalars adam_scalars(float lr, float beta1, float beta2, float eps, float wd, int64_t step, bool decoupled) {
  const double bc1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(step));
  const double bc2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(step));
  return {lr, beta1, beta2, eps, wd, static_cast<float>(1.0 - static_cast<double>(lr) * wd),
          static_cast<float>(lr / bc1), static_cast<float>(1.0 / std::sqrt(bc2)), decoupled};
}

void adam_scalar(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    float pi = p[i];
    if (s.decoupled)
      pi *= s.decay;
    else if (s.wd != 0.0f)
      gi += s.wd * pi;
    const float mi = m[i] * s.beta1 + (1.0f - s.beta1) * gi;
    const float vi = v[i] * s.beta2 + (1.0f - s.beta2) * gi * gi;
    const float denom = std::sqrt(vi) * s.inv_bc2_sqrt + s.eps;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - s.step_size * (mi / denom);
  }
}

#if TT_K_X86
TT_K_AVX2 void adam_avx2(float* p, const float* g, float* m, float* v, int64_t n, const AdamScalars& s) {
  const __m256 b1 = _mm256_set1_ps(s.beta1), b1c = _mm256_set1_ps(1.0f - s.beta1);
  const __m256 b2 = _mm256_set1_ps(s.beta2), b2c = _mm256_set1_ps(1.0f - s.beta2);
  const __m256 wd = _mm256_set1_ps(s.wd), decay = _mm256_set1_ps(s.decay), eps = _mm256_set1_ps(s.eps);
  const __m256 bc2 = _mm256_set1_ps(s.inv_bc2_sqrt), step = _mm256_set1_ps(s.step_size);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 gi = _mm256_loadu_ps(g + i);
    __m256 pi = _mm256_loadu_ps(p + i);
    if (s.decoupled)
      pi = _mm256_mul_ps(pi, decay);
    else if (s.wd != 0.0f)
      gi = _mm256_add_ps(gi, _mm256_mul_ps(wd, pi));
    // no FMA contraction where PyTorch rounds twice: keeps results within an ulp of torch's
    const __m256 mi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(m + i), b1), _mm256_mul_ps(b1c, gi));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), b2), _mm256_mul_ps(_mm256_mul_ps(b2c, gi), gi));
    const __m256 denom = _mm256_add_ps(_mm256_mul_ps(_mm256_sqrt_ps(vi), bc2), eps);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
    _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(step, _mm256_div_ps(mi, denom))));
  }
  adam_scalar(p + i, g + i, m + i, v + i, n - i, s);
}
#endif

struct SgdScalars {
  float lr, momentum, dampening, wd;
  bool nesterov, first;
};

void sgd_scalar(float* p, const float* g, float* buf, int64_t n, const SgdScalars& s) {
  for (int64_t i = 0; i < n; ++i) {
    float d = g[i];
    if (s.wd != 0.0f) d += s.wd * p[i];
    if (s.momentum != 0.0f) {
      const float b = s.first ? d : buf[i] * s.momentum + (1.0f - s.dampening) * d;
      buf[i] = b;
      d = s.nesterov ? d + s.momentum * b : b;
    }
    p[i] -= s.lr * d;
  }
}

#if TT_K_X86
TT_K_AVX2 void sgd_avx2(float* p, const float* g, float* buf, int64_t n, const SgdScalars& s) {
  const __m256 wd = _mm256_set1_ps(s.wd), mom = _mm256_set1_ps(s.momentum);
  const __m256 damp = _mm256_set1_ps(1.0f - s.dampening), lr = _mm256_set1_ps(s.lr);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 d = _mm256_loadu_ps(g + i);
    const __m256 pi = _mm256_loadu_ps(p + i);
    if (s.wd != 0.0f) d = _mm256_add_ps(d, _mm256_mul_ps(wd, pi));
    if (s.momentum != 0.0f) {
      const __m256 b =
          s.first ? d : _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(buf + i), mom), _mm256_mul_ps(damp, d));
      _mm256_storeu_ps(buf + i, b);
      d = s.nesterov ? _mm256_add_ps(d, _mm256_mul_ps(mom, b)) : b;
    }
    _mm256_storeu_ps(p + i, _mm256_sub_ps(pi, _mm256_mul_ps(lr, d)));
  }
  sgd_scalar(p + i, g + i, buf + i, n - i, s);
}
#endif

bool valid_lists(const void* a, const void* b, const int64_t* numels, int n) {
  if (n < 0 || (n > 0 && (a == nullptr || b == nullptr || numels == nullptr))) return false;
  for (int i = 0; i < n; ++i)
    if (numels[i] < 0) return false;
  return true;
}

}  // namespace
}  // namespace tt::kernels

using namespace tt::kernels;

extern "C" int tt_k_adam_step_f32(float* const* params, const float* const* grads, float* const* exp_avg,
                                  float* const* exp_avg_sq, const int64_t* numels, int n, float lr, float beta1,
                                  float beta2, float eps, float weight_decay, int64_t step, int decoupled) {
  if (!valid_lists(params, grads, numels, n) || (n > 0 && (exp_avg == nullptr || exp_avg_sq == nullptr)) || step < 1)
    return TT_K_EINVAL;
  const AdamScalars s = adam_scalars(lr, beta1, beta2, eps, weight_decay, step, decoupled != 0);
  const bool simd = use_avx2();
  for (int t = 0; t < n; ++t) {
    if (numels[t] == 0) continue;
    if (!params[t] || !grads[t] || !exp_avg[t] || !exp_avg_sq[t]) return TT_K_EINVAL;
#if TT_K_X86
    if (simd) {
      adam_avx2(params[t], grads[t], exp_avg[t], exp_avg_sq[t], numels[t], s);
      continue;
    }
#endif
    adam_scalar(params[t], grads[t], exp_avg[t], exp_avg_sq[t], numels[t], s);
  }
  (void)simd;
  return TT_K_OK;
}

extern "C" int tt_k_sgd_step_f32(float* const* params, const float* const* grads, float* const* momentum_buf,
                                 const int64_t* numels, int n, float lr, float momentum, float dampening,
                                 float weight_decay, int nesterov, int first) {
  if (!valid_lists(params, grads, numels, n) || (momentum != 0.0f && n > 0 && momentum_buf == nullptr))
    return TT_K_EINVAL;
  const SgdScalars s{lr, momentum, dampening, weight_decay, nesterov != 0, first != 0};
  const bool simd = use_avx2();
  for (int t = 0; t < n; ++t) {
    if (numels[t] == 0) continue;
    float* buf = momentum != 0.0f ? momentum_buf[t] : nullptr;
    if (!params[t] || !grads[t] || (momentum != 0.0f && !buf)) return TT_K_EINVAL;
#if TT_K_X86
    if (simd) {
      sgd_avx2(params[t], grads[t], buf, numels[t], s);
      continue;
    }
#endif
    sgd_scalar(params[t], grads[t], buf, numels[t], s);
  }
  (void)simd;
  return TT_K_OK;
}
