// The pure parts of the GPU benches (gpu_bench.h): list parsing, the GEMM FLOP count, the
// 16-bit float conversions, nccl-tests' counts and bandwidths, and the JSON output, which
// must read back through the model's parser. The benches themselves need a GPU.
#include <gtest/gtest.h>

#include <cmath>

#include "tracetune/tuner/collective_model.h"
#include "tracetune/tuner/gpu_bench.h"

using namespace tt::tuner;

TEST(GpuBench, SizeListsAndMedian) {
  auto v = parse_size_list("8,1K,64M,1G");
  ASSERT_TRUE(v.ok()) << v.error();
  EXPECT_EQ(v.value(), (std::vector<std::uint64_t>{8, 1024, 64ull << 20, 1ull << 30}));
  EXPECT_FALSE(parse_size_list("8,,1K").ok());
  EXPECT_FALSE(parse_size_list("2G").ok());
  EXPECT_FALSE(parse_size_list("x").ok());
  auto d = default_nccl_sizes();
  ASSERT_EQ(d.size(), 28u);  // 2^3 .. 2^30
  EXPECT_EQ(d.front(), 8u);
  EXPECT_EQ(d.back(), 1ull << 30);

  EXPECT_DOUBLE_EQ(median({3, 1, 2}), 2);
  EXPECT_DOUBLE_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median({}), 0);
}

TEST(GpuBench, GemmSizesAndTflops) {
  auto s = parse_gemm_sizes("1024,4096,8192");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value(), (std::vector<int>{1024, 4096, 8192}));
  EXPECT_FALSE(parse_gemm_sizes("8").ok());
  EXPECT_FALSE(parse_gemm_sizes("1K").ok());
  EXPECT_FALSE(parse_gemm_sizes("65536").ok());
  EXPECT_FALSE(parse_gemm_sizes("").ok());
  // 2 n^3 flops: 8192^3 * 2 = 1.0995e12 in 10 ms = 109.95 TFLOP/s.
  EXPECT_NEAR(gemm_tflops(8192, 8192, 8192, 0.01), 109.95116, 1e-4);
  EXPECT_DOUBLE_EQ(gemm_tflops(1000, 2000, 500, 1.0), 2e-3);
  EXPECT_DOUBLE_EQ(gemm_tflops(1, 1, 1, 0), 0);
  GemmTrial t{"fp32", 4096, 0.002};
  EXPECT_NEAR(t.tflops(), 2.0 * 4096 * 4096 * 4096 / 0.002 / 1e12, 1e-9);
}

TEST(GpuBench, HalfAndBfloat16Bits) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_half_bits(0.0f), 0x0000);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7bff);  // the largest half
  EXPECT_EQ(float_to_half_bits(1e6f), 0x7c00);      // overflow: infinity
  EXPECT_EQ(float_to_half_bits(0.1f), 0x2e66);
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);  // the smallest subnormal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -14)), 0x0400);  // the smallest normal
  EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -26)), 0x0000);
  EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // halfway: to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);

  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  EXPECT_EQ(float_to_bf16_bits(3.14159265f), 0x4049);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // halfway: to even
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_TRUE((float_to_bf16_bits(std::nanf("")) & 0x7f) != 0);
}

TEST(GpuBench, GemmOutputHasSpeedupOverFp32) {
  const std::vector<GemmTrial> t = {{"fp32", 1024, 0.004}, {"tf32", 1024, 0.001}, {"bf16", 1024, 0.0005}, {"fp16", 1024, 0.0005}};
  const std::string j = gemm_bench_json(t);
  EXPECT_NE(j.find("\"format\": \"tf32\", \"m\": 1024, \"n\": 1024, \"k\": 1024"), std::string::npos) << j;
  EXPECT_NE(j.find("\"speedup_vs_fp32\": 4.000"), std::string::npos) << j;
  EXPECT_NE(j.find("\"speedup_vs_fp32\": 8.000"), std::string::npos) << j;
  const std::string s = gemm_bench_text(t);
  EXPECT_NE(s.find("8.00x"), std::string::npos) << s;
}

TEST(GpuBench, LaunchOutput) {
  LaunchResult r;
  r.kernels = 1000;
  r.repeats = 10;
  r.direct_host_us = 2.5;
  r.direct_e2e_us = 3.0;
  r.direct_gpu_us = 2.9;
  r.graph_host_us = 0.01;
  r.graph_e2e_us = 1.0;
  r.graph_gpu_us = 0.9;
  EXPECT_DOUBLE_EQ(r.graph_speedup(), 3.0);
  const std::string j = launch_bench_json(r);
  EXPECT_NE(j.find("\"direct\": {\"host_us\": 2.5000, \"e2e_us\": 3.0000"), std::string::npos) << j;
  EXPECT_NE(j.find("\"graph_speedup\": 3.000"), std::string::npos) << j;
  EXPECT_NE(launch_bench_text(r).find("3.00x faster"), std::string::npos);
  EXPECT_NE(launch_kernel_ptx().find(".entry tt_empty"), std::string_view::npos);
}

