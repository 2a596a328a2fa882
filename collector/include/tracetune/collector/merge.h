// The merger: per-process raw record files (one directory per host, written by the
// injected collector) -> one Trace. Used by `tracetune record` after the job ends and by
// `tracetune merge DIR...` to join outputs from several hosts.
#pragma once

#include <filesystem>
#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tracetune/collector/collective_clocks.h"
#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"
#include "tracetune/trace/summary.h"

namespace tt::collector {

struct MergeOptions {
  // Called with (files done, files total) after each file, always on the calling thread
  // (files are read in parallel, but handed over and reported in order); may be empty.
  std::function<void(std::size_t, std::size_t)> progress;
  // Only events that overlap [keep_from_ns, keep_to_ns] (the hosts' CLOCK_MONOTONIC) are kept: a
  // flight recorder's dump holds the last N seconds before its trigger, a capture its window.
  // Processes, threads and strings are kept whatever their time; GPU activity is not cut.
  std::int64_t keep_from_ns = INT64_MIN;
  std::int64_t keep_to_ns = INT64_MAX;
  // record --ring Nsteps: each process with step records keeps its last N steps (Step records
  // that start at or after the N-th last one's start) and the events from that start on; a
  // process without steps keeps the events from the earliest such start of its host. A process
  // holding fewer than N steps keeps all it holds (and so do its host's processes without steps).
  // 0: off. Applied before keep_from_ns/keep_to_ns.
  std::int64_t keep_last_steps = 0;
};

struct RawProcess;
// Removes from `p` the host-clock events (I/O, ranges, marks, steps, counters, host-side
// collectives) outside [from, to] (raw_crop.cpp).
void crop_raw_process(RawProcess& p, std::int64_t from, std::int64_t to);
// MergeOptions::keep_last_steps over the processes of one merge (raw_crop.cpp).
void crop_to_last_steps(std::span<RawProcess*> processes, std::int64_t steps);


struct MergeReport {
  std::size_t files = 0;           // raw files read
  std::size_t skipped_files = 0;   // *.ttr files that could not be read (bad header, I/O error)
  std::size_t processes = 0;
  std::size_t truncated = 0;       // processes without an exit record (killed, crashed)
  std::size_t torn_records = 0;    // records with a bad checksum (stopped reading that chunk)
  std::size_t dropped_records = 0; // records the collector could not write (disk full, ...)
  std::vector<HostClock> hosts;
  std::vector<std::string> warnings;  // one line each, for the summary
  // Statically linked programs the job exec'd (kExecStatic): LD_PRELOAD cannot reach them, so
  // their I/O is not in the trace. Program -> how many times it was exec'd (a process counts
  // every static program it exec'd under the first one's name).
  std::map<std::string, std::size_t> static_programs;

  // GPU capture (record types 100..199)
  std::size_t cuda_processes = 0;   // processes in which the CUPTI injection was initialised
  std::size_t cupti_active = 0;     // ... and recording GPU activity
  std::size_t gpu_devices = 0;      // devices reported by CUPTI, over all processes
  std::size_t gpu_activities = 0;   // kernels + memcpys + memsets recorded
  std::size_t nccl_processes = 0;   // processes in which the NCCL profiler plugin was active
  std::size_t nccl_operations = 0;  // collective / p2p rows from the plugin (host and device side)
  std::vector<std::string> gpu_notes;  // distinct one-line reasons GPU capture was (partly) missing

  // One line saying what GPU capture saw, e.g. "no GPU seen (no process of the job initialised
  // CUDA)"; "" when the trace has no GPU status at all and `cupti_built` is false.
  std::string gpu_line(bool cupti_built) const;
};

// Reads every *.ttr file under each directory (recursively: <dir>/<host>/proc-*.ttr) into one
// trace. Times: each host's CLOCK_MONOTONIC is mapped onto one clock using the files'
// (monotonic, realtime) anchors; with a single host the offset is 0 and the clock domain is
// "CLOCK_MONOTONIC", otherwise "CLOCK_REALTIME (aligned from per-host monotonic clocks)" and
// each host's offset is then refined from the end times of collectives matched across hosts
// (where at least kMinClockCollectives match; see HostClock, collective_clocks.h).
// Errors only for unusable input (no files, unreadable directory); damaged files become
// diagnostics and report entries.
Result<trace::Trace> merge_raw(std::span<const std::filesystem::path> dirs, const MergeOptions& options,
                               MergeReport& report);

}  // namespace tt::collector

namespace tt::collector {

// Where merge_raw_to_file writes: the trace file, its meta's created_by, and more meta entries
// (after those of the merge).
struct MergeOutput {
  std::filesystem::path path;
  std::string created_by;
  std::vector<std::pair<std::string, std::string>> metadata;
};

// merge_raw, streamed into the trace file output.path (written atomically, as write_trace
// writes): each file's events are appended to the file once converted, so memory holds one file's
// events (and the read-ahead window of record_reader) however many hosts and processes there
// are, plus what spans the whole trace: strings, processes, threads, tracks, diagnostics, Python
// frames and stacks, and copies of the steps and collectives (the clock alignment and the summary
// read them whole). The file holds the rows write_trace(merge_raw(...)) writes; when the
// collectives correct a host's clock, its rows are moved in the file (one UPDATE per table).
// Returns the summary `tracetune info` gives of the file. MergeOptions::keep_last_steps still
// reads every file before converting any.
Result<trace::TraceSummary> merge_raw_to_file(std::span<const std::filesystem::path> dirs, const MergeOptions& options,
                                              MergeReport& report, const MergeOutput& output);

}  // namespace tt::collector
