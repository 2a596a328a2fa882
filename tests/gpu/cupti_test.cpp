// CUPTI record handling without a GPU: hand-built CUpti_Activity* structs from the real CUDA 13
// headers go through the decoder, the session runs on a fake CUPTI table (call order, the
// other-profiler case, buffers and dropped records), and decoded records are written into a
// .ttr file and merged, so kernels / memcpys / memsets / syncs / api_calls / devices / streams
// are checked as the trace stores them.
#include <time.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "cupti_api.h"
#include "session.h"
#include "tracetune/analyzer/analyze.h"
#include "tracetune/collector/merge.h"
#include "../unit/record_file_writer.h"

using namespace tt::collector;
using tt::collector::testing::RecordFileWriter;
using tt::collector::testing::TempDir;
namespace cu = tt::cupti;

namespace {

// A sink that writes into a test record file (thread `tid` = the CUPTI buffer thread).
class FileSink final : public cu::RecordSink {
 public:
  explicit FileSink(RecordFileWriter& w) : w_(w) {}
  void emit(RecordType type, const void* p, std::uint32_t size) override {
    types.push_back(type);
    w_.add_raw(static_cast<std::uint16_t>(type), p, size, kCuptiThread);
  }
  std::uint32_t intern(const char* s, std::size_t n) override { return w_.str(std::string_view(s, n), kCuptiThread); }
  std::vector<RecordType> types;
  static constexpr std::uint32_t kCuptiThread = 4999;

 private:
  RecordFileWriter& w_;
};

cu::SessionOptions quiet_options() {
  cu::SessionOptions o;
  o.warn = false;
  return o;
}

// ---- a fake CUPTI ----
struct Fake {
  std::vector<std::string> calls;
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  CUptiResult enable_result = CUPTI_SUCCESS;
  int refused_kind = -1;  // a kind enable() refuses (CUPTI_ERROR_NOT_COMPATIBLE), -1 none
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::vector<int> enabled;
  std::vector<CUpti_Activity*> buffer_records;  // what get_next_record walks
  std::size_t dropped = 0;
  std::vector<std::uint32_t> flushes;
  std::size_t calls_before_flush = 0;  // calls.size() at the latest flush
  int subscribers = 0;                                  // CUPTI allows one
  std::vector<std::pair<int, int>> attributes;          // (attribute, first byte of the value) set
  std::vector<std::pair<int, int>> quiet_runtime, quiet_driver;  // (cbid, enable) per-call settings
};
Fake g_fake;

cu::CuptiApi fake_api() {
  cu::CuptiApi a;
  a.subscribe = [](CUpti_SubscriberHandle* h, CUpti_CallbackFunc, void*) {
    g_fake.calls.push_back("subscribe");
    if (g_fake.subscribe_result != CUPTI_SUCCESS) return g_fake.subscribe_result;
    if (g_fake.subscribers > 0) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    ++g_fake.subscribers;
    *h = reinterpret_cast<CUpti_SubscriberHandle>(0x10);
    return CUPTI_SUCCESS;
  };
  a.unsubscribe = [](CUpti_SubscriberHandle) {
    g_fake.calls.push_back("unsubscribe");
    --g_fake.subscribers;
    return CUPTI_SUCCESS;
  };
  a.set_attribute = [](CUpti_ActivityAttribute attr, size_t* size, void* value) {
    g_fake.calls.push_back("attribute " + std::to_string(static_cast<int>(attr)));
    g_fake.attributes.emplace_back(static_cast<int>(attr), *size > 0 ? *static_cast<std::uint8_t*>(value) : -1);
    return CUPTI_SUCCESS;
  };
  a.disable = [](CUpti_ActivityKind k) {
    g_fake.calls.push_back("disable " + std::to_string(static_cast<int>(k)));
    return CUPTI_SUCCESS;
  };
  a.set_thread_id_type = [](CUpti_ActivityThreadIdType t) {
    g_fake.calls.push_back("thread_id_type " + std::to_string(static_cast<int>(t)));
    return CUPTI_SUCCESS;
  };
  a.register_timestamp_callback = [](CUpti_TimestampCallbackFunc f) {
    g_fake.calls.push_back("timestamp");
    g_fake.timestamp = f;
    return CUPTI_SUCCESS;
  };
  a.register_callbacks = [](CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) {
    g_fake.calls.push_back("callbacks");
    return CUPTI_SUCCESS;
  };
  a.enable = [](CUpti_ActivityKind k) {
    g_fake.calls.push_back("enable " + std::to_string(static_cast<int>(k)));
    if (static_cast<int>(k) == g_fake.refused_kind) return CUPTI_ERROR_NOT_COMPATIBLE;
    g_fake.enabled.push_back(static_cast<int>(k));
    return g_fake.enable_result;
  };
  a.enable_runtime_api = [](CUpti_CallbackId cbid, uint8_t on) {
    g_fake.calls.push_back("runtime_api " + std::to_string(cbid));
    g_fake.quiet_runtime.emplace_back(static_cast<int>(cbid), on);
    return CUPTI_SUCCESS;
  };
  a.enable_driver_api = [](CUpti_CallbackId cbid, uint8_t on) {
    g_fake.calls.push_back("driver_api " + std::to_string(cbid));
    g_fake.quiet_driver.emplace_back(static_cast<int>(cbid), on);
    return CUPTI_SUCCESS;
  };
  a.get_next_record = [](uint8_t*, size_t, CUpti_Activity** rec) {
    // Walks g_fake.buffer_records: *rec is the previous record (nullptr at first).
    auto& v = g_fake.buffer_records;
    auto it = *rec == nullptr ? v.begin() : std::find(v.begin(), v.end(), *rec) + 1;
    if (it >= v.end()) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = *it;
    return CUPTI_SUCCESS;
  };
  a.flush_all = [](uint32_t flag) {
    g_fake.flushes.push_back(flag);
    g_fake.calls_before_flush = g_fake.calls.size();
    return CUPTI_SUCCESS;
  };
  a.get_num_dropped_records = [](CUcontext, uint32_t, size_t* n) {
    *n = g_fake.dropped;
    return CUPTI_SUCCESS;
  };
  a.get_callback_name = [](CUpti_CallbackDomain d, uint32_t cbid, const char** name) {
    if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000)
      *name = "cudaLaunchKernel";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020)
      *name = "cudaMemcpyAsync";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020)
      *name = "cudaStreamSynchronize";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020)
      *name = "cudaEventRecord";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020)
      *name = "cudaStreamWaitEvent";
    else if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020)
      *name = "cudaDeviceSynchronize";
    else if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
      *name = "cuLaunchKernel";
    else
      return CUPTI_ERROR_INVALID_PARAMETER;
    return CUPTI_SUCCESS;
  };
  return a;
}

