// Per-rank and per-step metrics over a finalized Trace. Every definition is written down in
// docs/analysis.md; the field comments here are the short form. Times are ns.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tracetune/analyzer/intervals.h"
#include "tracetune/analyzer/hot_spots.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

struct Options {
  bool hta_compat = false;               // HTA 0.6's conventions (see docs/analysis.md)
  std::int32_t rank = -1;                // analyse only this rank (-1: all)
  std::optional<std::pair<std::int64_t, std::int64_t>> steps;  // step numbers A..B inclusive
  Ns kernel_wait_threshold = 30'000;     // idle gap below this after a queued op: launch overhead
  unsigned threads = 0;                  // 0: one per core
  bool path_pieces = true;               // keep StepPath::pieces (the GUI draws them; no report shows them)
  bool what_ifs = true;                  // replay each step's what-ifs (off: the paths alone, step_path_pieces)
  // Set to true by a caller that gives the work up (the GUI closing while step_path_pieces
  // runs): the ranks not begun and the steps not walked yet are left out, so what comes back
  // is incomplete and only for that caller to drop. nullptr: never given up.
  const std::atomic<bool>* stop = nullptr;
};

// Whether the caller gave the work up (Options::stop).
inline bool stopped(const std::atomic<bool>* stop) { return stop && stop->load(std::memory_order_relaxed); }
inline bool stopped(const Options& opt) { return stopped(opt.stop); }

// GPU time of a rank split by what ran (HTA's "temporal breakdown", plus classes and overlaps).
struct GpuBreakdown {
  Ns span = 0;           // window the breakdown covers (default: the steps; HTA: first to last op)
  Ns busy = 0;           // union of all GPU ops
  Ns idle = 0;           // span - busy
  Ns compute = 0;        // union of compute kernels
  Ns non_compute = 0;    // busy - compute
  Ns communication = 0;  // union of communication kernels
  Ns memory = 0;         // union of copies and sets
  Ns comm_compute_overlap = 0;    // |communication ∩ compute|
  Ns comm_memory_overlap = 0;     // |communication ∩ memory|
  Ns exposed_communication = 0;   // communication - compute
  // Time by exactly which classes were running (bit 0 compute, 1 communication, 2 memory).
  Ns exclusive[8] = {};
};

struct StreamIdle {
  std::uint32_t track = 0;
  std::int64_t stream = 0;
  std::uint64_t ops = 0;
  Ns host_wait = 0;    // the op's launch call began after the previous op ended: the CPU was late
  Ns kernel_wait = 0;  // short gap (< threshold) after an op that was already queued
  Ns other = 0;        // the rest (waits on other streams or events, ...)
};

struct LaunchStats {
  std::uint64_t kernels = 0;
  std::uint64_t correlated = 0;     // kernels whose launching API call is in the trace
  Ns kernel_median = 0, kernel_p90 = 0;
  double short_kernel_share = 0;    // kernels shorter than 10 µs
  Ns launch_call_median = 0;        // CPU duration of the launch API call
  Ns launch_delay_median = 0, launch_delay_p90 = 0;  // kernel start - launch call start
  double queue_mean = 0;            // ops already queued on the stream at each launch
  std::uint32_t queue_max = 0;
};

struct TransferStats {
  std::uint64_t h2d_bytes = 0, h2d_pageable_bytes = 0, d2h_bytes = 0, d2h_pageable_bytes = 0;
  std::uint64_t h2d_count = 0, d2h_count = 0;
  Ns h2d_time = 0, h2d_pageable_time = 0, d2h_time = 0;  // sums of copy durations
  Ns h2d_exposed = 0;             // union of H2D copies not overlapped by compute kernels
  double h2d_pageable_gbps = 0, h2d_pinned_gbps = 0, d2h_gbps = 0;  // bytes / copy time
};

struct ProcessIo {
  std::uint32_t process = 0;
  std::int64_t pid = 0;
  std::string name;
  std::uint64_t calls = 0, bytes_read = 0, bytes_written = 0;
  Ns time = 0;
};

struct FileIo {  // one path's calls (the diff compares I/O per file)
  std::string path;  // empty: calls without a path (sockets, pipes, fds opened before recording)
  std::uint64_t calls = 0, bytes_read = 0, bytes_written = 0;
  Ns time = 0;
};

