// The substitution catalogue (tuner/knobs/substitutions.toml, compiled in) as the tuner needs
// it: how each entry shows in a trace. `tune --kernels` measures only the entries whose
// kernels (GPU traces) or framework ops (aten:: ranges) take at least `min_share` of the
// step time; the micro-benchmarks and parity checks themselves run in the job's Python
// (plugins/python/tracetune/_kernel_bench.py, which checks the rest of each entry).
#pragma once

#include <string>
#include <vector>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::tuner {

struct Substitution {
  std::string id;    // "cross_entropy"
  std::string knob;  // "kernels.cross_entropy"
  std::vector<std::string> kernel_patterns, op_patterns;
  double min_share = 0;
};

Result<std::vector<Substitution>> parse_substitutions(std::string_view toml_text, std::string_view source);
Result<std::vector<Substitution>> builtin_substitutions();

struct SubstitutionShare {
  std::string id;
  double share = 0;     // matching time / step time (union of intervals per track)
  bool matched = false; // share >= min_share
};

// `has_op_data`: the trace has kernels or aten:: op ranges (a CPU recording by `tracetune
// record` has neither: then nothing can be matched and every entry is worth measuring).
std::vector<SubstitutionShare> substitution_shares(const trace::Trace& t, const std::vector<Substitution>& subs,
                                                   bool* has_op_data);

// The shape each entry's ops ran at most often in the trace (ties: the larger), from the
// counters "shape.<op>.<rows>x<cols>" (summed values: calls) that the Python integration
// records in the first steps and the Kineto importer derives from "Input Dims": {id, "ROWSxCOLS"}
// for the entries one of whose op_patterns the op contains, in catalogue order.
std::vector<std::pair<std::string, std::string>> substitution_shapes(const trace::Trace& t,
                                                                     const std::vector<Substitution>& subs);

}  // namespace tt::tuner
