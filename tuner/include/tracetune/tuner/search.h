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

// What the machine allows: candidate values beyond it are not tried (more DataLoader workers
// than 2x the cores, more intra-op threads than cores, more workers than the memory holds
// copies of the job; CUDA-only values without a GPU).
struct MachineLimits {
  int cores = 0;                 // CPUs this process may run on (sched_getaffinity); 0: unknown (no bound)
  double memory_bytes = 0;       // available memory (MemAvailable); 0: unknown
  double job_rss_bytes = 0;      // the job's largest resident set in the analysed trace; 0: unknown
  int gpus = 0;                  // devices in the analysed trace
  // What keeping DataLoader workers alive saves, from the analysed trace's epochs
  // (analyzer::EpochFacts::persistent_speedup: its loader forks workers at each epoch's start
  // and the later epochs' first steps wait for them); 1 where the trace shows none.
  double persistent_workers_speedup = 1;
  // The job's own setting of knobs, as its trace shows them (the Python integration's epoch
  // marks: DataLoader workers, prefetch, persistence, intra-op threads): a candidate value equal
  // to one is not tried (it changes nothing), and prefetch or persistence beside the job's own
  // zero workers is pointless.
  std::vector<std::pair<std::string, Value>> job_values;
  const Value* job_value(std::string_view id) const;
};
MachineLimits this_machine();    // cores and available memory; the trace's facts are added by tune

// The job's own optimizer.foreach and optimizer.fused, from the Python integration's optimizer
// description (the "tracetune.optimizer <JSON>" mark): an option the job leaves unset is what
// PyTorch makes of it (foreach on for parameters on a GPU, off on the CPU; fused off). None
// when the description lacks the option or its parameter groups disagree.
std::vector<std::pair<std::string, Value>> optimizer_job_values(std::string_view description, bool on_gpu);

// Knobs searched together: their values are tried as combinations (a grid), because their
// effects interact. DataLoader workers x prefetch x persistent workers x intra-op threads
// (workers and threads share the cores), DDP bucket size x gradient compression; every other
// knob is a group of its own (coordinate descent, as before).
struct SearchGroup {
  std::vector<const KnobPlan*> knobs;
  std::vector<Candidate> candidates;   // assignments of this group's knobs, best predicted first
  std::vector<double> predicted;       // predicted speedup of each candidate (same order)
  std::string name() const;            // "dataloader.num_workers x torch.num_threads"
};

// The speedup a candidate's settings can be expected to bring (1: none), from the analyzer's
// gain shares as they are (findings) and the machine: see predict_candidate in search.cpp.
double predict_candidate(const Candidate& c, const std::vector<KnobPlan>& plan, const std::vector<FindingRef>& findings,
                         const MachineLimits& machine);

// Why a candidate oversubscribes the cores ("" when it does not): more than one intra-op
// (torch.num_threads) or OpenMP thread beside DataLoader workers, with workers + threads above
// the cores. Each worker is a busy process and each thread a busy core in a data-bound step: on
// a 2-core machine with one core held by other work, 2 threads beside workers measured 4-7x
// slower (bench/tune_noise_figures.md). Workers alone keep their own bound (2 x the cores).
// unset_threads: the intra-op threads of a candidate that leaves them as the job has them (the
// job's own count where its trace shows it: loader1w's 2 workers beside its own 2 threads
// measured 0.77x).
std::string beyond_cores(const Candidate& c, int cores, std::int64_t unset_threads = 1);

// The groups of `plan` (in plan order), each with its candidates bounded by the machine and
// ordered by predicted speedup (ties: fewer settings first, then grid order). `plan` gets
// torch.num_threads added beside dataloader.num_workers when the findings did not name it
// (they share the cores), said in `added`; `skipped` gets a line per value the machine rules out.
std::vector<SearchGroup> group_plan(std::vector<KnobPlan>& plan, const Catalogue& catalogue,
                                    const std::vector<FindingRef>& findings, const MachineLimits& machine,
                                    std::vector<std::string>* skipped = nullptr, std::vector<std::string>* added = nullptr);

