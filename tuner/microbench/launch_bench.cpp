// `tracetune bench launch`: the cost of launching N tiny kernels one by one vs replaying them
// as one CUDA graph. The CUDA driver API (libcuda, the driver itself) is loaded with dlopen;
// the kernel is the hand-written PTX of launch_kernel.ptx, JIT-compiled by the driver with
// cuModuleLoadData, so building tracetune needs no nvcc and the binary no CUDA library.
// Our declarations (cuda.h, CUDA 13): CUresult int (CUDA_SUCCESS 0), CUdevice int, handles
// are opaque pointers; cuda.h maps cuDevicePrimaryCtxRelease, cuStreamDestroy, cuEventDestroy,
// cuStreamBeginCapture and cuEventElapsedTime to their _v2 symbols and cuGraphInstantiate to
// cuGraphInstantiateWithFlags; CU_STREAM_NON_BLOCKING 1; CU_STREAM_CAPTURE_MODE_THREAD_LOCAL 1.
#include <chrono>

#include <fmt/format.h>

#include "cuda_dl.h"
#include "tracetune/tuner/gpu_bench.h"

namespace tt::tuner {
namespace {

using H = void*;
struct Driver {
  detail::DlLib lib{"libcuda.so.1", "libcuda.so"};
  int (*Init)(unsigned) = nullptr;
  int (*DeviceGet)(int*, int) = nullptr;
  int (*PrimaryCtxRetain)(H*, int) = nullptr;
  int (*PrimaryCtxRelease)(int) = nullptr;
  int (*CtxSetCurrent)(H) = nullptr;
  int (*ModuleLoadData)(H*, const void*) = nullptr;
  int (*ModuleGetFunction)(H*, H, const char*) = nullptr;
  int (*ModuleUnload)(H) = nullptr;
  int (*StreamCreate)(H*, unsigned) = nullptr;
  int (*StreamDestroy)(H) = nullptr;
  int (*StreamSynchronize)(H) = nullptr;
  int (*EventCreate)(H*, unsigned) = nullptr;
  int (*EventDestroy)(H) = nullptr;
  int (*EventRecord)(H, H) = nullptr;
  int (*EventSynchronize)(H) = nullptr;
  int (*EventElapsedTime)(float*, H, H) = nullptr;
  int (*LaunchKernel)(H, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, H, void**, void**) = nullptr;
  int (*StreamBeginCapture)(H, int) = nullptr;
  int (*StreamEndCapture)(H, H*) = nullptr;
  int (*GraphInstantiate)(H*, H, unsigned long long) = nullptr;
  int (*GraphLaunch)(H, H) = nullptr;
  int (*GraphExecDestroy)(H) = nullptr;
  int (*GraphDestroy)(H) = nullptr;
  int (*GetErrorString)(int, const char**) = nullptr;
  std::string error;

