// `tracetune bench h2d` through the CUDA runtime loaded with dlopen (see gpu_bench.h). Our own
// declarations of the few entry points used: cudaError_t is an int-sized enum, cudaSuccess 0,
// cudaMemcpyKind HostToDevice 1 / DeviceToHost 2 (cuda_runtime_api.h, driver_types.h).
#include "tracetune/tuner/gpu_bench.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

namespace tt::tuner {
namespace {

struct CudaRt {
  void* lib = nullptr;
  int (*GetDeviceCount)(int*) = nullptr;
  int (*SetDevice)(int) = nullptr;
  int (*Malloc)(void**, std::size_t) = nullptr;
  int (*Free)(void*) = nullptr;
  int (*MallocHost)(void**, std::size_t) = nullptr;
  int (*FreeHost)(void*) = nullptr;
  int (*Memcpy)(void*, const void*, std::size_t, int) = nullptr;
  int (*DeviceSynchronize)() = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  std::string error;

  CudaRt() {
    for (const char* name : {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"}) {
      lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (lib != nullptr) break;
    }
    if (lib == nullptr) {
      error = "the CUDA runtime (libcudart.so) is not installed";
      return;
    }
    bool ok = true;
    auto sym = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
      ok &= fn != nullptr;
    };
    sym(GetDeviceCount, "cudaGetDeviceCount");
    sym(SetDevice, "cudaSetDevice");
    sym(Malloc, "cudaMalloc");
    sym(Free, "cudaFree");
    sym(MallocHost, "cudaMallocHost");
    sym(FreeHost, "cudaFreeHost");
    sym(Memcpy, "cudaMemcpy");
    sym(DeviceSynchronize, "cudaDeviceSynchronize");
    sym(GetErrorString, "cudaGetErrorString");
    if (!ok) error = "libcudart.so lacks an entry point tracetune needs";
  }
  ~CudaRt() {
    if (lib != nullptr) ::dlclose(lib);
  }
  std::string why(int rc) const { return GetErrorString != nullptr ? GetErrorString(rc) : fmt::format("error {}", rc); }
};

}  // namespace

std::string gpu_unavailable_reason() {
  CudaRt rt;
  if (!rt.error.empty()) return rt.error;
  int n = 0;
  if (const int rc = rt.GetDeviceCount(&n); rc != 0) return fmt::format("cudaGetDeviceCount: {}", rt.why(rc));
  if (n == 0) return "no CUDA device is visible";
  return {};
}

Result<std::vector<CopyTrial>> run_copy_bench(const CopyBenchOptions& opt) {
  CudaRt rt;
  if (!rt.error.empty()) return make_error(rt.error);
  if (int rc = rt.SetDevice(opt.device); rc != 0) return make_error(fmt::format("cudaSetDevice({}): {}", opt.device, rt.why(rc)));
  const std::uint64_t max_bytes = *std::max_element(opt.sizes.begin(), opt.sizes.end());
  void* dev = nullptr;
  void* pinned = nullptr;
  if (int rc = rt.Malloc(&dev, max_bytes); rc != 0) return make_error(fmt::format("cudaMalloc: {}", rt.why(rc)));
  if (int rc = rt.MallocHost(&pinned, max_bytes); rc != 0) {
    rt.Free(dev);
    return make_error(fmt::format("cudaMallocHost: {}", rt.why(rc)));
  }
  std::vector<char> pageable(max_bytes, 1);
  std::memset(pinned, 1, max_bytes);
  std::vector<CopyTrial> out;
  std::string failure;
  for (const char* dir : {"h2d", "d2h"})
    for (bool pin : {false, true})
      for (std::uint64_t bytes : opt.sizes) {
        void* host = pin ? pinned : static_cast<void*>(pageable.data());
        const bool h2d = std::strcmp(dir, "h2d") == 0;
        std::vector<double> secs;
        for (int r = 0; r <= opt.repeats && failure.empty(); ++r) {  // r == 0: warm-up
          const auto t0 = std::chrono::steady_clock::now();
          const int rc = h2d ? rt.Memcpy(dev, host, bytes, 1) : rt.Memcpy(host, dev, bytes, 2);
          rt.DeviceSynchronize();
          if (rc != 0) failure = fmt::format("cudaMemcpy: {}", rt.why(rc));
          if (r > 0) secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
        if (!failure.empty()) break;
        std::sort(secs.begin(), secs.end());
        out.push_back({dir, pin, bytes, secs.empty() ? 0 : secs[secs.size() / 2]});
      }
  rt.FreeHost(pinned);
  rt.Free(dev);
  if (!failure.empty()) return make_error(failure);
  return out;
}

std::string copy_bench_text(const std::vector<CopyTrial>& trials) {
  std::string s = fmt::format("{:<5} {:>12} {:>14} {:>14} {:>8}\n", "dir", "bytes", "pageable GB/s", "pinned GB/s", "pinned/x");
  for (const auto& t : trials) {
    if (t.pinned) continue;
    for (const auto& p : trials)
      if (p.pinned && p.direction == t.direction && p.bytes == t.bytes)
        s += fmt::format("{:<5} {:>12} {:>14.2f} {:>14.2f} {:>8.2f}\n", t.direction, t.bytes, t.gbs(), p.gbs(),
                         t.gbs() > 0 ? p.gbs() / t.gbs() : 0);
  }
  return s;
}

std::string copy_bench_json(const std::vector<CopyTrial>& trials) {
  std::string s = "{\"bench\": \"h2d\", \"trials\": [";
  for (std::size_t i = 0; i < trials.size(); ++i)
    s += fmt::format("{}{{\"direction\": \"{}\", \"pinned\": {}, \"bytes\": {}, \"seconds\": {:.9f}, \"gbs\": {:.3f}}}",
                     i ? ", " : "", trials[i].direction, trials[i].pinned, trials[i].bytes, trials[i].seconds_median,
                     trials[i].gbs());
  return s + "]}\n";
}

}  // namespace tt::tuner
