// One CUPTI activity-tracing session per process: what InitializeInjection starts, the
// periodic flush, the forced flush at exit. Works on a CuptiApi table and a RecordSink, so the
// order of CUPTI calls and the behaviour when CUPTI is unavailable or owned by another
// profiler are unit-tested with a fake table.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>

#include "cupti_api.h"
#include "tracetune/collector/cupti_hand_over.h"

namespace tt::cupti {

struct SessionOptions {
  bool graph_trace = false;  // whole-graph launch records (GRAPH_TRACE) instead of node by node
  bool lean_api = false;     // no records of kQuietRuntimeApis / kQuietDriverApis (lean_api_wanted)
  std::uint32_t flush_period_ms = 100;
  bool warn = true;          // one line on stderr when GPU capture is not possible
  // The job records a window (record --steps/--delay/--start-on/--armed) that is closed now: the
  // session starts with no kind enabled, until set_window(true) (docs/collector.md §9).
  bool window_closed = false;
};

// The activity kinds a session enables, in order. CONCURRENT_KERNEL first (its instrumentation
// is generated at module load: enabling it early avoids the stalls Kineto measured); never
// CUPTI_ACTIVITY_KIND_KERNEL, which serialises kernels.
inline constexpr CUpti_ActivityKind kSessionKinds[] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,   CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
    CUPTI_ACTIVITY_KIND_DEVICE,            CUPTI_ACTIVITY_KIND_OVERHEAD,
};
// Kinds recorded where CUPTI allows them; a refusal leaves the rest of the session running.
// CUDA_EVENT: where each event was recorded, which the stream waits of SYNCHRONIZATION name
// (the analyzer's cross-stream edges); one record per cudaEventRecord.
inline constexpr CUpti_ActivityKind kOptionalSessionKinds[] = {CUPTI_ACTIVITY_KIND_MEMORY2,
                                                               CUPTI_ACTIVITY_KIND_CUDA_EVENT};

// Runtime and driver calls left out of the RUNTIME / DRIVER records unless TRACETUNE_CUDA_API=all.
// Each only queries state: it launches, copies and allocates nothing and never waits for the
// GPU, so no kernel, copy or sync correlates to it and the analyzer reads nothing from it
// (launch correlation, sync calls, GEMM launch shapes). PyTorch makes them all the time: on
// the H100 runs (gpu-check capture, PyTorch 2.11) they were ~90% of the API records, e.g.
// 109 cudaGetDevice and 31 cuDevicePrimaryCtxGetState per step of 8 launches.
inline constexpr CUpti_CallbackId kQuietRuntimeApis[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,           CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,     CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000,  CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
    CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveClusters_v11070,
};
inline constexpr CUpti_CallbackId kQuietDriverApis[] = {
    CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
    CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,             CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
    CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,       CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
    CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,         CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
    CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes,     CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
    CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
};

// Whether to leave the query calls out, from TRACETUNE_CUDA_API: yes unless it is "all". On an
// H100 (gpu-check overhead, 2026-11-26, one round) the MLP of ~1.1 ms steps ran +1.9% recorded
// without them and +24.2% with them (torch.profiler +16.7%).
bool lean_api_wanted(const char* setting);

// CLOCK_MONOTONIC ns: the timestamp callback given to CUPTI (the clock of every record).
std::uint64_t monotonic_ns();
// CLOCK_REALTIME ns: CUPTI's own clock on Linux when no timestamp callback is registered
// (cupti_activity.h, cuptiActivityRegisterTimestampCallback). CUPTI refuses a NULL callback,
// so this is how the default is given back to another profiler (Session::hand_over).
std::uint64_t realtime_ns();

// What another profiler set itself, bits of the mask Session::hand_over takes: shared with the
// collector's interposers (tracetune/collector/cupti_hand_over.h).
using collector::kOtherSetThreadIdType;
using collector::kOtherSetTimestampCallback;
using collector::kOtherSetZeroedBuffers;

// The activity buffers handed to CUPTI. The periodic flush returns partly filled buffers, so
// CUPTI asks for a fresh one about every 100 ms; allocating 4 MiB each time, and CUPTI zeroing
// it on the application thread that needed it (CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER
// is 0 by default), puts a stall on the job's critical path. Instead completed buffers are
// kept (at most kKeep) and handed out again, zeroed by us where CUPTI wrote them, on the
// thread that completes them (CUPTI's worker or our flush thread); the session tells CUPTI
// buffers arrive zeroed. Lock-free enough for CUPTI's callbacks: a spin lock around a few
// pointer moves. Trivially destructible (lives in a static; leaks at exit by design).
class BufferPool {
 public:
  static constexpr std::size_t kKeep = 8;  // 32 MiB kept at most