struct SearchOptions {
  int max_trials = 12;        // including the baseline
  double min_gain = 0.03;     // a value must be at least this much faster (share of best median)
  int patience = 2;           // stop a group after this many candidates in a row clearly slower than its best
  // Early stop: a search trial ends after its warm-up and `early_stop_steps` steps when their
  // median is above early_stop_factor x the best median so far (0: off). Baseline and
  // confirmation runs always run in full.
  double early_stop_factor = 1.5;
  int early_stop_steps = 3;
  // Wall-time cap over the search and the confirmation (0: none): no trial starts once the time
  // spent plus the confirmation's expected cost (2 x min_pairs x the baseline's wall time)
  // reaches it.
  double budget_s = 0;
  // With a budget and a confirmation, this share of budget_s is kept for the confirmation at
  // least (more when 2 x min_pairs x the baseline's wall time is more): on a busy machine the
  // sequential pairs need time to decide, and a search that spent it all confirms nothing.
  double confirm_share = 0.5;
  int confirm_pairs = 0;      // the confirmation's most pairs (0: none)
  int confirm_min_pairs = 3;  // its first look
  // Baselines beside candidates: a warm baseline run starts the search (the first run, cold,
  // is only analysed), and the baseline runs again after every `baseline_every` candidates;
  // each candidate is judged against its neighbouring baseline runs (0: one baseline only).
  int baseline_every = 0;
  // Near-ties re-measured: when a group ends with more than one candidate that beat the best
  // before it and none of which is significantly faster than the group's best, up to `runoff`
  // of them (the fastest first) run once more, interleaved with the baseline, and the one with
  // the best median over all its runs is kept. One trial of 12 steps on a busy machine does not
  // tell 1.8x from 2.2x, and the first in the group's order kept the tie. And when the group's
  // best beat the best before it by less than twice the baselines' run-to-run drift, that best
  // before it runs again too, and the group keeps nothing unless its best wins again over both
  // runs of each (0 or 1: neither).
  int runoff = 3;
  // The trace's prediction of a candidate's speedup over the job as written (predict_candidate
  // with the plan, the findings and the machine; unset: no prediction). A group whose
  // candidates, each set on top of the best so far, are all predicted to beat the best's own
  // prediction by less than min_gain is not tried (the best already takes the gain the trace
  // shows for those findings), unless the group alone is predicted no gain at all (the trace
  // estimates none for its findings: it is searched, not ruled out).
  std::function<double(const Candidate&)> predict;
  // Intra-op (or OpenMP) threads beside DataLoader workers beyond these cores are not tried,
  // also when they come from two groups (0: no bound). See beyond_cores.
  int cores = 0;
  std::function<void(const Trial&)> on_trial;  // after each trial (live table)
  std::function<void(int done, int total, const std::string& next)> on_start;  // before each trial
};

// A knob kept by the search: the speedup it brought where it was kept (the best before it vs
// its best value, both measured in this search, each against its neighbouring baselines).
struct KnobOutcome {
  std::string id;
  int trial = 0, reference_trial = 0;
  double measured_speedup = 1;
  int trial_steps = 0;   // steps run by all of this knob's (group's) trials (warm-up included): its cost
  double wall_s = 0;     // their wall time
};

struct SearchResult {
  std::vector<Trial> trials;  // every trial, in order; [0] is the first (analysed) baseline run
  Candidate best;             // the chosen settings (empty: nothing beat the baseline)
  int best_trial = 0;         // index into trials
  std::vector<std::string> log;  // decisions in plain words ("dataloader.num_workers: 4 kept (1.9x)")
  bool stopped_early = false;    // budget exhausted or interrupted before every knob was tried
  std::vector<KnobOutcome> kept; // per knob kept, in the order kept
  int trial_steps() const;       // steps run by every trial (warm-up included)
  double wall_s() const;         // wall time of every trial
  // Baseline runs beside the candidates (knob "baseline"); empty: trials[0] is the only one.
  std::vector<int> baseline_runs;
  // The baseline median a trial is compared with: the geometric mean of the nearest baseline
  // runs before and after it (trials[0] when there are none).
  double local_baseline_ms(int index) const;
  // How far the job as written moved across a trial: the |log ratio| of the two baseline runs
  // beside it (0 for a baseline run, or with fewer than two beside it). Its scaled figure can be
  // off by about half that when one of the two was disturbed.
  double local_drift(int index) const;
  // A trial's speedup over its neighbouring baselines (1 when unknown).
  double speedup_of(int index) const;
  double speedup() const;     // speedup_of(best_trial)
  // A trial's step statistics in the units of the first warm baseline (drift of the machine
  // between its baseline and that one divided out).
  StepStats normalized(int index) const;
};

// Whether `b` is faster than `a` by more than the noise: the difference of the medians must
// exceed both min_gain x a.median and the notch half-widths of both (1.58 IQR / sqrt(n), the
// box-plot notch of McGill, Tukey & Larsen 1978, combined in quadrature).
bool significantly_faster(const StepStats& b, const StepStats& a, double min_gain);

// Runs the baseline (unless `baseline` is given: a trial already run, e.g. the recording that
// was analysed), then the groups in order, each candidate on top of the best settings so far.
// A group stops when the prediction says no candidate left can beat the best by min_gain, or
// after `patience` candidates clearly slower than its best. `stop` is polled between trials.
SearchResult search(const std::vector<SearchGroup>& groups, TrialRunner& runner, const SearchOptions& options,
                    const Trial* baseline = nullptr, const std::function<bool()>& stop = {});
// The same with every knob of `plan` a group of its own, in catalogue value order (no prediction).
SearchResult search(const std::vector<KnobPlan>& plan, TrialRunner& runner, const SearchOptions& options,
                    const Trial* baseline = nullptr, const std::function<bool()>& stop = {});
std::vector<SearchGroup> single_knob_groups(const std::vector<KnobPlan>& plan);

