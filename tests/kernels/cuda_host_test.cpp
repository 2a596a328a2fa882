// The CUDA kernel pack's host side without a GPU: every bad argument is refused before any
// launch, and a launch with no usable device reports TT_K_ECUDA instead of crashing. Parity
// and speed on a GPU: tests/integration/kernels_parity_test.py, case cuda (skipped without a GPU).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>

#include "tracetune_kernels.h"

TEST(KernelsCudaHost, BadArgumentsAreRefusedBeforeLaunch) {
  float f = 0;
  int64_t t = 0, n = 4, negative = -1;
  float* fp = &f;
  const float* cfp = &f;
  EXPECT_EQ(tt_k_cuda_layernorm_fwd_f32(&f, nullptr, nullptr, &f, &f, &f, 1, 0, 1e-5f, nullptr), TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_layernorm_fwd_f32(nullptr, nullptr, nullptr, &f, &f, &f, 1, 4, 1e-5f, nullptr), TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_layernorm_bwd_f32(&f, &f, nullptr, &f, &f, nullptr, nullptr, nullptr, 1, 4, nullptr), TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_xent_fwd_f32(&f, nullptr, &f, &f, 1, 4, -100, nullptr), TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_xent_bwd_f32(&f, &t, &f, nullptr, 1.0f, &f, -1, 4, -100, nullptr), TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_adam_step_f32(&fp, &cfp, &fp, &fp, &n, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0, 1, nullptr), TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_adam_step_f32(&fp, &cfp, &fp, &fp, &negative, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1, 1, nullptr),
            TT_K_EINVAL);
  EXPECT_EQ(tt_k_cuda_sgd_step_f32(&fp, &cfp, nullptr, &n, 1, 0.1f, 0.9f, 0, 0, 0, 1, nullptr), TT_K_EINVAL);
}

TEST(KernelsCudaHost, NothingToDoIsNotALaunch) {
  EXPECT_EQ(tt_k_cuda_layernorm_fwd_f32(nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, 0, 8, 1e-5f, nullptr), TT_K_OK);
  EXPECT_EQ(tt_k_cuda_adam_step_f32(nullptr, nullptr, nullptr, nullptr, nullptr, 0, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 1, 1,
                                    nullptr), TT_K_OK);
}

TEST(KernelsCudaHost, LaunchWithoutAUsableGpuIsAnError) {
  float f = 0;
  const int rc = tt_k_cuda_layernorm_fwd_f32(&f, nullptr, nullptr, &f, &f, &f, 1, 4, 1e-5f, nullptr);
  // On a GPU machine this host pointer is an invalid device address (the launch itself may
  // succeed and fail later); here, with no device, the launch is refused.
  if (std::getenv("TT_HAVE_GPU") == nullptr) {
    EXPECT_EQ(rc, TT_K_ECUDA);
  }
}
