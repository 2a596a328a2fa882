// Nsight Systems SQLite importer: the hand-written fixture (tests/data/nsys/small_export.sql,
// built into a database at test time), the nsys-vs-CUPTI enum numbering, and the errors.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "critical_path.h"
#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/step_ranges.h"
#include "tracetune/trace/importers.h"

namespace fs = std::filesystem;
using namespace tt::trace;
using tt::Status;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// First index in `col` equal to `v`, or -1.
template <class Col, class V>
long find(const Col& col, const V& v) {
  auto it = std::find(col.begin(), col.end(), v);
  return it == col.end() ? -1 : static_cast<long>(it - col.begin());
}

long find_name(const Trace& t, const SpanColumns& table, std::string_view name) {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (t.strings.get(table.name[i]) == name) return static_cast<long>(i);
  return -1;
}

const Diagnostic* find_diag(const Trace& t, DiagnosticKind kind, std::string_view needle) {
  for (const auto& d : t.diagnostics)
    if (d.kind == kind && d.reason.find(needle) != std::string::npos) return &d;
  return nullptr;
}

// Rows of CUDA_GPU_MEMORY_USAGE_EVENTS for process `pid` (out of time order on purpose).
std::string fmt_rows(std::int64_t pid) {
  const std::string p = std::to_string(pid);
  auto row = [&](int start, int dev, int bytes, int kind, int op) {
    return "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, address, bytes, memKind, "
           "memoryOperationType) VALUES (" + std::to_string(start) + ", " + p + ", " + std::to_string(dev) +
           ", 4096, " + std::to_string(bytes) + ", " + std::to_string(kind) + ", " + std::to_string(op) + ");\n";
  };
  return row(300, 0, 2000, 2, 0) + row(100, 0, 1000, 2, 0) + row(150, 1, 64, 2, 0) + row(400, 0, 1000, 2, 1) +
         row(200, 0, 512, 1, 0) + row(500, 0, 5000, 2, 1);
}

class NsysImport : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tt_nsys_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Builds a database from an SQL script; returns its path (empty + test failure on error).
  fs::path make_db(const std::string& name, const std::string& script) {
    const fs::path p = dir_ / name;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2(p.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr), SQLITE_OK);
    char* err = nullptr;
    const int rc = sqlite3_exec(db, script.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << (err != nullptr ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    return p;
  }

  fs::path fixture() {
    const fs::path script = fs::path(TT_TEST_DATA_DIR) / "nsys/small_export.sql";
    const std::string sql = slurp(script);
    EXPECT_FALSE(sql.empty()) << "cannot read " << script;
    return make_db("small_export.sqlite", sql);
  }

  fs::path dir_;
};

// ---- the fixture ----

TEST_F(NsysImport, FixtureTableCounts) {
  const fs::path db = fixture();
  Trace t;
  const Status st = import_nsys(db, t);
  ASSERT_TRUE(st.ok()) << st.error();

  EXPECT_EQ(t.kernels.size(), 5u);     // 6 rows, one with end < start
  EXPECT_EQ(t.memcpys.size(), 3u);
  EXPECT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.api_calls.size(), 12u);
  EXPECT_EQ(t.syncs.size(), 2u);
  EXPECT_EQ(t.ranges.size(), 5u);      // 2 push/pop, start/end, mark + pthread_cond_wait
  EXPECT_EQ(t.io_calls.size(), 3u);    // open64 + 2 reads
  EXPECT_EQ(t.launch_configs.size(), 2u);
  EXPECT_EQ(t.clock_domain, "nsys");

  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, 4242);  // (globalPid >> 24) & 0xFFFFFF
  EXPECT_EQ(t.processes[0].name, "python3");
  ASSERT_EQ(t.threads.size(), 2u);
  for (const auto& th : t.threads) {
    EXPECT_EQ(th.process, 0u);
    EXPECT_EQ(th.name, th.tid == 4242 ? "python3" : "pt_data_worker");
    EXPECT_TRUE(th.tid == 4242 || th.tid == 4250) << th.tid;
  }
  ASSERT_EQ(t.streams.size(), 2u);
  EXPECT_NE(find(std::vector{t.streams[0].stream, t.streams[1].stream}, 7), -1);
  EXPECT_NE(find(std::vector{t.streams[0].stream, t.streams[1].stream}, 13), -1);

  // GPU 0 ran the work (owned by the process); GPU 1 appears from TARGET_INFO_GPU only.
  ASSERT_EQ(t.devices.size(), 2u);
  const Device& used = t.devices[t.streams[0].device];
  EXPECT_EQ(used.index, 0);
  EXPECT_EQ(used.process, 0u);
  EXPECT_EQ(used.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(used.uuid, "GPU-4c1d7a2e-90b3-5f6c-8e21-3a7d9b0c5e14");
  EXPECT_EQ(used.sm_count, 132);
  EXPECT_EQ(used.total_memory, 85520809984);
  EXPECT_EQ(used.compute_major, 9);
  EXPECT_EQ(used.compute_minor, 0);
  EXPECT_EQ(t.streams[1].device, t.streams[0].device);
  const Device& idle = t.devices[t.streams[0].device == 0 ? 1 : 0];
  EXPECT_EQ(idle.index, 1);
  EXPECT_EQ(idle.process, kNone);
  EXPECT_EQ(idle.uuid, "GPU-b83f0e51-2c47-6a9d-1f03-e5c2847a6d90");

  const std::string key = db.string() + ":EXPORT_SCHEMA_VERSION";
  EXPECT_NE(std::find(t.metadata.begin(), t.metadata.end(), std::pair<std::string, std::string>{key, "3.28.1"}),
            t.metadata.end());
}