// The search's choice measured again against the baseline in interleaved pairs (baseline then
// choice, then choice then baseline, ... so a slow drift of the machine cancels), both runs of
// a pair the same length (the same number of steps). Sequential: after min_pairs and then at
// planned looks (3, 5, 8, 12, 20, 30, ..., and max_pairs) the interval is computed; the pairs
// stop as soon as it excludes 1 on either side, at max_pairs, or when the budget is spent.
// Each look uses level 1 - 0.05 / L (L: the looks planned; Bonferroni), so the chance of a
// false confirmation over all looks stays below 5%. With a budget, the looks are planned
// before the first pair over the pairs the budget left pays for (at least min_pairs, at most
// max_pairs; a run's cost estimated from the latest baseline run's start-up and step time).
// Per pair: the steady-state ratio is the baseline run's mean step time over the choice's (the
// ratio of their throughputs: every step is used, waits included); the interval is over pairs
// (or blocks of steps, step_interval, where that is sound), because steps of one run share
// that run's machine state (they are not independent samples). The end-to-end ratio is the
// baseline run's wall time over the choice's (launch to the job's end, start-up included).
struct Confirmation {
  int pairs_run = 0;
  std::vector<double> ratios;   // steady state: baseline / choice, one per measured pair
  double speedup = 1, low = 1, high = 1;
  bool confirmed = false;
  std::vector<double> e2e_ratios;   // end to end: baseline wall / choice wall, same steps
  double e2e_speedup = 1, e2e_low = 1, e2e_high = 1;
  int e2e_steps = 0;            // steps each end-to-end run ran
  double level = 0.95;          // confidence level of each look
  bool e2e_slower = false;      // the end-to-end interval is below 1: not applied even if the steady state is faster
  int looks_planned = 1;
  int pairs_planned = 0;        // the most pairs: max_pairs, or fewer when the budget left pays for fewer
  std::string ended;            // why the pairs stopped
  int last_baseline = -1, last_choice = -1;  // indices into the search's trials (for the diff)
  std::vector<std::pair<StepStats, StepStats>> pair_steps;  // each measured pair's baseline and choice steps
  bool from_steps = false;      // the steady-state interval is step_interval's, not the pairs' t interval
  double heterogeneity = 0;     // step_interval's F (0: not computed)
};
struct SpeedupInterval {
  double mean = 1, low = 1, high = 1;
  bool defined = false;  // at least two ratios
};
// Geometric mean of the ratios with a Student-t interval on the log ratios at `level`.
SpeedupInterval speedup_interval(const std::vector<double>& ratios, double level = 0.95);
// Two-sided Student-t quantile: t such that P(|T_df| <= t) = level.
double t_quantile(double level, std::size_t df);
// A pair's steady-state ratio: the baseline run's mean step time over the choice's (their
// throughputs' ratio, what the user gets; a median would hide a DataLoader's waits on a quarter
// of the steps), the medians' ratio when the runs kept no step times.
double pair_ratio(const StepStats& baseline, const StepStats& choice);
// The steady-state interval from the steps within the pairs, where that is sound (batch means
// with a check that pooling is allowed). Each pair's two runs are cut into blocks of
// max(4, ceil(sqrt(steps))) consecutive steps at the same places in both runs (at least 3
// blocks a run), and each block gives a difference of log mean step times, baseline less
// choice (batch means: the throughput over the block, waits included). The
// blocks of one pair are treated as independent replicates: blocks that long carry little of
// the steps' autocorrelation from one to the next, and the two runs' blocks at the same place
// share the run's phase. Pooling the blocks of all pairs assumes that what makes one pair
// differ from another is the machine's step-to-step noise, not a change of the machine
// between runs; that is checked by the one-way analysis of variance of the blocks by pair:
// F = (between-pair mean square) / (within-pair mean square), about 1 under the assumption.
// Only where F <= 1 are the blocks pooled: their mean with a t interval on all of them
// (blocks - 1 degrees of freedom instead of pairs - 1). Above 1 (the machine changed between
// runs more than within them), with fewer than kMinStepsPerRun steps or 3 blocks a run, with
// identical blocks, or with fewer than 2 pairs, `interval` is left undefined and the
// confirmation uses the t interval over the pairs' ratios. The end-to-end figure is one number
// per run and stays pair-based.
constexpr std::size_t kMinStepsPerRun = 12;
struct StepInterval {
  SpeedupInterval interval;    // defined only where the steps can be pooled
  double heterogeneity = 0;    // F (0 when not computed)
  double df = 0;               // pairs - 1
};
StepInterval step_interval(const std::vector<std::pair<StepStats, StepStats>>& pairs, double level = 0.95);
// One line saying which interval the confirmation used and why.
std::string interval_source(const Confirmation& c);
// The looks of a sequential confirmation: min_pairs, 5, 8, 12, 20, 30, 50, ... below max_pairs, and max_pairs.
std::vector<int> planned_looks(int min_pairs, int max_pairs);

// Runs the pairs through `runner`, appending the trials (knob "confirm:...") to `result.trials`.
// `run_steps` > 0: both runs of every pair run that many steps (the end-to-end length).
Confirmation confirm(const Candidate& choice, int max_pairs, TrialRunner& runner, SearchResult& result,
                     const SearchOptions& options, const std::function<bool()>& stop = {}, int run_steps = 0);

}  // namespace tt::tuner
