// The kernel pack against straightforward double-precision references, on both the AVX2 and
// the scalar paths (tt_k_set_force_scalar), with row lengths that are not multiples of the
// vector width, ignored and invalid targets, empty tensors and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "tracetune_kernels.h"

namespace {

std::vector<float> randn(size_t n, unsigned seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// max |a - b| / (atol + rtol |b|) over the elements: <= 1 passes
double worst(const std::vector<float>& a, const std::vector<double>& b, double atol, double rtol) {
  double w = 0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]) / (atol + rtol * std::abs(b[i])));
  return w;
}

class Paths : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { tt_k_set_force_scalar(GetParam() ? 1 : 0); }
  void TearDown() override { tt_k_set_force_scalar(0); }
};

TEST_P(Paths, LayerNormForwardAndBackwardMatchReference) {
  for (int64_t cols : {1, 7, 8, 13, 768, 1001}) {
    const int64_t rows = 5;
    auto x = randn(rows * cols, 1, 3.0f), gamma = randn(cols, 2), beta = randn(cols, 3), dy = randn(rows * cols, 4);
    for (auto& v : x) v += 10.0f;  // an offset mean: the variance must not cancel
    std::vector<float> y(rows * cols), mean(rows), rstd(rows), dx(rows * cols), dg(cols), db(cols);
    ASSERT_EQ(tt_k_layernorm_fwd_f32(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(), rows, cols,
                                     1e-5f), TT_K_OK);
    ASSERT_EQ(tt_k_layernorm_bwd_f32(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(), dg.data(),
                                     db.data(), rows, cols), TT_K_OK);
    std::vector<double> ry(rows * cols), rdx(rows * cols), rdg(cols, 0.0), rdb(cols, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      double m = 0, v = 0;
      for (int64_t i = 0; i < cols; ++i) m += x[r * cols + i];
      m /= cols;
      for (int64_t i = 0; i < cols; ++i) v += (x[r * cols + i] - m) * (x[r * cols + i] - m);
      const double rs = 1.0 / std::sqrt(v / cols + 1e-5);
      double sg = 0, sgh = 0;
      for (int64_t i = 0; i < cols; ++i) {
        const double h = (x[r * cols + i] - m) * rs, g = double(dy[r * cols + i]) * gamma[i];
        ry[r * cols + i] = h * gamma[i] + beta[i];
        sg += g, sgh += g * h;
        rdg[i] += dy[r * cols + i] * h, rdb[i] += dy[r * cols + i];
      }
      for (int64_t i = 0; i < cols; ++i) {
        const double h = (x[r * cols + i] - m) * rs, g = double(dy[r * cols + i]) * gamma[i];
        rdx[r * cols + i] = rs * (g - sg / cols - h * sgh / cols);
      }
    }
    EXPECT_LE(worst(y, ry, 1e-4, 1e-4), 1.0) << "cols " << cols;
    EXPECT_LE(worst(dx, rdx, 1e-3, 1e-3), 1.0) << "cols " << cols;
    EXPECT_LE(worst(dg, rdg, 1e-3, 1e-4), 1.0) << "cols " << cols;
    EXPECT_LE(worst(db, rdb, 1e-4, 1e-4), 1.0) << "cols " << cols;
  }
}

TEST_P(Paths, LayerNormWithoutAffine) {
  const int64_t rows = 3, cols = 19;
  auto x = randn(rows * cols, 5);
  std::vector<float> y(rows * cols), mean(rows), rstd(rows);
  ASSERT_EQ(tt_k_layernorm_fwd_f32(x.data(), nullptr, nullptr, y.data(), mean.data(), rstd.data(), rows, cols, 1e-5f), 0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < cols; ++i) s += y[r * cols + i], s2 += double(y[r * cols + i]) * y[r * cols + i];
    EXPECT_NEAR(s / cols, 0.0, 1e-5);
    EXPECT_NEAR(s2 / cols, 1.0, 1e-3);
  }
}

