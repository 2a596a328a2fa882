// NVTX push/pop cost: `nvtx_bench N` times N nvtxRangePushA/nvtxRangePop pairs (8 names in turn,
// as a model's layers would) and prints ns per pair. Run bare and with the collector injected
// (LD_PRELOAD + NVTX_INJECTION64_PATH, as `tracetune record` sets them): the difference is what
// recording one NVTX range costs (bench/collector_overhead.py runs both).
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1'000'000;
  static const char* const kNames[] = {"embed", "attn", "mlp", "norm", "attn_bwd", "mlp_bwd", "norm_bwd", "optimizer"};
  nvtxRangePushA("warm-up");  // the first call initialises NVTX (and the injection)
  nvtxRangePop();
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) {
    nvtxRangePushA(kNames[i & 7]);
    nvtxRangePop();
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.1f ns per push/pop pair (%ld pairs)\n", ns / static_cast<double>(n), n);
  return 0;
}
