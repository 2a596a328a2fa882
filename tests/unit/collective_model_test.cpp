// The α–β fit, nccl-tests' bus bandwidth, the all-reduce cost formulas and the DDP bucket
// simulator, on sweeps generated from known parameters (so the answers are known exactly).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <tuple>

#include "tracetune/tuner/collective_model.h"

using namespace tt::tuner;

namespace {

// A ring all-reduce sweep on `ranks` GPUs whose links have hop latency a (us) and b us/byte.
std::vector<SweepPoint> ring_sweep(int ranks, double a, double b, double noise = 0) {
  std::vector<SweepPoint> pts;
  int i = 0;
  for (std::uint64_t bytes = 8; bytes <= (1ull << 30); bytes *= 4, ++i) {
    const double p = ranks;
    const double t = 2 * (p - 1) * a + 2 * (p - 1) / p * static_cast<double>(bytes) * b;
    pts.push_back({"allreduce", "ring", "simple", bytes, ranks, t * (1 + noise * ((i % 2) ? 1 : -1))});
  }
  return pts;
}

}  // namespace

TEST(CollectiveModel, BusBandwidthFollowsNcclTests) {
  SweepPoint p{"allreduce", "ring", "simple", 1'000'000'000, 8, 10'000};
  EXPECT_DOUBLE_EQ(algbw_gbs(p), 100);
  EXPECT_DOUBLE_EQ(busbw_gbs(p), 175);  // x 2(8-1)/8
  p.collective = "allgather";
  EXPECT_DOUBLE_EQ(busbw_gbs(p), 87.5);  // x 7/8
  p.collective = "broadcast";
  EXPECT_DOUBLE_EQ(busbw_gbs(p), 100);
}

TEST(CollectiveModel, FitRecoversAlphaAndBetaAndTheLink) {
  auto ab = fit_alpha_beta(ring_sweep(4, 2.0, 1e-5));
  ASSERT_TRUE(ab.ok()) << ab.error();
  EXPECT_NEAR(ab->alpha_us, 12, 1e-6);        // 2(p-1) a
  EXPECT_NEAR(ab->beta_us_per_byte, 1.5e-5, 1e-12);  // 2(p-1)/p b
  EXPECT_LT(ab->max_rel_error, 1e-9);
  auto link = intra_link_from_ring(ab.value(), 4);
  ASSERT_TRUE(link.ok());
  EXPECT_NEAR(link->alpha_us, 2, 1e-6);
  EXPECT_NEAR(link->beta_us_per_byte, 1e-5, 1e-12);

  // 5% alternating noise: still close, and the error is reported.
  auto noisy = fit_alpha_beta(ring_sweep(4, 2.0, 1e-5, 0.05));
  ASSERT_TRUE(noisy.ok());
  EXPECT_NEAR(noisy->alpha_us, 12, 1.0);
  EXPECT_NEAR(noisy->beta_us_per_byte, 1.5e-5, 0.1e-5);
  EXPECT_GT(noisy->max_rel_error, 0.03);

  EXPECT_FALSE(fit_alpha_beta({}).ok());
  EXPECT_FALSE(fit_alpha_beta({{"allreduce", "ring", "simple", 64, 2, 5}, {"allreduce", "ring", "simple", 64, 2, 6}}).ok());
  EXPECT_FALSE(intra_link_from_ring(ab.value(), 1).ok());
}

TEST(CollectiveModel, AlgorithmChoiceBySizeAndScale) {
  Cluster one{1, 8, {2, 1e-5}, {20, 4e-5}};
  EXPECT_EQ(best_allreduce(one, 1 << 28).algo, AllReduceAlgo::Ring);  // one node: ring's bandwidth term wins
  EXPECT_NEAR(allreduce_time_us(AllReduceAlgo::Ring, one, 0), 28, 1e-9);

  Cluster two{2, 8, {2, 1e-5}, {20, 4e-5}};
  // ring latency: (2*15 - 4) * 2 + 4 * 20 = 132 us; tree: 2 (7*2 + 1*20) = 68 us
  EXPECT_NEAR(allreduce_time_us(AllReduceAlgo::Ring, two, 0), 132, 1e-9);
  EXPECT_NEAR(allreduce_time_us(AllReduceAlgo::Tree, two, 0), 68, 1e-9);
  EXPECT_LT(allreduce_time_us(AllReduceAlgo::Tree, two, 4096), allreduce_time_us(AllReduceAlgo::Ring, two, 4096));
  // large messages over a slow network: only 1/g of the data crosses it hierarchically
  EXPECT_EQ(best_allreduce(two, 1 << 28).algo, AllReduceAlgo::Hierarchical);

  Cluster many{64, 8, {2, 1e-5}, {20, 1e-5}};
  EXPECT_LT(allreduce_time_us(AllReduceAlgo::Tree, many, 1024), allreduce_time_us(AllReduceAlgo::Ring, many, 1024));
}