// The process's session (cu::session()) on a fresh fake CUPTI, writing into a record file.
struct FakeCuptiSession {
  explicit FakeCuptiSession(std::int64_t pid = 77) : w(pid) { g_fake = Fake{}; }
  GpuStatus start() { return s.start(api, sink, quiet_options()); }
  RecordFileWriter w;
  FileSink sink{w};
  const cu::CuptiApi api = fake_api();
  cu::Session& s = cu::session();
};

// ---- hand-built activity records (as CUPTI fills them, CUDA 13.0 structs) ----
constexpr std::uint64_t T0 = 50'000'000'000;  // CLOCK_MONOTONIC ns (our timestamp callback)

CUpti_ActivityKernel10 kernel(std::uint64_t start, std::uint64_t end, std::uint32_t stream, std::uint32_t corr,
                              const char* name) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = stream;
  k.gridX = 128;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 4096;
  k.correlationId = corr;
  k.name = name;
  k.graphId = 0;
  return k;
}

CUpti_ActivityAPI api_record(CUpti_ActivityKind kind, std::uint32_t cbid, std::uint64_t start, std::uint64_t end,
                             std::uint32_t tid, std::uint32_t corr) {
  CUpti_ActivityAPI a{};
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 77;
  a.threadId = tid;
  a.correlationId = corr;
  a.returnValue = 0;
  return a;
}

tt::trace::Trace merge(RecordFileWriter& w, const TempDir& dir, MergeReport& report) {
  w.exit(static_cast<std::int64_t>(T0) + 1'000'000'000, 0);
  w.write(dir.path() / "node-a" / "proc-77-1.ttr");
  const std::filesystem::path dirs[] = {dir.path()};
  auto t = merge_raw(dirs, {}, report);
  EXPECT_TRUE(t) << (t ? "" : t.error());
  return t ? std::move(t.value()) : tt::trace::Trace{};
}

std::string str(const tt::trace::Trace& t, tt::trace::StringId id) { return std::string(t.strings.get(id)); }

}  // namespace