struct IoStats {  // the rank's process and its descendants (DataLoader workers)
  std::uint64_t calls = 0, read_calls = 0, write_calls = 0, errors = 0;
  std::uint64_t bytes_read = 0, bytes_written = 0;
  Ns time = 0;        // sum of call durations, all threads
  Ns main_thread = 0; // union on the rank's main thread (in the job's critical path)
  std::vector<ProcessIo> per_process;  // in order of first I/O
  std::vector<FileIo> per_file;        // by time, longest first
};

struct GemmStats {
  Ns fp32_simt = 0, tensor_core = 0, fp64 = 0, unknown = 0;  // kernel time sums
  Ns by_format[10] = {};                                      // indexed by GemmFormat
  std::uint64_t fp32_simt_kernels = 0;
  std::string top_fp32_kernel;  // the FP32 GEMM with the most time
};

struct KernelTotal {
  std::string name;
  std::uint64_t count = 0;
  Ns total = 0;
  std::string kernel_class;
};

// What-if replay (docs/analysis.md, "What-if replay"): a step recomputed forward on its
// dependency graph (the critical path's) with one class of work changed, so that what would
// then wait on what is worked out, not assumed.
enum class WhatIf : std::uint8_t {
  NoDataWait,       // the main thread's data waits removed
  PrefetchedH2d,    // host-to-device copies prefetched off the step's chain (pinned, side stream)
  TensorCoreGemms,  // FP32 SIMT GEMMs kTensorCoreSpeedup x faster
  FusedMemoryBound, // kFusionSaving of elementwise/reduction kernel time removed
  NoSyncWait,       // synchronising calls and copies no longer wait for the GPU
  Count
};
inline constexpr std::size_t kWhatIfs = static_cast<std::size_t>(WhatIf::Count);
std::string_view to_string(WhatIf);
// The changes' sizes: conservative figures the rules' thresholds default to.
inline constexpr double kTensorCoreSpeedup = 2.0;
inline constexpr double kFusionSaving = 0.30;

struct StepMetrics {
  std::int64_t number = 0;
  Ns start = 0, end = 0;
  Ns wall() const { return end - start; }
  Ns gpu_busy = 0, gpu_idle = 0, compute = 0, communication = 0, memory = 0;
  Ns comm_compute_overlap = 0, exposed_communication = 0;
  Ns data_wait = 0;        // main thread waiting for the next batch
  Ns sync_wait = 0;        // host blocked in synchronising API calls
  Ns io_main = 0;          // main-thread I/O calls
  Ns collective_host = 0;  // main thread inside host-side collective calls (ranks without GPU-side ones: gloo, mpi)
  Ns h2d = 0, h2d_exposed = 0, h2d_pageable = 0;  // union of H2D copies; not under compute; pageable
  // GPU idle time inside the step split by what the host was doing: waiting for data; in a sync
  // or launching the next op after one returned (sync); launching late (launch); neither (other).
  Ns idle_data = 0, idle_sync = 0, idle_launch = 0, idle_other = 0;
  std::uint64_t kernels = 0;
  Ns memory_bound_kernels = 0, fp32_gemm = 0;
  bool replayed = false;        // what_if holds the replayed step lengths
  Ns what_if[kWhatIfs] = {};    // the step's length under each change
};

struct CollectiveStats {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  Ns time = 0;   // sum of durations (device side when present, else host side)
  bool device_side = false;
  // Cross-rank (two ranks or more): the collectives matched on other ranks, how long this rank
  // had arrived at them before the last rank did (its wait for stragglers), and how often it
  // was the last to arrive.
  std::uint64_t matched = 0;
  Ns arrival_wait = 0;
  std::uint64_t last_arrivals = 0;
};

// Critical path of a step (docs/analysis.md, "Critical path"): walking back from the step's end
// through what each moment waited on (thread order, launch -> kernel, stream order, sync ->
// the GPU op it waited for, data waits, collectives -> their last arriver), the path tiles the
// step: its segments are contiguous and their lengths add up to the step time.
enum class PathKind : std::uint8_t {
  HostCompute, Launch, GpuCompute, Copy, Communication, GpuWait, RankWait, DataWait, Sync, Count
};
inline constexpr std::size_t kPathKinds = static_cast<std::size_t>(PathKind::Count);
std::string_view to_string(PathKind);