TEST_F(NsysImport, MemcpyDirectionsAndNsysMemoryKinds) {
  Trace t;
  ASSERT_TRUE(import_nsys(fixture(), t).ok());
  const auto& m = t.memcpys;

  // srcKind 0 in nsys is Pageable (CUPTI's 0 would be Unknown); the issuing cudaMemcpy is sync.
  const long pageable = find(m.correlation, 110u);
  ASSERT_GE(pageable, 0);
  EXPECT_EQ(m.direction[pageable], MemcpyDirection::HtoD);
  EXPECT_EQ(m.src_kind[pageable], MemoryKind::Pageable);
  EXPECT_EQ(m.dst_kind[pageable], MemoryKind::Device);
  EXPECT_EQ(m.bytes[pageable], 4194304u);
  EXPECT_EQ(m.async[pageable], 0);
  EXPECT_EQ(t.strings.get(m.name[pageable]), "Memcpy HtoD (Pageable -> Device)");

  // srcKind 1 in nsys is Pinned (CUPTI's 1 would be Pageable); cudaMemcpyAsync.
  const long pinned = find(m.correlation, 111u);
  ASSERT_GE(pinned, 0);
  EXPECT_EQ(m.direction[pinned], MemcpyDirection::HtoD);
  EXPECT_EQ(m.src_kind[pinned], MemoryKind::Pinned);
  EXPECT_EQ(m.dst_kind[pinned], MemoryKind::Device);
  EXPECT_EQ(m.async[pinned], 1);

  const long back = find(m.correlation, 112u);
  ASSERT_GE(back, 0);
  EXPECT_EQ(m.direction[back], MemcpyDirection::DtoH);
  EXPECT_EQ(m.src_kind[back], MemoryKind::Device);
  EXPECT_EQ(m.dst_kind[back], MemoryKind::Pageable);
  EXPECT_EQ(m.bytes[back], 1024u);
  EXPECT_EQ(m.dur[back], 5000);

  ASSERT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.memsets.mem_kind[0], MemoryKind::Device);
  EXPECT_EQ(t.memsets.bytes[0], 1048576u);
  EXPECT_EQ(t.memsets.value[0], 0u);
  EXPECT_EQ(t.memsets.correlation[0], 113u);
  EXPECT_EQ(t.strings.get(t.memsets.name[0]), "Memset (Device)");
}

