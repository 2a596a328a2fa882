// A CUDA C++ "training loop" with five planted GPU bottlenecks, each switchable off by a flag,
// for recording with `tracetune record` on a GPU machine (see README.md):
//
//   --case h2d      pageable host->device copies every step   (--fixed: pinned + cudaMemcpyAsync)
//   --case tiny     thousands of tiny elementwise kernels     (--fixed: one fused kernel;
//                                                               --graph: the tiny kernels replayed as a CUDA graph)
//   --case gemm     FP32 GEMMs                                (--fixed: TF32 tensor-core GEMMs)
//   --case sync     a device->host read of the loss each step (--fixed: read once at the end)
//   --case nccl     all-reduce of the gradients in buckets of --bucket-mb MiB over all visible
//                   GPUs (one process, ncclCommInitAll); small buckets = many small all-reduces;
//                   then one bucket sent by each rank to itself (what one GPU can show)
//
// Each step is an NVTX range "step N" (what `tracetune analyze` takes as steps), and ends when
// its GPU work does (a loop that reads its loss or a metric), except in the sync case, whose
// point is that read, and the nccl case.
//
// Prints one line: the case, whether fixed, steps and the wall time per step.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(x)                                                                      \
  do {                                                                                \
    auto _e = (x);                                                                    \
    if (_e != 0) {                                                                    \
      std::fprintf(stderr, "%s failed (%d) at %s:%d\n", #x, int(_e), __FILE__, __LINE__); \
      std::exit(1);                                                                   \
    }                                                                                 \
  } while (0)

__global__ void axpy(float* y, const float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

// The same arithmetic as `layers` axpy launches, in one pass.
__global__ void axpy_fused(float* y, const float* x, float a, int n, int layers) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = y[i];
    for (int l = 0; l < layers; ++l) v += a * x[i];
    y[i] = v;
  }
}

__global__ void loss_kernel(const float* y, float* loss, int n) {
  float s = 0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) s += y[i];
  atomicAdd(loss, s);
}

// One training step: an NVTX range "step N"; with `drain`, it ends once its GPU work has.
class Step {
 public:
  Step(int n, cudaStream_t s, bool drain) : stream_(s), drain_(drain) {
    char name[32];
    std::snprintf(name, sizeof name, "step %d", n);
    nvtxRangePushA(name);
  }
  ~Step() {
    if (drain_) CHECK(cudaStreamSynchronize(stream_));
    nvtxRangePop();
  }
  Step(const Step&) = delete;
  Step& operator=(const Step&) = delete;

 private:
  cudaStream_t stream_;
  bool drain_;
};

struct Options {
  std::string which = "h2d";
  bool fixed = false;
  bool graph = false;
  int steps = 50;
  int bucket_mb = 1;
};

void usage(const char* argv0, FILE* out) {
  std::fprintf(out, "usage: %s --case h2d|tiny|gemm|sync|nccl [--fixed] [--graph] [--steps N] [--bucket-mb N]\n", argv0);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(argv[0], stdout);
      std::exit(0);
    }
    if (a == "--case" && i + 1 < argc) o.which = argv[++i];
    else if (a == "--fixed") o.fixed = true;
    else if (a == "--graph") o.graph = true;
    else if (a == "--steps" && i + 1 < argc) o.steps = std::atoi(argv[++i]);
    else if (a == "--bucket-mb" && i + 1 < argc) o.bucket_mb = std::atoi(argv[++i]);
    else {
      usage(argv[0], stderr);
      std::exit(2);
    }
  }
  return o;
}

