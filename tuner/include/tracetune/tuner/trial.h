// Trials: one bounded run of the real job with candidate settings, under the collector, and
// the step time measured from its trace. The search (search.h) only sees the TrialRunner
// interface, so it is unit-tested with a fake runner; JobTrialRunner is the real one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"
#include "tracetune/tuner/knobs.h"
#include "tracetune/tuner/tuned_config.h"

namespace tt::tuner {

// A candidate: knob id -> value, in the order they were chosen. Empty: the job as it is.
struct Candidate {
  std::vector<std::pair<std::string, Value>> settings;
  std::vector<NcclTableEntry> nccl_table;  // [[nccl.table]] entries (from a `bench nccl` sweep)
  const Value* find(std::string_view id) const;
  void set(const std::string& id, Value v);  // replaces an existing id
  std::string label() const;                 // "baseline" or "a=1 b=true"
};

// Step times of a trace after the warm-up steps. A step's time is the longest duration any
// process recorded for that step number (the slowest rank sets the pace of a synchronous job).
struct StepStats {
  std::size_t steps = 0;     // steps measured (after warm-up)
  double median_ms = 0;
  double p10_ms = 0, p25_ms = 0, p75_ms = 0, p90_ms = 0;
  double spread_ms() const { return p90_ms - p10_ms; }  // p90 - p10
  double iqr_ms() const { return p75_ms - p25_ms; }
  // (median of the second half - median of the first half) / median, in step order: a trial
  // still warming up (or draining a prefetch queue) has step times that trend.
  double trend = 0;
  bool trending() const { return trend > kTrendShare || trend < -kTrendShare; }
  static constexpr double kTrendShare = 0.2;
  std::vector<double> step_ms;  // the measured steps, in step order (for the confirmation's per-step ratio)
};
// Steps numbered below `warmup` are excluded. An error when nothing is left to measure.
Result<StepStats> measure_steps(const trace::Trace& t, int warmup);
// The same over plain durations (already warm, in step order), for tests and benchmarks.
StepStats stats_of(std::vector<double> step_ms);

// Warm-up steps a candidate needs before its steps are steady: at least `warmup`, and at least
// num_workers x prefetch_factor (default 2) batches when it sets DataLoader workers, because
// the workers prefetch that many batches while the job starts and the first steps only
// consume them (a 15-step trial of 16 workers would measure the queue, not the workers).
int steady_warmup(const Candidate& candidate, int warmup);

// A config holding exactly `candidate` (for a trial): [meta] numerics = true when a value
// changes numerics, then [settings] and its [[nccl.table]] entries.
std::string candidate_toml(const Candidate& candidate, const Catalogue& catalogue);

enum class TrialStatus { Ok, Failed, TimedOut, NoSteps, Interrupted, Refused };
std::string_view to_string(TrialStatus s);

struct Trial {
  int index = 0;              // 0 = baseline
  Candidate candidate;
  std::string knob;           // the knob this trial varied ("" for the baseline)
  TrialStatus status = TrialStatus::Ok;
  StepStats stats;            // when Ok
  int warmup = 0;             // steps left out of the measurement (steady_warmup)
  bool stopped_early = false; // ended by the early stop: clearly slower than the best
  int steps_run() const { return status == TrialStatus::Ok ? warmup + static_cast<int>(stats.steps) : 0; }
  int exit_code = 0;
  double wall_s = 0;
  // End to end, what a user of the job waits for: from the launch to the job's end, start-up
  // included (the trace's processes; else the launch's wall time), over `job_steps` steps.
  double e2e_s = 0;
  int job_steps = 0;
  std::string note;           // why it failed, in one line
  std::filesystem::path trace;  // its trace (in the private trials directory), may be removed later
};

class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  // Runs `candidate` and fills everything but `index` and `knob`.
  virtual Trial run(const Candidate& candidate) = 0;
  // Trials from now on may end early when, after their warm-up and `steps` measured steps,
  // the median is above `slower_than_ms` (0: never). Runners that cannot do it ignore it.
  virtual void set_early_stop(double slower_than_ms, int steps) { (void)slower_than_ms, (void)steps; }
  // Trials from now on run exactly `steps` steps whatever their warm-up (0: the default length,
  // --steps plus the candidate's extra warm-up). The confirmation's pairs use it so both runs of
  // a pair do the same work and their end-to-end times compare.
  virtual void set_run_steps(int steps) { (void)steps; }
};

struct JobTrialOptions {
  std::vector<std::string> command;
  std::filesystem::path work_dir;  // private (0700): configs, traces and logs of every trial
  int steps = 15;                  // TRACETUNE_MAX_STEPS for the default warm-up; a candidate whose
                                   // steady_warmup is longer runs that many more steps
  int warmup = 3;                  // steps excluded from the measurement (at least; steady_warmup)
  double timeout_s = 120;          // per trial; then SIGTERM, SIGKILL 5 s later
  bool allow_numerics = false;     // written into each candidate config's [meta]
  std::vector<std::string> trace = {"python"};  // what a trial records (steps are enough)
  // Loss parity (`tune --kernels`): every trial records the job's loss (TRACETUNE_RECORD_LOSS,
  // a `tracetune.loss` counter); a trial with a kernels.* setting is Refused when its per-step
  // losses differ from the baseline's by more than loss_rtol (relative) at any common step.
  bool compare_loss = false;
  double loss_rtol = 1e-4;
};

// The `tracetune.loss` counter values of a trace, in time order.
std::vector<double> recorded_losses(const trace::Trace& t);
// "" when `got` matches `want` within rtol at every common step (and both have some), else why not.
std::string loss_mismatch(const std::vector<double>& want, const std::vector<double>& got, double rtol);

// Runs the job through the collector (collector::record) with the candidate applied exactly
// as `tracetune run --config` applies it: the candidate is written as a tuned config, checked
// by the same parser against the catalogue, and turned into variables and files by the same
// apply code; then one launch applies and records. The job's stdout/stderr go to a log
// file in the trial's directory.
class JobTrialRunner final : public TrialRunner {
 public:
  JobTrialRunner(JobTrialOptions options, const Catalogue& catalogue);
  Trial run(const Candidate& candidate) override;
  void set_early_stop(double slower_than_ms, int steps) override {
    early_stop_ms_ = slower_than_ms;
    early_stop_steps_ = steps;
  }
  void set_run_steps(int steps) override { run_steps_ = steps; }
  bool interrupted() const { return interrupted_; }

 private:
  JobTrialOptions opt_;
  const Catalogue& catalogue_;
  int count_ = 0;
  bool interrupted_ = false;
  std::vector<double> baseline_losses_;  // of the first trial without settings (compare_loss)
  double early_stop_ms_ = 0;
  int early_stop_steps_ = 0;
  int run_steps_ = 0;
};

// The job's end-to-end seconds from its trace: the earliest process start to the latest process
// end (or the last step's end); 0 when the trace has no process times.
double job_seconds(const trace::Trace& t);

}  // namespace tt::tuner