TEST_P(Paths, CrossEntropyMatchesReferenceWithIgnoredRows) {
  for (int64_t cols : {1, 9, 16, 1000, 32003}) {
    const int64_t rows = 6;
    auto x = randn(rows * cols, 7, 4.0f);
    std::vector<int64_t> target = {0, cols - 1, -100, cols / 2, 0, cols / 3};
    std::vector<float> loss(rows), lse(rows), dx(rows * cols), rg = {1, 2, 3, 4, 5, 6};
    ASSERT_EQ(tt_k_xent_fwd_f32(x.data(), target.data(), loss.data(), lse.data(), rows, cols, -100), TT_K_OK);
    ASSERT_EQ(tt_k_xent_bwd_f32(x.data(), target.data(), lse.data(), rg.data(), 0.5f, dx.data(), rows, cols, -100), 0);
    std::vector<double> rloss(rows), rdx(rows * cols);
    for (int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0;
      for (int64_t i = 0; i < cols; ++i) m = std::max(m, double(x[r * cols + i]));
      for (int64_t i = 0; i < cols; ++i) s += std::exp(x[r * cols + i] - m);
      const double l = m + std::log(s);
      const bool ignored = target[r] == -100;
      rloss[r] = ignored ? 0.0 : l - x[r * cols + target[r]];
      for (int64_t i = 0; i < cols; ++i)
        rdx[r * cols + i] = ignored ? 0.0 : (std::exp(x[r * cols + i] - l) - (i == target[r])) * rg[r] * 0.5;
    }
    EXPECT_LE(worst(loss, rloss, 1e-5, 1e-5), 1.0) << "cols " << cols;
    EXPECT_LE(worst(dx, rdx, 1e-6, 1e-4), 1.0) << "cols " << cols;
  }
}

TEST_P(Paths, CrossEntropyRefusesTargetsOutOfRange) {
  std::vector<float> x(8, 0.0f), loss(2), lse(2), dx(8);
  std::vector<int64_t> bad = {0, 4};
  EXPECT_EQ(tt_k_xent_fwd_f32(x.data(), bad.data(), loss.data(), lse.data(), 2, 4, -100), TT_K_EINVAL);
  bad[1] = -1;
  EXPECT_EQ(tt_k_xent_bwd_f32(x.data(), bad.data(), lse.data(), nullptr, 1.0f, dx.data(), 2, 4, -100), TT_K_EINVAL);
  EXPECT_EQ(tt_k_xent_fwd_f32(nullptr, bad.data(), loss.data(), lse.data(), 2, 4, -100), TT_K_EINVAL);
  EXPECT_EQ(tt_k_layernorm_fwd_f32(x.data(), nullptr, nullptr, dx.data(), loss.data(), lse.data(), 2, 0, 1e-5f), TT_K_EINVAL);
}

// PyTorch's Adam/AdamW update, in double, several steps.
void adam_reference(std::vector<double>& p, const std::vector<float>& g, std::vector<double>& m, std::vector<double>& v,
                    double lr, double b1, double b2, double eps, double wd, int step, bool decoupled) {
  const double bc1 = 1 - std::pow(b1, step), bc2 = 1 - std::pow(b2, step);
  for (size_t i = 0; i < p.size(); ++i) {
    double gi = g[i];
    if (decoupled)
      p[i] *= 1 - lr * wd;
    else
      gi += wd * p[i];
    m[i] = m[i] * b1 + (1 - b1) * gi;
    v[i] = v[i] * b2 + (1 - b2) * gi * gi;
    p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + eps);
  }
}

