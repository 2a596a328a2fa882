#include "session.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace tt::cupti {
using collector::GpuStatus;
using collector::RecordType;

namespace {
std::uint64_t clock_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}
}  // namespace

std::uint64_t monotonic_ns() { return clock_ns(CLOCK_MONOTONIC); }
std::uint64_t realtime_ns() { return clock_ns(CLOCK_REALTIME); }

Session& session() {
  static Session s;  // trivially destructible members only: nothing runs at static destruction
  return s;
}

namespace {
void CUPTIAPI ignore_callback(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

// Whether another profiler owns CUPTI: nsys, ncu, cuda-gdb or a tool started before us hold
// its one subscriber slot. The slot is given back at once: the activity API needs no
// subscriber, and torch.profiler (Kineto) subscribes when profiling starts and falls back to
// CPU-only tracing if the slot is taken (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED).
CUptiResult probe_subscriber(const CuptiApi& api) {
  CUpti_SubscriberHandle handle = nullptr;
  const CUptiResult r = api.subscribe(&handle, ignore_callback, nullptr);
  if (r == CUPTI_SUCCESS) api.unsubscribe(handle);
  return r;
}

// Buffers arrive zeroed (BufferPool), so CUPTI need not zero them on the job's thread. A CUPTI
// that refuses the attribute zeroes them itself: slower, still correct.
void declare_zeroed_buffers(const CuptiApi& api, bool zeroed) {
  if (api.set_attribute == nullptr) return;
  std::uint8_t value = zeroed ? 1 : 0;
  std::size_t size = sizeof value;
  (void)api.set_attribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &value);
}

// No records of the query calls (session.h; TRACETUNE_CUDA_API=all keeps them). A CUPTI without
// per-call control (before 12.6), or one that refuses a call id, records those calls as before.
void quiet_query_calls(const CuptiApi& api) {
  if (api.enable_runtime_api == nullptr || api.enable_driver_api == nullptr) return;
  for (CUpti_CallbackId cbid : kQuietRuntimeApis) (void)api.enable_runtime_api(cbid, 0);
  for (CUpti_CallbackId cbid : kQuietDriverApis) (void)api.enable_driver_api(cbid, 0);
}
}  // namespace

bool lean_api_wanted(const char* setting) { return setting == nullptr || std::strcmp(setting, "all") != 0; }

void BufferPool::lock() {
  while (busy_.test_and_set(std::memory_order_acquire)) {
  }
}

std::uint8_t* BufferPool::take(std::size_t size) {
  std::uint8_t* b = nullptr;
  lock();
  if (const std::size_t n = kept_.load(std::memory_order_relaxed); n > 0) {
    b = free_[n - 1];
    kept_.store(n - 1, std::memory_order_relaxed);
  }
  unlock();
  // calloc: fresh pages from mmap are zero without being touched; 16-byte aligned (CUPTI needs 8)
  return b != nullptr ? b : static_cast<std::uint8_t*>(std::calloc(1, size));
}

void BufferPool::give_back(std::uint8_t* buffer, std::size_t used) {
  std::memset(buffer, 0, std::min(used, Session::kBufferSize));
  lock();
  const std::size_t n = kept_.load(std::memory_order_relaxed);
  const bool keep = n < kKeep;
  if (keep) {
    free_[n] = buffer;
    kept_.store(n + 1, std::memory_order_relaxed);
  }
  unlock();
  if (!keep) std::free(buffer);
}

void Session::status(GpuStatus s, int error, const char* message) {
  collector::GpuStatusRecord r{};
  r.ts_ns = static_cast<std::int64_t>(monotonic_ns());
  r.component = collector::GpuComponent::Cupti;
  r.status = s;
  r.error = error;
  r.device_count = -1;
  r.message = message == nullptr ? 0 : sink_->intern(message, std::strlen(message));
  sink_->emit(RecordType::GpuStatus, &r, sizeof r);
}

