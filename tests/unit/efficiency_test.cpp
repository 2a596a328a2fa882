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
// aten::matmul wrapping the mm (not counted twice).
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
        "args": {{"Input Dims": [[64], [8, 8], [8, 64], [], []], "Input type": ["float"], "flops": 1000000000}}}})",
                      i ? ", " : "", i, ts, ts + 100, ts + 110, ts + 700);
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
  const std::string path = std::string(TT_SHARED_DATA_DIR) + "/kineto/hta/a100_rank0_of16.json.gz";
  ASSERT_TRUE(trace::import_kineto(path, t).ok());
  t.finalize();
  const auto a = analyze(t, Options{}, path);
  ASSERT_FALSE(a.metrics.ranks.empty());
  const Efficiency& e = a.metrics.ranks[0].efficiency;
  EXPECT_EQ(e.ops, 25u);  // 15 aten::mm + 10 aten::addmm with Input Dims
  EXPECT_GT(e.flops_per_step, 1e9);
  EXPECT_GE(e.mfu, 0);
  EXPECT_LT(e.mfu, 0.05);  // a communication-heavy job: its GEMMs are a sliver of the step
}

}  // namespace
}  // namespace tt::analyzer
