// The analyzer and the tuner agree: every finding category is one the knob catalogue knows,
// and every knob a finding names exists and says it addresses that category.
#include <gtest/gtest.h>

#include <algorithm>

#include "tracetune/analyzer/rules.h"
#include "tracetune/tuner/knobs.h"

namespace tt::analyzer {
namespace {

// A rank on which every per-rank rule fires.
RankMetrics everything_wrong(bool gpu, int compute_major) {
  RankMetrics r;
  r.rank = 0;
  r.has_gpu = gpu;
  r.has_steps = true;
  r.compute_major = compute_major;
  r.step_median = 1000;
  r.transfers.h2d_count = 1;
  r.gpu.communication = 500;
  r.gpu.busy = 1000;
  r.gpu.compute = 1000;
  r.gemm.fp32_simt = 500;
  r.memory_bound_kernels = 500;
  r.launch.kernel_median = 1000;
  for (int i = 0; i < 3; ++i) {
    StepMetrics s;
    s.number = i;
    s.start = i * 1000;
    s.end = s.start + 1000;
    s.data_wait = 300;
    s.idle_data = 300;
    s.h2d_exposed = 100;
    s.h2d_pageable = 100;
    s.idle_launch = 300;
    s.sync_wait = 100;
    s.exposed_communication = 200;
    s.compute = 600;
    s.fp32_gemm = 300;
    s.memory_bound_kernels = 300;
    r.steps.push_back(s);
  }
  // fragmented CUDA memory: 8 GiB reserved for a 2 GiB peak, with allocation retries
  MemoryDevice m;
  m.device = "cuda:0";
  m.peak = 2ll << 30;
  m.reserved_peak = 8ll << 30;
  m.alloc_retries = 3;
  r.memory.push_back(m);
  return r;
}

TEST(AnalyzerKnobs, EveryNamedKnobExistsAndAddressesItsFinding) {
  auto cat = tuner::builtin_catalogue();
  ASSERT_TRUE(cat) << cat.error();
  Metrics m;
  m.ranks.push_back(everything_wrong(true, 9));
  m.ranks.push_back(everything_wrong(true, 7));
  m.ranks.push_back(everything_wrong(false, -1));
  m.ranks[1].rank = 1;
  m.ranks[2].rank = 2;
  m.cross.ranks = 3;
  m.cross.step_median_median = 1000;
  m.cross.step_median_max = 2000;
  m.cross.step_spread = 1.0;
  m.cross.slowest_rank = 2;
  const auto findings = run_rules(m);
  std::vector<std::string> seen;
  for (const auto& f : findings) {
    const std::string_view c = to_string(f.category);
    seen.emplace_back(c);
    EXPECT_NE(std::find(std::begin(tuner::kFindingIds), std::end(tuner::kFindingIds), c), std::end(tuner::kFindingIds))
        << c;
    for (const auto& id : f.knobs) {
      const tuner::Knob* k = cat->find(id);
      ASSERT_NE(k, nullptr) << "finding " << c << " names unknown knob " << id;
      EXPECT_NE(std::find(k->addresses.begin(), k->addresses.end(), std::string(c)), k->addresses.end())
          << "knob " << id << " does not list " << c << " in its addresses";
    }
  }
  // every category was exercised
  for (std::string_view id : tuner::kFindingIds)
    EXPECT_NE(std::find(seen.begin(), seen.end(), std::string(id)), seen.end()) << "no rule fired for " << id;
}

}  // namespace
}  // namespace tt::analyzer