TEST_P(Paths, AdamAndAdamWOverSeveralTensorsMatchReference) {
  for (int decoupled : {0, 1}) {
    const std::vector<int64_t> sizes = {1, 0, 37, 1024, 5};
    std::vector<std::vector<float>> p, g, m, v;
    std::vector<std::vector<double>> rp, rm, rv;
    for (size_t t = 0; t < sizes.size(); ++t) {
      p.push_back(randn(sizes[t], 10 + t)), g.push_back(randn(sizes[t], 20 + t, 0.1f));
      m.emplace_back(sizes[t], 0.0f), v.emplace_back(sizes[t], 0.0f);
      rp.emplace_back(p.back().begin(), p.back().end()), rm.emplace_back(sizes[t], 0.0), rv.emplace_back(sizes[t], 0.0);
    }
    std::vector<float*> pp, pm, pv;
    std::vector<const float*> pg;
    for (size_t t = 0; t < sizes.size(); ++t) pp.push_back(p[t].data()), pg.push_back(g[t].data()), pm.push_back(m[t].data()), pv.push_back(v[t].data());
    for (int step = 1; step <= 5; ++step) {
      ASSERT_EQ(tt_k_adam_step_f32(pp.data(), pg.data(), pm.data(), pv.data(), sizes.data(), int(sizes.size()), 1e-2f,
                                   0.9f, 0.999f, 1e-8f, 0.1f, step, decoupled), TT_K_OK);
      for (size_t t = 0; t < sizes.size(); ++t)
        adam_reference(rp[t], g[t], rm[t], rv[t], 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f, step, decoupled);
    }
    for (size_t t = 0; t < sizes.size(); ++t) {
      EXPECT_LE(worst(p[t], rp[t], 1e-5, 1e-5), 1.0) << "tensor " << t << " decoupled " << decoupled;
      EXPECT_LE(worst(m[t], rm[t], 1e-6, 1e-5), 1.0);
      EXPECT_LE(worst(v[t], rv[t], 1e-9, 1e-5), 1.0);
    }
  }
  EXPECT_EQ(tt_k_adam_step_f32(nullptr, nullptr, nullptr, nullptr, nullptr, 0, 1, 0.9f, 0.9f, 1, 0, 1, 1), TT_K_OK);
  int64_t one = 1;
  EXPECT_EQ(tt_k_adam_step_f32(nullptr, nullptr, nullptr, nullptr, &one, 1, 1, 0.9f, 0.9f, 1, 0, 1, 1), TT_K_EINVAL);
}

TEST_P(Paths, SgdMomentumNesterovMatchesReference) {
  for (int nesterov : {0, 1}) {
    const int64_t n = 45;
    auto p = randn(n, 30), g = randn(n, 31);
    std::vector<float> buf(n);
    std::vector<double> rp(p.begin(), p.end()), rbuf(n);
    float* pp = p.data();
    const float* pg = g.data();
    float* pb = buf.data();
    for (int step = 0; step < 4; ++step) {
      ASSERT_EQ(tt_k_sgd_step_f32(&pp, &pg, &pb, &n, 1, 0.1f, 0.9f, 0.1f, 0.01f, nesterov, step == 0), TT_K_OK);
      for (int64_t i = 0; i < n; ++i) {
        double d = g[i] + 0.01f * rp[i];
        rbuf[i] = step == 0 ? d : rbuf[i] * 0.9f + (1 - 0.1f) * d;
        d = nesterov ? d + 0.9f * rbuf[i] : rbuf[i];
        rp[i] -= 0.1f * d;
      }
    }
    EXPECT_LE(worst(p, rp, 1e-5, 1e-5), 1.0) << "nesterov " << nesterov;
  }
  int64_t n = 3;
  std::vector<float> p(3), g(3);
  float* pp = p.data();
  const float* pg = g.data();
  EXPECT_EQ(tt_k_sgd_step_f32(&pp, &pg, nullptr, &n, 1, 0.1f, 0.9f, 0, 0, 0, 1), TT_K_EINVAL);  // momentum needs buffers
  EXPECT_EQ(tt_k_sgd_step_f32(&pp, &pg, nullptr, &n, 1, 0.1f, 0.0f, 0, 0, 0, 1), TT_K_OK);
}

INSTANTIATE_TEST_SUITE_P(Kernels, Paths, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? std::string("scalar") : std::string("simd"); });

TEST(Kernels, AbiVersion) { EXPECT_EQ(tt_k_abi_version(), TT_K_ABI_VERSION); }

}  // namespace
