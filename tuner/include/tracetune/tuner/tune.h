// `tracetune tune [TRACE] -- CMD`: the tuning loop. Record the job (or take TRACE), analyse
// it, search the knobs its findings name with short trials of the real job, and write
// tuned.toml (for `tracetune run --config`) and a trials file beside it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace tt::tuner {

struct TuneOptions {
  std::vector<std::string> command;
  std::filesystem::path trace;            // analyse this instead of the baseline trial's recording
  std::filesystem::path output = "tuned.toml";
  int max_trials = 12;                    // including the baseline
  int steps = 15;                         // per trial (TRACETUNE_MAX_STEPS)
  int warmup = 3;                         // excluded from each trial's measurement
  double timeout_s = 120;                 // per trial
  double min_gain = 0.03;
  int confirm = 10;                       // most interleaved baseline/choice pairs after the search (0: none);
                                          // sequential: they stop once the interval excludes 1
  int baseline_every = 2;                 // the baseline runs again after every this many candidates (0: never)
  int run_steps = 0;                      // steps of each end-to-end confirmation run (0: the choice's trial length)
  double budget_s = 0;                    // wall-time cap over search and confirmation (0: none)
  double early_stop = 1.5;                // search trials end early when this much slower than the best (0: off)
  bool allow_numerics = false;
  bool keep_traces = false;               // keep the private trials directory and say where
  std::filesystem::path nccl_sweep;       // a `bench nccl --json` sweep: also try the NCCL table it suggests
  std::string exhaustive;                 // a knob id: afterwards, try each of its values alone
  bool quiet = false;                     // no live table
  std::string version;                    // tracetune's, for [meta]
  // Kernel substitutions: before the search, `bench kernels` runs in `kernels_python` (empty:
  // the job's own interpreter, job_python()); each candidate that passes parity and beats stock
  // beyond noise is then trialled on the job.
  bool kernels = false;
  std::string kernels_python;
  std::vector<std::string> kernels_args;  // passed to the benchmark (--shapes, --threads, --only)
};

// The invocation, for usage errors (the one source for run_tune's and the CLI's).
inline constexpr const char* kTuneUsage = "tracetune tune [TRACE] -- CMD...";

// Exit codes: 0 written, 1 failed (baseline did not run, outputs not writable), 2 usage,
// 130 interrupted (tuned.toml still written from the trials that finished).
int run_tune(const TuneOptions& options);

}  // namespace tt::tuner
