// The NCCL tuner plugin, loaded the way NCCL loads it (dlopen, then the exported
// ncclTunerPlugin_v5 / _v4 structs) and driven through its entry points with cost tables
// shaped like NCCL 2.28's. The tables come from tt::tuner::nccl_table_text, so the writer
// (tracetune run) and the reader (the plugin) are tested together.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "../../plugins/nccl-tuner/nccl_tuner_abi.h"
#include "tracetune/tuner/tuned_config.h"

namespace fs = std::filesystem;
using tt::tuner::NcclTableEntry;

namespace {

constexpr int kAllReduce = 4, kAllGather = 2;
constexpr int kTree = 0, kRing = 1, kLL = 0, kLL128 = 1, kSimple = 2;

struct Plugin {
  void* handle = nullptr;
  const tt_ncclTuner_v5_t* v5 = nullptr;
  const tt_ncclTuner_v4_t* v4 = nullptr;
  Plugin() {
    handle = dlopen(TT_NCCL_TUNER_LIB, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    v5 = static_cast<const tt_ncclTuner_v5_t*>(dlsym(handle, "ncclTunerPlugin_v5"));
    v4 = static_cast<const tt_ncclTuner_v4_t*>(dlsym(handle, "ncclTunerPlugin_v4"));
  }
  ~Plugin() {
    if (handle != nullptr) dlclose(handle);
  }
};

// A cost table like NCCL's: every combination available at some cost, some unavailable.
struct CostTable {
  float cost[TT_NCCL_NUM_ALGORITHMS][TT_NCCL_NUM_PROTOCOLS];
  CostTable() {
    for (int a = 0; a < TT_NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < TT_NCCL_NUM_PROTOCOLS; ++p) cost[a][p] = 10.0f + static_cast<float>(a * 3 + p);
    cost[4][kLL] = TT_NCCL_ALGO_PROTO_IGNORE;  // NVLS has no LL
  }
  float** ptr() { return reinterpret_cast<float**>(cost); }
  // the (algo, proto) NCCL would pick: the lowest non-negative cost
  std::pair<int, int> cheapest() const {
    std::pair<int, int> best{-1, -1};
    float lowest = 1e30f;
    for (int a = 0; a < TT_NCCL_NUM_ALGORITHMS; ++a)
      for (int p = 0; p < TT_NCCL_NUM_PROTOCOLS; ++p)
        if (cost[a][p] >= 0 && cost[a][p] < lowest) lowest = cost[a][p], best = {a, p};
    return best;
  }
};

namespace {
int g_warnings = 0;
std::string g_last;
void logger(tt_ncclDebugLogLevel level, unsigned long, const char*, int, const char* fmt, ...) {
  if (level != TT_NCCL_LOG_WARN) return;
  ++g_warnings;
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  g_last = buf;
}
}  // namespace

class NcclTuner : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(plugin.handle, nullptr) << dlerror();
    ASSERT_NE(plugin.v5, nullptr);
    ASSERT_NE(plugin.v4, nullptr);
    char templ[] = "/tmp/tt-nccl-tuner-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir = templ;
  }
  void TearDown() override {
    unsetenv("TRACETUNE_NCCL_TABLE");
    fs::remove_all(dir);
  }
  void write_table(const std::string& text) {
    const fs::path p = dir / "table.txt";
    std::ofstream(p) << text;
    setenv("TRACETUNE_NCCL_TABLE", p.c_str(), 1);
  }
  Plugin plugin;
  fs::path dir;
};

std::string sample_table() {
  NcclTableEntry small{kAllReduce, 0, 65536, kTree, kLL, 0, -1, -1};
  NcclTableEntry big{kAllReduce, 65537, 1ull << 30, kRing, kSimple, 16, -1, -1};
  NcclTableEntry two_nodes{kAllGather, 0, 1ull << 30, kRing, kLL128, 4, 2, -1};
  return tt::tuner::nccl_table_text({small, big, two_nodes});
}

}  // namespace

TEST_F(NcclTuner, V5MarksTheTableEntryCheapestAndSetsChannels) {
  write_table(sample_table());
  EXPECT_STREQ(plugin.v5->name, "tracetune");
  void* ctx = nullptr;
  tt_ncclTunerConstants_v5_t constants{};
  tt_ncclNvlDomainInfo_v5_t nvl{1, 8, 8};
  ASSERT_EQ(plugin.v5->init(&ctx, 42, 8, 1, nullptr, &nvl, &constants), tt_ncclSuccess);
  ASSERT_NE(ctx, nullptr);

  CostTable t;
  int channels = 0;
  ASSERT_EQ(plugin.v5->getCollInfo(ctx, kAllReduce, 4096, 1, t.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels),
            tt_ncclSuccess);
  EXPECT_EQ(t.cheapest(), std::make_pair(kTree, kLL));
  EXPECT_EQ(t.cost[kTree][kLL], 0.0f);
  EXPECT_EQ(t.cost[kRing][kSimple], 10.0f + 3 + 2);  // others untouched
  EXPECT_EQ(channels, 0);                            // 0 in the table: NCCL's choice

  CostTable big;
  channels = 0;
  plugin.v5->getCollInfo(ctx, kAllReduce, 64 << 20, 1, big.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels);
  EXPECT_EQ(big.cheapest(), std::make_pair(kRing, kSimple));
  EXPECT_EQ(channels, 16);

  // another collective, or a size outside every entry: NCCL's table is left exactly as it was
  CostTable other, untouched;
  channels = 0;
  plugin.v5->getCollInfo(ctx, 0 /*broadcast*/, 4096, 1, other.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels);
  EXPECT_EQ(std::memcmp(other.cost, untouched.cost, sizeof other.cost), 0);
  EXPECT_EQ(channels, 0);
  CostTable beyond;
  plugin.v5->getCollInfo(ctx, kAllReduce, (1ull << 30) + 1, 1, beyond.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0,
                         &channels);
  EXPECT_EQ(std::memcmp(beyond.cost, untouched.cost, sizeof beyond.cost), 0);
  // the entry for 2 nodes does not apply to this 1-node communicator
  CostTable gather;
  plugin.v5->getCollInfo(ctx, kAllGather, 4096, 1, gather.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels);
  EXPECT_EQ(std::memcmp(gather.cost, untouched.cost, sizeof gather.cost), 0);
  EXPECT_EQ(plugin.v5->finalize(ctx), tt_ncclSuccess);
}

