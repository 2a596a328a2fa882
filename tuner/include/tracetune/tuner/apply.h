// `tracetune run --config tuned.toml -- CMD`: apply a checked tuned config to a job without
// recording it. Environment knobs become variables; Python knobs reach the job's interpreters
// through the Python integration (plugins/python on PYTHONPATH, TRACETUNE_APPLY naming a
// private JSON copy of them); an [[nccl.table]] reaches NCCL through our tuner plugin
// (NCCL_TUNER_PLUGIN, TRACETUNE_NCCL_TABLE naming a private copy of the table).
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tracetune/trace/result.h"
#include "tracetune/tuner/tuned_config.h"

namespace tt::tuner {

// What applying a config means, before anything is written or started.
struct ApplyPlan {
  std::vector<std::pair<std::string, std::string>> env;  // variables the job gets (knobs)
  std::string python_json;   // TRACETUNE_APPLY content; empty: no Python knobs
  std::string nccl_table;    // TRACETUNE_NCCL_TABLE content; empty: no table
  std::vector<std::string> lines;  // one human line per thing set
};
ApplyPlan make_plan(const TunedConfig& config, const std::string& source);

// Where the NCCL tuner plugin lives: ../lib/tracetune next to the executable when installed,
// else the build tree.
std::filesystem::path nccl_tuner_plugin_path();
// The kernel pack (libtracetune_kernels.so, or the CUDA one), installed or in the build tree;
// empty when not found. The Python integration is told its path for kernels.* settings.
std::filesystem::path kernels_library_path(bool cuda);

// The job's environment: `base` with the plan's variables set (replacing inherited values),
// PYTHONPATH prepended with `python_dir` when there are Python knobs, and the file variables.
std::vector<std::string> run_environment(const ApplyPlan& plan, char** base, const std::string& python_dir,
                                         const std::string& python_file, const std::string& plugin,
                                         const std::string& table_file);

// The variables a job needs for `plan` once its files are written into `dir` (an existing
// private directory; files 0600, created with O_EXCL|O_NOFOLLOW): the env knobs,
// TRACETUNE_APPLY, NCCL_TUNER_PLUGIN and TRACETUNE_NCCL_TABLE. PYTHONPATH is the caller's
// (the Python integration's directory goes in front of the job's own). Shared by `run`
// and the tuner's trials, so a trial applies a candidate exactly as `run --config` would.
Result<std::vector<std::pair<std::string, std::string>>> write_plan_files(const ApplyPlan& plan,
                                                                          const std::filesystem::path& dir);

// Writes `text` to a new file `path` (must not exist), mode 0600, not following links.
Status write_private(const std::filesystem::path& path, const std::string& text);

// A fresh private directory ($TMPDIR/<prefix>-XXXXXX, mode 0700).
Result<std::filesystem::path> make_private_tempdir(const std::string& prefix);

struct RunOptions {
  std::filesystem::path config;
  std::vector<std::string> command;
  bool check_only = false;  // validate and print the plan, run nothing
  bool quiet = false;       // do not print the plan
  // The job launched with the collector injected and armed: it records nothing until
  // `tracetune capture` opens a window (docs/collector.md §9.2); the captures land beside
  // `output` (OUT.capture-K.db) and `output` is written when the job ends.
  bool armed = false;
  std::filesystem::path output = "trace.db";
};

// Returns the exit code for `tracetune run`: 2 when the config is refused (the job is not
// started; with `armed`, also an output the trace cannot be written to), else the job's exit
// code. A job killed by a signal makes us die of the same signal (after removing our private
// files), so callers see exactly what they would without us.
int run_with_config(const RunOptions& options);

}  // namespace tt::tuner
