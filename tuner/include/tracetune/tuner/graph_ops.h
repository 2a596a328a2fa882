// What the job's autograd graphs hold, as the Python integration sampled them over the job's
// first steps (plugins/python/tracetune/_shapes.py): the knobs that act on an op family the job
// does not run are not tried.
#pragma once

#include <map>
#include <string>

#include "tracetune/trace/model.h"
#include "tracetune/tuner/tuned_writer.h"

namespace tt::tuner {

// Counted over the sampled steps' backward graphs ("graph.nodes", "graph.ops.<family>" for
// kOpFamilies, "graph.ops.compiled" counters).
struct GraphOps {
  double nodes = 0;     // nodes walked (0: not sampled: an imported trace, no backward call)
  double compiled = 0;  // nodes of compiled regions, whose ops one node hides
  std::map<std::string, double> families;  // op family -> nodes of it
  double count(const std::string& family) const {
    const auto it = families.find(family);
    return it == families.end() ? 0 : it->second;
  }
};

GraphOps graph_ops(const trace::Trace& t);

// Knobs that act on an op family (Knob::acts_on) the sampled graphs hold none of leave the
// plan, each said in summary.skipped: memory.channels_last for a model without convolutions,
// sdpa.backend for one without attention. Nothing is left out without positive evidence:
// graphs not sampled, or holding compiled regions, keep every knob.
void drop_knobs_without_their_ops(const GraphOps& graph, TuneSummary& summary);

}  // namespace tt::tuner
