// libtracetune_cupti.so: the CUDA injection library. `tracetune record` sets
// CUDA_INJECTION64_PATH to it; the CUDA driver loads it while a process initialises CUDA
// (cuInit) and calls InitializeInjection(). Processes that never initialise CUDA (DataLoader
// workers, CPU-only jobs) never load it: the merged trace then says no GPU was seen.
//
// It writes through the preloaded collector (tracetune_emit_gpu_record), so one process keeps
// one record file. Without the collector (CUDA_INJECTION64_PATH set by hand, or recording
// stopped) it does nothing. CUPTI is loaded with dlopen: a missing libcupti is a one-line
// warning and a GpuStatus record, never a failed cuInit.
//
// Lifetime: a flush thread calls cuptiActivityFlushAll(0) every 100 ms, so a SIGKILLed
// process loses at most ~100 ms of GPU records plus what was still running; an atexit handler
// registered here (never a static destructor: CUDA may already be torn down then) stops it
// and forces a final flush. A fork child does not inherit the thread and does not use CUPTI.
// When another profiler (torch.profiler) registers its own buffer callbacks, the collector's
// interposer first calls the hand-over registered here (Session::hand_over): our buffers come
// back, CUPTI's settings are given back, and from then on neither the thread nor the atexit
// handler calls CUPTI.
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "cupti_api.h"
#include "session.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

namespace tt::cupti {

// The libcupti to use, in order: the copy already loaded (PyTorch's wheel, so the process has
// one CUPTI), the loader's search, the job's own wheel copy that `tracetune record` found
// (TRACETUNE_CUPTI_LIB: site-packages/nvidia/cu13/lib on CUDA 13 pip installs, which no search
// path names), and last the toolkit this library was built against (often absent on the GPU
// machine).
void* open_cupti() {
  void* lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
  if (const char* found = std::getenv("TRACETUNE_CUPTI_LIB"); lib == nullptr && found != nullptr && *found == '/')
    lib = dlopen(found, RTLD_NOW | RTLD_LOCAL);
#ifdef TT_CUPTI_FALLBACK_PATH
  if (lib == nullptr) lib = dlopen(TT_CUPTI_FALLBACK_PATH, RTLD_NOW | RTLD_LOCAL);
#endif
  return lib;
}

bool load_cupti(CuptiApi& api, const char*& why) {
  void* lib = open_cupti();
  if (lib == nullptr) {
    why = "libcupti.so.13 not found: GPU activity not recorded (install the CUDA toolkit's CUPTI or set "
          "LD_LIBRARY_PATH)";
    return false;
  }
  auto get = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name)); };
  get(api.subscribe, "cuptiSubscribe");
  get(api.unsubscribe, "cuptiUnsubscribe");
  get(api.set_thread_id_type, "cuptiSetThreadIdType");
  get(api.register_timestamp_callback, "cuptiActivityRegisterTimestampCallback");
  get(api.register_callbacks, "cuptiActivityRegisterCallbacks");
  get(api.enable, "cuptiActivityEnable");
  get(api.disable, "cuptiActivityDisable");
  get(api.get_next_record, "cuptiActivityGetNextRecord");
  get(api.flush_all, "cuptiActivityFlushAll");
  get(api.get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
  get(api.get_callback_name, "cuptiGetCallbackName");
  get(api.get_result_string, "cuptiGetResultString");
  get(api.finalize, "cuptiFinalize");
  get(api.set_attribute, "cuptiActivitySetAttribute");
  get(api.enable_runtime_api, "cuptiActivityEnableRuntimeApi");
  get(api.enable_driver_api, "cuptiActivityEnableDriverApi");
  dlerror();
  if (!api.complete()) {
    why = "libcupti lacks functions this build needs (older than CUDA 13?): GPU activity not recorded";
    return false;
  }
  return true;
}

namespace {

using EmitFn = int (*)(std::uint32_t, const void*, std::uint32_t);
using InternFn = std::uint32_t (*)(const char*, std::size_t);
using RecordingFn = int (*)();

// Records go into the preloaded collector's file.
class CollectorSink final : public RecordSink {
 public:
  bool bind() {
    emit_ = reinterpret_cast<EmitFn>(dlsym(RTLD_DEFAULT, "tracetune_emit_gpu_record"));
    intern_ = reinterpret_cast<InternFn>(dlsym(RTLD_DEFAULT, "tracetune_intern_string"));
    auto recording = reinterpret_cast<RecordingFn>(dlsym(RTLD_DEFAULT, "tracetune_is_recording"));
    dlerror();
    return emit_ != nullptr && intern_ != nullptr && recording != nullptr && recording() != 0;
  }
  void emit(collector::RecordType type, const void* payload, std::uint32_t size) override {
    emit_(static_cast<std::uint32_t>(type), payload, size);
  }
  std::uint32_t intern(const char* s, std::size_t n) override { return intern_(s, n); }