TEST_F(NsysImport, KernelsCorrelateWithApiCalls) {
  Trace t;
  ASSERT_TRUE(import_nsys(fixture(), t).ok());
  const auto& k = t.kernels;
  const auto& a = t.api_calls;

  for (std::size_t i = 0; i < k.size(); ++i) {
    const long api = find(a.correlation, k.correlation[i]);
    ASSERT_GE(api, 0) << "kernel correlation " << k.correlation[i];
    const std::string_view launcher = t.strings.get(a.name[api]);
    EXPECT_TRUE(launcher.starts_with("cudaLaunchKernel") || launcher.starts_with("cudaGraphLaunch")) << launcher;
    EXPECT_LE(a.start[api], k.start[i]);  // launched before it ran
    EXPECT_EQ(t.tracks[k.track[i]].type, TrackType::Stream);
    EXPECT_EQ(t.process_of_track(k.track[i]), 0u);
  }
  EXPECT_EQ(find(k.correlation, 106u), -1);  // the broken row

  const long fill = find(k.correlation, 101u);
  ASSERT_GE(fill, 0);
  EXPECT_EQ(t.strings.get(k.name[fill]),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)");
  const LaunchConfig& lc = t.launch_configs[k.config[fill]];
  EXPECT_EQ(lc.grid_x, 1024u);
  EXPECT_EQ(lc.block_x, 128u);
  EXPECT_EQ(lc.registers, 16u);
  EXPECT_EQ(k.graph_id[fill], 0u);

  const long gemm7 = find(k.correlation, 102u), gemm13 = find(k.correlation, 103u);
  ASSERT_GE(gemm7, 0);
  ASSERT_GE(gemm13, 0);
  EXPECT_EQ(t.strings.get(k.name[gemm7]), "ampere_sgemm_128x64_nn");
  EXPECT_EQ(k.config[gemm7], k.config[gemm13]);  // interned once
  EXPECT_EQ(t.launch_configs[k.config[gemm7]].shared_static, 16384u);
  EXPECT_EQ(t.launch_configs[k.config[gemm7]].grid_y, 16u);
  EXPECT_NE(k.track[gemm7], k.track[gemm13]);  // streams 7 and 13

  const long graphed = find(k.correlation, 105u);
  ASSERT_GE(graphed, 0);
  EXPECT_EQ(k.graph_id[graphed], 3u);

  // eventClass 0 -> runtime, 1 -> driver; all on the main thread
  std::size_t driver = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.api[i] == ApiKind::Driver) {
      ++driver;
      EXPECT_EQ(t.strings.get(a.name[i]), "cuMemGetInfo_v2");
    } else {
      EXPECT_EQ(a.api[i], ApiKind::Runtime);
    }
    const Track& tr = t.tracks[a.track[i]];
    ASSERT_EQ(tr.type, TrackType::Thread);
    EXPECT_EQ(t.threads[tr.owner].tid, 4242);
  }
  EXPECT_EQ(driver, 1u);
}

TEST_F(NsysImport, Syncs) {
  Trace t;
  ASSERT_TRUE(import_nsys(fixture(), t).ok());
  const auto& s = t.syncs;
  const long stream_sync = find(s.correlation, 120u), event_sync = find(s.correlation, 121u);
  ASSERT_GE(stream_sync, 0);
  ASSERT_GE(event_sync, 0);
  EXPECT_EQ(s.type[stream_sync], SyncType::StreamSync);
  EXPECT_EQ(s.stream[stream_sync], 7);
  EXPECT_EQ(s.event[stream_sync], -1);  // CUPTI's 0xffffffff "no event"
  EXPECT_EQ(t.strings.get(s.name[stream_sync]), "Stream Sync");
  EXPECT_EQ(s.type[event_sync], SyncType::EventSync);
  EXPECT_EQ(s.event[event_sync], 42);
  EXPECT_EQ(s.stream[event_sync], 13);
}

// ---- stream waits and the event records they wait for (issue 26) ----

// One process (pid 4242, main thread 4242) on GPU 0, in the export's own schema (the tables and
// columns of the 2026.4 schema reference that the importer reads, CUDA event trace on). Times in
// µs, the script's values in ns: step [0, 1000) (NVTX ProfilerStep#0); fft2d_r2c launched at 10
// on stream 20 runs [20, 600); cudaEventRecord(e, stream 20) at 12, cudaStreamWaitEvent(stream 7,
// e) at 13; gcgemm launched at 15 on stream 7 runs [605, 800); cudaDeviceSynchronize [20, 805).
// `record_rows` are the CUDA_EVENT rows (empty: an export without the CUDA event trace).
std::string two_stream_export(const std::string& record_rows) {
  return R"(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cudaEventRecord_v3020'),
  (3, 'cudaStreamWaitEvent_v3020'), (4, 'cudaDeviceSynchronize_v3020'), (5, 'fft2d_r2c'), (6, 'gcgemm');
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES
  (10000, 12000, 0, 71168954514, 1, 1, 0, NULL), (12000, 13000, 0, 71168954514, 2, 2, 0, NULL),
  (13000, 14000, 0, 71168954514, 3, 3, 0, NULL), (15000, 17000, 0, 71168954514, 4, 1, 0, NULL),
  (20000, 805000, 0, 71168954514, 5, 4, 0, NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,
  blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES
  (20000, 600000, 0, 1, NULL, 20, 1, 71168950272, 5, 5, 32, 8, 1, 1, 256, 1, 1, 0, 0),
  (605000, 800000, 0, 1, NULL, 7, 4, 71168950272, 6, 6, 64, 16, 1, 1, 128, 1, 1, 0, 0);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, deprecatedSyncType INTEGER, syncType INTEGER NOT NULL,
  eventId INTEGER NOT NULL, eventSyncId INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (13000, 14000, 0, 1, NULL, 7, 3, 71168950272, NULL, 2, 3, 77);
CREATE TABLE CUPTI_ACTIVITY_KIND_CUDA_EVENT (timestamp INTEGER, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL,
  greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  eventId INTEGER NOT NULL, eventSyncId INTEGER);
)" + record_rows + R"(
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, text TEXT,
  globalTid INTEGER, textId INTEGER, domainId INTEGER);
INSERT INTO NVTX_EVENTS VALUES (0, 1000000, 59, 'ProfilerStep#0', 71168954514, NULL, 0);
)";
}

