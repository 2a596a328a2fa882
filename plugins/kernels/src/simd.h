// Shared helpers of the CPU kernels: the run-time choice between AVX2+FMA and scalar code,
// and a vectorised exp. The library is built for baseline x86-64 (it is loaded into the
// job's process, cmake/InJob.cmake), so AVX2 code lives in functions compiled with
// __attribute__((target)) and is called only when the CPU reports AVX2 and FMA.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#define TT_K_X86 1
#include <immintrin.h>
#define TT_K_AVX2 __attribute__((target("avx2,fma")))
#else
#define TT_K_X86 0
#define TT_K_AVX2
#endif

namespace tt::kernels {

bool use_avx2();  // the CPU has AVX2+FMA and scalar paths are not forced

#if TT_K_X86
// exp(x) for 8 floats: Cephes' range reduction and degree-5 polynomial (about 1 ulp),
// inputs clamped to [-87.3, 88.7] (softmax arguments are <= 0; exp(-87.3) is ~1e-38).
TT_K_AVX2 inline __m256 exp256(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 x2 = _mm256_mul_ps(x, x);
  y = _mm256_fmadd_ps(y, x2, _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

TT_K_AVX2 inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

TT_K_AVX2 inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
#endif

}  // namespace tt::kernels
