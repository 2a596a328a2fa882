// analyze(): the analyzer's stages in order (analyze.h; analyzer/CMakeLists.txt names the
// folders): metrics, then the paths over them, then the rules, then the attribution. Reports are written from the
// Analysis by report/ (analysis_json, analysis_text, ...).
#include "tracetune/analyzer/analyze.h"

#include <utility>

#include "stage.h"          // metrics/
#include "critical_path.h"  // paths/
#include "tracetune/analyzer/attribution.h"  // attribution/

namespace tt::analyzer {

Analysis analyze(const trace::Trace& t, const Options& opt, std::string source) {
  Analysis a;
  a.options = opt;
  a.source = std::move(source);
  a.clock_domain = t.clock_domain;
  a.events = t.event_count();
  // metrics/: each rank's metrics, memory and efficiency; collectives matched across ranks
  MetricsStage m = compute_metrics(t, opt);
  // paths/: each step's critical path and the what-if replays on it (not under HTA's definitions)
  if (!opt.hta_compat) compute_critical_paths(t, opt, m.groups, m.metrics);
  if (opt.rank < 0) missing_rank_notes(m.metrics);
  a.metrics = std::move(m.metrics);
  // rules/: findings with their evidence, gains and knobs
  a.findings = run_rules(a.metrics);
  // metrics/hang.cpp: which ranks are stuck, where, and which never arrived (flight recorder dumps)
  a.hang = diagnose_hang(t);
  // attribution/: the Python functions and lines behind findings and path segments (stack samples)
  attribute_findings(t, a.metrics, a.findings);
  return a;
}

StepPieces step_path_pieces(const trace::Trace& t, Options opt) {
  if (opt.hta_compat) return {};
  opt.path_pieces = true;
  opt.what_ifs = false;  // the replays change no path
  MetricsStage m = compute_metrics(t, opt);
  if (stopped(opt)) return {};
  compute_rank_paths(t, opt, m.groups, m.metrics);
  if (stopped(opt)) return {};
  StepPieces pieces(m.metrics.ranks.size());
  for (std::size_t i = 0; i < pieces.size(); ++i)
    for (auto& path : m.metrics.ranks[i].paths) pieces[i].push_back(std::move(path.pieces));
  return pieces;
}

const RankMetrics& whole_rank(const Analysis& a, std::size_t i) {
  return a.rank_store ? a.rank_store->rank(i) : a.metrics.ranks[i];
}

std::size_t steps_of(const Analysis& a, std::size_t i) {
  return a.rank_store ? a.rank_store->steps(i) : a.metrics.ranks[i].steps.size();
}

}  // namespace tt::analyzer
