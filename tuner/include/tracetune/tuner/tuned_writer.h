// Writing what the tuner found: tuned.toml (the format `tracetune run --config` reads, with
// comments saying why each setting is there) and the trials file (every trial as JSON).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tracetune/tuner/search.h"

namespace tt::tuner {

struct TuneSummary {
  std::string command;             // the job, as one line, secrets redacted (redacted_command)
  std::string version;             // tracetune's
  std::vector<FindingRef> findings;
  std::vector<KnobPlan> plan;
  SearchResult result;
  int warmup = 0, steps = 0;       // per trial
  std::vector<std::string> skipped;  // knobs not searched and why
  std::vector<std::string> added;    // knobs the tuner searched beyond the findings' plan, and why
  std::optional<Confirmation> confirmation;  // absent: --confirm 0, or nothing to confirm
  MachineLimits machine;           // bounds the predictions (cores 0: unknown, no bound)

  // The settings the config applies: the search's choice, unless the confirmation refused it.
  const Candidate& written() const;
  bool refused() const { return confirmation && !confirmation->confirmed; }
};

// The analyzer's prediction for a knob: 1 / (1 - the largest estimated gain share of the
// findings that named it, capped at 0.99); for a set of knobs, over the distinct findings they
// address, with the shares summed (capped at 0.9). 1 when no finding gave a gain. Bounded by the
// machine where the knobs share its cores (predict_candidate, with the search's chosen values).
double predicted_speedup(const TuneSummary& summary, const std::vector<std::string>& knob_ids);

// tuned.toml: [meta] (command, speedup and its 95% interval when confirmed, predicted speedup,
// trials, findings, numerics), [meta.knobs."<id>"] per chosen knob (findings, predicted and
// measured speedup) and [settings] with a comment above each setting (what it changes, the
// findings behind it, the measured effect, "CHANGES NUMERICS" where it does). Settings are the
// search's best; none when nothing beat the baseline or the confirmation found no gain (the
// file then says so and applies nothing).
std::string tuned_toml(const TuneSummary& summary, const Catalogue& catalogue);

// The trials file, every trial and what the search decided (tracetune.trials, its schema in
// docs/tuning.md), written from one table of fields (tuned_writer.cpp).
std::string trials_json(const TuneSummary& summary);
// Every key trials_json writes, as dotted paths ("trials.median_ms"); the schema test holds them
// to docs/tuning.md.
std::vector<std::string> trials_json_fields();

}  // namespace tt::tuner
