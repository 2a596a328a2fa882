// `tracetune record`: start a job with the collector injected, let it run untouched
// (stdin/stdout/stderr inherited, signals forwarded, exit code returned unchanged), then
// merge what every process recorded into one trace.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tracetune/trace/result.h"

namespace tt::collector {

struct RecordOptions {
  std::vector<std::string> command;  // argv of the job
  std::filesystem::path output;      // the trace DB to write
  std::filesystem::path raw_dir;     // per-process record files; default: <output>.raw
  std::vector<std::string> trace = {"io", "nvtx", "python", "cuda", "nccl"};  // what to record
  bool record_env = true;            // environment (secrets redacted) in the trace
  bool keep_raw = false;             // keep raw_dir after a successful merge
  bool progress = true;              // progress bar on stderr when it is a terminal
};

struct RecordOutcome {
  int exit_code = 0;        // the job's, as a shell reports it (128 + signal when killed)
  bool trace_written = false;
  std::string error;        // why the trace could not be written (the job still ran)
};

// Where the pieces injected into the job live: next to the executable when installed
// (../lib/tracetune, ../share/tracetune/python), else the build and source trees.
std::filesystem::path collector_library_path();
std::filesystem::path python_integration_dir();
// The GPU libraries: CUPTI injection (CUDA_INJECTION64_PATH; empty when this build has no
// CUDA toolkit) and the NCCL profiler plugin (NCCL_PROFILER_PLUGIN).
std::filesystem::path cupti_library_path();
std::filesystem::path nccl_profiler_path();

// Runs the job and records it. Errors before the job starts (no command, output directory
// not usable, collector library missing) are returned as errors and the job is not run.
Result<RecordOutcome> record(const RecordOptions& options);

// Starts `command` (searched on PATH) with exactly `env`, inheriting stdin/stdout/stderr;
// forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to us by another process
// to it, and waits. Returns its wait status, or an error when it could not be started.
// Shared by `record` and `run`.
Result<int> run_job(const std::vector<std::string>& command, const std::vector<std::string>& env);

// The environment the job gets (exposed for tests): LD_PRELOAD, NVTX_INJECTION64_PATH,
// CUDA_INJECTION64_PATH, NCCL_PROFILER_PLUGIN, PYTHONPATH (sitecustomize), TRACETUNE_*
// settings, on top of `base`.
std::vector<std::string> job_environment(const RecordOptions& options, const std::filesystem::path& raw_dir,
                                         char** base);

}  // namespace tt::collector
