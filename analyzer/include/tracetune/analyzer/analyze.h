// The analyzer's front door: metrics + rules over a finalized Trace, and the report
// formats. The JSON document is versioned ("schema": "tracetune.analysis", "version": 1) and
// documented in docs/analysis.md; the GUI and the tuner read it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tracetune/analyzer/hang.h"
#include "tracetune/analyzer/metrics.h"
#include "tracetune/analyzer/rules.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

inline constexpr int kReportVersion = 1;

// Where a report reads each rank whole. The combine of a sharded analysis (shard.h) keeps each
// rank's steps, critical paths and per-step memory on disk, not in Metrics::ranks, so that its
// memory does not grow with the steps; a report reads them back one rank at a time.
class RankStore {
 public:
  virtual ~RankStore() = default;
  // Rank i of Metrics::ranks whole: valid until the next call.
  virtual const RankMetrics& rank(std::size_t i) = 0;
  // Its number of steps (RankMetrics::steps.size()), without reading it.
  virtual std::size_t steps(std::size_t i) const = 0;
};

struct Analysis {
  Options options;
  std::string source;        // the analysed file
  std::string clock_domain;
  std::size_t events = 0;
  Metrics metrics;
  std::vector<Finding> findings;
  std::optional<HangReport> hang;  // only when some rank is stuck inside a collective (hang.h)
  // Set by the combine: metrics.ranks then hold every rank without its steps, paths and
  // per-step memory (MemoryDevice::step_peak, ::step_reserved), which whole_rank() reads back.
  std::shared_ptr<RankStore> rank_store;
};

// Rank i of a.metrics.ranks with its steps, paths and per-step memory (from a.rank_store when
// set): valid until the next call. And its number of steps.
const RankMetrics& whole_rank(const Analysis& a, std::size_t i);
std::size_t steps_of(const Analysis& a, std::size_t i);

Analysis analyze(const trace::Trace& t, const Options& opt, std::string source);

// Every step's critical-path pieces: per rank of analyze(t, opt)'s Metrics::ranks, per path of
// its RankMetrics::paths, the StepPath::pieces that analyze keeps with opt.path_pieces, in the
// same order. Computed again from the trace without the rest of the analysis (no what-if
// replays, no job path, no rules), for a caller that analysed with path_pieces off so as not to
// hold them and draws the paths later (the GUI's critical-path overlay). Empty under hta_compat.
// Once *opt.stop is set it returns early with what it has (incomplete: the caller drops it).
using StepPieces = std::vector<std::vector<std::vector<PathPiece>>>;
StepPieces step_path_pieces(const trace::Trace& t, Options opt);

std::string render_json(const Analysis& a);
// The same, handed to `sink` in pieces of about 1 MiB as it is written: a report larger than
// memory (a combine's JSON lists every step of every rank) is never held whole.
void render_json(const Analysis& a, const std::function<void(std::string_view)>& sink);
// The keys render_json can write, from its field tables, as dotted paths ("findings.evidence.what").
std::vector<std::string> analysis_json_fields();
std::string render_text(const Analysis& a, bool color);
std::string render_markdown(const Analysis& a);
// One self-contained page (inline styles, SVG charts, no scripts, no network).
std::string render_html(const Analysis& a);

}  // namespace tt::analyzer