  // A zeroed buffer of `size` bytes: a kept one, else a new one; nullptr when out of memory.
  std::uint8_t* take(std::size_t size);
  // A buffer CUPTI gave back with `used` bytes written: zeroed there and kept, or freed.
  void give_back(std::uint8_t* buffer, std::size_t used);
  std::size_t kept() const { return kept_.load(std::memory_order_relaxed); }

 private:
  void lock();
  void unlock() { busy_.clear(std::memory_order_release); }

  std::atomic_flag busy_ = ATOMIC_FLAG_INIT;
  std::uint8_t* free_[kKeep] = {};
  std::atomic<std::size_t> kept_{0};
};

class Session {
 public:
  // Starts tracing. Emits one GpuStatus record saying what happened; returns that status.
  // Never throws; on any failure nothing stays enabled that we enabled.
  collector::GpuStatus start(const CuptiApi& api, RecordSink& sink, const SessionOptions& options);

  // Flushes completed buffers (forced: also incomplete ones, at exit) and reports dropped
  // records. Safe to call when not started or after hand_over (then it does nothing).
  void flush(bool forced);

  // Another profiler (torch.profiler's Kineto) is about to register its own buffer callbacks:
  // called by the collector's interposer just before it forwards that registration. CUPTI
  // keeps filling the buffers it already took from us after a re-registration and completes
  // them to the new owner, who drops them as unknown (Kineto: "bufferCompleted called with
  // unknown buffer") -- so its records land in our buffers and reach nobody. Hence, in order:
  // stop handing out buffers; force-flush, so every buffer of ours comes back to us with the
  // records up to now; give back CUPTI's process-wide settings that we changed and the other
  // profiler did not set itself (`others_set`, OthersSetting bits): buffers no longer arrive
  // zeroed, default thread ids, CUPTI's default clock; then never call CUPTI again (no
  // periodic or at-exit flush: those would complete the other profiler's buffers under it).
  void hand_over(std::uint32_t others_set);

  // A recording window opened or closed (record --steps and the like; injection.cpp calls it at
  // the collector's transitions in this process and from the periodic flush for the others). Open:
  // the session's kinds are enabled again. Closed: they are disabled, then a forced flush brings
  // back the records of the window (the collector calls this before the window closes, so they
  // are still written). Nothing when not active, handed over, or already in that state.
  void set_window(bool open);
  bool kinds_enabled() const { return kinds_enabled_.load(std::memory_order_acquire); }

  // Buffer callbacks (static: CUPTI passes no user data; they use session()). Public for the
  // tests.
  static void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  static void CUPTIAPI buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer, std::size_t size,
                                        std::size_t valid);

  bool active() const { return active_.load(std::memory_order_acquire); }
  bool handed_over() const { return handed_over_.load(std::memory_order_acquire); }
  std::uint64_t records() const { return records_.load(std::memory_order_relaxed); }
  std::uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  const BufferPool& pool() const { return pool_; }

  static constexpr std::size_t kBufferSize = 4u << 20;     // Kineto's size; CUPTI recommends 1-10 MB
  static constexpr std::uint32_t kMaxBuffers = 64;          // 256 MiB in flight at most

 private:
  void status(collector::GpuStatus s, int error, const char* message);
  void flush_locked(bool forced);
  void give_back_settings(std::uint32_t others_set);
  CUptiResult enable_kinds();
  void disable_kinds();

  const CuptiApi* api_ = nullptr;
  RecordSink* sink_ = nullptr;
  BufferPool pool_;
  std::atomic<bool> active_{false};
  std::atomic<bool> handed_over_{false};  // buffer requests are refused from then on
  SessionOptions options_;
  std::atomic<bool> kinds_enabled_{false};  // false while a recording window is closed
  std::mutex cupti_calls_;                 // flush and hand_over: never a flush after the hand-over
  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> dropped_{0};
  std::atomic<std::uint32_t> buffers_{0};  // allocated, not yet completed
  std::atomic<std::uint64_t> refused_{0};  // buffer requests refused (cap reached)
};

static_assert(std::is_trivially_destructible_v<std::mutex>, "Session lives in a static that is never destroyed");

// The process's session (CUPTI's callbacks have no user data).
Session& session();

}  // namespace tt::cupti