TEST(CuptiSession, ClockBeforeKindsConcurrentKernelsNeverSerialised) {
  g_fake = Fake{};
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::Session s;
  const cu::CuptiApi api = fake_api();
  EXPECT_EQ(s.start(api, sink, {}), GpuStatus::Active);
  EXPECT_TRUE(s.active());
  const auto& c = g_fake.calls;
  const auto ts = std::find(c.begin(), c.end(), "timestamp");
  const auto first_enable = std::find_if(c.begin(), c.end(), [](const std::string& x) { return x.starts_with("enable"); });
  ASSERT_NE(ts, c.end());
  ASSERT_NE(first_enable, c.end());
  EXPECT_LT(ts, first_enable) << "the timestamp callback must be registered before any kind is enabled";
  EXPECT_NE(std::find(c.begin(), c.end(), "thread_id_type 1"), c.end()) << "system thread ids";
  EXPECT_EQ(*first_enable, "enable " + std::to_string(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  const auto& e = g_fake.enabled;
  EXPECT_EQ(std::count(e.begin(), e.end(), static_cast<int>(CUPTI_ACTIVITY_KIND_KERNEL)), 0);
  for (auto k : {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                 CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_DEVICE,
                 CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_CUDA_EVENT})
    EXPECT_EQ(std::count(e.begin(), e.end(), static_cast<int>(k)), 1) << k;
  EXPECT_EQ(std::count(e.begin(), e.end(), static_cast<int>(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)), 0);
  // The clock given to CUPTI is CLOCK_MONOTONIC in ns.
  ASSERT_NE(g_fake.timestamp, nullptr);
  timespec a{}, b{};
  clock_gettime(CLOCK_MONOTONIC, &a);
  const std::uint64_t v = g_fake.timestamp();
  clock_gettime(CLOCK_MONOTONIC, &b);
  EXPECT_GE(v, static_cast<std::uint64_t>(a.tv_sec) * 1'000'000'000ull + a.tv_nsec);
  EXPECT_LE(v, static_cast<std::uint64_t>(b.tv_sec) * 1'000'000'000ull + b.tv_nsec);
  ASSERT_FALSE(sink.types.empty());
  EXPECT_EQ(sink.types.back(), RecordType::GpuStatus);

  cu::SessionOptions graphs;
  graphs.graph_trace = true;
  g_fake = Fake{};
  cu::Session s2;
  s2.start(api, sink, graphs);
  EXPECT_EQ(std::count(g_fake.enabled.begin(), g_fake.enabled.end(), static_cast<int>(CUPTI_ACTIVITY_KIND_GRAPH_TRACE)), 1);

  // A CUPTI that refuses device-memory or CUDA event records still records everything else.
  for (auto refused : {CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_CUDA_EVENT}) {
    g_fake = Fake{};
    g_fake.refused_kind = refused;
    cu::Session s3;
    EXPECT_EQ(s3.start(api, sink, quiet_options()), GpuStatus::Active) << refused;
    EXPECT_TRUE(s3.active());
    const auto& on = g_fake.enabled;
    EXPECT_EQ(std::count(on.begin(), on.end(), static_cast<int>(refused)), 0);
    EXPECT_EQ(std::count(on.begin(), on.end(), static_cast<int>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)), 1);
  }
}

// TRACETUNE_CUDA_API=lean: the query calls get no records, set after RUNTIME and DRIVER are
// enabled (enabling a kind resets CUPTI's per-call settings); launches and syncs keep theirs.
// By default every call is recorded.
TEST(CuptiSession, LeanApiLeavesOutQueryCallsOnlyAndOnlyWhenAsked) {
  RecordFileWriter w(78);
  FileSink sink(w);
  const cu::CuptiApi api = fake_api();
  g_fake = Fake{};
  cu::Session full;
  EXPECT_EQ(full.start(api, sink, quiet_options()), GpuStatus::Active);
  EXPECT_TRUE(g_fake.quiet_runtime.empty());
  EXPECT_TRUE(g_fake.quiet_driver.empty());

  g_fake = Fake{};
  cu::SessionOptions lean = quiet_options();
  lean.lean_api = true;
  cu::Session s;
  EXPECT_EQ(s.start(api, sink, lean), GpuStatus::Active);
  auto off = [](const std::vector<std::pair<int, int>>& v, int cbid) {
    return std::count(v.begin(), v.end(), std::pair<int, int>{cbid, 0}) == 1;
  };
  EXPECT_TRUE(off(g_fake.quiet_runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020));
  EXPECT_TRUE(off(g_fake.quiet_runtime, CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020));
  EXPECT_TRUE(off(g_fake.quiet_driver, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState));
  EXPECT_TRUE(off(g_fake.quiet_driver, CUPTI_DRIVER_TRACE_CBID_cuKernelGetName));
  EXPECT_EQ(g_fake.quiet_runtime.size(), std::size(cu::kQuietRuntimeApis));
  EXPECT_EQ(g_fake.quiet_driver.size(), std::size(cu::kQuietDriverApis));
  for (int launch_or_sync : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                             CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020})
    EXPECT_FALSE(off(g_fake.quiet_runtime, launch_or_sync)) << launch_or_sync;
  for (int launch : {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx})
    EXPECT_FALSE(off(g_fake.quiet_driver, launch)) << launch;
  const auto& c = g_fake.calls;
  const auto last_kind = std::find(c.rbegin(), c.rend(), "enable " + std::to_string(CUPTI_ACTIVITY_KIND_DRIVER));
  const auto first_quiet = std::find_if(c.begin(), c.end(), [](const std::string& x) {
    return x.starts_with("runtime_api") || x.starts_with("driver_api");
  });
  ASSERT_NE(last_kind, c.rend());
  ASSERT_NE(first_quiet, c.end());
  EXPECT_LT(last_kind.base() - 1, first_quiet) << "per-call settings after the kinds that reset them";

  // A CUPTI without per-call control (before 12.6): every call recorded, the session runs.
  g_fake = Fake{};
  cu::CuptiApi old = fake_api();
  old.enable_runtime_api = nullptr;
  old.enable_driver_api = nullptr;
  cu::Session s2;
  EXPECT_EQ(s2.start(old, sink, lean), GpuStatus::Active);
  EXPECT_TRUE(g_fake.quiet_runtime.empty());
}

TEST(CuptiSession, AnotherProfilerOwnsCuptiNothingEnabledOneWarningAndANote) {
  g_fake = Fake{};
  g_fake.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  TempDir dir;
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::Session s;
  const cu::CuptiApi api = fake_api();
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(s.start(api, sink, {}), GpuStatus::CuptiInUse);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(s.active());
  EXPECT_TRUE(g_fake.enabled.empty());
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("in use by another profiler"), std::string::npos) << err;
  s.flush(true);  // harmless when not active
  EXPECT_TRUE(g_fake.flushes.empty());

  MergeReport report;
  auto t = merge(w, dir, report);
  EXPECT_EQ(report.cuda_processes, 1u);
  EXPECT_EQ(report.cupti_active, 0u);
  ASSERT_EQ(report.gpu_notes.size(), 1u);
  EXPECT_NE(report.gpu_notes[0].find("in use by another profiler"), std::string::npos);
  EXPECT_NE(report.gpu_line(true).find("no GPU activity seen"), std::string::npos) << report.gpu_line(true);
  bool noted = false;
  for (const auto& d : t.diagnostics) noted |= d.reason.find("in use by another profiler") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(CuptiSession, EnableFailureLeavesNoKindOnAndNoSubscriber) {
  g_fake = Fake{};
  g_fake.enable_result = CUPTI_ERROR_NOT_INITIALIZED;
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::Session s;
  const cu::CuptiApi api = fake_api();
  cu::SessionOptions quiet;
  quiet.warn = false;
  EXPECT_EQ(s.start(api, sink, quiet), GpuStatus::CuptiError);
  EXPECT_EQ(g_fake.calls.back(), "disable " + std::to_string(std::end(cu::kSessionKinds)[-1]));
  EXPECT_EQ(g_fake.subscribers, 0);
  EXPECT_FALSE(s.active());
}

// record --steps and the other windows: CUPTI activity only while the window is open. A session
// started while it is closed enables no kind; opening enables the same kinds as a start; closing
// disables them and then forces a flush (the window's records come back while the collector
// still holds the window open); repeated states and a handed-over session call nothing.
TEST(CuptiSession, ActivityKindsEnabledOnlyInsideTheWindow) {
  g_fake = Fake{};
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::Session s;
  const cu::CuptiApi api = fake_api();
  cu::SessionOptions closed = quiet_options();
  closed.window_closed = true;
  ASSERT_EQ(s.start(api, sink, closed), GpuStatus::Active);
  EXPECT_TRUE(g_fake.enabled.empty()) << "no kind while the window is closed";
  EXPECT_FALSE(s.kinds_enabled());
  ASSERT_FALSE(sink.types.empty());
  EXPECT_EQ(sink.types.back(), RecordType::GpuStatus);

  s.set_window(true);
  EXPECT_TRUE(s.kinds_enabled());
  ASSERT_FALSE(g_fake.enabled.empty());
  EXPECT_EQ(g_fake.enabled.front(), static_cast<int>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  for (auto k : cu::kSessionKinds) EXPECT_EQ(std::count(g_fake.enabled.begin(), g_fake.enabled.end(), static_cast<int>(k)), 1) << k;
  g_fake.calls.clear();
  s.set_window(true);
  EXPECT_TRUE(g_fake.calls.empty()) << "already open";

  s.set_window(false);
  EXPECT_FALSE(s.kinds_enabled());
  const auto& c = g_fake.calls;
  for (auto k : cu::kSessionKinds)
    EXPECT_NE(std::find(c.begin(), c.end(), "disable " + std::to_string(static_cast<int>(k))), c.end()) << k;
  ASSERT_FALSE(g_fake.flushes.empty());
  EXPECT_EQ(g_fake.flushes.back(), CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  EXPECT_EQ(g_fake.calls_before_flush, c.size()) << "flushed after the last disable";
  g_fake.calls.clear();
  s.set_window(false);
  EXPECT_TRUE(g_fake.calls.empty()) << "already closed";

  s.set_window(true);
  s.hand_over(0);
  g_fake.calls.clear();
  s.set_window(false);
  s.set_window(true);
  EXPECT_TRUE(g_fake.calls.empty()) << "CUPTI belongs to the other profiler now";
}

// Without a window the kinds are on from the start, as before.
TEST(CuptiSession, NoWindowKindsOnFromTheStart) {
  g_fake = Fake{};
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::Session s;
  const cu::CuptiApi api = fake_api();
  ASSERT_EQ(s.start(api, sink, quiet_options()), GpuStatus::Active);
  EXPECT_TRUE(s.kinds_enabled());
  EXPECT_EQ(std::count(g_fake.enabled.begin(), g_fake.enabled.end(), static_cast<int>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)), 1);
}

// torch.profiler (Kineto, PyTorch 2.11) calls cuptiSubscribe when profiling starts and falls
// back to CPU-only tracing if that fails: the session must not hold CUPTI's one subscriber slot
// once it is tracing (the activity API needs none).
TEST(CuptiSession, GivesTheSubscriberSlotBackForTorchProfiler) {
  g_fake = Fake{};
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::Session s;
  const cu::CuptiApi api = fake_api();
  ASSERT_EQ(s.start(api, sink, quiet_options()), GpuStatus::Active);
  EXPECT_EQ(g_fake.subscribers, 0) << "the probe's subscription is still held";
  CUpti_SubscriberHandle kineto = nullptr;
  EXPECT_EQ(api.subscribe(&kineto, nullptr, nullptr), CUPTI_SUCCESS) << "a later client could not subscribe";
  // ... and the probe still sees a profiler that holds the slot when we start.
  cu::Session late;
  EXPECT_EQ(late.start(api, sink, quiet_options()), GpuStatus::CuptiInUse);
  EXPECT_EQ(g_fake.subscribers, 1);
}

TEST(CuptiSession, IncompleteApiIsUnavailable) {
  g_fake = Fake{};
  RecordFileWriter w(77);
  FileSink sink(w);
  cu::CuptiApi api = fake_api();
  api.enable = nullptr;
  cu::Session s;
  cu::SessionOptions quiet;
  quiet.warn = false;
  EXPECT_EQ(s.start(api, sink, quiet), GpuStatus::CuptiUnavailable);
  EXPECT_TRUE(g_fake.calls.empty());
}

TEST(CuptiDecode, ActivityRecordsBecomeTraceTables) {
  g_fake = Fake{};
  TempDir dir;
  RecordFileWriter w(77);
  w.process_info("python train.py", "/usr/bin/python3");
  FileSink sink(w);
  const cu::CuptiApi api = fake_api();
  const std::uint32_t main_tid = 77, worker_tid = 81;

  CUpti_ActivityDevice5 dev{};
  dev.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  dev.id = 0;
  dev.numMultiprocessors = 132;
  dev.globalMemorySize = 80ull << 30;
  dev.computeCapabilityMajor = 9;
  dev.computeCapabilityMinor = 0;
  dev.name = "NVIDIA H100 80GB HBM3";
  for (int i = 0; i < 16; ++i) dev.uuid.bytes[i] = static_cast<char>(0x10 + i);

  // cudaMemcpyAsync from pageable memory (corr 5), a kernel launched through the runtime
  // (corr 6) on stream 7, a memset, a stream sync on the worker thread (corr 9).
  auto launch = api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, T0 + 100,
                           T0 + 900, main_tid, 6);
  auto drv = api_record(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, T0 + 300, T0 + 800,
                        main_tid, 6);
  auto copy_api = api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, T0 + 10,
                             T0 + 90, main_tid, 5);
  auto sync_api = api_record(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
                             T0 + 1000, T0 + 9000, worker_tid, 9);
  auto k = kernel(T0 + 2000, T0 + 7000, 7, 6, "_Z6fusedAddPf");
  CUpti_ActivityMemcpy6 mc{};
  mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  mc.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  mc.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mc.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  mc.bytes = 1 << 20;
  mc.start = T0 + 50;
  mc.end = T0 + 1500;
  mc.streamId = 7;
  mc.correlationId = 5;
  CUpti_ActivityMemset4 ms{};
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.value = 0;
  ms.bytes = 4096;
  ms.start = T0 + 7100;
  ms.end = T0 + 7200;
  ms.streamId = 7;
  ms.correlationId = 8;
  ms.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  CUpti_ActivitySynchronization2 sy{};
  sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.start = T0 + 1100;
  sy.end = T0 + 8900;
  sy.correlationId = 9;
  sy.streamId = 7;
  sy.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  CUpti_ActivityOverhead3 ov{};
  ov.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  ov.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION;
  ov.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  ov.objectId.pt.threadId = main_tid;
  ov.start = T0 + 1;
  ov.end = T0 + 5;
  CUpti_ActivityGraphTrace2 gr{};
  gr.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  gr.start = T0 + 9100;
  gr.end = T0 + 9900;
  gr.streamId = 7;
  gr.graphId = 12;
  gr.correlationId = 10;
  CUpti_ActivityMarker2 other{};  // a kind we do not record
  other.kind = CUPTI_ACTIVITY_KIND_MARKER;

  g_fake.buffer_records = {
      reinterpret_cast<CUpti_Activity*>(&dev),      reinterpret_cast<CUpti_Activity*>(&copy_api),
      reinterpret_cast<CUpti_Activity*>(&launch),   reinterpret_cast<CUpti_Activity*>(&drv),
      reinterpret_cast<CUpti_Activity*>(&sync_api), reinterpret_cast<CUpti_Activity*>(&k),
      reinterpret_cast<CUpti_Activity*>(&mc),       reinterpret_cast<CUpti_Activity*>(&ms),
      reinterpret_cast<CUpti_Activity*>(&sy),       reinterpret_cast<CUpti_Activity*>(&ov),
      reinterpret_cast<CUpti_Activity*>(&gr),       reinterpret_cast<CUpti_Activity*>(&other)};
  g_fake.dropped = 3;

  // Through the session's buffer callbacks, as CUPTI calls them.
  cu::Session& s = cu::session();
  cu::SessionOptions quiet;
  quiet.warn = false;
  ASSERT_EQ(s.start(api, sink, quiet), GpuStatus::Active);
  std::uint8_t* buf = nullptr;
  std::size_t size = 0, max_records = 1;
  cu::Session::buffer_requested(&buf, &size, &max_records);
  ASSERT_NE(buf, nullptr);
  EXPECT_EQ(size, cu::Session::kBufferSize);
  EXPECT_EQ(max_records, 0u);
  cu::Session::buffer_completed(nullptr, 0, buf, size, 4096);
  EXPECT_EQ(s.records(), 11u);
  EXPECT_EQ(s.dropped(), 3u);
  s.flush(false);
  s.flush(true);
  EXPECT_EQ(g_fake.flushes, (std::vector<std::uint32_t>{0, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}));

  MergeReport report;
  const auto t = merge(w, dir, report);
  EXPECT_EQ(report.cupti_active, 1u);
  EXPECT_EQ(report.gpu_devices, 1u);
  EXPECT_EQ(report.gpu_activities, 3u);
  EXPECT_NE(report.gpu_line(true).find("1 GPU device record(s), 3 kernels/copies/memsets"), std::string::npos)
      << report.gpu_line(true);
  const auto offset = 0;  // one host: trace clock = CLOCK_MONOTONIC

  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.devices[0].uuid, "GPU-10111213-1415-1617-1819-1a1b1c1d1e1f");
  EXPECT_EQ(t.devices[0].sm_count, 132);
  EXPECT_EQ(t.devices[0].compute_major, 9);
  EXPECT_EQ(t.devices[0].total_memory, static_cast<std::int64_t>(80ull << 30));
  ASSERT_EQ(t.streams.size(), 1u);
  EXPECT_EQ(t.streams[0].stream, 7);
  EXPECT_EQ(t.streams[0].device, 0u);

  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(str(t, t.kernels.name[0]), "_Z6fusedAddPf");
  EXPECT_EQ(t.kernels.start[0], static_cast<std::int64_t>(T0 + 2000) + offset);
  EXPECT_EQ(t.kernels.dur[0], 5000);
  EXPECT_EQ(t.kernels.correlation[0], 6u);
  const auto& cfg = t.launch_configs.at(t.kernels.config[0]);
  EXPECT_EQ(cfg.grid_x, 128u);
  EXPECT_EQ(cfg.grid_y, 2u);
  EXPECT_EQ(cfg.block_x, 256u);
  EXPECT_EQ(cfg.registers, 40u);
  EXPECT_EQ(cfg.shared_static, 1024u);
  EXPECT_EQ(cfg.shared_dynamic, 4096u);
  EXPECT_EQ(t.tracks[t.kernels.track[0]].type, tt::trace::TrackType::Stream);

  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys.direction[0], tt::trace::MemcpyDirection::HtoD);
  EXPECT_EQ(t.memcpys.src_kind[0], tt::trace::MemoryKind::Pageable);
  EXPECT_EQ(t.memcpys.dst_kind[0], tt::trace::MemoryKind::Device);
  EXPECT_EQ(t.memcpys.async[0], 1);
  EXPECT_EQ(t.memcpys.bytes[0], 1u << 20);
  EXPECT_EQ(t.memcpys.track[0], t.kernels.track[0]);
  EXPECT_EQ(str(t, t.memcpys.name[0]), "Memcpy HtoD (pageable -> device)");

  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets.mem_kind[0], tt::trace::MemoryKind::Managed);
  EXPECT_EQ(t.memsets.bytes[0], 4096u);

  // API calls: on the calling threads' tracks (not the CUPTI buffer thread); correlation ids
  // link the launch to its kernel.
  ASSERT_EQ(t.api_calls.size(), 4u);
  auto thread_of = [&](std::uint32_t track) { return t.threads[t.tracks[track].owner].tid; };
  for (std::size_t i = 0; i < t.api_calls.size(); ++i) {
    const std::string name = str(t, t.api_calls.name[i]);
    if (name == "cudaLaunchKernel") {
      EXPECT_EQ(t.api_calls.correlation[i], t.kernels.correlation[0]);
      EXPECT_EQ(t.api_calls.api[i], tt::trace::ApiKind::Runtime);
      EXPECT_EQ(thread_of(t.api_calls.track[i]), main_tid);
    } else if (name == "cuLaunchKernel") {
      EXPECT_EQ(t.api_calls.api[i], tt::trace::ApiKind::Driver);
    } else if (name == "cudaStreamSynchronize") {
      EXPECT_EQ(thread_of(t.api_calls.track[i]), worker_tid);
    } else {
      EXPECT_EQ(name, "cudaMemcpyAsync");
    }
  }
  for (std::size_t i = 0; i < t.threads.size(); ++i) EXPECT_NE(t.threads[i].tid, FileSink::kCuptiThread);

  // The sync has no thread in CUPTI: it lands on the thread of its API call.
  ASSERT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.syncs.type[0], tt::trace::SyncType::StreamSync);
  EXPECT_EQ(t.syncs.stream[0], 7);
  EXPECT_EQ(t.syncs.event[0], -1);
  EXPECT_EQ(thread_of(t.syncs.track[0]), worker_tid);

  // Graph launch and CUPTI overhead become ranges; the dropped count a diagnostic.
  bool graph = false, overhead = false;
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    const std::string name = str(t, t.ranges.name[i]);
    graph |= name == "CUDA graph 12" && t.ranges.kind[i] == tt::trace::RangeKind::GpuAnnotation;
    overhead |= name == "CUPTI overhead: instrumentation" && thread_of(t.ranges.track[i]) == main_tid;
  }
  EXPECT_TRUE(graph);
  EXPECT_TRUE(overhead);
  std::uint64_t dropped = 0;
  for (const auto& d : t.diagnostics)
    if (d.kind == tt::trace::DiagnosticKind::Dropped && d.reason.starts_with("cupti:")) dropped += d.count;
  EXPECT_EQ(dropped, 3u);
}