// The record of event 3 on stream 20 (correlation 2); a second row whose record call the export
// lacks (correlation 9, no device timestamp) cannot be placed in time and is counted.
constexpr const char* kRecordRows = R"(
INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, 0, 1, NULL, 20, 2, 71168950272, 3, 77);
INSERT INTO CUPTI_ACTIVITY_KIND_CUDA_EVENT VALUES (0, 0, 1, NULL, 20, 9, 71168950272, 4, 78);
)";

TEST_F(NsysImport, CudaEventRowsBecomeEventRecordsOnTheRecordingStream) {
  Trace t;
  const Status st = import_nsys(make_db("events.sqlite", two_stream_export(kRecordRows)), t);
  ASSERT_TRUE(st.ok()) << st.error();
  const long wait = find(t.syncs.type, SyncType::StreamWaitEvent), rec = find(t.syncs.type, SyncType::EventRecord);
  ASSERT_GE(wait, 0);
  ASSERT_GE(rec, 0);
  EXPECT_EQ(t.syncs.size(), 2u);
  EXPECT_EQ(t.syncs.correlation[rec], 2u);  // the cudaEventRecord call's
  EXPECT_EQ(t.syncs.event[rec], 3);
  EXPECT_EQ(t.syncs.stream[rec], 20);
  EXPECT_EQ(t.syncs.start[rec], 12000);     // the record call's start
  EXPECT_EQ(t.syncs.dur[rec], 0);
  EXPECT_EQ(t.strings.get(t.syncs.name[rec]), "Event Record");
  const auto& track = t.tracks[t.syncs.track[rec]];
  ASSERT_EQ(track.type, TrackType::Stream);
  EXPECT_EQ(t.streams[track.owner].stream, 20);
  EXPECT_EQ(t.syncs.event[wait], 3);
  EXPECT_EQ(t.syncs.correlation[wait], 3u);
  const Diagnostic* d = find_diag(t, DiagnosticKind::Skipped, "CUPTI_ACTIVITY_KIND_CUDA_EVENT: rows whose event record call");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 1u);
}

// Issue 26 for nsys exports: the wait of stream 7 on the record of stream 20 puts the FFT
// kernel on the step's critical path; without the CUDA_EVENT rows it stays GPU wait.
TEST_F(NsysImport, StreamWaitsPutTheRecordedStreamOnTheCriticalPath) {
  using tt::analyzer::PathKind;
  const auto path_of = [&](const std::string& name, const std::string& rows) {
    Trace t;
    const Status st = import_nsys(make_db(name, two_stream_export(rows)), t);
    EXPECT_TRUE(st.ok()) << st.error();
    auto steps = tt::analyzer::steps_from_ranges(t, "^ProfilerStep#\\d+$");  // the NVTX range
    EXPECT_TRUE(steps && steps->steps == 1);
    t.finalize();
    tt::analyzer::Options o;
    o.threads = 1;
    auto a = tt::analyzer::analyze(t, o, name);
    EXPECT_EQ(a.metrics.ranks.size(), 1u);
    EXPECT_EQ(a.metrics.ranks.at(0).paths.size(), 1u);
    return a.metrics.ranks.at(0).paths.at(0);
  };
  const auto kind = [](const tt::analyzer::StepPath& p, PathKind k) { return p.by_kind[static_cast<std::size_t>(k)]; };
  const auto p = path_of("events.sqlite", kRecordRows);
  EXPECT_TRUE(p.complete);
  EXPECT_EQ(p.length, 1000000);
  EXPECT_EQ(kind(p, PathKind::GpuCompute), (580 + 195) * 1000);  // both kernels
  EXPECT_EQ(kind(p, PathKind::GpuWait), 0);
  // the same export without the CUDA event trace: gcgemm's wait for the FFT is GPU wait
  const auto without = path_of("no_events.sqlite", "");
  EXPECT_GT(kind(without, PathKind::GpuWait), 0);
}

