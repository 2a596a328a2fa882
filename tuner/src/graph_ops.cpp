// The job's sampled autograd graphs and the knobs they rule out (graph_ops.h).
#include "tracetune/tuner/graph_ops.h"

#include <map>
#include <string_view>

#include <fmt/format.h>

#include "tracetune/tuner/knobs.h"

namespace tt::tuner {

GraphOps graph_ops(const trace::Trace& t) {
  // each counter of interest by its string id, summed in one pass over the counter table
  std::map<trace::StringId, double*> sums;
  GraphOps g;
  for (std::string_view family : kOpFamilies) g.families[std::string(family)] = 0;
  auto sum_into = [&](std::string_view name, double* total) {
    if (const trace::StringId id = t.strings.find(name); id != trace::StringTable::kNotFound) sums[id] = total;
  };
  sum_into("graph.nodes", &g.nodes);
  sum_into("graph.ops.compiled", &g.compiled);
  for (auto& [family, n] : g.families) sum_into(fmt::format("graph.ops.{}", family), &n);
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (const auto it = sums.find(t.counters.name[i]); it != sums.end()) *it->second += t.counters.value[i];
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