  Driver() {
    lib.sym(Init, "cuInit");
    lib.sym(DeviceGet, "cuDeviceGet");
    lib.sym(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
    lib.sym_first(PrimaryCtxRelease, {"cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"});
    lib.sym(CtxSetCurrent, "cuCtxSetCurrent");
    lib.sym(ModuleLoadData, "cuModuleLoadData");
    lib.sym(ModuleGetFunction, "cuModuleGetFunction");
    lib.sym(ModuleUnload, "cuModuleUnload");
    lib.sym(StreamCreate, "cuStreamCreate");
    lib.sym_first(StreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"});
    lib.sym(StreamSynchronize, "cuStreamSynchronize");
    lib.sym(EventCreate, "cuEventCreate");
    lib.sym_first(EventDestroy, {"cuEventDestroy_v2", "cuEventDestroy"});
    lib.sym(EventRecord, "cuEventRecord");
    lib.sym(EventSynchronize, "cuEventSynchronize");
    lib.sym_first(EventElapsedTime, {"cuEventElapsedTime_v2", "cuEventElapsedTime"});
    lib.sym(LaunchKernel, "cuLaunchKernel");
    lib.sym_first(StreamBeginCapture, {"cuStreamBeginCapture_v2", "cuStreamBeginCapture"});
    lib.sym(StreamEndCapture, "cuStreamEndCapture");
    lib.sym(GraphInstantiate, "cuGraphInstantiateWithFlags");
    lib.sym(GraphLaunch, "cuGraphLaunch");
    lib.sym(GraphExecDestroy, "cuGraphExecDestroy");
    lib.sym(GraphDestroy, "cuGraphDestroy");
    lib.sym(GetErrorString, "cuGetErrorString");
    error = lib.problem("the CUDA driver (libcuda.so.1)");
  }
  std::string why(int rc) const {
    const char* s = nullptr;
    if (GetErrorString != nullptr && GetErrorString(rc, &s) == 0 && s != nullptr) return s;
    return fmt::format("CUDA driver error {}", rc);
  }
};

double us_since(std::chrono::steady_clock::time_point t0, std::chrono::steady_clock::time_point t1) {
  return std::chrono::duration<double, std::micro>(t1 - t0).count();
}

// One repetition's figures per kernel: host time to issue, time until the stream is idle, GPU
// time by events (µs).
struct Times {
  std::vector<double> host, e2e, gpu;
};

// The driver objects of a bench run; `failure` is the first error.
struct LaunchRun {
  Driver& d;
  int n = 0;  // kernels per repetition
  int dev = 0;
  H ctx = nullptr, mod = nullptr, fn = nullptr, stream = nullptr, ev0 = nullptr, ev1 = nullptr, graph = nullptr,
    exec = nullptr;
  std::string failure;

  bool check(int rc, const char* what) {
    if (rc != 0 && failure.empty()) failure = fmt::format("{}: {}", what, d.why(rc));
    return failure.empty();
  }

  void setup(int device) {
    const std::string ptx(launch_kernel_ptx());  // NUL-terminated for cuModuleLoadData
    if (check(d.Init(0), "cuInit") && check(d.DeviceGet(&dev, device), "cuDeviceGet") &&
        check(d.PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") && check(d.CtxSetCurrent(ctx), "cuCtxSetCurrent") &&
        check(d.ModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData (JIT of the PTX kernel)") &&
        check(d.ModuleGetFunction(&fn, mod, "tt_empty"), "cuModuleGetFunction") &&
        check(d.StreamCreate(&stream, 1), "cuStreamCreate") && check(d.EventCreate(&ev0, 0), "cuEventCreate")) {
      check(d.EventCreate(&ev1, 0), "cuEventCreate");
    }
  }

  void launch_all() {
    for (int i = 0; i < n && failure.empty(); ++i)
      check(d.LaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "cuLaunchKernel");
  }

  template <typename Issue>
  void timed(Times& t, Issue&& issue) {
    const auto t0 = std::chrono::steady_clock::now();
    check(d.EventRecord(ev0, stream), "cuEventRecord");
    issue();
    const auto t1 = std::chrono::steady_clock::now();
    check(d.EventRecord(ev1, stream), "cuEventRecord");
    check(d.StreamSynchronize(stream), "cuStreamSynchronize");
    const auto t2 = std::chrono::steady_clock::now();
    float ms = 0;
    check(d.EventElapsedTime(&ms, ev0, ev1), "cuEventElapsedTime");
    t.host.push_back(us_since(t0, t1) / n);
    t.e2e.push_back(us_since(t0, t2) / n);
    t.gpu.push_back(ms * 1e3 / n);
  }

  // The same n launches captured into a CUDA graph, instantiated and uploaded (one warm-up replay).
  void capture_graph() {
    if (!failure.empty() || !check(d.StreamBeginCapture(stream, 1), "cuStreamBeginCapture")) return;
    launch_all();
    check(d.StreamEndCapture(stream, &graph), "cuStreamEndCapture");
    if (failure.empty() && check(d.GraphInstantiate(&exec, graph, 0), "cuGraphInstantiate")) {
      check(d.GraphLaunch(exec, stream), "cuGraphLaunch");  // warm-up: uploads the graph
      check(d.StreamSynchronize(stream), "cuStreamSynchronize");
    }
  }

  void release() {
    if (exec != nullptr) d.GraphExecDestroy(exec);
    if (graph != nullptr) d.GraphDestroy(graph);
    for (H e : {ev0, ev1})
      if (e != nullptr) d.EventDestroy(e);
    if (stream != nullptr) d.StreamDestroy(stream);
    if (mod != nullptr) d.ModuleUnload(mod);
    if (ctx != nullptr) d.PrimaryCtxRelease(dev);
  }
};

}  // namespace

Result<LaunchResult> run_launch_bench(const LaunchBenchOptions& opt) {
  if (opt.kernels < 1 || opt.repeats < 1) return make_error("kernels and repeats must be at least 1");
  Driver d;
  if (!d.error.empty()) return make_error(d.error);
  LaunchRun run{d, opt.kernels};
  run.setup(opt.device);
  Times direct, replay;
  if (run.failure.empty()) {  // warm-up: the first launches load the module onto the GPU
    run.launch_all();
    run.check(d.StreamSynchronize(run.stream), "cuStreamSynchronize");
  }
  for (int r = 0; r < opt.repeats && run.failure.empty(); ++r) run.timed(direct, [&] { run.launch_all(); });
  run.capture_graph();
  for (int r = 0; r < opt.repeats && run.failure.empty(); ++r)
    run.timed(replay, [&] { run.check(d.GraphLaunch(run.exec, run.stream), "cuGraphLaunch"); });
  run.release();
  if (!run.failure.empty()) return make_error(run.failure);
  LaunchResult r;
  r.kernels = run.n;
  r.repeats = opt.repeats;
  r.direct_host_us = median(direct.host);
  r.direct_e2e_us = median(direct.e2e);
  r.direct_gpu_us = median(direct.gpu);
  r.graph_host_us = median(replay.host);
  r.graph_e2e_us = median(replay.e2e);
  r.graph_gpu_us = median(replay.gpu);
  return r;
}

}  // namespace tt::tuner