TEST_F(NsysImport, NvtxRangesMarksAndDomains) {
  Trace t;
  ASSERT_TRUE(import_nsys(fixture(), t).ok());
  const auto& r = t.ranges;

  const long step = find_name(t, r, "train_step");
  ASSERT_GE(step, 0);
  EXPECT_EQ(r.kind[step], RangeKind::Nvtx);
  EXPECT_EQ(r.start[step], 1000);
  EXPECT_EQ(r.dur[step], 89000);
  EXPECT_EQ(t.strings.get(r.domain[step]), "");

  const long fwd = find_name(t, r, "forward");  // registered string: textId -> StringIds
  ASSERT_GE(fwd, 0);
  EXPECT_EQ(r.kind[fwd], RangeKind::Nvtx);
  EXPECT_EQ(r.dur[fwd], 48000);
  EXPECT_EQ(t.strings.get(r.domain[fwd]), "NCCL");  // named by the domain-create row

  const long mark = find_name(t, r, "checkpoint");
  ASSERT_GE(mark, 0);
  EXPECT_EQ(r.kind[mark], RangeKind::Instant);
  EXPECT_EQ(r.dur[mark], 0);

  EXPECT_EQ(find_name(t, r, "NCCL"), -1);     // the domain-create row is not an event
  EXPECT_EQ(find_name(t, r, "compute"), -1);  // nor the category-naming row
  const Diagnostic* cat = find_diag(t, DiagnosticKind::Skipped, "eventType 33");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->count, 1u);
  EXPECT_NE(find_diag(t, DiagnosticKind::Note, "domain-create"), nullptr);

  for (long i : {step, fwd, mark}) {
    const Track& tr = t.tracks[r.track[i]];
    ASSERT_EQ(tr.type, TrackType::Thread);
    EXPECT_EQ(t.threads[tr.owner].tid, 4242);
  }

  // After finalize the start/end range nests inside the push/pop range on the main thread.
  t.finalize();
  const long fwd2 = find_name(t, t.ranges, "forward");
  ASSERT_GE(fwd2, 0);
  EXPECT_EQ(t.ranges.depth[fwd2], 1);
}

TEST_F(NsysImport, OsrtFileIoAndOtherCalls) {
  Trace t;
  ASSERT_TRUE(import_nsys(fixture(), t).ok());
  const auto& io = t.io_calls;

  const long open = find_name(t, io, "open64");
  ASSERT_GE(open, 0);
  EXPECT_EQ(io.op[open], IoOp::Open);
  EXPECT_EQ(io.fd[open], 5);  // open returns the descriptor
  EXPECT_EQ(io.result[open], 5);
  EXPECT_EQ(io.path[open], 0u);  // OSRT_API does not record arguments

  std::vector<std::int64_t> read_bytes;
  for (std::size_t i = 0; i < io.size(); ++i) {
    const Track& tr = t.tracks[io.track[i]];
    ASSERT_EQ(tr.type, TrackType::Thread);
    EXPECT_EQ(t.threads[tr.owner].name, "pt_data_worker");
    if (io.op[i] != IoOp::Read) continue;
    EXPECT_EQ(t.strings.get(io.name[i]), "read");
    EXPECT_EQ(io.fd[i], -1);
    read_bytes.push_back(io.bytes[i]);
  }
  std::sort(read_bytes.begin(), read_bytes.end());
  EXPECT_EQ(read_bytes, (std::vector<std::int64_t>{4096, 65536}));

  const long wait = find_name(t, t.ranges, "pthread_cond_wait");
  ASSERT_GE(wait, 0);
  EXPECT_EQ(t.ranges.kind[wait], RangeKind::Other);
  EXPECT_EQ(t.strings.get(t.ranges.domain[wait]), "osrt");
  EXPECT_EQ(t.ranges.dur[wait], 26500);
}