void run_h2d(const Options& o, cudaStream_t s) {
  const size_t bytes = 64u << 20;  // a 64 MiB batch per step
  float* dev = nullptr;
  CHECK(cudaMalloc(&dev, bytes));
  void* host = nullptr;
  if (o.fixed) CHECK(cudaMallocHost(&host, bytes));  // pinned: DMA straight from it, async
  else host = std::malloc(bytes);                      // pageable: staged, synchronous
  std::memset(host, 1, bytes);
  for (int step = 0; step < o.steps; ++step) {
    const Step in_step(step, s, true);
    if (o.fixed) CHECK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    else CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    axpy<<<(bytes / 4 + 255) / 256, 256, 0, s>>>(dev, dev, 0.5f, int(bytes / 4));
  }
  CHECK(cudaStreamSynchronize(s));
  if (o.fixed) CHECK(cudaFreeHost(host));
  else std::free(host);
  CHECK(cudaFree(dev));
}

void run_tiny(const Options& o, cudaStream_t s) {
  const int n = 4096, layers = 2000;  // thousands of ~µs kernels per step
  float *x = nullptr, *y = nullptr;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), s));
  CHECK(cudaMemsetAsync(y, 0, n * sizeof(float), s));
  cudaGraphExec_t exec = nullptr;
  if (o.graph) {
    cudaGraph_t g;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int l = 0; l < layers; ++l) axpy<<<(n + 255) / 256, 256, 0, s>>>(y, x, 0.1f, n);
    CHECK(cudaStreamEndCapture(s, &g));
    CHECK(cudaGraphInstantiate(&exec, g, 0));
    CHECK(cudaGraphDestroy(g));
  }
  for (int step = 0; step < o.steps; ++step) {
    const Step in_step(step, s, true);
    if (o.fixed) axpy_fused<<<(n + 255) / 256, 256, 0, s>>>(y, x, 0.1f, n, layers);
    else if (o.graph) CHECK(cudaGraphLaunch(exec, s));
    else
      for (int l = 0; l < layers; ++l) axpy<<<(n + 255) / 256, 256, 0, s>>>(y, x, 0.1f, n);
  }
  CHECK(cudaStreamSynchronize(s));
  if (exec) CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaFree(x));
  CHECK(cudaFree(y));
}

void run_gemm(const Options& o, cudaStream_t s) {
  const int n = 4096;
  float *a, *b, *c;
  CHECK(cudaMalloc(&a, size_t(n) * n * sizeof(float)));
  CHECK(cudaMalloc(&b, size_t(n) * n * sizeof(float)));
  CHECK(cudaMalloc(&c, size_t(n) * n * sizeof(float)));
  CHECK(cudaMemsetAsync(a, 0, size_t(n) * n * sizeof(float), s));
  CHECK(cudaMemsetAsync(b, 0, size_t(n) * n * sizeof(float), s));
  cublasHandle_t h;
  CHECK(cublasCreate(&h));
  CHECK(cublasSetStream(h, s));
  // TF32 tensor cores change numerics (10-bit mantissa inputs): opt-in, as tracetune's tuner treats it.
  CHECK(cublasSetMathMode(h, o.fixed ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
  const float one = 1, zero = 0;
  for (int step = 0; step < o.steps; ++step) {
    const Step in_step(step, s, true);
    CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n, &zero, c, n));
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cublasDestroy(h));
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  CHECK(cudaFree(c));
}

void run_sync(const Options& o, cudaStream_t s) {
  const int n = 1 << 20;
  float *y, *loss;
  CHECK(cudaMalloc(&y, n * sizeof(float)));
  CHECK(cudaMalloc(&loss, sizeof(float)));
  CHECK(cudaMemsetAsync(y, 0, n * sizeof(float), s));
  CHECK(cudaMemsetAsync(loss, 0, sizeof(float), s));
  float host_loss = 0;
  for (int step = 0; step < o.steps; ++step) {
    const Step in_step(step, s, false);
    axpy<<<(n + 255) / 256, 256, 0, s>>>(y, y, 1.0f, n);
    loss_kernel<<<1, 256, 0, s>>>(y, loss, n);
    // `.item()` every step: the host waits for the GPU, the GPU then idles for the host.
    if (!o.fixed) CHECK(cudaMemcpy(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost));
  }
  CHECK(cudaMemcpyAsync(&host_loss, loss, sizeof(float), cudaMemcpyDeviceToHost, s));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaFree(y));
  CHECK(cudaFree(loss));
}

