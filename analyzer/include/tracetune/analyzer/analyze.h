// The analyzer's front door: metrics + rules over a finalized Trace, and the report
// formats. The JSON document is versioned ("schema": "tracetune.analysis", "version": 1) and
// documented in docs/analysis.md; the GUI and the tuner read it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tracetune/analyzer/hang.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/analyzer/rules.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

inline constexpr int kReportVersion = 1;

struct Analysis {
  Options options;
  std::string source;        // the analysed file
  std::string clock_domain;
  std::size_t events = 0;
  Metrics metrics;
  std::vector<Finding> findings;
  std::optional<HangReport> hang;  // only when some rank is stuck inside a collective (hang.h)
};

Analysis analyze(const trace::Trace& t, const Options& opt, std::string source);

std::string render_json(const Analysis& a);
// The keys render_json can write, from its field tables, as dotted paths ("findings.evidence.what").
std::vector<std::string> analysis_json_fields();
std::string render_text(const Analysis& a, bool color);
std::string render_markdown(const Analysis& a);
// One self-contained page (inline styles, SVG charts, no scripts, no network).
std::string render_html(const Analysis& a);

}  // namespace tt::analyzer