 private:
  EmitFn emit_ = nullptr;
  InternFn intern_ = nullptr;
};

// The collector's recording window (tracetune_window_state: -1 none, 1 open, 0 closed); null
// with a collector that has none.
using WindowStateFn = int (*)();
WindowStateFn g_window_state = nullptr;

// GPU activity only inside the window: this process's own openings and closings arrive through
// the collector's listener at once (a step window opens before its first step's kernels are
// launched, and closes after a forced flush of its records); the others' (the launcher's time
// window, other ranks' holds) at the next periodic flush.
void follow_window(int open) { session().set_window(open != 0); }

void poll_window() {
  if (g_window_state == nullptr) return;
  if (const int state = g_window_state(); state >= 0) session().set_window(state == 1);
}

bool bind_window(SessionOptions& opt) {
  g_window_state = reinterpret_cast<WindowStateFn>(dlsym(RTLD_DEFAULT, "tracetune_window_state"));
  dlerror();
  opt.window_closed = g_window_state != nullptr && g_window_state() == 0;
  return g_window_state != nullptr && g_window_state() >= 0;
}

void register_window_listener() {
  using SetListenerFn = void (*)(void (*)(int));
  auto set = reinterpret_cast<SetListenerFn>(dlsym(RTLD_DEFAULT, "tracetune_set_window_listener"));
  dlerror();
  if (set != nullptr) set(&follow_window);
}

constinit CuptiApi g_api{};
CollectorSink g_sink;
std::atomic<int> g_initialized{0};
std::atomic<bool> g_stop{false};
std::atomic<bool> g_thread_running{false};
std::atomic<bool> g_forked_child{false};
std::uint32_t g_period_ms = 100;

void* flush_loop(void*) {
  const timespec period{0, static_cast<long>(g_period_ms) * 1'000'000};
  while (!g_stop.load(std::memory_order_acquire)) {
    timespec rest = period;
    while (nanosleep(&rest, &rest) != 0 && !g_stop.load(std::memory_order_acquire)) {
    }
    if (g_stop.load(std::memory_order_acquire) || session().handed_over()) break;
    poll_window();
    session().flush(false);
  }
  g_thread_running.store(false, std::memory_order_release);
  return nullptr;
}

void at_exit() {
  if (g_forked_child.load()) return;  // the child of a fork does not own the parent's CUPTI state
  g_stop.store(true, std::memory_order_release);
  // Let a flush in progress finish (bounded: never hold up the job's exit for long).
  for (int i = 0; i < 50 && g_thread_running.load(std::memory_order_acquire); ++i) {
    const timespec ms{0, 2'000'000};
    nanosleep(&ms, nullptr);
  }
  session().flush(true);
}

// Called by the collector's interposer of cuptiActivityRegisterCallbacks before another
// profiler's registration reaches CUPTI (collector/preload/gpu_api.cpp).
void hand_over_to_other_profiler(std::uint32_t others_set) { session().hand_over(others_set); }

void register_hand_over() {
  using SetHandOverFn = void (*)(tt::collector::CuptiHandOverFn);
  auto set = reinterpret_cast<SetHandOverFn>(dlsym(RTLD_DEFAULT, "tracetune_set_cupti_hand_over"));
  dlerror();
  if (set != nullptr) set(&hand_over_to_other_profiler);
}

void in_fork_child() {
  g_forked_child.store(true);
  g_thread_running.store(false);
}

}  // namespace
}  // namespace tt::cupti

// Called by the CUDA driver during cuInit. Returns 1 (success) in every case: a failure to
// trace must never fail CUDA initialisation.
TT_EXPORT int InitializeInjection(void) {
  using namespace tt::cupti;
  if (g_initialized.exchange(1) != 0) return 1;
  if (!g_sink.bind()) return 1;  // not under `tracetune record`: do nothing
  const char* why = nullptr;
  if (!load_cupti(g_api, why)) {
    tt::collector::GpuStatusRecord r{};
    r.ts_ns = static_cast<std::int64_t>(monotonic_ns());
    r.component = tt::collector::GpuComponent::Cupti;
    r.status = tt::collector::GpuStatus::CuptiUnavailable;
    r.device_count = -1;
    r.message = g_sink.intern(why, std::strlen(why));
    g_sink.emit(tt::collector::RecordType::GpuStatus, &r, sizeof r);
    std::fprintf(stderr, "tracetune: %s\n", why);
    return 1;
  }
  SessionOptions opt;
  if (const char* g = std::getenv("TRACETUNE_CUDA_GRAPHS"); g != nullptr && std::strcmp(g, "graph") == 0)
    opt.graph_trace = true;
  opt.lean_api = lean_api_wanted(std::getenv("TRACETUNE_CUDA_API"));
  const bool windowed = bind_window(opt);
  if (session().start(g_api, g_sink, opt) != tt::collector::GpuStatus::Active) return 1;
  g_period_ms = opt.flush_period_ms;
  register_hand_over();
  if (windowed) register_window_listener();
  std::atexit(at_exit);
  pthread_atfork(nullptr, nullptr, in_fork_child);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_t thread;
  g_thread_running.store(true);
  if (pthread_create(&thread, &attr, flush_loop, nullptr) != 0) g_thread_running.store(false);
  pthread_attr_destroy(&attr);
  return 1;
}