// Each rank sends one bucket to itself and receives it, in a group. At one rank (one GPU)
// NCCL 2.28 runs a collective as a local copy (ncclLaunchOneRank) without creating a task, so
// neither the profiler plugin nor the tuner sees it; a send/recv to oneself does become a task
// (p2pTaskAppend), so one GPU still shows the plugin's operation records.
void self_send_recv(const std::vector<ncclComm_t>& comms, const std::vector<float*>& from,
                    const std::vector<float*>& to, size_t count, const std::vector<cudaStream_t>& streams) {
  CHECK(ncclGroupStart());
  for (size_t d = 0; d < comms.size(); ++d) {
    int rank = 0;
    CHECK(ncclCommUserRank(comms[d], &rank));
    CHECK(ncclSend(from[d], count, ncclFloat, rank, comms[d], streams[d]));
    CHECK(ncclRecv(to[d], count, ncclFloat, rank, comms[d], streams[d]));
  }
  CHECK(ncclGroupEnd());
}

void run_nccl(const Options& o) {
  int ndev = 0;
  CHECK(cudaGetDeviceCount(&ndev));
  const size_t grad_bytes = 256u << 20;  // 256 MiB of gradients per step
  const size_t bucket = std::max<size_t>(size_t(o.bucket_mb) << 20, 4096);
  std::vector<ncclComm_t> comms(ndev);
  CHECK(ncclCommInitAll(comms.data(), ndev, nullptr));
  std::vector<float*> grads(ndev), received(ndev);
  std::vector<cudaStream_t> streams(ndev);
  for (int d = 0; d < ndev; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaMalloc(&grads[d], grad_bytes));
    CHECK(cudaMalloc(&received[d], bucket));
    CHECK(cudaStreamCreate(&streams[d]));
  }
  for (int step = 0; step < o.steps; ++step) {
    const Step in_step(step, streams[0], false);
    for (size_t off = 0; off < grad_bytes; off += bucket) {
      const size_t count = std::min(bucket, grad_bytes - off) / sizeof(float);
      CHECK(ncclGroupStart());
      for (int d = 0; d < ndev; ++d)
        CHECK(ncclAllReduce(grads[d] + off / sizeof(float), grads[d] + off / sizeof(float), count, ncclFloat, ncclSum,
                            comms[d], streams[d]));
      CHECK(ncclGroupEnd());
    }
    self_send_recv(comms, grads, received, bucket / sizeof(float), streams);
  }
  for (int d = 0; d < ndev; ++d) {
    CHECK(cudaSetDevice(d));
    CHECK(cudaStreamSynchronize(streams[d]));
    CHECK(cudaFree(grads[d]));
    CHECK(cudaFree(received[d]));
    CHECK(cudaStreamDestroy(streams[d]));
    ncclCommDestroy(comms[d]);
  }
}

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::fprintf(stderr, "training_loop: no CUDA device\n");
    return 2;
  }
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  const auto t0 = std::chrono::steady_clock::now();
  if (o.which == "h2d") run_h2d(o, s);
  else if (o.which == "tiny") run_tiny(o, s);
  else if (o.which == "gemm") run_gemm(o, s);
  else if (o.which == "sync") run_sync(o, s);
  else if (o.which == "nccl") run_nccl(o);
  else {
    std::fprintf(stderr, "unknown --case %s\n", o.which.c_str());
    return 2;
  }
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("case=%s fixed=%d graph=%d steps=%d ms_per_step=%.3f\n", o.which.c_str(), int(o.fixed), int(o.graph),
              o.steps, ms / o.steps);
  CHECK(cudaStreamDestroy(s));
  return 0;
}