GpuStatus Session::start(const CuptiApi& api, RecordSink& sink, const SessionOptions& options) {
  api_ = &api;
  sink_ = &sink;
  // The counters describe this start's records: the process's session (a static) started again,
  // as each test of cupti_test does, must not report an earlier start's drops.
  records_.store(0, std::memory_order_relaxed);
  skipped_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  refused_.store(0, std::memory_order_relaxed);
  char line[256];
  auto fail = [&](GpuStatus s, int error, const char* what) {
    std::snprintf(line, sizeof line, "%s", what);
    status(s, error, line);
    if (options.warn) std::fprintf(stderr, "tracetune: %s\n", line);
    return s;
  };
  if (!api.complete()) return fail(GpuStatus::CuptiUnavailable, 0, "CUPTI is missing functions: GPU activity not recorded");

  const CUptiResult sub = probe_subscriber(api);
  if (sub == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return fail(GpuStatus::CuptiInUse, sub,
                "CUPTI is in use by another profiler (nsys, ncu, cuda-gdb, torch.profiler): GPU activity not "
                "recorded, everything else is");
  if (sub != CUPTI_SUCCESS) {
    const char* text = nullptr;
    if (api.get_result_string == nullptr || api.get_result_string(sub, &text) != CUPTI_SUCCESS || text == nullptr)
      text = "unknown";
    char what[200];
    std::snprintf(what, sizeof what, "CUPTI could not be started (error %d, %s): GPU activity not recorded", sub, text);
    return fail(GpuStatus::CuptiError, sub, what);
  }
  // Our clock before any kind is enabled (CUPTI maps GPU times onto it), system thread ids
  // in API records, then the buffers.
  CUptiResult r = api.register_timestamp_callback(&monotonic_ns);
  if (r == CUPTI_SUCCESS) r = api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  if (r == CUPTI_SUCCESS) declare_zeroed_buffers(api, true);
  if (r == CUPTI_SUCCESS) r = api.register_callbacks(&Session::buffer_requested, &Session::buffer_completed);
  options_ = options;
  if (r == CUPTI_SUCCESS && !options.window_closed) r = enable_kinds();
  if (r != CUPTI_SUCCESS) {
    disable_kinds();  // nothing stays on that we enabled
    char what[160];
    std::snprintf(what, sizeof what, "CUPTI activity tracing could not be enabled (error %d): GPU activity not recorded",
                  r);
    return fail(r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? GpuStatus::CuptiInUse : GpuStatus::CuptiError,
                r, what);
  }
  handed_over_.store(false, std::memory_order_release);
  active_.store(true, std::memory_order_release);
  status(GpuStatus::Active, 0, "CUPTI activity tracing active");
  return GpuStatus::Active;
}

CUptiResult Session::enable_kinds() {
  const CuptiApi& api = *api_;
  CUptiResult r = CUPTI_SUCCESS;
  for (std::size_t i = 0; r == CUPTI_SUCCESS && i < std::size(kSessionKinds); ++i) r = api.enable(kSessionKinds[i]);
  if (r == CUPTI_SUCCESS && options_.graph_trace) r = api.enable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  if (r == CUPTI_SUCCESS)
    for (CUpti_ActivityKind kind : kOptionalSessionKinds) (void)api.enable(kind);  // e.g. device memory: nice to have
  if (r == CUPTI_SUCCESS && options_.lean_api) quiet_query_calls(api);  // after RUNTIME / DRIVER, which reset it
  kinds_enabled_.store(r == CUPTI_SUCCESS, std::memory_order_release);
  return r;
}

void Session::disable_kinds() {
  kinds_enabled_.store(false, std::memory_order_release);
  if (api_->disable == nullptr) return;
  for (CUpti_ActivityKind kind : kOptionalSessionKinds) (void)api_->disable(kind);
  if (options_.graph_trace) (void)api_->disable(CUPTI_ACTIVITY_KIND_GRAPH_TRACE);
  for (CUpti_ActivityKind kind : kSessionKinds) (void)api_->disable(kind);
}

void Session::set_window(bool open) {
  std::lock_guard lock(cupti_calls_);
  if (!active() || handed_over() || open == kinds_enabled()) return;
  if (open) {
    if (enable_kinds() != CUPTI_SUCCESS) disable_kinds();  // all or nothing, as at start
    return;
  }
  disable_kinds();  // no new activity is recorded from here
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // the window's records, while it is still open
}

void Session::flush(bool forced) {
  std::lock_guard lock(cupti_calls_);
  flush_locked(forced);
}

void Session::flush_locked(bool forced) {
  if (!active()) return;
  api_->flush_all(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
  if (forced) {
    if (const std::uint64_t n = refused_.exchange(0); n > 0) {
      collector::DroppedRecord d{};
      d.count = n;
      static constexpr char kWhy[] = "cupti: activity buffers refused (256 MiB in flight)";
      d.reason = sink_->intern(kWhy, sizeof kWhy - 1);
      sink_->emit(RecordType::Dropped, &d, sizeof d);
    }
    status(GpuStatus::Flushed, 0, nullptr);
  }
}

void Session::hand_over(std::uint32_t others_set) {
  std::lock_guard lock(cupti_calls_);
  if (!active()) return;
  handed_over_.store(true, std::memory_order_release);  // CUPTI gets no new buffer from us
  flush_locked(true);  // every buffer CUPTI holds of ours comes back, with the records so far
  give_back_settings(others_set);
  active_.store(false, std::memory_order_release);
}

// After the forced flush: a record of ours still in flight would otherwise be converted with
// the other profiler's settings.
void Session::give_back_settings(std::uint32_t others_set) {
  if ((others_set & kOtherSetZeroedBuffers) == 0) declare_zeroed_buffers(*api_, false);  // its buffers are not ours
  if ((others_set & kOtherSetThreadIdType) == 0) (void)api_->set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT);
  if ((others_set & kOtherSetTimestampCallback) == 0) (void)api_->register_timestamp_callback(&realtime_ns);
}

void CUPTIAPI Session::buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  Session& s = session();
  *buffer = nullptr;
  *size = 0;
  *max_records = 0;
  if (s.handed_over()) return;  // the other profiler's callbacks take over; a request in between goes unserved
  if (s.buffers_.fetch_add(1, std::memory_order_acq_rel) >= kMaxBuffers) {
    s.buffers_.fetch_sub(1, std::memory_order_acq_rel);
    s.refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::uint8_t* p = s.pool_.take(kBufferSize);
  if (p == nullptr) {
    s.buffers_.fetch_sub(1, std::memory_order_acq_rel);
    s.refused_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  *buffer = p;
  *size = kBufferSize;
}

void CUPTIAPI Session::buffer_completed(CUcontext ctx, std::uint32_t stream, std::uint8_t* buffer, std::size_t,
                                        std::size_t valid) {
  Session& s = session();
  if (buffer == nullptr) return;
  if (s.api_ != nullptr && s.sink_ != nullptr) {
    std::size_t skipped = 0;
    s.records_.fetch_add(decode_buffer(*s.api_, buffer, valid, *s.sink_, skipped), std::memory_order_relaxed);
    s.skipped_.fetch_add(skipped, std::memory_order_relaxed);
    std::size_t dropped = 0;
    if (s.api_->get_num_dropped_records(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      s.dropped_.fetch_add(dropped, std::memory_order_relaxed);
      collector::DroppedRecord d{};
      d.count = dropped;
      // After the hand-over the drops are the records of the moment between our last buffer and
      // the other profiler's first (seen on an H100 with torch.profiler), not a full buffer.
      static constexpr char kFull[] = "cupti: activity records dropped by CUPTI (buffers full)";
      static constexpr char kHandOver[] =
          "cupti: activity records dropped by CUPTI while it was handed to another profiler (no buffer between ours "
          "and its)";
      d.reason = s.handed_over() ? s.sink_->intern(kHandOver, sizeof kHandOver - 1) : s.sink_->intern(kFull, sizeof kFull - 1);
      s.sink_->emit(RecordType::Dropped, &d, sizeof d);
    }
  }
  s.pool_.give_back(buffer, valid);
  s.buffers_.fetch_sub(1, std::memory_order_acq_rel);
}

}  // namespace tt::cupti
