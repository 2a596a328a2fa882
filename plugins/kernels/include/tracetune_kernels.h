/* tracetune's kernel pack: a plain C ABI over fused training kernels, loaded into the job by
 * the Python integration with ctypes (plugins/python/tracetune/_kernels.py). It takes raw
 * data pointers and sizes, never a framework type, so it works with any PyTorch build (no
 * C++ ABI to match) and needs nothing of PyTorch to build or test.
 *
 * Every function returns 0 on success or a negative TT_K_E* code; none throws or allocates
 * on the caller's behalf beyond small scratch buffers. All tensors are contiguous fp32
 * (targets int64). The CPU functions run on the calling thread, with AVX2+FMA code chosen
 * at run time when the CPU has it (the library itself is built for any x86-64).
 * The CUDA functions (libtracetune_kernels_cuda.so, same names with _cuda) take device
 * pointers and the caller's cudaStream_t as a void* and enqueue work on that stream. */
#ifndef TRACETUNE_KERNELS_H
#define TRACETUNE_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TT_K_ABI_VERSION 1
#define TT_K_OK 0
#define TT_K_EINVAL (-1)  /* a size, count or pointer is invalid */
#define TT_K_ECUDA (-2)   /* the CUDA runtime refused the launch */

int tt_k_abi_version(void);
/* 1 when the AVX2+FMA paths are in use, 0 for the portable scalar paths. */
int tt_k_cpu_simd(void);
/* Force the scalar paths (1) or let the CPU decide (0); for tests and benchmarks. */
void tt_k_set_force_scalar(int force);

/* Adam (decoupled = 0, L2 weight decay added to the gradient) or AdamW (decoupled = 1) over
 * n tensors at once, PyTorch's update formula (torch.optim.Adam/AdamW, amsgrad=False,
 * maximize=False). `step` is the step number after increment (1 on the first step). */
int tt_k_adam_step_f32(float* const* params, const float* const* grads, float* const* exp_avg,
                       float* const* exp_avg_sq, const int64_t* numels, int n, float lr, float beta1,
                       float beta2, float eps, float weight_decay, int64_t step, int decoupled);

/* SGD with optional momentum/dampening/nesterov/weight decay (torch.optim.SGD). momentum_buf
 * may be NULL when momentum == 0; `first` is 1 on the first step (buffer = gradient). */
int tt_k_sgd_step_f32(float* const* params, const float* const* grads, float* const* momentum_buf,
                      const int64_t* numels, int n, float lr, float momentum, float dampening,
                      float weight_decay, int nesterov, int first);

/* LayerNorm over the last `cols` elements of each of `rows` rows. gamma/beta may be NULL
 * (no affine). mean and rstd (rows each) are saved for the backward pass. */
int tt_k_layernorm_fwd_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                           float* rstd, int64_t rows, int64_t cols, float eps);
/* dgamma/dbeta (cols each) are overwritten; either may be NULL when not needed. */
int tt_k_layernorm_bwd_f32(const float* dy, const float* x, const float* gamma, const float* mean,
                           const float* rstd, float* dx, float* dgamma, float* dbeta, int64_t rows,
                           int64_t cols);

/* Softmax + cross-entropy per row: loss[r] = logsumexp(logits[r]) - logits[r][target[r]], 0
 * where target[r] == ignore_index. lse (rows) is saved for the backward pass. Targets outside
 * [0, cols) other than ignore_index are an error (TT_K_EINVAL). */
int tt_k_xent_fwd_f32(const float* logits, const int64_t* target, float* loss, float* lse, int64_t rows,
                      int64_t cols, int64_t ignore_index);
/* dlogits[r] = (softmax(logits[r]) - onehot(target[r])) * row_grad[r] * scale, zero for ignored
 * rows. row_grad may be NULL (1 for every row): mean reduction passes scale = g / n_valid. */
int tt_k_xent_bwd_f32(const float* logits, const int64_t* target, const float* lse, const float* row_grad,
                      float scale, float* dlogits, int64_t rows, int64_t cols, int64_t ignore_index);

/* CUDA (libtracetune_kernels_cuda.so): the same operations on device pointers, enqueued on
 * `stream` (a cudaStream_t; NULL for the legacy default stream). The pointer arrays of the
 * optimizer steps are host arrays of device pointers. */
int tt_k_cuda_adam_step_f32(float* const* params, const float* const* grads, float* const* exp_avg,
                            float* const* exp_avg_sq, const int64_t* numels, int n, float lr, float beta1,
                            float beta2, float eps, float weight_decay, int64_t step, int decoupled, void* stream);
int tt_k_cuda_sgd_step_f32(float* const* params, const float* const* grads, float* const* momentum_buf,
                           const int64_t* numels, int n, float lr, float momentum, float dampening,
                           float weight_decay, int nesterov, int first, void* stream);
int tt_k_cuda_layernorm_fwd_f32(const float* x, const float* gamma, const float* beta, float* y, float* mean,
                                float* rstd, int64_t rows, int64_t cols, float eps, void* stream);
/* dgamma/dbeta: one column per thread over all rows (no atomics, deterministic). */
int tt_k_cuda_layernorm_bwd_f32(const float* dy, const float* x, const float* gamma, const float* mean,
                                const float* rstd, float* dx, float* dgamma, float* dbeta, int64_t rows,
                                int64_t cols, void* stream);
int tt_k_cuda_xent_fwd_f32(const float* logits, const int64_t* target, float* loss, float* lse, int64_t rows,
                           int64_t cols, int64_t ignore_index, void* stream);
int tt_k_cuda_xent_bwd_f32(const float* logits, const int64_t* target, const float* lse, const float* row_grad,
                           float scale, float* dlogits, int64_t rows, int64_t cols, int64_t ignore_index,
                           void* stream);

#ifdef __cplusplus
}
#endif
#endif