struct PathSegment {
  Ns start = 0, end = 0;
  PathKind kind = PathKind::HostCompute;
  std::int32_t rank = -1;
  std::string what;  // the kernel, call or thread
  HotSpots hot;      // host compute, launch and data-wait segments: Python functions in it (hot_spots.h)
};

struct PathPiece {  // one stretch of the path on one track (for drawing it over a timeline)
  Ns start = 0, end = 0;
  PathKind kind = PathKind::HostCompute;
  std::uint32_t track = trace::kNone;  // the thread, stream or device it ran on (kNone: none)
};

struct StepPath {
  std::int64_t step = -1;        // step number (-1: the whole window)
  std::int32_t rank = -1;        // the rank whose step it is (where the walk starts)
  Ns start = 0, end = 0;         // the step's span
  Ns length = 0;                 // sum of the segments: equals end - start
  bool complete = true;          // false: the walk hit its guard and the rest is host compute
  Ns by_kind[kPathKinds] = {};
  std::vector<std::pair<std::int32_t, Ns>> by_rank;  // time on the path per rank (cross-rank walks)
  std::vector<PathSegment> top;  // the longest segments, at most 5
  std::vector<PathPiece> pieces; // the whole path in time order (not in the JSON report)
};

// Memory of one device (or the host) over the rank's steps, from counter samples: the Python
// integration's per-step allocator statistics and RSS, Kineto's [memory] events (docs/analysis.md,
// "Memory"). Bytes.
struct MemoryDevice {
  std::string device;                  // "cuda:0", "cpu" (Kineto's host allocations), "host" (RSS)
  std::int64_t capacity = -1;          // the device's total memory (-1: unknown, e.g. the host)
  std::vector<std::int64_t> step_peak;      // per step: the highest allocated (or RSS) sample in it
  std::vector<std::int64_t> step_reserved;  // per step: the highest reserved sample (empty: none)
  std::int64_t peak = 0;               // highest allocated ever (the allocator's own peak when recorded)
  std::int64_t reserved_peak = 0;
  double growth_per_step = 0;          // least-squares slope of step_peak, bytes per step
  double growth_fit = 0;               // its R² (1: a straight line)
  double late_growth_per_step = 0;     // the slope over the second half of the steps alone
  std::int64_t alloc_retries = 0, ooms = 0;  // the allocator's counts at the end
};

// Model FLOPs and utilisation (docs/analysis.md, "Kernel efficiency"), where the trace carries
// GEMM shapes or FLOP counts (Kineto record_shapes / with_flops, imported as "gemm.flops.<dtype>").
// One kind of GEMM op (name, dtype and size) against its roofline: the lower of the device's
// peak for its dtype and its arithmetic intensity (FLOPs per byte its operands must move) times
// the device's memory bandwidth. GPU time: the kernels its calls launched.
struct OpRoofline {
  std::string op;                 // "aten::addmm"
  std::string dtype;              // "fp32", "bf16", ...
  std::uint64_t calls = 0;
  double flops = 0, bytes = 0;    // per call
  Ns gpu_time = 0;                // all calls
  double achieved_tflops = 0, bound_tflops = 0;
  double efficiency() const { return bound_tflops > 0 ? achieved_tflops / bound_tflops : 0; }
};

struct Efficiency {
  double flops_per_step = 0;       // model FLOPs per step: GEMMs, convolutions, attention (median over steps)
  double achieved_tflops = 0;      // flops_per_step / the median step time, in TFLOP/s
  double mfu = -1;                 // ideal time of those FLOPs at the device's peak / step time (-1: peak unknown)
  std::string peak;                // the peak it is measured against, with its source
  std::vector<std::pair<std::string, double>> flops_by_dtype;  // per step: "fp32" -> FLOPs
  std::vector<std::pair<std::string, double>> flops_by_kind;   // per step: "gemm", "conv", "attention" -> FLOPs
  std::uint64_t ops = 0;           // GEMM, convolution and attention ops counted
  double bandwidth_tbs = 0;        // the device's memory bandwidth the roofline uses (0: unknown)
  std::vector<OpRoofline> roofline;  // the op kinds with the most GPU time (at most 5; empty: peak unknown)
};

