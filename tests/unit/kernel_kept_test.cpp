#include <gtest/gtest.h>

#include <fstream>

#include "temp_dir.h"
#include "tracetune/tuner/kernel_bench.h"

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
  for (const char* bad : {"kernels.gelu=\"tracetune\"\n", "kernels.layernorm=\"liger\"\n", "kernels.layernorm\n",
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