TEST_F(NsysImport, BrokenRowsAreCountedNotDropped) {
  const fs::path db = fixture();
  Trace t;
  ASSERT_TRUE(import_nsys(db, t).ok());
  const Diagnostic* bad = find_diag(t, DiagnosticKind::Skipped, "end before start");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->count, 1u);
  EXPECT_EQ(bad->source, db.string());
  EXPECT_NE(bad->reason.find("CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos);

  // The trace finalizes cleanly and its per-track queries see the kernels.
  t.finalize();
  std::size_t seen = 0;
  for (const auto& sl : t.slices_kernels()) {
    auto [first, last] = query_range(t.kernels, t.slices_kernels(), sl.track, 0, 1'000'000);
    seen += last - first;
  }
  EXPECT_EQ(seen, 5u);
}

// Issue 17 #5: start = 'abc' or end = 1e308 was read as 0 or INT64_MAX and imported.
TEST_F(NsysImport, NonIntegerTimesAreSkippedWithTheReason) {
  const fs::path db = make_db("garbage.sqlite", R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (100, 200, 0, 1, 7, 1, 16777216, 64, 1, 1, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES ('abc', 400, 0, 1, 7, 2, 16777216, 64, 1, 1, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (500, 1e308, 0, 1, 7, 3, 16777216, 64, 1, 1, 2);
)sql");
  Trace t;
  auto st = import_nsys(db, t);
  ASSERT_TRUE(st.ok()) << st.error();
  EXPECT_EQ(t.memcpys.size(), 1u);
  const Diagnostic* bad = find_diag(t, DiagnosticKind::Skipped, "not an integer");
  ASSERT_NE(bad, nullptr);
  EXPECT_EQ(bad->count, 2u);
  EXPECT_NE(bad->reason.find("CUPTI_ACTIVITY_KIND_MEMCPY"), std::string::npos);
}

// ---- enum numbering without / with the export's ENUM tables ----

constexpr const char* kMinimalMemcpy = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, end INTEGER, deviceId INTEGER NOT NULL,
  contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, srcKind INTEGER, dstKind INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (100, 200, 0, 1, 7, 1, 16777216, 64, 1, 1, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (300, 400, 0, 1, 7, 2, 16777216, 64, 2, 2, 0);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (500, 600, 0, 1, 7, 3, 16777216, 64, 99, 2, 2);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (700, NULL, 0, 1, 7, 4, 16777216, 64, 1, 0, 2);
)sql";

TEST_F(NsysImport, DocumentedNsysNumberingWithoutEnumTables) {
  Trace t;
  const Status st = import_nsys(make_db("minimal.sqlite", kMinimalMemcpy), t);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(t.memcpys.size(), 3u);  // the NULL-end row is skipped
  const auto& m = t.memcpys;
  EXPECT_EQ(m.src_kind[0], MemoryKind::Pinned);  // nsys 1 = Pinned (CUPTI 1 = Pageable)
  EXPECT_EQ(m.dst_kind[0], MemoryKind::Device);
  EXPECT_EQ(m.direction[0], MemcpyDirection::HtoD);
  EXPECT_EQ(m.async[0], 2);  // no API call seen: unknown
  EXPECT_EQ(m.dst_kind[1], MemoryKind::Pageable);  // nsys 0 = Pageable
  EXPECT_EQ(m.direction[1], MemcpyDirection::DtoH);
  EXPECT_EQ(m.direction[2], MemcpyDirection::Unknown);
  EXPECT_EQ(t.processes.at(0).pid, 1);
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "copyKind value 99"), nullptr);
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "NULL start or end"), nullptr);
}

TEST_F(NsysImport, EnumTableOfTheExportWins) {
  // A (hypothetical) renumbered export: its ENUM table is the authority on what 1 means.
  const std::string script = std::string(kMinimalMemcpy) + R"sql(
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (1, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device');
)sql";
  Trace t;
  ASSERT_TRUE(import_nsys(make_db("renumbered.sqlite", script), t).ok());
  EXPECT_EQ(t.memcpys.src_kind[0], MemoryKind::Managed);
  EXPECT_EQ(t.strings.get(t.memcpys.name[0]), "Memcpy HtoD (Managed -> Device)");
}

