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

#include "tracetune/collector/cupti_hand_over.h"
#include "window.h"
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

// The job's recording window (record --steps/--delay/--start-on/--armed, window.h): -1 when the
// job has none (record everything), 1 open, 0 closed. The CUPTI library enables its activity
// kinds only while it is open.
TT_EXPORT int tracetune_window_state() {
  if (g_window_control == nullptr) return -1;
  return window_open_now() ? 1 : 0;
}

// `listener(1)` when this process opens the window, `listener(0)` just before it closes it.
TT_EXPORT void tracetune_set_window_listener(void (*listener)(int open)) { window_set_listener(listener); }

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
// arriving here is another profiler's. It is passed through with the real result and noted as
// a GpuStatus TakenOver record, so the trace says from when on its GPU records are missing.
//
// Before the registration reaches CUPTI, our session hands CUPTI over (cupti/session.h,
// Session::hand_over): CUPTI keeps writing into the buffers it already took from us and
// completes them to whoever is registered then, so without that every record of the other
// profiler would land in our buffers and be dropped by it as unknown (Kineto logs "bufferCompleted
// called with unknown buffer" and its trace has no GPU events). The hand-over also gives back
// the process-wide settings we changed, except those the other profiler set itself before
// registering: the three interposers below note that and pass the call through.
//
// Finding the real functions: dlsym(RTLD_NEXT) searches the global scope after us, which holds
// libcupti only when someone loaded it RTLD_GLOBAL. PyTorch's libcupti.so.13 is a dependency of
// torch/_C, which Python loads RTLD_LOCAL: it is in that group's scope, not the global one.
// Asked by soname with RTLD_NOLOAD, the loader hands back the copy already loaded whatever
// scope it is in (it matches the soname of a library loaded by path too), and dlsym on that
// handle searches libcupti itself, never us.
namespace {
constexpr int kCuptiErrorNotInitialized = 15;  // CUPTI_ERROR_NOT_INITIALIZED
constexpr int kZeroedOutActivityBufferAttribute = 5;  // CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER

std::atomic<CuptiHandOverFn> g_hand_over{nullptr};
std::atomic<std::uint32_t> g_others_set{0};
std::atomic<std::uint32_t> g_takeovers{0};

void* loaded_cupti_function(const char* name) {
  for (const char* soname : {"libcupti.so.13", "libcupti.so"}) {
    void* lib = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (lib == nullptr) continue;
    void* f = dlsym(lib, name);
    dlclose(lib);  // gives back the reference RTLD_NOLOAD took; the library stays loaded
    if (f != nullptr) return f;
  }
  dlerror();
  return nullptr;
}

// A libcupti function as another profiler's call would have reached it without us.
template <typename Fn>
class CuptiFunction {
 public:
  constexpr explicit CuptiFunction(const char* name) : name_(name), global_(name) {}
  Fn get() {
    if (Fn f = global_.get()) return f;
    if (Fn f = loaded_.load(std::memory_order_acquire)) return f;
    Fn f = reinterpret_cast<Fn>(loaded_cupti_function(name_));
    if (f != nullptr) loaded_.store(f, std::memory_order_release);
    return f;
  }

 private:
  const char* name_;
  RealFunction<Fn> global_;
  std::atomic<Fn> loaded_{nullptr};
};

CuptiFunction<int (*)(void*, void*)> real_register_callbacks("cuptiActivityRegisterCallbacks");
CuptiFunction<int (*)(void*)> real_register_timestamp_callback("cuptiActivityRegisterTimestampCallback");
CuptiFunction<int (*)(int)> real_set_thread_id_type("cuptiSetThreadIdType");
CuptiFunction<int (*)(int, std::size_t*, void*)> real_set_attribute("cuptiActivitySetAttribute");

void note_takeover(int result) {
  if (!recording() || g_takeovers.fetch_add(1, std::memory_order_relaxed) != 0) return;
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
}  // namespace

// The injection library's hand-over (Session::hand_over), registered when its session starts.
TT_EXPORT void tracetune_set_cupti_hand_over(CuptiHandOverFn hand_over) {
  g_hand_over.store(hand_over, std::memory_order_release);
}

TT_EXPORT int cuptiActivityRegisterCallbacks(void* request, void* complete) {
  const auto real = real_register_callbacks.get();
  if (real == nullptr) return kCuptiErrorNotInitialized;
  // Once, and only for a registration CUPTI accepts (it refuses null callbacks): our buffers
  // come back before CUPTI is theirs.
  if (request != nullptr && complete != nullptr)
    if (CuptiHandOverFn hand_over = g_hand_over.exchange(nullptr, std::memory_order_acq_rel))
      hand_over(g_others_set.load(std::memory_order_acquire));
  const int result = real(request, complete);
  note_takeover(result);
  return result;
}

TT_EXPORT int cuptiActivityRegisterTimestampCallback(void* timestamp) {
  const auto real = real_register_timestamp_callback.get();
  if (real == nullptr) return kCuptiErrorNotInitialized;
  g_others_set.fetch_or(kOtherSetTimestampCallback, std::memory_order_acq_rel);
  return real(timestamp);
}

TT_EXPORT int cuptiSetThreadIdType(int type) {
  const auto real = real_set_thread_id_type.get();
  if (real == nullptr) return kCuptiErrorNotInitialized;
  g_others_set.fetch_or(kOtherSetThreadIdType, std::memory_order_acq_rel);
  return real(type);
}

TT_EXPORT int cuptiActivitySetAttribute(int attribute, std::size_t* size, void* value) {
  const auto real = real_set_attribute.get();
  if (real == nullptr) return kCuptiErrorNotInitialized;
  if (attribute == kZeroedOutActivityBufferAttribute)
    g_others_set.fetch_or(kOtherSetZeroedBuffers, std::memory_order_acq_rel);
  return real(attribute, size, value);
}
