// The knobs the job's sampled autograd graphs rule out (graph_ops.h).
#include <gtest/gtest.h>

#include <string>

#include "tracetune/tuner/graph_ops.h"
#include "tracetune/tuner/knobs.h"

using namespace tt::tuner;

namespace {

void add_counter(tt::trace::Trace& t, const std::string& name, double value) {
  t.counters.ts.push_back(0);
  t.counters.track.push_back(0);
  t.counters.name.push_back(t.strings.intern(name));
  t.counters.value.push_back(value);
}

TuneSummary plan_of(const Catalogue& cat, std::initializer_list<const char*> ids) {
  TuneSummary s;
  for (const char* id : ids) s.plan.push_back(KnobPlan{cat.find(id), {}, {"cpu_bound"}});
  return s;
}

std::string ids(const TuneSummary& s) {
  std::string out;
  for (const auto& p : s.plan) out += (out.empty() ? "" : ",") + p.knob->id;
  return out;
}

}  // namespace

TEST(GraphOps, CountersOfTheSampledStepsAddUp) {
  tt::trace::Trace t;
  add_counter(t, "graph.nodes", 40);
  add_counter(t, "graph.nodes", 41);
  add_counter(t, "graph.ops.convolution", 3);
  add_counter(t, "graph.ops.convolution", 3);
  add_counter(t, "shape.aten::layer_norm.8x16", 2);
  const GraphOps g = graph_ops(t);
  EXPECT_EQ(g.nodes, 81);
  EXPECT_EQ(g.count("convolution"), 6);
  EXPECT_EQ(g.count("attention"), 0);
  EXPECT_EQ(g.compiled, 0);
}

// A model without convolutions: channels_last would change nothing, so it is not tried (the
// bench's transformer kept it at 1.43-1.46x on one trial in 3 of 3 searches); a CNN without
// attention drops sdpa.backend. Knobs that act on any job stay.
TEST(GraphOps, KnobsForOpsTheGraphsLackAreNotTried) {
  const Catalogue cat = builtin_catalogue().value();
  ASSERT_EQ(cat.find("memory.channels_last")->acts_on, "convolution");
  ASSERT_EQ(cat.find("sdpa.backend")->acts_on, "attention");
  GraphOps transformer;
  transformer.nodes = 120;
  transformer.families = {{"convolution", 0}, {"attention", 6}};
  TuneSummary s = plan_of(cat, {"torch.num_threads", "memory.channels_last", "sdpa.backend", "optimizer.foreach"});
  drop_knobs_without_their_ops(transformer, s);
  EXPECT_EQ(ids(s), "torch.num_threads,sdpa.backend,optimizer.foreach");
  ASSERT_EQ(s.skipped.size(), 1u);
  EXPECT_EQ(s.skipped[0], "memory.channels_last: not tried: the job's autograd graphs (120 nodes over its first steps) hold no convolution");

  GraphOps cnn;
  cnn.nodes = 60;
  cnn.families = {{"convolution", 9}};
  s = plan_of(cat, {"memory.channels_last", "sdpa.backend"});
  drop_knobs_without_their_ops(cnn, s);
  EXPECT_EQ(ids(s), "memory.channels_last");
}

// No positive evidence, nothing left out: a trace whose graphs were not sampled (imported, or a
// job that never called backward), or whose graphs ran compiled regions (their ops hidden).
TEST(GraphOps, WithoutSampledOrWithCompiledGraphsEveryKnobStays) {
  const Catalogue cat = builtin_catalogue().value();
  for (const GraphOps& g : {GraphOps{}, GraphOps{80, 2, {}}}) {
    TuneSummary s = plan_of(cat, {"memory.channels_last", "sdpa.backend"});
    drop_knobs_without_their_ops(g, s);
    EXPECT_EQ(ids(s), "memory.channels_last,sdpa.backend");
    EXPECT_TRUE(s.skipped.empty());
  }
}

TEST(GraphOps, TheCatalogueRefusesAnUnknownOpFamily) {
  const std::string knob = "schema = 1\n[[knob]]\nid = \"memory.channels_last\"\nchanges = \"x\"\napply = \"python\"\ntype = \"bool\"\n"
                           "values = [false, true]\nacts_on = \"pooling\"\naddresses = [\"cpu_bound\"]\nrisk = \"none\"\n"
                           "doc = \"x\"\n";
  const auto r = parse_catalogue(knob, "k.toml");
  ASSERT_FALSE(static_cast<bool>(r));
  EXPECT_NE(r.error().find("acts_on"), std::string::npos) << r.error();
}
