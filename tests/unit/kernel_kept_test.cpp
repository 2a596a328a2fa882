#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"
#include "tracetune/tuner/kernel_bench.h"
#include "tracetune/tuner/trial.h"

#include <cmath>

using namespace tt::tuner;

namespace {

tt::Result<std::vector<std::pair<std::string, Value>>> kept(const std::string& text) {
  tt::testing::TempDir dir;
  const auto path = dir.path() / "kept.txt";
  std::ofstream(path) << text;
  auto cat = builtin_catalogue();
  EXPECT_TRUE(static_cast<bool>(cat));
  return read_kept_kernels(path, cat.value());
}

TEST(KernelKept, ReadsKnobValuesTheCatalogueAllows) {
  auto r = kept("kernels.cross_entropy=\"tracetune\"\noptimizer.foreach=true\n\n");
  ASSERT_TRUE(static_cast<bool>(r)) << r.error();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].first, "kernels.cross_entropy");
  EXPECT_EQ(std::get<std::string>((*r)[0].second), "tracetune");
  EXPECT_EQ(std::get<bool>((*r)[1].second), true);
}

TEST(KernelKept, RefusesUnknownKnobsAndValues) {
  for (const char* bad : {"kernels.gelu=\"tracetune\"\n", "kernels.layernorm=\"triton\"\n", "kernels.layernorm\n",
                          "torch.num_threads=3\n"}) {
    auto r = kept(bad);
    ASSERT_FALSE(static_cast<bool>(r)) << bad;
    EXPECT_NE(r.error().find("is not a knob value of the catalogue"), std::string::npos) << r.error();
  }
}

TEST(KernelKept, SubstitutionCatalogueIsCompiledIn) {
  const std::string text = kBuiltinSubstitutionsToml;
  for (const char* id : {"id = \"layernorm\"", "id = \"cross_entropy\"", "id = \"optimizer\""})
    EXPECT_NE(text.find(id), std::string::npos) << id;
}

}  // namespace

namespace {

TEST(LossParity, WithinToleranceAtEveryCommonStep) {
  EXPECT_EQ(loss_mismatch({10.0, 9.5, 9.0}, {10.0000001, 9.5, 9.0, 8.9}, 1e-4), "");
  const std::string why = loss_mismatch({10.0, 9.5, 9.0}, {10.0, 9.6, 9.0}, 1e-4);
  EXPECT_NE(why.find("loss at step 1"), std::string::npos) << why;
  EXPECT_NE(loss_mismatch({}, {1.0}, 1e-4).find("no loss recorded"), std::string::npos);
  EXPECT_NE(loss_mismatch({1.0}, {std::nan("")}, 1e-4), "");  // a NaN loss never matches
}

TEST(LossParity, RecordedLossesInTimeOrder) {
  tt::trace::Trace t;
  const auto loss = t.strings.intern("tracetune.loss"), other = t.strings.intern("samples/s");
  for (auto [ts, name, v] : {std::tuple{30, loss, 3.0}, {10, loss, 1.0}, {20, other, 99.0}, {20, loss, 2.0}}) {
    t.counters.ts.push_back(ts);
    t.counters.track.push_back(0);
    t.counters.name.push_back(name);
    t.counters.value.push_back(v);
  }
  EXPECT_EQ(recorded_losses(t), (std::vector<double>{1.0, 2.0, 3.0}));
}

}  // namespace
