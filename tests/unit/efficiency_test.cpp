// Kernel efficiency (docs/analysis.md, "Kernel efficiency"): GEMM FLOPs from Kineto's shapes
// (record_shapes) or its own counts (with_flops), per step, and the MFU against the datasheet
// peak of the trace's GPU.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/trace/importers.h"

namespace tt::analyzer {
namespace {

// Four 10 ms steps on an H100; each runs one aten::mm of 4096x4096 by 4096x4096 in bf16
// (137.4 GFLOP) and one aten::addmm whose FLOPs the profiler counted (1e9), plus an
// aten::matmul wrapping the mm (not counted twice) and an elementwise aten::mul whose "flops"
// the profiler also gives (not a GEMM: once counted as one).
std::string kineto_gemms(const char* device) {
  std::string ev = fmt::format(R"({{"deviceProperties": [{{"id": 0, "name": "{}"}}], "traceEvents": [)", device);
  for (int i = 0; i < 4; ++i) {
    const long ts = 1000 + i * 10'000;
    ev += fmt::format(R"({}{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {},
      "dur": 10000}},
      {{"ph": "X", "cat": "cpu_op", "name": "aten::matmul", "pid": 1, "tid": 1, "ts": {}, "dur": 500,
        "args": {{"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}},
      {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {}, "dur": 400,
        "args": {{"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}},
      {{"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": 1, "tid": 1, "ts": {}, "dur": 100,
        "args": {{"Input Dims": [[64], [8, 8], [8, 64], [], []], "Input type": ["float"], "flops": 1000000000}}}},
      {{"ph": "X", "cat": "cpu_op", "name": "aten::mul", "pid": 1, "tid": 1, "ts": {}, "dur": 100,
        "args": {{"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["float"], "flops": 16777216}}}})",
                      i ? ", " : "", i, ts, ts + 100, ts + 110, ts + 700, ts + 900);
  }
  return ev + "]}";
}

Analysis analyse(const std::string& json) {
  trace::Trace t;
  auto st = trace::import_kineto_buffer(json, "gemms.json", t);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error());
  t.finalize();
  return analyze(t, Options{}, "gemms.json");
}

TEST(Efficiency, GemmFlopsPerStepAndMfuAgainstTheDatasheetPeak) {
  const auto a = analyse(kineto_gemms("NVIDIA H100 80GB HBM3"));
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_EQ(e.ops, 8u);  // mm and addmm in each of four steps; matmul not counted
  const double mm = 2.0 * 4096 * 4096 * 4096;
  EXPECT_DOUBLE_EQ(e.flops_per_step, mm + 1e9);
  // bf16 at 989.4 TFLOP/s + fp32 (CUDA cores) at 66.9, over a 10 ms step
  const double ideal = mm / 989.4e12 + 1e9 / 66.9e12;
  EXPECT_NEAR(e.mfu, ideal / 0.010, 1e-9);
  EXPECT_NEAR(e.achieved_tflops, (mm + 1e9) / 0.010 / 1e12, 1e-6);
  EXPECT_NE(e.peak.find("H100 SXM"), std::string::npos) << e.peak;
}

TEST(Efficiency, UnknownDeviceHasFlopsButNoMfu) {
  const auto a = analyse(kineto_gemms("Some Accelerator"));
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_GT(e.flops_per_step, 0);
  EXPECT_EQ(e.mfu, -1);
  EXPECT_TRUE(e.peak.empty());
}

TEST(Efficiency, RealA100TraceCarriesGemmShapes) {
  trace::Trace t;
  const std::string path = std::string(TT_CORPUS_DIR) + "/kineto/hta/a100_rank0_of16.json.gz";
  ASSERT_TRUE(trace::import_kineto(path, t).ok());
  t.finalize();
  const auto a = analyze(t, Options{}, path);
  ASSERT_FALSE(a.metrics.ranks.empty());
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_EQ(e.ops, 25u);  // 15 aten::mm + 10 aten::addmm with Input Dims
  EXPECT_GT(e.flops_per_step, 1e9);
  EXPECT_GE(e.mfu, 0);
  EXPECT_LT(e.mfu, 0.05);  // a communication-heavy job: its GEMMs are a sliver of the step
  // every GEMM op launched its kernel from inside its range: four kinds, 25 calls, under 19.5 TFLOP/s
  std::uint64_t calls = 0;
  for (const auto& op : e.roofline) {
    calls += op.calls;
    EXPECT_GT(op.gpu_time, 0);
    EXPECT_GT(op.efficiency(), 0);
    EXPECT_LE(op.bound_tflops, 19.5);
  }
  EXPECT_EQ(e.roofline.size(), 4u);
  EXPECT_EQ(calls, 25u);
}

TEST(Efficiency, GemmsAgainstTheirRooflines) {
  // an H100 SXM (989.4 BF16 TFLOP/s, 3.35 TB/s): a large GEMM bound by compute, a skinny one by
  // memory, each op launching its kernel (correlation) from inside its range
  std::string ev = R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0,
                       "dur": 10000})";
  auto gemm = [&](long ts, long m, long k, long n, long corr, long kernel_ts, long kernel_us) {
    ev += fmt::format(R"(, {{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {}, "dur": 50,
      "args": {{"Input Dims": [[{}, {}], [{}, {}]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}},
      {{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {}, "dur": 5,
        "args": {{"correlation": {}}}}},
      {{"ph": "X", "cat": "kernel", "name": "sm90_gemm_bf16", "pid": 0, "tid": 7, "ts": {}, "dur": {},
        "args": {{"correlation": {}, "device": 0, "stream": 7}}}})",
                      ts, m, k, k, n, ts + 10, corr, kernel_ts, kernel_us, corr);
  };
  gemm(100, 4096, 4096, 4096, 11, 200, 200);  // 137.4 GFLOP in 200 us: 687 TFLOP/s
  gemm(1000, 8, 4096, 4096, 12, 1100, 20);    // 268 MFLOP, 33.7 MB: 8.0 FLOP/B, bound 26.7 TFLOP/s
  const auto a = analyse(R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [)" + ev +
                         "]}");
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_EQ(e.bandwidth_tbs, 3.35);
  ASSERT_EQ(e.roofline.size(), 2u);
  const OpRoofline& big = e.roofline[0];  // most GPU time first
  EXPECT_EQ(big.op, "aten::mm");
  EXPECT_EQ(big.dtype, "bf16");
  EXPECT_EQ(big.gpu_time, 200'000);
  EXPECT_DOUBLE_EQ(big.flops, 2.0 * 4096 * 4096 * 4096);
  EXPECT_DOUBLE_EQ(big.bytes, 3.0 * 4096 * 4096 * 2);
  EXPECT_NEAR(big.achieved_tflops, 687.2, 0.1);
  EXPECT_DOUBLE_EQ(big.bound_tflops, 989.4);  // compute bound
  const OpRoofline& skinny = e.roofline[1];
  const double intensity = 2.0 * 8 * 4096 * 4096 / ((8.0 * 4096 * 2 + 4096.0 * 4096) * 2);
  EXPECT_NEAR(skinny.bound_tflops, intensity * 3.35, 1e-9);  // memory bound
  EXPECT_NEAR(skinny.achieved_tflops, 2.0 * 8 * 4096 * 4096 / 20e-6 / 1e12, 1e-6);
  EXPECT_LT(skinny.efficiency(), 0.6);
}

// At microsecond resolution a GEMM op often starts at the same timestamp as the op wrapping it
// (aten::matmul -> aten::mm): the roofline is the GEMM's own (the innermost op starting there),
// holding only the kernels launched inside it, not the wrapper's later copy kernel.
TEST(Efficiency, RooflineTakesTheInnermostOpStartingAtTheGemm) {
  const std::string json = R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 100, "dur": 10000},
    {"ph": "X", "cat": "cpu_op", "name": "aten::matmul", "pid": 1, "tid": 1, "ts": 100, "dur": 90},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50,
     "args": {"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110, "dur": 5,
     "args": {"correlation": 11}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 160, "dur": 5,
     "args": {"correlation": 12}},
    {"ph": "X", "cat": "kernel", "name": "sm90_gemm_bf16", "pid": 0, "tid": 7, "ts": 200, "dur": 200,
     "args": {"correlation": 11, "device": 0, "stream": 7}},
    {"ph": "X", "cat": "kernel", "name": "copy_kernel", "pid": 0, "tid": 7, "ts": 400, "dur": 300,
     "args": {"correlation": 12, "device": 0, "stream": 7}}]})";
  const auto a = analyse(json);
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  ASSERT_EQ(e.roofline.size(), 1u);
  EXPECT_EQ(e.roofline[0].op, "aten::mm");
  EXPECT_EQ(e.roofline[0].gpu_time, 200'000);
}

// Convolutions from their shapes (record_shapes=True, torch 2.x "Concrete Inputs"): forward
// 2·N·K·(output positions)·(C/groups)·(kernel positions); the backward op once per gradient its
// output_mask asks for. Here N=8, C=16 in 2 groups, K=32, 3x3, 32x32 input, stride 2, padding 1:
// 16x16 outputs.
TEST(Efficiency, ConvolutionFlopsFromShapes) {
  const double one = 2.0 * 8 * 32 * (16 * 16) * 8 * 9;
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 10000},
    {"ph": "X", "cat": "cpu_op", "name": "aten::conv2d", "pid": 1, "tid": 1, "ts": 10, "dur": 300,
     "args": {"Input Dims": [[8, 16, 32, 32], [32, 8, 3, 3], [32], [], [], [], []], "Input type": ["float"],
              "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "2"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 1, "tid": 1, "ts": 20, "dur": 200,
     "args": {"Input Dims": [[8, 16, 32, 32], [32, 8, 3, 3], [32], [], [], [], [], [], []], "Input type": ["float"],
              "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::convolution_backward", "pid": 1, "tid": 1, "ts": 500, "dur": 400,
     "args": {"Input Dims": [[8, 32, 16, 16], [8, 16, 32, 32], [32, 8, 3, 3], [], [], [], [], [], [], [], []],
              "Input type": ["float"],
              "Concrete Inputs": ["", "", "", "[32]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2",
                                  "[False, True, True]"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::convolution", "pid": 1, "tid": 1, "ts": 1000, "dur": 200,
     "args": {"Input Dims": [[8, 16, 32, 32], [16, 32, 3, 3], [], [], [], [], [], [], []], "Input type": ["float"],
              "Concrete Inputs": ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "True", "[1, 1]", "1"]}}]})";
  const auto a = analyse(json);
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_EQ(e.ops, 2u);  // convolution and its backward; conv2d wraps it, the transposed one is not counted
  EXPECT_DOUBLE_EQ(e.flops_per_step, one + one);  // forward + the weight's gradient (mask: False, True)
  ASSERT_EQ(e.flops_by_kind.size(), 1u);
  EXPECT_EQ(e.flops_by_kind[0].first, "conv");
}

// Attention from its shapes: the public op's forward (2·L·S·(E + Ev) per batch and head) and a
// backend's backward (twice that, its inputs the output's gradient, query and key); the
// backend's own forward op inside the public one is not counted again, and a key shared by
// several query heads (grouped-query attention, broadcast) is left uncounted.
TEST(Efficiency, AttentionFlopsFromShapes) {
  const double forward = 2.0 * 2 * 8 * 128 * 256 * (64 + 32);
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 10000},
    {"ph": "X", "cat": "cpu_op", "name": "aten::scaled_dot_product_attention", "pid": 1, "tid": 1, "ts": 10, "dur": 300,
     "args": {"Input Dims": [[2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 32], [], []], "Input type": ["c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention", "pid": 1, "tid": 1, "ts": 20,
     "dur": 200, "args": {"Input Dims": [[2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 32]], "Input type": ["c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::_scaled_dot_product_flash_attention_backward", "pid": 1, "tid": 1,
     "ts": 500, "dur": 400,
     "args": {"Input Dims": [[2, 8, 128, 32], [2, 8, 128, 64], [2, 8, 256, 64], [2, 8, 256, 32]], "Input type": ["c10::BFloat16"]}},
    {"ph": "X", "cat": "cpu_op", "name": "aten::scaled_dot_product_attention", "pid": 1, "tid": 1, "ts": 1000, "dur": 300,
     "args": {"Input Dims": [[2, 8, 128, 64], [2, 2, 256, 64], [2, 2, 256, 64]], "Input type": ["c10::BFloat16"]}}]})";
  const auto a = analyse(json);
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_EQ(e.ops, 2u);
  EXPECT_DOUBLE_EQ(e.flops_per_step, forward + 2 * forward);
  ASSERT_EQ(e.flops_by_dtype.size(), 1u);
  EXPECT_EQ(e.flops_by_dtype[0].first, "bf16");
}

}  // namespace
}  // namespace tt::analyzer
