// Writing what the tuner found: tuned.toml (the format `tracetune run --config` reads, with
// comments saying why each setting is there) and the trials file (every trial as JSON).
#pragma once

#include <string>
#include <vector>

#include "tracetune/tuner/search.h"

namespace tt::tuner {

// TOML spellings (basic string with escapes; a quoted dotted key).
std::string toml_string(std::string_view s);

// A config holding exactly `candidate` (for a trial): [meta] numerics = true when a value
// changes numerics, then [settings].
std::string candidate_toml(const Candidate& candidate, const Catalogue& catalogue);

struct TuneSummary {
  std::string command;             // the job, as one line
  std::string version;             // tracetune's
  std::vector<FindingRef> findings;
  std::vector<KnobPlan> plan;
  SearchResult result;
  int warmup = 0, steps = 0;       // per trial
  std::vector<std::string> skipped;  // knobs not searched and why
};

// tuned.toml: [meta] (command, speedup, trials, findings, numerics) and [settings] with a
// comment above each setting (what it changes, the findings behind it, the measured effect,
// "CHANGES NUMERICS" where it does). Settings are the search's best; none when nothing beat
// the baseline (the file then says so and applies nothing).
std::string tuned_toml(const TuneSummary& summary, const Catalogue& catalogue);

// Every trial: {"schema": "tracetune.trials", "version": 1, "command", "baseline_ms",
// "best_trial", "speedup", "trials": [{index, knob, settings{}, status, median_ms, p10_ms,
// p25_ms, p75_ms, p90_ms, spread_ms, steps, exit_code, wall_s, note}]}.
std::string trials_json(const TuneSummary& summary);

}  // namespace tt::tuner
