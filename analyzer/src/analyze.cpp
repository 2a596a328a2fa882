// analyze(): metrics, then the rules over them (analyze.h).
#include "tracetune/analyzer/analyze.h"

#include <utility>

namespace tt::analyzer {

Analysis analyze(const trace::Trace& t, const Options& opt, std::string source) {
  Analysis a;
  a.options = opt;
  a.source = std::move(source);
  a.clock_domain = t.clock_domain;
  a.events = t.event_count();
  a.metrics = compute_metrics(t, opt);
  a.findings = run_rules(a.metrics);
  a.hang = diagnose_hang(t);
  return a;
}

}  // namespace tt::analyzer