TEST(GpuBench, NcclNamesAndCounts) {
  auto a = parse_nccl_algos("ring,TREE,Ring");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value(), (std::vector<std::string>{"Ring", "Tree"}));
  EXPECT_FALSE(parse_nccl_algos("Butterfly").ok());
  auto p = parse_nccl_protos("ll128,simple");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.value(), (std::vector<std::string>{"LL128", "Simple"}));
  EXPECT_FALSE(parse_nccl_protos("LL64").ok());
  EXPECT_FALSE(parse_nccl_collectives("alltoall").ok());

  auto ar = nccl_counts("allreduce", 1 << 20, 8);
  EXPECT_EQ(ar.count, 262144u);
  EXPECT_EQ(ar.bytes, 1u << 20);
  EXPECT_EQ(ar.send_bytes, 1u << 20);
  auto ag = nccl_counts("allgather", 1 << 20, 8);  // each rank sends 1/8, receives all
  EXPECT_EQ(ag.count, 32768u);
  EXPECT_EQ(ag.send_bytes, 128u << 10);
  EXPECT_EQ(ag.recv_bytes, 1u << 20);
  EXPECT_EQ(ag.bytes, 1u << 20);
  auto rs = nccl_counts("reducescatter", 1 << 20, 8);
  EXPECT_EQ(rs.count, 32768u);
  EXPECT_EQ(rs.send_bytes, 1u << 20);
  EXPECT_EQ(rs.recv_bytes, 128u << 10);
  EXPECT_EQ(nccl_counts("allgather", 8, 8).count, 0u);  // less than a float per rank
  EXPECT_EQ(nccl_counts("allreduce", 10, 2).bytes, 8u);  // rounded down to whole floats
  EXPECT_EQ(nccl_counts("allgather", 100, 3).bytes, 96u);
}

TEST(GpuBench, NcclSweepJsonReadsBackIntoTheModel) {
  NcclSweep sw;
  sw.nccl_version = 22809;
  sw.ranks = 8;
  sw.points = {{"allreduce", "ring", "simple", 1u << 30, 8, 10000},
               {"allgather", "ring", "ll128", 1u << 20, 8, 50.5},
               {"reducescatter", "tree", "ll", 4096, 8, 12.25}};
  sw.skipped = {{"allgather", "tree", "ll", 64, "invalid usage \"x\""}};
  const std::string j = nccl_bench_json(sw);
  // nccl-tests: algbw = 2^30 B / 10 ms = 107.374 GB/s; all-reduce busbw x 2(8-1)/8 = 187.904.
  EXPECT_NE(j.find("\"algbw_gbs\": 107.3742"), std::string::npos) << j;
  EXPECT_NE(j.find("\"busbw_gbs\": 187.9048"), std::string::npos) << j;
  EXPECT_NE(j.find("\\\"x\\\""), std::string::npos) << j;  // the error string is escaped
  auto back = parse_sweep_json(j);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*back)[i].collective, sw.points[i].collective);
    EXPECT_EQ((*back)[i].algorithm, sw.points[i].algorithm);
    EXPECT_EQ((*back)[i].protocol, sw.points[i].protocol);
    EXPECT_EQ((*back)[i].bytes, sw.points[i].bytes);
    EXPECT_EQ((*back)[i].ranks, 8);
    EXPECT_NEAR((*back)[i].time_us, sw.points[i].time_us, 1e-4);
  }
  // all-gather busbw x (n-1)/n
  EXPECT_NEAR(busbw_gbs((*back)[1]), (1u << 20) / 50.5e3 * 7 / 8, 1e-9);

  // A ring all-reduce sweep written by the bench fits to the alpha and beta it was made from.
  NcclSweep ring;
  ring.ranks = 4;
  for (std::uint64_t b = 8; b <= (1ull << 30); b *= 4)
    ring.points.push_back({"allreduce", "ring", "simple", b, 4, 2 * 3 * 2.0 + 2 * 3.0 / 4 * static_cast<double>(b) * 1e-5});
  auto pts = parse_sweep_json(nccl_bench_json(ring));
  ASSERT_TRUE(pts.ok());
  auto ab = fit_alpha_beta(pts.value());
  ASSERT_TRUE(ab.ok());
  EXPECT_NEAR(ab->alpha_us, 12, 1e-3);
  EXPECT_NEAR(ab->beta_us_per_byte, 1.5e-5, 1e-10);
}