// CUPTI MEMORY2: device memory the driver allocated and released becomes, per device, the
// bytes held after each ("cuda:N memory.reserved", what the memory analysis reads); pinned host
// memory is not device memory; a release frees what its allocation took.
CUpti_ActivityMemory4 memory_record(CUpti_ActivityMemoryOperationType op, CUpti_ActivityMemoryKind kind,
                                    std::uint64_t address, std::uint64_t bytes, std::uint64_t ts) {
  CUpti_ActivityMemory4 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = op;
  m.memoryKind = kind;
  m.address = address;
  m.bytes = bytes;
  m.timestamp = ts;
  m.deviceId = 0;
  return m;
}

std::vector<std::pair<std::string, double>> memory_counters(const tt::trace::Trace& t) {
  std::vector<std::pair<std::string, double>> out;
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (str(t, t.counters.name[i]).starts_with("cuda:")) out.emplace_back(str(t, t.counters.name[i]), t.counters.value[i]);
  return out;
}

TEST(CuptiDecode, DeviceMemoryBecomesReservedBytes) {
  const cu::CuptiApi api = fake_api();
  constexpr auto kAlloc = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  constexpr auto kRelease = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  constexpr auto kDevice = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  const CUpti_ActivityMemory4 records[] = {
      memory_record(kAlloc, kDevice, 0x1000, 1ull << 30, T0 + 100),
      memory_record(kAlloc, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0x9000, 1ull << 20, T0 + 150),
      memory_record(kAlloc, kDevice, 0x2000, 512ull << 20, T0 + 200),
      memory_record(kRelease, kDevice, 0x1000, 0, T0 + 300),  // the size comes from its allocation
  };
  for (bool python_samples_reserved : {false, true}) {
    TempDir dir;
    RecordFileWriter w(77);
    FileSink sink(w);
    for (const auto& r : records) EXPECT_TRUE(cu::decode_activity(api, reinterpret_cast<const CUpti_Activity*>(&r), sink));
    if (python_samples_reserved) w.counter(77, static_cast<std::int64_t>(T0) + 400, "cuda:0 memory.reserved", 2e9);
    MergeReport report;
    const auto t = merge(w, dir, report);
    const std::string name = python_samples_reserved ? "cuda:0 memory.cuda_malloc" : "cuda:0 memory.reserved";
    std::vector<std::pair<std::string, double>> want = {
        {name, 1024.0 * 1024 * 1024}, {name, 1536.0 * 1024 * 1024}, {name, 512.0 * 1024 * 1024}};
    if (python_samples_reserved) want.insert(want.begin(), {"cuda:0 memory.reserved", 2e9});
    auto got = memory_counters(t);
    std::stable_sort(got.begin(), got.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    EXPECT_EQ(got, want) << "python samples reserved: " << python_samples_reserved;
  }
}

// Issue 26 for our own capture: cudaEventRecord(e, stream 20) and cudaStreamWaitEvent(stream 7, e)
// as CUPTI reports them (a CUDA_EVENT record with the record call's correlation id; a
// SYNCHRONIZATION stream wait with the waiting stream and the event id) become the trace rows
// the Kineto importer gives, so the step's critical path crosses to stream 20. Times in µs after
// T0: step [0, 1000); fft2d_r2c launched at 10 on stream 20 runs [20, 600); record at 12, wait
// at 13; gcgemm launched at 15 on stream 7 runs [605, 800); cudaDeviceSynchronize [20, 805).
TEST(CuptiDecode, EventRecordsAndStreamWaitsPutTheRecordedStreamOnThePath) {
  constexpr std::uint64_t us = 1000;
  const std::uint32_t main_tid = 77;
  const auto rt = [&](std::uint32_t cbid, std::uint64_t s, std::uint64_t e, std::uint32_t corr) {
    return api_record(CUPTI_ACTIVITY_KIND_RUNTIME, cbid, T0 + s * us, T0 + e * us, main_tid, corr);
  };
  const CUpti_ActivityAPI calls[] = {
      rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, 12, 1),
      rt(CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, 12, 13, 2),
      rt(CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020, 13, 14, 3),
      rt(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 15, 17, 4),
      rt(CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, 20, 805, 5)};
  const auto fft = kernel(T0 + 20 * us, T0 + 600 * us, 20, 1, "fft2d_r2c");
  const auto gemm = kernel(T0 + 605 * us, T0 + 800 * us, 7, 4, "gcgemm");
  const auto event_record = [](std::uint32_t corr, std::uint32_t event) {
    CUpti_ActivityCudaEvent2 e{};
    e.kind = CUPTI_ACTIVITY_KIND_CUDA_EVENT;
    e.correlationId = corr;
    e.contextId = 1;
    e.streamId = 20;
    e.eventId = event;
    e.deviceId = 0;
    e.cudaEventSyncId = 77;
    return e;
  };
  const auto record = event_record(2, 3);
  const auto orphan = event_record(99, 4);  // its record call is not in the file: not placed
  CUpti_ActivitySynchronization2 wait{};
  wait.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  wait.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT;
  wait.start = T0 + 13 * us;
  wait.end = T0 + 14 * us;
  wait.correlationId = 3;
  wait.contextId = 1;
  wait.streamId = 7;
  wait.cudaEventId = 3;
  wait.cudaEventSyncId = 77;

  TempDir dir;
  RecordFileWriter w(77);
  w.step(main_tid, StepKind::Step, static_cast<std::int64_t>(T0), static_cast<std::int64_t>(T0 + 1000 * us), 0);
  FileSink sink(w);
  const cu::CuptiApi api = fake_api();
  const auto decode = [&](const auto& r) {
    return cu::decode_activity(api, reinterpret_cast<const CUpti_Activity*>(&r), sink);
  };
  for (const auto& c : calls) EXPECT_TRUE(decode(c));
  EXPECT_TRUE(decode(fft));
  EXPECT_TRUE(decode(gemm));
  EXPECT_TRUE(decode(record));
  EXPECT_TRUE(decode(orphan));
  EXPECT_TRUE(decode(wait));
  MergeReport report;
  auto t = merge(w, dir, report);

  ASSERT_EQ(t.syncs.size(), 2u);
  const std::size_t rec = t.syncs.type[0] == tt::trace::SyncType::EventRecord ? 0 : 1, wt = 1 - rec;
  ASSERT_EQ(t.syncs.type[rec], tt::trace::SyncType::EventRecord);
  EXPECT_EQ(str(t, t.syncs.name[rec]), "Event Record");
  EXPECT_EQ(t.syncs.correlation[rec], 2u);
  EXPECT_EQ(t.syncs.event[rec], 3);
  EXPECT_EQ(t.syncs.stream[rec], 20);
  EXPECT_EQ(t.syncs.start[rec], static_cast<std::int64_t>(T0 + 12 * us));  // the record call's start
  EXPECT_EQ(t.syncs.dur[rec], 0);
  const auto& track = t.tracks[t.syncs.track[rec]];
  ASSERT_EQ(track.type, tt::trace::TrackType::Stream);
  EXPECT_EQ(t.streams[track.owner].stream, 20);
  ASSERT_EQ(t.syncs.type[wt], tt::trace::SyncType::StreamWaitEvent);
  EXPECT_EQ(t.syncs.stream[wt], 7);  // the waiting stream
  EXPECT_EQ(t.syncs.event[wt], 3);
  EXPECT_EQ(t.syncs.correlation[wt], 3u);
  std::uint64_t unplaced = 0;
  for (const auto& d : t.diagnostics)
    if (d.reason.starts_with("CUDA event records without their record call")) unplaced += d.count;
  EXPECT_EQ(unplaced, 1u);

  t.finalize();
  tt::analyzer::Options o;
  o.threads = 1;
  const auto a = tt::analyzer::analyze(t, o, "cupti");
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  ASSERT_EQ(a.metrics.ranks[0].paths.size(), 1u);
  const auto& p = a.metrics.ranks[0].paths[0];
  const auto kind = [&](tt::analyzer::PathKind k) { return p.by_kind[static_cast<std::size_t>(k)]; };
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(kind(tt::analyzer::PathKind::GpuCompute), static_cast<std::int64_t>((580 + 195) * us));  // both kernels
  EXPECT_EQ(kind(tt::analyzer::PathKind::GpuWait), 0);
}

