// The NCCL profiler plugin, loaded with dlopen as NCCL loads it and driven through its
// exported ncclProfiler_v5 / ncclProfiler_v4 tables with realistic descriptors. This test
// executable exports the collector's GPU C API (tracetune_emit_gpu_record & co.) itself, so the
// plugin's dlsym(RTLD_DEFAULT) finds a fake collector that writes a .ttr file; the file is then
// merged and the `collectives` table checked.
#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include "nccl_sim.h"
#include "tracetune/collector/merge.h"
#include "../unit/record_file_writer.h"

using namespace tt::collector;
using tt::collector::testing::RecordFileWriter;
using tt::collector::testing::TempDir;
using tt::testing::SimChannel;

namespace {
std::mutex g_mu;
RecordFileWriter* g_writer = nullptr;  // the fake collector's file; nullptr = "not recording"
std::vector<NcclCollRecord> g_colls;   // what the plugin emitted, in order
std::atomic<int> g_emits{0};
}  // namespace

extern "C" __attribute__((visibility("default"))) int tracetune_is_recording() { return g_writer != nullptr; }
extern "C" __attribute__((visibility("default"))) std::uint32_t tracetune_intern_string(const char* s, std::size_t n) {
  const std::lock_guard lock(g_mu);
  return g_writer == nullptr ? 0 : g_writer->str(std::string_view(s, n), static_cast<std::uint32_t>(::syscall(SYS_gettid)));
}
extern "C" __attribute__((visibility("default"))) int tracetune_emit_gpu_record(std::uint32_t type, const void* p,
                                                                                std::uint32_t size) {
  const std::lock_guard lock(g_mu);
  if (g_writer == nullptr) return 0;
  ++g_emits;
  if (type == static_cast<std::uint32_t>(RecordType::NcclColl) && size == sizeof(NcclCollRecord))
    g_colls.push_back(*static_cast<const NcclCollRecord*>(p));
  g_writer->add_raw(static_cast<std::uint16_t>(type), p, size, static_cast<std::uint32_t>(::syscall(SYS_gettid)));
  return 1;
}

namespace {

struct Plugin {
  void* lib = dlopen(TT_NCCL_PROFILER_LIB, RTLD_NOW | RTLD_LOCAL);
  const ncclProfiler_v5_t* v5 = lib ? static_cast<const ncclProfiler_v5_t*>(dlsym(lib, "ncclProfiler_v5")) : nullptr;
  const ncclProfiler_v4_t* v4 = lib ? static_cast<const ncclProfiler_v4_t*>(dlsym(lib, "ncclProfiler_v4")) : nullptr;
};
Plugin& plugin() {
  static Plugin p;
  return p;
}

struct Trace {
  tt::trace::Trace t;
  MergeReport report;
};

Trace merge_file(RecordFileWriter& w, const TempDir& dir) {
  w.exit(w.header.start_mono_ns + 1'000'000'000'000, 0);
  w.write(dir.path() / "node-a" / "proc-77-1.ttr");
  Trace out;
  const std::filesystem::path dirs[] = {dir.path()};
  auto t = merge_raw(dirs, {}, out.report);
  EXPECT_TRUE(t) << (t ? "" : t.error());
  if (t) out.t = std::move(t.value());
  return out;
}

// One test's record file: the plugin writes into it (g_writer) until merged() ends it.
struct Recording {
  explicit Recording(std::int64_t pid) : w(pid) { g_writer = &w; }
  ~Recording() { g_writer = nullptr; }
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;
  Trace merged() {
    g_writer = nullptr;
    return merge_file(w, dir);
  }
  TempDir dir;
  RecordFileWriter w;
};

std::string str(const tt::trace::Trace& t, tt::trace::StringId id) { return std::string(t.strings.get(id)); }

}  // namespace

TEST(NcclProfilerPlugin, ExportsV5AndV4) {
  ASSERT_NE(plugin().lib, nullptr) << dlerror();
  ASSERT_NE(plugin().v5, nullptr);
  ASSERT_NE(plugin().v4, nullptr);
  EXPECT_STREQ(plugin().v5->name, "tracetune");
}

