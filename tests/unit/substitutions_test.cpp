#include <gtest/gtest.h>

#include "tracetune/tuner/substitutions.h"

using namespace tt::tuner;

namespace {

constexpr tt::trace::Ns kUs = 1000;

TEST(Substitutions, BuiltinCatalogueParses) {
  auto subs = builtin_substitutions();
  ASSERT_TRUE(static_cast<bool>(subs)) << subs.error();
  ASSERT_EQ(subs->size(), 3u);
  EXPECT_EQ((*subs)[1].id, "cross_entropy");
  EXPECT_EQ((*subs)[1].knob, "kernels.cross_entropy");
  EXPECT_FALSE((*subs)[1].op_patterns.empty());
}

TEST(Substitutions, RefusesBrokenEntriesNamingThem) {
  const std::string ok = "schema = 1\n[[substitution]]\nid = \"a\"\nknob = \"kernels.a\"\nkernel_patterns = [\"k\"]\n"
                         "op_patterns = [\"aten::a\"]\nmin_share = 0.1\n";
  EXPECT_TRUE(static_cast<bool>(parse_substitutions(ok, "s.toml")));
  for (auto [broken, expect] : {std::pair{"knob = \"kernels.a\"", "knob = \"torch.a\""},
                                std::pair{"min_share = 0.1", "min_share = 1.5"},
                                std::pair{"op_patterns = [\"aten::a\"]", "op_patterns = []"}}) {
    std::string text = ok;
    text.replace(text.find(broken), std::string(broken).size(), expect);
    auto r = parse_substitutions(text, "s.toml");
    ASSERT_FALSE(static_cast<bool>(r)) << text;
    EXPECT_NE(r.error().find("s.toml: substitution 1:"), std::string::npos) << r.error();
  }
  auto twice = parse_substitutions(ok + ok.substr(ok.find("[[substitution]]")), "s.toml");
  ASSERT_FALSE(static_cast<bool>(twice));
  EXPECT_NE(twice.error().find("listed twice"), std::string::npos);
}

// Two 100 us steps; cross-entropy ops take 30 us of host time (nested ops counted once),
// LayerNorm 2 us (below its min_share), nothing of the optimizer.
TEST(Substitutions, SharesOfStepTimeFromOpRanges) {
  tt::trace::Trace t;
  const auto user = t.strings.intern("op");
  for (int s = 0; s < 2; ++s) t.steps.push_span(s * 100 * kUs, 100 * kUs, 0, t.strings.intern("step"));
  auto op = [&](tt::trace::Ns start, tt::trace::Ns dur, const char* name) {
    t.ranges.push(start, dur, 0, t.strings.intern(name), tt::trace::RangeKind::UserAnnotation, user);
  };
  op(10 * kUs, 20 * kUs, "aten::cross_entropy_loss");
  op(11 * kUs, 15 * kUs, "aten::log_softmax");  // inside the one above
  op(140 * kUs, 40 * kUs, "aten::nll_loss_backward");
  op(50 * kUs, 4 * kUs, "aten::layer_norm");
  op(60 * kUs, 30 * kUs, "aten::mm");
  auto subs = builtin_substitutions();
  ASSERT_TRUE(static_cast<bool>(subs));
  bool op_data = false;
  const auto shares = substitution_shares(t, subs.value(), &op_data);
  EXPECT_TRUE(op_data);
  ASSERT_EQ(shares.size(), 3u);
  EXPECT_NEAR(shares[1].share, 0.30, 1e-9);  // (20 + 40) / 200
  EXPECT_TRUE(shares[1].matched);
  EXPECT_NEAR(shares[0].share, 0.02, 1e-9);
  EXPECT_FALSE(shares[0].matched);
  EXPECT_EQ(shares[2].share, 0.0);
}

TEST(Substitutions, NoOpLevelEventsIsSaid) {
  tt::trace::Trace t;
  t.steps.push_span(0, 100 * kUs, 0, t.strings.intern("step"));
  t.ranges.push(0, 50 * kUs, 0, t.strings.intern("DataLoader: waiting for batch"), tt::trace::RangeKind::UserAnnotation,
                t.strings.intern("tracetune"));
  bool op_data = true;
  auto subs = builtin_substitutions();
  ASSERT_TRUE(static_cast<bool>(subs));
  const auto shares = substitution_shares(t, subs.value(), &op_data);
  EXPECT_FALSE(op_data);
  for (const auto& s : shares) EXPECT_FALSE(s.matched);
}

TEST(Substitutions, ShapesFromCountersMostCallsFirstThenTheLarger) {
  tt::trace::Trace t;
  auto counter = [&](const std::string& name, double calls) {
    t.counters.ts.push_back(0);
    t.counters.track.push_back(0);
    t.counters.name.push_back(t.strings.intern(name));
    t.counters.value.push_back(calls);
  };
  counter("shape.aten::layer_norm.256x16", 3);
  counter("shape.aten::layer_norm.256x16", 3);   // summed over steps: 6 calls
  counter("shape.aten::layer_norm.8x4096", 5);
  counter("shape.aten::cross_entropy_loss.64x100", 1);
  counter("shape.aten::cross_entropy_loss.128x100", 1);  // a tie: the larger shape
  counter("shape.aten::mm.4x4", 9);                       // no entry replaces it
  counter("shape.aten::layer_norm.x16", 99);              // malformed names are ignored
  counter("shape.aten::layer_norm.12", 99);
  counter("host memory.rss", 1e9);
  auto subs = builtin_substitutions();
  ASSERT_TRUE(static_cast<bool>(subs));
  const auto shapes = substitution_shapes(t, subs.value());
  using Shapes = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(shapes, (Shapes{{"layernorm", "256x16"}, {"cross_entropy", "128x100"}}));
  EXPECT_TRUE(substitution_shapes(tt::trace::Trace{}, subs.value()).empty());
}

}  // namespace