TEST(CuptiDecode, BufferCapRefusesAndCounts) {
  g_fake = Fake{};
  RecordFileWriter w(77);
  FileSink sink(w);
  const cu::CuptiApi api = fake_api();
  cu::Session& s = cu::session();
  cu::SessionOptions quiet;
  quiet.warn = false;
  ASSERT_EQ(s.start(api, sink, quiet), GpuStatus::Active);
  std::vector<std::uint8_t*> held;
  for (std::uint32_t i = 0; i < cu::Session::kMaxBuffers + 2; ++i) {
    std::uint8_t* b = nullptr;
    std::size_t size = 0, max = 0;
    cu::Session::buffer_requested(&b, &size, &max);
    if (b != nullptr) held.push_back(b);
    else EXPECT_EQ(size, 0u);
  }
  EXPECT_EQ(held.size(), cu::Session::kMaxBuffers);
  for (auto* b : held) cu::Session::buffer_completed(nullptr, 0, b, cu::Session::kBufferSize, 0);
  sink.types.clear();
  s.flush(true);
  EXPECT_NE(std::find(sink.types.begin(), sink.types.end(), RecordType::Dropped), sink.types.end());
}

// Completed buffers are handed out again (zeroed where CUPTI wrote) instead of allocating a
// fresh 4 MiB at every flush, and CUPTI is told that buffers arrive zeroed, so it does not
// zero them on the job's thread.
TEST(CuptiBuffers, ReusedZeroedAndDeclaredZeroed) {
  FakeCuptiSession f;
  cu::Session& s = f.s;
  ASSERT_EQ(f.start(), GpuStatus::Active);
  const auto& c = g_fake.calls;
  const auto attr = std::find(c.begin(), c.end(), "attribute " + std::to_string(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER));
  ASSERT_NE(attr, c.end()) << "CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER not set";
  EXPECT_LT(attr, std::find(c.begin(), c.end(), "callbacks")) << "set before CUPTI asks for a buffer";
  EXPECT_EQ(g_fake.attributes.back(), (std::pair<int, int>{CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 1}));

  auto request = [] {
    std::uint8_t* b = nullptr;
    std::size_t size = 0, max_records = 0;
    cu::Session::buffer_requested(&b, &size, &max_records);
    EXPECT_EQ(size, cu::Session::kBufferSize);
    return b;
  };
  std::vector<std::uint8_t*> earlier;  // kept by an earlier test in this process
  while (s.pool().kept() > 0) earlier.push_back(request());
  std::uint8_t* first[2] = {request(), request()};
  ASSERT_NE(first[0], nullptr);
  ASSERT_NE(first[1], nullptr);
  const std::size_t kept_before = s.pool().kept();
  for (std::uint8_t* b : first) {
    std::memset(b, 0xAB, 4096);  // what CUPTI wrote
    cu::Session::buffer_completed(nullptr, 0, b, cu::Session::kBufferSize, 4096);
  }
  EXPECT_EQ(s.pool().kept(), kept_before + 2);
  std::uint8_t* again[2] = {request(), request()};
  EXPECT_TRUE((again[0] == first[1] && again[1] == first[0]) || (again[0] == first[0] && again[1] == first[1]))
      << "completed buffers were not reused";
  for (std::uint8_t* b : again) {
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(std::count(b, b + cu::Session::kBufferSize, 0), static_cast<std::ptrdiff_t>(cu::Session::kBufferSize))
        << "a reused buffer must be zeroed";
    cu::Session::buffer_completed(nullptr, 0, b, cu::Session::kBufferSize, 0);
  }
  for (std::uint8_t* b : earlier) cu::Session::buffer_completed(nullptr, 0, b, cu::Session::kBufferSize, 0);
}