// PyTorch's NVTX ranges (emit_nvtx) carry per-call arguments in their names: every call would
// be a distinct name in aggregates and the string table. The op stays the name, the rest
// becomes the range's args, from plain text and from registered strings alike.
TEST_F(NsysImport, PyTorchNvtxNamesKeepTheOpAndMoveTheRestToArgs) {
  const char* script = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (555, 'aten::empty_strided, op_id = 999730');
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER, eventId INTEGER NOT NULL PRIMARY KEY);
INSERT INTO NVTX_EVENTS VALUES (10, 20, 59, 'aten::mm, seq = 12, sizes = [[2, 3], [3, 4]]', 16777217, NULL, 0, 1);
INSERT INTO NVTX_EVENTS VALUES (30, 40, 59, 'aten::mm, seq = 13, sizes = [[2, 3], [3, 4]]', 16777217, NULL, 0, 2);
INSERT INTO NVTX_EVENTS VALUES (50, 60, 59, NULL, 16777217, 555, 0, 3);
INSERT INTO NVTX_EVENTS VALUES (70, 80, 59, 'load, then train', 16777217, NULL, 0, 4);
)sql";
  Trace t;
  const fs::path db = make_db("torch_nvtx.sqlite", script);
  ASSERT_TRUE(import_nsys(db, t).ok());
  ASSERT_EQ(t.ranges.size(), 4u);
  EXPECT_EQ(t.strings.get(t.ranges.name[0]), "aten::mm");
  EXPECT_EQ(t.ranges.name[0], t.ranges.name[1]);  // one name for both calls
  EXPECT_EQ(t.strings.get(t.ranges.args[0]), "seq = 12, sizes = [[2, 3], [3, 4]]");
  EXPECT_EQ(t.strings.get(t.ranges.args[1]), "seq = 13, sizes = [[2, 3], [3, 4]]");
  EXPECT_EQ(t.strings.get(t.ranges.name[2]), "aten::empty_strided");
  EXPECT_EQ(t.strings.get(t.ranges.args[2]), "op_id = 999730");
  EXPECT_EQ(t.strings.get(t.ranges.name[3]), "load, then train");  // a comma alone is not an argument
  EXPECT_EQ(t.ranges.args[3], 0u);
}

TEST_F(NsysImport, BadNvtxRowsAreSkippedWithReasons) {
  const char* script = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER, eventId INTEGER NOT NULL PRIMARY KEY);
INSERT INTO NVTX_EVENTS VALUES (10, NULL, 59, 'never popped', 16777217, NULL, 0, 1);
INSERT INTO NVTX_EVENTS VALUES (10, 20, 59, 'no thread', NULL, NULL, 0, 2);
INSERT INTO NVTX_EVENTS VALUES (10, NULL, 39, 'thread name', 16777217, NULL, 0, 3);
INSERT INTO NVTX_EVENTS VALUES (30, 40, 59, 'ok', 16777217, 555, 0, 4);
INSERT INTO NVTX_EVENTS VALUES (50, 60, 59, NULL, 16777217, 556, 9, 5);
)sql";
  Trace t;
  const fs::path db = make_db("nvtx.sqlite", script);
  ASSERT_TRUE(import_nsys(db, t).ok());
  ASSERT_EQ(t.ranges.size(), 2u);
  EXPECT_EQ(t.strings.get(t.ranges.name[0]), "ok");  // text wins over textId
  EXPECT_EQ(t.strings.get(t.ranges.name[1]), "");    // textId 556 is not in StringIds
  EXPECT_EQ(t.strings.get(t.ranges.domain[1]), "");  // domain 9 was never named
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "NULL start or end"), nullptr);
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "NULL globalTid"), nullptr);
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "eventType 39 (thread naming)"), nullptr);
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "StringIds"), nullptr);
}

// Text columns of an export can hold any bytes: names, processes and ranges come out as valid
// UTF-8 (U+FFFD for each bad byte), so reports, JSON and the GUI never see invalid text.
TEST_F(NsysImport, InvalidUtf8BecomesReplacementCharacters) {
  const char* script = R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (555, CAST(x'6b65726e656cff' AS TEXT));
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER, eventId INTEGER NOT NULL PRIMARY KEY);
INSERT INTO NVTX_EVENTS VALUES (30, 40, 59, CAST(x'73746570c0af' AS TEXT), 16777217, NULL, 0, 1);
INSERT INTO NVTX_EVENTS VALUES (50, 60, 59, NULL, 16777217, 555, 0, 2);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
INSERT INTO PROCESSES VALUES (16777216, 1, CAST(x'707974686f6eeda080' AS TEXT));
)sql";
  Trace t;
  const fs::path db = make_db("utf8.sqlite", script);
  ASSERT_TRUE(import_nsys(db, t).ok());
  ASSERT_EQ(t.ranges.size(), 2u);
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(t.strings.get(t.ranges.name[0]), "step" + r + r);  // an overlong '/'
  EXPECT_EQ(t.strings.get(t.ranges.name[1]), "kernel" + r);
  ASSERT_FALSE(t.processes.empty());
  EXPECT_EQ(t.processes[0].name, "python" + r + r + r);  // a surrogate, byte by byte
}