TEST(CollectiveModel, BucketSimulatorMatchesAHandComputation) {
  Cluster c{1, 2, {10, 0.001}, {}};  // ring on 2 GPUs: T(n) = 20 + 0.001 n us
  const double mib = 1024 * 1024;
  auto p = simulate_buckets(c, 4 * mib, 1000, 1);
  EXPECT_EQ(p.buckets, 4);
  const double t = 20 + 0.001 * mib;
  // ready at 250, 500, 750, 1000; each all-reduce waits for the previous one
  EXPECT_NEAR(p.exposed_us, 250 + 4 * t - 1000, 1e-6);
  EXPECT_NEAR(p.comm_us, 4 * t, 1e-6);
  auto one = simulate_buckets(c, 4 * mib, 1000, 25);
  EXPECT_EQ(one.buckets, 1);
  EXPECT_NEAR(one.exposed_us, 20 + 0.001 * 4 * mib, 1e-6);

  // Bandwidth-bound with a long backward: small buckets overlap it.
  Cluster fast_latency{1, 8, {0.5, 1e-6}, {}};
  auto b1 = best_bucket(fast_latency, 400 * mib, 200'000, {1, 5, 25, 100, 400});
  EXPECT_LE(b1.bucket_mb, 25);
  // Latency-bound (slow hops, fast links): few big buckets.
  Cluster slow_latency{4, 8, {50, 1e-8}, {500, 1e-8}};
  auto b2 = best_bucket(slow_latency, 400 * mib, 1000, {1, 5, 25, 100, 400});
  EXPECT_EQ(b2.bucket_mb, 400);
}

TEST(CollectiveModel, SweepJson) {
  auto pts = parse_sweep_json(R"({"points": [{"collective": "allreduce", "algorithm": "ring", "protocol": "simple",
                                   "bytes": 1024, "ranks": 8, "time_us": 12.5}]})");
  ASSERT_TRUE(pts.ok()) << pts.error();
  ASSERT_EQ(pts->size(), 1u);
  EXPECT_EQ((*pts)[0].bytes, 1024u);
  EXPECT_EQ((*pts)[0].ranks, 8);
  EXPECT_FALSE(parse_sweep_json("{").ok());
  EXPECT_FALSE(parse_sweep_json(R"({"points": [{"bytes": 1, "ranks": 0, "time_us": 1}]})").ok());
  EXPECT_FALSE(parse_sweep_json(R"({"x": 1})").ok());
}

// The [[nccl.table]] a `bench nccl --json` sweep suggests (tests/data/tuner/nccl_sweep_8gpu.json:
// hand-made in bench nccl's format, winners chosen per size; no GPU here to record one).
TEST(CollectiveModel, NcclTableFromSweepMergesRunsOfTheSameWinner) {
  std::ifstream in(std::string(TT_TEST_DATA_DIR) + "/tuner/nccl_sweep_8gpu.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto points = parse_sweep_json(text);
  ASSERT_TRUE(points.ok()) << points.error();
  const auto table = nccl_table_from_sweep(*points);
  constexpr std::uint64_t K = 1024, M = K * K;
  // collective, min, max, algorithm (tree 0, ring 1), protocol (ll 0, ll128 1, simple 2)
  const std::vector<std::tuple<int, std::uint64_t, std::uint64_t, int, int>> want = {
      {2, 0, 16 * M - 1, 1, 0},         // allgather: ring LL at 1K and 64K
      {2, 16 * M, 16 * M, 1, 2},        // ring Simple at 16M, the largest measured
      {4, 0, 64 * K - 1, 0, 0},         // allreduce: tree LL at 1K and 4K
      {4, 64 * K, M - 1, 0, 1},         // tree LL128 at 64K
      {4, M, 16 * M - 1, 1, 1},         // ring LL128 at 1M (the "bogus" algorithm is ignored)
      {4, 16 * M, 256 * M, 1, 2}};      // ring Simple at 16M and 256M
  ASSERT_EQ(table.size(), want.size()) << tt::tuner::nccl_table_text(table);
  for (std::size_t i = 0; i < want.size(); ++i) {
    const auto& e = table[i];
    EXPECT_EQ(std::make_tuple(e.collective, e.min_bytes, e.max_bytes, e.algorithm, e.protocol), want[i]) << i;
    EXPECT_EQ(e.channels, 0);
    EXPECT_EQ(e.nodes, 1);
    EXPECT_EQ(e.ranks, 8);
  }
  // the line the tuner plugin reads
  EXPECT_NE(nccl_table_text(table).find("allreduce 65536 1048575 tree ll128 0 1 8"), std::string::npos);
  EXPECT_TRUE(nccl_table_from_sweep({}).empty());
}