// torch.profiler registering its buffer callbacks mid-run (the collector's interposer calls
// hand_over first): CUPTI keeps filling the buffers it took from us and completes them to the
// new owner, so ours must come back first (a forced flush), no new one may be handed out, and
// the process-wide settings we changed go back to CUPTI's defaults -- except those the other
// profiler set itself -- after the flush; then the session never calls CUPTI again.
// Records CUPTI drops in the hand-over's moment (on an H100 with torch.profiler: after our
// forced flush, before its first buffer) are named for it, not for a full buffer.
TEST(CuptiSession, DropsAtTheHandOverSaySo) {
  TempDir dir;
  FakeCuptiSession f(78);
  cu::Session& s = f.s;
  ASSERT_EQ(f.start(), GpuStatus::Active);
  std::uint8_t* buf = nullptr;
  std::size_t size = 0, max_records = 1;
  cu::Session::buffer_requested(&buf, &size, &max_records);
  ASSERT_NE(buf, nullptr);
  s.hand_over(0);
  g_fake.dropped = 2;
  cu::Session::buffer_completed(nullptr, 0, buf, size, 0);  // CUPTI returns it late, with drops
  MergeReport report;
  const auto t = merge(f.w, dir, report);
  std::vector<std::string> reasons;
  for (const auto& d : t.diagnostics)
    if (d.kind == tt::trace::DiagnosticKind::Dropped) reasons.push_back(d.reason);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("handed to another profiler"), std::string::npos) << reasons[0];
}

