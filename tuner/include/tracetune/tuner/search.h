// The search over knobs: only the knobs the analyzer's findings name, in order of the
// findings' estimated gain, each tried over its catalogue `values` one at a time on top of
// the best settings so far (coordinate descent), within a trial budget. A value is kept only
// when it beats the best so far by more than the measurement noise, so noise never picks a
// setting. Numerics-changing values are candidates only with allow_numerics.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tracetune/tuner/knobs.h"
#include "tracetune/tuner/trial.h"

namespace tt::tuner {

// What the search needs from one finding (analyzer::Finding, or a trials file's record).
struct FindingRef {
  std::string id;     // "data_loading"
  double gain_share = 0;  // estimated gain / step time
  std::vector<std::string> knobs;
};

struct KnobPlan {
  const Knob* knob = nullptr;
  std::vector<Value> values;            // candidates to try, catalogue order
  std::vector<std::string> findings;    // the findings that named it
};

// Knobs to search, in order: findings by gain (largest first), each finding's knobs in its
// order; knobs not in the catalogue, tables, knobs with no candidates, and (without
// allow_numerics) numerics-changing values are left out. `skipped` gets one line per knob
// left out and why.
std::vector<KnobPlan> plan_search(const std::vector<FindingRef>& findings, const Catalogue& catalogue,
                                  bool allow_numerics, std::vector<std::string>* skipped = nullptr);

struct SearchOptions {
  int max_trials = 12;        // including the baseline
  double min_gain = 0.03;     // a value must be at least this much faster (share of best median)
  int patience = 2;           // ordered numeric knobs: stop after this many values in a row clearly slower than the best
  // Early stop: a search trial ends after its warm-up and `early_stop_steps` steps when their
  // median is above early_stop_factor x the best median so far (0: off). Baseline and
  // confirmation runs always run in full.
  double early_stop_factor = 1.5;
  int early_stop_steps = 3;
  // Wall-time cap over the search and the confirmation (0: none): no trial starts once the time
  // spent plus the confirmation's expected cost (2 x confirm_pairs x the baseline's wall time)
  // reaches it.
  double budget_s = 0;
  int confirm_pairs = 0;
  std::function<void(const Trial&)> on_trial;  // after each trial (live table)
  std::function<void(int done, int total, const std::string& next)> on_start;  // before each trial
};

// A knob kept by the search: the speedup it brought where it was kept (the best before it vs
// its best value, both measured in this search).
struct KnobOutcome {
  std::string id;
  int trial = 0, reference_trial = 0;
  double measured_speedup = 1;
  int trial_steps = 0;   // steps run by all of this knob's trials (warm-up included): its cost
  double wall_s = 0;     // their wall time
};

struct SearchResult {
  std::vector<Trial> trials;  // every trial, in order; [0] is the baseline
  Candidate best;             // the chosen settings (empty: nothing beat the baseline)
  int best_trial = 0;         // index into trials
  std::vector<std::string> log;  // decisions in plain words ("dataloader.num_workers: 4 kept (1.9x)")
  bool stopped_early = false;    // budget exhausted or interrupted before every knob was tried
  std::vector<KnobOutcome> kept; // per knob kept, in the order kept
  int trial_steps() const;       // steps run by every trial (warm-up included)
  double wall_s() const;         // wall time of every trial
  double speedup() const;     // baseline median / best median (1 when unknown)
};

// Whether `b` is faster than `a` by more than the noise: the difference of the medians must
// exceed both min_gain x a.median and the notch half-widths of both (1.58 IQR / sqrt(n), the
// box-plot notch of McGill, Tukey & Larsen 1978, combined in quadrature).
bool significantly_faster(const StepStats& b, const StepStats& a, double min_gain);

// Runs the baseline (unless `baseline` is given: a trial already run, e.g. the recording that
// was analysed), then coordinate descent over `plan`. `stop` is polled between trials.
SearchResult search(const std::vector<KnobPlan>& plan, TrialRunner& runner, const SearchOptions& options,
                    const Trial* baseline = nullptr, const std::function<bool()>& stop = {});

// The search's choice measured again against the baseline: `pairs` interleaved runs (baseline
// then choice, then choice then baseline, ... so a slow drift of the machine cancels), each
// pair giving the ratio of the medians. The speedup is their geometric mean with a 95%
// Student-t interval on the log ratios; the choice is confirmed only when the whole interval is
// above 1 (a pair or less gives no interval: not confirmed).
struct Confirmation {
  int pairs_run = 0;
  std::vector<double> ratios;   // baseline median / choice median, one per measured pair
  double speedup = 1, low = 1, high = 1;
  bool confirmed = false;
  int last_baseline = -1, last_choice = -1;  // indices into the search's trials (for the diff)
};
struct SpeedupInterval {
  double mean = 1, low = 1, high = 1;
  bool defined = false;  // at least two ratios
};
SpeedupInterval speedup_interval(const std::vector<double>& ratios);

// Runs the pairs through `runner`, appending the trials (knob "confirm") to `result.trials`.
Confirmation confirm(const Candidate& choice, int pairs, TrialRunner& runner, SearchResult& result,
                     const SearchOptions& options, const std::function<bool()>& stop = {});

}  // namespace tt::tuner
