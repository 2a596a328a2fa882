// `tracetune record`: start a job with the collector injected, let it run untouched
// (stdin/stdout/stderr inherited, signals forwarded, exit code returned unchanged), then
// merge what every process recorded into one trace.
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tracetune/collector/window.h"
#include "tracetune/trace/result.h"

namespace tt::collector {

// What `record --trace` can record, in one table: the CLI's parsing and help, the default
// (everything) and the summary's "not recorded" lines all read it.
struct TraceSource {
  std::string_view id;    // the --trace item
  std::string_view what;  // for --help and the summary
};
inline constexpr TraceSource kTraceSources[] = {
    {"io", "file I/O"},
    {"nvtx", "NVTX ranges"},
    {"python", "Python steps, ranges and counters"},
    {"pystack", "Python stack samples of every thread (rate: --pystack-hz)"},
    {"cuda", "CUDA kernels, copies, syncs and API calls, by CUPTI"},
    {"nccl", "NCCL operations, by the NCCL profiler plugin"},
};
// Every id, joined by `sep` ("io,nvtx,python,cuda,nccl").
std::string trace_source_ids(std::string_view sep = ",");
// "io,cuda" -> {"io", "cuda"}; an unknown item is an error naming it and the known ones.
Result<std::vector<std::string>> parse_trace_sources(std::string_view list);

struct RecordOptions {
  std::vector<std::string> command;  // argv of the job
  std::filesystem::path output;      // the trace DB to write
  std::filesystem::path raw_dir;     // per-process record files; default: <output>.raw
  std::vector<std::string> trace = parse_trace_sources(trace_source_ids()).value();  // what to record (kTraceSources)
  bool record_env = true;            // environment (secrets redacted) in the trace
  bool keep_raw = false;             // keep raw_dir after a successful merge
  bool progress = true;              // progress bar on stderr when it is a terminal
  bool summary = true;               // print the recording summary on stderr
  // Variables set for the job after the inherited TRACETUNE_* ones are removed (the tuner's
  // TRACETUNE_APPLY, TRACETUNE_MAX_STEPS, env knobs...): one launch that applies settings and
  // records. They replace inherited values; PYTHONPATH is never taken from here.
  std::vector<std::pair<std::string, std::string>> extra_env;
  // Wall-clock limit (0: none). When it passes, the job's process group gets SIGTERM, then
  // SIGKILL after kill_grace_s; the job then runs in its own process group (so its workers
  // are killed too) and receives SIGINT forwarded from us rather than from the terminal.
  double timeout_s = 0;
  double kill_grace_s = 5;
  // With timeout_s > 0 only: the job's stdout and stderr go to this file (created 0600,
  // truncated) instead of ours; stdin is /dev/null.
  std::filesystem::path job_log;
  // Extra key/values for the trace's metadata (the tuner's "tuned.<knob>" settings, which
  // `tracetune diff` shows among the settings that differ).
  std::vector<std::pair<std::string, std::string>> metadata;
  // Record only inside this window (window.h); none: from the first instruction to the last.
  WindowRequest window;
};

struct RecordOutcome {
  int exit_code = 0;        // the job's, as a shell reports it (128 + signal when killed)
  int signal = 0;           // the signal that ended the job's main process, 0 when it exited
  bool trace_written = false;
  std::string error;        // why the trace could not be written (the job still ran)
  bool timed_out = false;   // killed by us after RecordOptions::timeout_s
  bool interrupted = false; // we were asked to stop (SIGINT/SIGTERM/SIGHUP) while it ran
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
// Shared by `record` and `run`. With `tick.run`, it is called every 20 ms while the job runs,
// and at once when `tick.wake_fd` becomes readable (record's watch over the raw directory).
struct JobTick {
  std::function<void()> run;
  int wake_fd = -1;
};
Result<int> run_job(const std::vector<std::string>& command, const std::vector<std::string>& env,
                    const JobTick& tick = {});

// run_job with a wall-clock limit: the job runs in a process group of its own (so a hung
// job's workers go with it); after `timeout_s` the group gets SIGTERM, and SIGKILL
// `kill_grace_s` later if the job is still there. Signals sent to us (Ctrl-C included) go to
// the whole group. timeout_s <= 0: no limit, but still its own group. When the job ends, what is
// left of the group gets SIGTERM, and so does every descendant that left it (a setsid daemon:
// this process becomes a child subreaper to find them), SIGKILL after `kill_grace_s`.
struct JobEnd {
  int status = 0;            // wait status
  bool timed_out = false;    // we killed it after timeout_s
  bool interrupted = false;  // SIGINT/SIGTERM/SIGHUP reached us while it ran
};
Result<JobEnd> run_job_limited(const std::vector<std::string>& command, const std::vector<std::string>& env,
                               double timeout_s, double kill_grace_s,
                               const std::filesystem::path& log = {}, const JobTick& tick = {});

// The job's command line as one line, with secrets redacted as the collector redacts them
// (redact.h): for the trace's `command` entry and for tune's tuned.toml and trials JSON.
std::string redacted_command(const std::vector<std::string>& command);

// The environment the job gets (exposed for tests): LD_PRELOAD, NVTX_INJECTION64_PATH,
// CUDA_INJECTION64_PATH, NCCL_PROFILER_PLUGIN, PYTHONPATH (sitecustomize), TRACETUNE_*
// settings, on top of `base`.
std::vector<std::string> job_environment(const RecordOptions& options, const std::filesystem::path& raw_dir,
                                         char** base);

}  // namespace tt::collector
