// The C API through which the GPU components write into this process's record file.
//
// Place in the collector: the CUPTI injection library (libtracetune_cupti.so, loaded by the
// CUDA driver from CUDA_INJECTION64_PATH) and the NCCL profiler plugin
// (libtracetune_nccl_profiler.so, loaded by NCCL from NCCL_PROFILER_PLUGIN) are separate
// libraries: they are dlopen'ed RTLD_LOCAL by someone else, and must not drag libcupti or
// NCCL into every process we preload into. They find these two functions with
// dlsym(RTLD_DEFAULT, ...) in the preloaded collector and do nothing when they are absent
// (a job not started by `tracetune record`).
#include <dlfcn.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "writer.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace tt::collector;

// Appends one GPU record (types 100..199, or a Dropped record with a reason) for the calling
// thread. Returns 1 when the process is recording (the record was written or counted as
// dropped), 0 when it is not or the type is refused: callers stay no-ops then.
TT_EXPORT int tracetune_emit_gpu_record(std::uint32_t type, const void* payload, std::uint32_t size) {
  const bool gpu = type >= kFirstGpuRecordType && type <= kLastGpuRecordType;
  if ((!gpu && type != static_cast<std::uint32_t>(RecordType::Dropped)) || payload == nullptr ||
      size > kMaxRecordSize - sizeof(RecordHeader) || !recording())
    return 0;
  ReentryGuard guard;
  emit(static_cast<RecordType>(type), payload, size);
  return 1;
}

// Interns a string for this process's file (String record on first use) and returns its id;
// 0 for empty strings or when not recording.
TT_EXPORT std::uint32_t tracetune_intern_string(const char* s, std::size_t n) {
  if (s == nullptr || n == 0 || !recording()) return 0;
  ReentryGuard guard;
  return intern(s, n);
}

// ---- another profiler taking CUPTI's activity buffers mid-run ----
// CUPTI has one set of activity buffer callbacks per process. torch.profiler (Kineto) registers
// its own when profiling starts, from then on CUPTI hands every activity buffer to it, and when
// it stops it disables the kinds it used. Our injection library calls libcupti through its own
// dlsym'd pointers; everybody else's call resolves here first (we are preloaded), so a call
// arriving here is another profiler's: it is passed through unchanged and noted as a
// GpuStatus TakenOver record, so the trace says from when on its GPU records are missing.
//
// Finding the real function: dlsym(RTLD_NEXT) searches the global scope after us, which holds
// libcupti only when someone loaded it RTLD_GLOBAL. PyTorch's libcupti.so.13 is a dependency of
// torch/_C, which Python loads RTLD_LOCAL: it is in that group's scope, not the global one.
// Asked by soname with RTLD_NOLOAD, the loader hands back the copy already loaded whatever
// scope it is in (it matches the soname of a library loaded by path too), and dlsym on that
// handle searches libcupti itself, never us.
namespace {
using RegisterCallbacksFn = int (*)(void*, void*);
RealFunction<RegisterCallbacksFn> real_register_callbacks("cuptiActivityRegisterCallbacks");
std::atomic<RegisterCallbacksFn> g_loaded_register_callbacks{nullptr};
std::atomic<std::uint32_t> g_takeovers{0};
constexpr int kCuptiErrorNotInitialized = 15;  // CUPTI_ERROR_NOT_INITIALIZED

RegisterCallbacksFn loaded_cupti_register_callbacks() {
  if (RegisterCallbacksFn f = g_loaded_register_callbacks.load(std::memory_order_acquire)) return f;
  for (const char* soname : {"libcupti.so.13", "libcupti.so"}) {
    void* lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) continue;
    auto f = reinterpret_cast<RegisterCallbacksFn>(dlsym(lib, "cuptiActivityRegisterCallbacks"));
    dlclose(lib);  // gives back the reference RTLD_NOLOAD took; the library stays loaded
    if (f != nullptr) {
      g_loaded_register_callbacks.store(f, std::memory_order_release);
      return f;
    }
  }
  dlerror();
  return nullptr;
}

RegisterCallbacksFn real_register() {
  const RegisterCallbacksFn global = real_register_callbacks.get();
  return global != nullptr ? global : loaded_cupti_register_callbacks();
}
}  // namespace

TT_EXPORT int cuptiActivityRegisterCallbacks(void* request, void* complete) {
  const RegisterCallbacksFn real = real_register();
  const int result = real != nullptr ? real(request, complete) : kCuptiErrorNotInitialized;
  if (recording() && g_takeovers.fetch_add(1, std::memory_order_relaxed) == 0) {
    ReentryGuard guard;
    GpuStatusRecord r{};
    r.ts_ns = now_ns();
    r.component = GpuComponent::Cupti;
    r.status = GpuStatus::TakenOver;
    r.error = result;
    r.device_count = -1;
    r.message = intern(
        "another profiler in the job (e.g. torch.profiler) took over CUPTI's activity buffers: GPU activity "
        "from then on is in its output, not in this trace");
    emit(RecordType::GpuStatus, r);
  }
  return result;
}