struct RankMetrics {
  std::int32_t rank = -1;        // the job's rank, or the process index when unknown
  bool rank_from_trace = false;  // rank is the job's rank the trace named
  std::uint32_t process = trace::kNone;
  std::int64_t pid = 0;
  std::string label;             // "rank 3 (pid 123 on host)"
  bool has_gpu = false;
  std::string device;            // the rank's first GPU, as the source names it
  std::int32_t compute_major = -1, compute_minor = -1;  // its compute capability (-1: unknown)
  bool has_steps = false;        // false: the whole trace is one window
  bool hta_filtered = false;     // HTA mode dropped the last step
  Ns window_start = 0, window_end = 0;
  GpuBreakdown gpu;
  std::vector<StreamIdle> streams;
  LaunchStats launch;
  TransferStats transfers;
  IoStats io;
  GemmStats gemm;
  Ns memory_bound_kernels = 0;   // time in elementwise/reduction kernels
  Ns data_wait = 0, sync_wait = 0;
  std::uint64_t sync_calls = 0;   // synchronising API calls in the window
  std::string top_sync_call;      // the one with the most blocked time
  CollectiveStats collectives;
  std::vector<KernelTotal> top_kernels;  // by total time, at most 10
  std::vector<KernelTotal> kernels;      // every kernel name in the window, by total time
  std::vector<StepMetrics> steps;
  Ns step_median = 0, step_p90 = 0, step_min = 0, step_max = 0;
  std::uint32_t main_track = trace::kNone;  // the thread that marks steps (else the pid's thread)
  std::vector<StepPath> paths;   // critical path per step, this rank alone (others' lateness: rank_wait)
  std::vector<MemoryDevice> memory;  // per device, from counter samples (empty: none recorded)
  Efficiency efficiency;             // ops == 0: the trace carries no GEMM shapes
  std::vector<std::string> notes;  // what could not be determined and why
};

struct CrossRank {
  std::size_t ranks = 0;
  Ns step_median_min = 0, step_median_max = 0, step_median_median = 0;
  double step_spread = 0;         // (slowest - median) / median of per-rank median step times
  std::int32_t slowest_rank = -1;
  std::uint64_t matched_collectives = 0;
  Ns arrival_skew_median = 0, arrival_skew_max = 0;  // last minus first arrival per collective
  std::int32_t last_arriver = -1;  // rank most often last to arrive
  double last_arriver_share = 0;
};

// The median step shortening the replay found for `change` over the rank's steps, when every
// step replayed (none: some step's graph was incomplete, or the rank has no steps).
std::optional<Ns> what_if_gain(const RankMetrics& r, WhatIf change);
std::size_t replayed_steps(const RankMetrics& r);

struct Metrics {
  std::vector<RankMetrics> ranks;
  CrossRank cross;
  // With two ranks or more: per step number, the path from the rank that ended it last,
  // following collectives to their last arriver on other ranks.
  std::vector<StepPath> job_paths;
  std::vector<std::string> notes;
};

// One rank's metrics on its own (the metrics stage runs it for every rank, in parallel): the
// process `process`, with its descendants `tree` that are not ranks; `hta_step_filter` when
// the trace names two or more ProfilerStep#N (HTA then drops the last step).
RankMetrics rank_metrics(const trace::Trace& t, const Options& opt, std::uint32_t process,
                         std::vector<std::uint32_t> tree, bool hta_step_filter);

// GEMM FLOPs of the rank's process per step against its device's peak (exposed for tests).
Efficiency efficiency_of(const trace::Trace& t, const RankMetrics& r);

// The memory counters of the rank's process over its steps (exposed for tests).
std::vector<MemoryDevice> memory_by_device(const trace::Trace& t, const RankMetrics& r);

// Sorted-sample helpers (exposed for tests).
Ns percentile(std::vector<Ns> v, double p);

}  // namespace tt::analyzer
