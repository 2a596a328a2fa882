// The job's sampled autograd graphs and the knobs they rule out (graph_ops.h).
#include "tracetune/tuner/graph_ops.h"

#include <string_view>

#include <fmt/format.h>

#include "tracetune/tuner/knobs.h"

namespace tt::tuner {

namespace {

// The sum of every sample of counter `name` (0: none).
double counter_total(const trace::Trace& t, std::string_view name) {
  const trace::StringId id = t.strings.find(name);
  double sum = 0;
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (t.counters.name[i] == id) sum += t.counters.value[i];
  return sum;
}

}  // namespace

GraphOps graph_ops(const trace::Trace& t) {
  GraphOps g;
  g.nodes = counter_total(t, "graph.nodes");
  g.compiled = counter_total(t, "graph.ops.compiled");
  for (std::string_view family : kOpFamilies)
    g.families[std::string(family)] = counter_total(t, fmt::format("graph.ops.{}", family));
  return g;
}

void drop_knobs_without_their_ops(const GraphOps& graph, TuneSummary& summary) {
  if (graph.nodes <= 0 || graph.compiled > 0) return;
  auto& plan = summary.plan;
  for (auto it = plan.begin(); it != plan.end();) {
    const std::string& family = it->knob->acts_on;
    if (family.empty() || graph.count(family) > 0) {
      ++it;
      continue;
    }
    summary.skipped.push_back(fmt::format("{}: not tried: the job's autograd graphs ({:.0f} nodes over its first steps) hold no {}",
                                          it->knob->id, graph.nodes, family));
    it = plan.erase(it);
  }
}

}  // namespace tt::tuner