// The query calls are left out unless TRACETUNE_CUDA_API=all (on an H100 they cost the MLP's
// ~1.1 ms steps +24% recorded against +1.9% without).
TEST(CuptiSession, QueryCallsLeftOutUnlessAllAsked) {
  EXPECT_TRUE(cu::lean_api_wanted(nullptr));
  EXPECT_TRUE(cu::lean_api_wanted(""));
  EXPECT_TRUE(cu::lean_api_wanted("lean"));
  EXPECT_FALSE(cu::lean_api_wanted("all"));
}

TEST(CuptiSession, HandsCuptiOverToAnotherProfiler) {
  FakeCuptiSession f;
  cu::Session& s = f.s;
  ASSERT_EQ(f.start(), GpuStatus::Active);
  const std::size_t before = g_fake.calls.size();
  s.hand_over(0);
  EXPECT_FALSE(s.active());
  EXPECT_TRUE(s.handed_over());
  ASSERT_EQ(g_fake.flushes, std::vector<std::uint32_t>{CUPTI_ACTIVITY_FLAG_FLUSH_FORCED}) << "our buffers back first";
  const std::vector<std::string> after(g_fake.calls.begin() + static_cast<std::ptrdiff_t>(before), g_fake.calls.end());
  EXPECT_EQ(after, (std::vector<std::string>{"attribute " + std::to_string(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER),
                                             "thread_id_type " + std::to_string(CUPTI_ACTIVITY_THREAD_ID_TYPE_DEFAULT),
                                             "timestamp"}));
  EXPECT_EQ(g_fake.attributes.back(), (std::pair<int, int>{CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, 0}));
  ASSERT_NE(g_fake.timestamp, nullptr);
  timespec a{}, b{};  // CUPTI's default clock on Linux: CLOCK_REALTIME
  clock_gettime(CLOCK_REALTIME, &a);
  const std::uint64_t v = g_fake.timestamp();
  clock_gettime(CLOCK_REALTIME, &b);
  EXPECT_GE(v, static_cast<std::uint64_t>(a.tv_sec) * 1'000'000'000ull + a.tv_nsec);
  EXPECT_LE(v, static_cast<std::uint64_t>(b.tv_sec) * 1'000'000'000ull + b.tv_nsec);

  std::uint8_t* buffer = nullptr;
  std::size_t size = 1, max_records = 1;
  cu::Session::buffer_requested(&buffer, &size, &max_records);
  EXPECT_EQ(buffer, nullptr) << "a buffer handed out now would collect the other profiler's records";
  EXPECT_EQ(size, 0u);
  s.flush(false);
  s.flush(true);  // the periodic and the at-exit flush: those buffers are the other profiler's
  s.hand_over(0);
  EXPECT_EQ(g_fake.flushes.size(), 1u);

  // What the other profiler set itself before registering (Kineto: its TSC clock) stays.
  g_fake = Fake{};
  ASSERT_EQ(f.start(), GpuStatus::Active);
  const std::size_t started = g_fake.calls.size();
  s.hand_over(cu::kOtherSetTimestampCallback | cu::kOtherSetThreadIdType | cu::kOtherSetZeroedBuffers);
  EXPECT_EQ(g_fake.calls.size(), started) << g_fake.calls.back();
  EXPECT_EQ(g_fake.flushes.size(), 1u);
}