TEST(NcclProfilerPlugin, WithoutCollectorAsksForNothing) {
  ASSERT_NE(plugin().v5, nullptr);
  const auto* p = plugin().v5;
  void* ctx = reinterpret_cast<void*>(0x1);
  int mask = -1;
  g_writer = nullptr;
  EXPECT_EQ(p->init(&ctx, 0x1234, &mask, "world", 1, 2, 0, nullptr), 0);
  EXPECT_EQ(mask, 0);
  EXPECT_EQ(ctx, nullptr);
  // NCCL never calls events with mask 0, but stray calls with null / foreign handles are harmless.
  void* h = reinterpret_cast<void*>(0x5);
  ncclProfilerEventDescr_v5_t d{};
  d.type = kNcclProfileColl;
  EXPECT_EQ(p->startEvent(nullptr, &h, &d), 0);
  EXPECT_EQ(h, nullptr);
  int foreign = 0;
  EXPECT_EQ(p->stopEvent(&foreign), 0);
  EXPECT_EQ(p->recordEventState(&foreign, kNcclProfilerKernelChStop, nullptr), 0);
  EXPECT_EQ(p->finalize(nullptr), 0);
  EXPECT_EQ(g_emits.load(), 0);
}

TEST(NcclProfilerPlugin, CollectivesAndP2pReachTheCollectivesTable) {
  ASSERT_NE(plugin().v5, nullptr);
  const auto* p = plugin().v5;
  Recording rec(77);
  g_colls.clear();

  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p->init(&ctx, 0xabcdef0123456789ull, &mask, "dp_group", 1, 4, 2, nullptr), 0);
  ASSERT_NE(ctx, nullptr);
  EXPECT_EQ(mask, static_cast<int>(kNcclProfileColl | kNcclProfileP2p | kNcclProfileKernelCh));

  // Groups and API events (parents NCCL starts for what we asked for) get no handle.
  ncclProfilerEventDescr_v5_t group{};
  group.type = kNcclProfileGroupApi;
  void* gh = reinterpret_cast<void*>(0x9);
  p->startEvent(ctx, &gh, &group);
  EXPECT_EQ(gh, nullptr);

  const std::uint64_t g0 = 5'000'000'000'000ull;  // GPU globaltimer, unrelated to our clock
  // AllReduce on 2 channels: GPU span = first start .. last stop over the channels.
  void* h = tt::testing::sim_collective(p, ctx, 2, "AllReduce", 41, 1'048'576, "ncclFloat32", "RING", "SIMPLE", -1,
                                        {{0, g0 + 1000, g0 + 90'000}, {1, g0 + 1500, g0 + 95'000}});
  EXPECT_NE(h, nullptr);
  // Broadcast with a root, bf16, one channel.
  tt::testing::sim_collective(p, ctx, 2, "Broadcast", 7, 4096, "ncclBfloat16", "TREE", "LL", 3,
                              {{0, g0 + 200'000, g0 + 210'000}});
  // Send to peer 3 over 1 channel.
  tt::testing::sim_p2p(p, ctx, 2, "Send", 1000, "ncclInt8", 3, {{4, g0 + 300'000, g0 + 301'000}});
  EXPECT_EQ(p->finalize(ctx), 0);

  // What the plugin wrote: per operation a host record, then a device record.
  ASSERT_EQ(g_colls.size(), 6u);
  EXPECT_EQ(g_colls[0].side, NcclSide::Host);
  EXPECT_EQ(g_colls[1].side, NcclSide::Device);
  EXPECT_EQ(g_colls[1].start_ns, static_cast<std::int64_t>(g0 + 1000));
  EXPECT_EQ(g_colls[1].end_ns, static_cast<std::int64_t>(g0 + 95'000));
  EXPECT_GE(g_colls[1].observed_ns, g_colls[0].end_ns);

  auto m = rec.merged();
  const auto& t = m.t;
  const auto& c = t.collectives;
  ASSERT_EQ(c.size(), 6u);
  EXPECT_EQ(m.report.nccl_operations, 6u);
  EXPECT_EQ(m.report.nccl_processes, 1u);

  // Host side of the AllReduce.
  EXPECT_EQ(str(t, c.name[0]), "ncclAllReduce");
  EXPECT_EQ(str(t, c.op[0]), "allreduce");
  EXPECT_EQ(c.count[0], 1'048'576u);
  EXPECT_EQ(c.bytes[0], 4u * 1'048'576u);
  EXPECT_EQ(str(t, c.dtype[0]), "ncclFloat32");
  EXPECT_EQ(str(t, c.algorithm[0]), "RING");
  EXPECT_EQ(str(t, c.protocol[0]), "SIMPLE");
  EXPECT_EQ(c.channels[0], 2);
  EXPECT_EQ(c.seq[0], 41);
  EXPECT_EQ(c.root[0], -1);
  EXPECT_EQ(c.peer[0], -1);
  EXPECT_EQ(c.group_size[0], 4);
  EXPECT_EQ(str(t, c.communicator[0]), "abcdef0123456789");
  EXPECT_EQ(c.side[0], tt::trace::CollectiveSide::Host);
  EXPECT_EQ(c.start[0], g_colls[0].start_ns);
  EXPECT_EQ(c.dur[0], g_colls[0].end_ns - g_colls[0].start_ns);

  // Device side: same descriptor, GPU duration kept exactly, mapped onto the host clock no
  // later than the host saw it end.
  EXPECT_EQ(c.side[1], tt::trace::CollectiveSide::Device);
  EXPECT_EQ(str(t, c.op[1]), "allreduce");
  EXPECT_EQ(c.seq[1], 41);
  EXPECT_EQ(c.dur[1], 94'000);
  for (int i : {1, 3, 5}) {
    ASSERT_EQ(c.side[i], tt::trace::CollectiveSide::Device) << i;
    EXPECT_LE(c.start[i] + c.dur[i], g_colls[i].observed_ns) << i;
  }
  // The offset is the smallest (observed - GPU stop): one device row ends exactly when seen.
  const int device_rows[] = {1, 3, 5};
  const bool one_exact = std::any_of(std::begin(device_rows), std::end(device_rows), [&](int i) {
    return c.start[i] + c.dur[i] == g_colls[i].observed_ns;
  });
  EXPECT_TRUE(one_exact);
  // GPU order and gaps are preserved: the Broadcast starts 199,000 ns after the AllReduce.
  EXPECT_EQ(c.start[3] - c.start[1], 199'000);

  EXPECT_EQ(str(t, c.op[2]), "broadcast");
  EXPECT_EQ(c.root[2], 3);
  EXPECT_EQ(c.bytes[2], 2u * 4096u);
  EXPECT_EQ(str(t, c.algorithm[2]), "TREE");
  EXPECT_EQ(str(t, c.protocol[2]), "LL");

  EXPECT_EQ(str(t, c.op[4]), "send");
  EXPECT_EQ(c.peer[4], 3);
  EXPECT_EQ(c.seq[4], -1);
  EXPECT_EQ(c.bytes[4], 1000u);
  EXPECT_EQ(c.channels[4], 1);

  // Device rows are on the proxy thread that saw them, host rows on the enqueuing thread.
  EXPECT_NE(c.track[0], c.track[1]);
  bool named = false;
  for (const auto& [k, v] : t.metadata) named |= k == "nccl_comm:abcdef0123456789" && v == "dp_group";
  EXPECT_TRUE(named);
}

TEST(NcclProfilerPlugin, V4TableWorksWithItsOwnLayout) {
  ASSERT_NE(plugin().v4, nullptr);
  const auto* p = plugin().v4;
  Recording rec(77);
  g_colls.clear();
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p->init(&ctx, &mask, "tp", 0x42, 2, 8, 5, nullptr), 0);
  ASSERT_NE(mask, 0);
  ncclProfilerEventDescr_v4_t d{};
  d.type = static_cast<std::uint8_t>(kNcclProfileColl);
  d.rank = 5;
  d.coll.seqNumber = 3;
  d.coll.func = "AllGather";
  d.coll.count = 10;
  d.coll.root = 0;
  d.coll.datatype = "ncclFloat64";
  d.coll.nChannels = 0;  // no channel events: host side only
  d.coll.algo = "RING";
  d.coll.proto = "LL128";
  void* h = nullptr;
  p->startEvent(ctx, &h, &d);
  ASSERT_NE(h, nullptr);
  p->stopEvent(h);
  p->finalize(ctx);
  auto m = rec.merged();
  const auto& c = m.t.collectives;
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(str(m.t, c.op[0]), "allgather");
  EXPECT_EQ(c.bytes[0], 80u);
  EXPECT_EQ(c.group_size[0], 8);
  EXPECT_EQ(str(m.t, c.protocol[0]), "LL128");
  EXPECT_EQ(str(m.t, c.communicator[0]), "0000000000000042");
}

TEST(NcclProfilerPlugin, PoolExhaustionIsCountedNotFatal) {
  ASSERT_NE(plugin().v5, nullptr);
  const auto* p = plugin().v5;
  Recording rec(77);
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p->init(&ctx, 1, &mask, "", 1, 2, 0, nullptr), 0);
  // Operations whose channels never report keep their slot: start far more than the pool holds.
  std::vector<void*> held;
  int refused = 0;
  for (int i = 0; i < 9000; ++i) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = kNcclProfileColl;
    d.coll.func = "AllReduce";
    d.coll.datatype = "ncclFloat32";
    d.coll.nChannels = 1;
    void* h = nullptr;
    p->startEvent(ctx, &h, &d);
    if (h == nullptr) ++refused;
    held.push_back(h);
  }
  EXPECT_GT(refused, 0);
  for (void* h : held) p->stopEvent(h);
  p->finalize(ctx);
  auto m = rec.merged();
  std::uint64_t dropped = 0;
  for (const auto& d : m.t.diagnostics)
    if (d.kind == tt::trace::DiagnosticKind::Dropped && d.reason.find("nccl profiler") != std::string::npos)
      dropped += d.count;
  EXPECT_EQ(dropped, static_cast<std::uint64_t>(refused));
  EXPECT_EQ(m.t.collectives.size(), held.size() - static_cast<std::size_t>(refused));
}