TEST_F(NcclTuner, V4FallbackAndNodeFilter) {
  write_table(sample_table());
  void* ctx = nullptr;
  ASSERT_EQ(plugin.v4->init(16, 2, nullptr, &ctx), tt_ncclSuccess);
  CostTable t;
  int channels = 0;
  plugin.v4->getCollInfo(ctx, kAllGather, 1 << 20, 1, t.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels);
  EXPECT_EQ(t.cheapest(), std::make_pair(kRing, kLL128));
  EXPECT_EQ(channels, 4);
  EXPECT_EQ(plugin.v4->destroy(ctx), tt_ncclSuccess);
}

TEST_F(NcclTuner, UnavailableCombinationKeepsNcclsChoice) {
  write_table(tt::tuner::nccl_table_text({NcclTableEntry{kAllReduce, 0, 100, 4 /*NVLS*/, kLL, 8, -1, -1}}));
  void* ctx = nullptr;
  ASSERT_EQ(plugin.v4->init(8, 1, nullptr, &ctx), tt_ncclSuccess);
  CostTable t, untouched;
  int channels = 0;
  plugin.v4->getCollInfo(ctx, kAllReduce, 10, 1, t.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels);
  EXPECT_EQ(std::memcmp(t.cost, untouched.cost, sizeof t.cost), 0);
  EXPECT_EQ(channels, 0);
  plugin.v4->destroy(ctx);
}

TEST_F(NcclTuner, SmallerTableThanNcclsIsIndexedByItsOwnShape) {
  // NCCL passes numAlgo/numProto; an entry outside them is ignored, and rows use numProto
  write_table(tt::tuner::nccl_table_text({NcclTableEntry{kAllReduce, 0, 100, kRing, kLL128, 0, -1, -1}}));
  void* ctx = nullptr;
  ASSERT_EQ(plugin.v4->init(8, 1, nullptr, &ctx), tt_ncclSuccess);
  float narrow[2][2] = {{5, 6}, {7, 8}};
  int channels = 0;
  plugin.v4->getCollInfo(ctx, kAllReduce, 10, 1, reinterpret_cast<float**>(narrow), 2, 2, 0, &channels);
  EXPECT_EQ(narrow[1][1], 0.0f);  // ring (1), LL128 (1) in a [2][2] table
  EXPECT_EQ(narrow[0][0], 5.0f);
  plugin.v4->destroy(ctx);
}

TEST_F(NcclTuner, BadTableKeepsNcclDefaultsWithOneWarning) {
  const std::string good = sample_table();
  const std::string bad_tables[] = {
      "not a table\n",
      good + "allreduce 0 10 ring\n",                     // too few fields
      good + "allreduce 0 10 warp simple 0 -1 -1\n",      // unknown algorithm
      good + "allreduce 10 0 ring simple 0 -1 -1\n",      // min above max
      good + "allreduce 0 10 ring simple 0 -1 -1 extra\n",
      "",
  };
  std::string err;
  for (const auto& text : bad_tables) {
    write_table(text);
    void* ctx = nullptr;
    g_warnings = 0;
    testing::internal::CaptureStderr();
    ASSERT_EQ(plugin.v4->init(8, 1, logger, &ctx), tt_ncclSuccess);
    err += testing::internal::GetCapturedStderr();
    EXPECT_EQ(g_warnings, 1) << text;
    CostTable t, untouched;
    int channels = 0;
    plugin.v4->getCollInfo(ctx, kAllReduce, 4096, 1, t.ptr(), TT_NCCL_NUM_ALGORITHMS, TT_NCCL_NUM_PROTOCOLS, 0, &channels);
    EXPECT_EQ(std::memcmp(t.cost, untouched.cost, sizeof t.cost), 0) << text;
    EXPECT_EQ(channels, 0);
    plugin.v4->destroy(ctx);
  }
  // stderr gets one line per process (NCCL's log gets every warning): this test or an earlier one
  EXPECT_LE(std::count(err.begin(), err.end(), '\n'), 1) << err;
  if (!err.empty()) {
    EXPECT_NE(err.find("NCCL keeps its own choices"), std::string::npos) << err;
  }
}


TEST_F(NcclTuner, MissingTableWarnsThroughNcclsLogger) {
  setenv("TRACETUNE_NCCL_TABLE", (dir / "absent.txt").c_str(), 1);
  g_warnings = 0;
  void* ctx = nullptr;
  testing::internal::CaptureStderr();
  ASSERT_EQ(plugin.v4->init(8, 1, logger, &ctx), tt_ncclSuccess);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_warnings, 1);
  EXPECT_NE(g_last.find("absent.txt: No such file"), std::string::npos) << g_last;
  plugin.v4->destroy(ctx);
}
