// Integration driver: loads the NCCL profiler plugin from $NCCL_PROFILER_PLUGIN exactly as
// NCCL does (dlopen RTLD_NOW|RTLD_LOCAL, then ncclProfiler_v5) and plays two communicators'
// worth of operations through it. Run under `tracetune record` it must leave collectives in
// the trace; run bare it must do nothing and still succeed. Prints what it did on stdout.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

#include "nccl_sim.h"

int main() {
  const char* path = std::getenv("NCCL_PROFILER_PLUGIN");
  if (path == nullptr || *path == '\0') {
    std::puts("no NCCL_PROFILER_PLUGIN");
    return 0;
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::printf("dlopen failed: %s\n", dlerror());
    return 3;
  }
  const auto* p = static_cast<const ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5"));
  if (p == nullptr) return 4;
  void* world = nullptr;
  void* pair = nullptr;
  int mask = 0, mask2 = 0;
  p->init(&world, 0x1111222233334444ull, &mask, "world", 1, 2, 0, nullptr);
  p->init(&pair, 0x5555666677778888ull, &mask2, "", 1, 2, 0, nullptr);
  int ops = 0;
  if (mask != 0) {
    const std::uint64_t g = 9'000'000'000'000ull;
    for (int i = 0; i < 5; ++i, ++ops)
      tt::testing::sim_collective(p, world, 0, "AllReduce", static_cast<std::uint64_t>(i), 25u << 20, "ncclFloat16",
                                  "RING", "LL128", -1,
                                  {{0, g + i * 1'000'000ull, g + i * 1'000'000ull + 400'000},
                                   {1, g + i * 1'000'000ull + 50, g + i * 1'000'000ull + 410'000}});
    tt::testing::sim_p2p(p, pair, 0, "Recv", 256, "ncclInt32", 1, {{2, g + 9'000'000, g + 9'001'000}});
    ++ops;
  }
  p->finalize(world);
  p->finalize(pair);
  std::printf("mask=%d ops=%d\n", mask, ops);
  return 0;
}