// NCCL 2.28 on an H100 (tests/data/gpu/h100_cpp_nccl.db): a send/recv to oneself says 16
// channels but no KernelCh event ever comes. Its slot must be free once NCCL stops it, or a
// job doing that 8192 times loses every later operation.
TEST(NcclProfilerPlugin, SendToSelfHoldsNoSlot) {
  ASSERT_NE(plugin().v5, nullptr);
  const auto* p = plugin().v5;
  Recording rec(78);
  void* ctx = nullptr;
  int mask = 0;
  ASSERT_EQ(p->init(&ctx, 7, &mask, "", 1, 1, 0, nullptr), 0);
  constexpr int kOps = 10'000;  // more than the pool holds
  int refused = 0;
  for (int i = 0; i < kOps; ++i) {
    ncclProfilerEventDescr_v5_t d{};
    d.type = kNcclProfileP2p;
    d.rank = 0;
    d.p2p.func = i % 2 ? "Recv" : "Send";
    d.p2p.datatype = "ncclFloat32";
    d.p2p.count = 262144;
    d.p2p.peer = 0;
    d.p2p.nChannels = 16;
    void* h = nullptr;
    p->startEvent(ctx, &h, &d);
    if (h == nullptr) {
      ++refused;
      continue;
    }
    p->stopEvent(h);
    // a channel event NCCL might still send for it is ignored, not counted against the slot
    ncclProfilerEventDescr_v5_t ch{};
    ch.type = kNcclProfileKernelCh;
    ch.parentObj = h;
    void* hc = nullptr;
    p->startEvent(ctx, &hc, &ch);
    EXPECT_EQ(hc, nullptr);
  }
  p->finalize(ctx);
  EXPECT_EQ(refused, 0);
  auto m = rec.merged();
  EXPECT_EQ(m.t.collectives.size(), static_cast<std::size_t>(kOps));
}