// ---- errors ----

TEST_F(NsysImport, NotSqliteFileNamesThePath) {
  const fs::path p = dir_ / "trace.sqlite";
  std::ofstream(p) << "this is not a database, just text long enough to read a header\n";
  Trace t;
  const Status st = import_nsys(p, t);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find(p.string()), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("not an SQLite database"), std::string::npos) << st.error();
}

TEST_F(NsysImport, MissingFileNamesThePath) {
  Trace t;
  const Status st = import_nsys(dir_ / "absent.sqlite", t);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("absent.sqlite"), std::string::npos) << st.error();
}

TEST_F(NsysImport, ForeignSchemaIsNotAnNsysExport) {
  const fs::path p = make_db("foreign.sqlite", "CREATE TABLE foo (a INTEGER); INSERT INTO foo VALUES (1);");
  Trace t;
  const Status st = import_nsys(p, t);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error(), p.string() + ": not an Nsight Systems export (no StringIds table)");
}

TEST_F(NsysImport, ExportWithoutEventTablesSaysSo) {
  const fs::path p =
      make_db("empty.sqlite", "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);");
  Trace t;
  const Status st = import_nsys(p, t);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find(p.string()), std::string::npos);
  EXPECT_NE(st.error().find("nothing to import"), std::string::npos) << st.error();
}

TEST_F(NsysImport, CudaMemoryUsageBecomesReservedBytesPerDevice) {
  // --cuda-memory-usage=true: allocations (0) and frees (1) in any row order; memKind 2 device,
  // 1 pinned host (left out); one free of memory allocated before the capture (clamped, noted)
  const std::int64_t pid = std::int64_t{42} << 24;  // globalPid: <hw:8><vm:8><pid:24><tid:24 = 0>
  const std::string rows = fmt_rows(pid);
  const fs::path p = make_db("mem.sqlite", R"(
    CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER, deviceId INTEGER NOT NULL,
      contextId INTEGER, address INTEGER NOT NULL, pc INTEGER, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL,
      memoryOperationType INTEGER NOT NULL, name INTEGER, correlationId INTEGER, streamId INTEGER);)" + rows);
  Trace t;
  const Status st = import_nsys(p, t);
  ASSERT_TRUE(st.ok()) << st.error();
  std::vector<std::pair<std::string, double>> got;
  for (std::size_t i = 0; i < t.counters.size(); ++i) {
    got.emplace_back(std::string(t.strings.get(t.counters.name[i])), t.counters.value[i]);
    EXPECT_EQ(t.threads[t.tracks[t.counters.track[i]].owner].tid, 42);  // the process's main thread
  }
  using Got = std::vector<std::pair<std::string, double>>;
  EXPECT_EQ(got, (Got{{"cuda:0 memory.reserved", 1000}, {"cuda:1 memory.reserved", 64},
                      {"cuda:0 memory.reserved", 3000}, {"cuda:0 memory.reserved", 2000},
                      {"cuda:0 memory.reserved", 0}}));
  EXPECT_EQ(t.processes.at(0).pid, 42);
  const Diagnostic* d = find_diag(t, DiagnosticKind::Note, "before the capture");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 1u);
}

TEST_F(NsysImport, MissingRequiredColumnNamesTableAndColumn) {
  const fs::path p = make_db("nostream.sqlite", R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1, 2, 0, 1, 5, 16777216, 0, 0);
)sql");
  Trace t;
  const Status st = import_nsys(p, t);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find(p.string()), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("'streamId'"), std::string::npos) << st.error();
  EXPECT_EQ(st.error().find('\n'), std::string::npos);
}

TEST_F(NsysImport, DatabaseWithTriggersIsRefused) {
  // open_untrusted's defence applies to nsys files too.
  const fs::path p = make_db("trigger.sqlite", R"sql(
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE OSRT_API (start INTEGER, end INTEGER, globalTid INTEGER, nameId INTEGER, returnValue INTEGER);
CREATE TRIGGER t AFTER INSERT ON OSRT_API BEGIN DELETE FROM StringIds; END;
)sql");
  Trace t;
  const Status st = import_nsys(p, t);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("trigger"), std::string::npos) << st.error();
}

}  // namespace
