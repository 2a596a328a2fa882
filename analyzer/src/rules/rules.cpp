// The bottleneck rules. Each looks at per-step quantities, takes their median over the
// analysed steps (robust to a slow first step), compares it with the median step time and,
// past its threshold, emits a Finding with evidence from the worst step and a what-if gain.
#include "tracetune/analyzer/rules.h"

#include <algorithm>
#include <optional>
#include <map>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "format.h"

namespace tt::analyzer {
namespace {

double pct(double share) { return 100.0 * share; }

Ns median_of(const RankMetrics& r, const std::function<Ns(const StepMetrics&)>& f) {
  std::vector<Ns> v;
  v.reserve(r.steps.size());
  for (const auto& s : r.steps) v.push_back(f(s));
  return percentile(std::move(v), 0.5);
}

double share_of(Ns part, Ns whole) { return trace::share(part, whole); }

// The step where f is largest: the example the evidence points at.
const StepMetrics* worst_step(const RankMetrics& r, const std::function<Ns(const StepMetrics&)>& f) {
  const StepMetrics* best = nullptr;
  for (const auto& s : r.steps)
    if (!best || f(s) > f(*best)) best = &s;
  return best;
}

// "per step", or "in the window" when the trace has no steps (the window is one pseudo-step)
std::string_view per(const RankMetrics& r) { return r.has_steps ? "per step" : "in the window"; }
std::string_view of_step(const RankMetrics& r) { return r.has_steps ? "of the step" : "of the window"; }

std::string step_name(const StepMetrics& s) { return s.number >= 0 ? fmt::format("step {}", s.number) : "the window"; }

Severity severity_for(double share, const Thresholds& th) {
  return share >= th.high ? Severity::High : share >= th.medium ? Severity::Medium : Severity::Low;
}

Finding make(Category c, const RankMetrics& r, Ns cost, Ns gain, const Thresholds& th) {
  Finding f;
  f.category = c;
  f.rank = r.rank;
  f.cost = cost;
  f.share = share_of(cost, r.step_median);
  f.gain = std::max<Ns>(0, std::min(gain, r.step_median));
  f.gain_share = share_of(f.gain, r.step_median);
  f.severity = severity_for(f.gain_share, th);  // an estimated gain of 0 is low; unestimated ones set their own
  return f;
}

// A finding's what-if gain and the model that produced it: the replay of each step's dependency
// graph (replay.cpp) with `change` where every step replayed, else the rule's own formula.
struct Gain {
  Ns ns = 0;
  std::string model;
};

Gain replayed_or(const RankMetrics& r, WhatIf change, std::string_view change_text, Gain formula) {
  const auto replayed = what_if_gain(r, change);
  if (!replayed) return formula;
  return {*replayed, fmt::format("what-if replay of each step's dependency graph with {}", change_text)};
}

void add_worst(Finding& f, const RankMetrics& r, const std::function<Ns(const StepMetrics&)>& g, std::string_view what) {
  if (const StepMetrics* w = worst_step(r, g)) {
    f.evidence.push_back({fmt::format("worst: {} ({} of {} {})", step_name(*w), dur(g(*w)), dur(w->wall()), what),
                          w->start, w->end, r.rank});
  }
}

}  // namespace

std::string_view to_string(Category c) {
  switch (c) {
    case Category::DataLoading: return "data_loading";
    case Category::H2dCopy: return "h2d_copy";
    case Category::LaunchBound: return "launch_bound";
    case Category::SyncStall: return "sync_stall";
    case Category::ExposedCommunication: return "exposed_communication";
    case Category::Precision: return "precision";
    case Category::MemoryBound: return "memory_bound";
    case Category::LoadImbalance: return "load_imbalance";
    case Category::CpuBound: return "cpu_bound";
    case Category::Memory: return "memory";
  }
  return "unknown";
}

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Low: return "low";
    case Severity::Medium: return "medium";
    case Severity::High: return "high";
  }
  return "low";
}

const Thresholds& default_thresholds() {
  static const Thresholds t;
  return t;
}

std::vector<Finding> rule_data_loading(const RankMetrics& r, const Thresholds& th) {
  auto wait = [](const StepMetrics& s) { return s.data_wait; };
  const Ns cost = median_of(r, wait);
  if (share_of(cost, r.step_median) < th.data_wait_share) return {};
  // What-if: the batch is ready when asked for. Without a GPU the whole wait goes; with one,
  // only the part the GPU sat idle through shortens the step.
  const Gain gain = replayed_or(
      r, WhatIf::NoDataWait, "the data waits removed",
      r.has_gpu ? Gain{median_of(r, [](const StepMetrics& s) { return s.idle_data; }),
                       "step shortened by the GPU idle time spent waiting for data"}
                : Gain{cost, "step shortened by the wait"});
  Finding f = make(Category::DataLoading, r, cost, gain.ns, th);
  f.leaves_out = "the loading's own CPU time: DataLoader workers compete with the main thread for the cores (on a "
                 "machine without spare cores the step gains less), their start-up and the batches' transfer between processes";
  f.title = fmt::format("Data loading: the main thread waits {} {} ({:.0f}% {}) for the next batch", dur(cost),
                        per(r), pct(f.share), of_step(r));
  f.detail = "Load batches ahead of the step: more DataLoader workers, a larger prefetch factor and "
             "persistent workers keep the next batch ready.";
  f.gain_model = gain.model;
  f.evidence.push_back({r.has_steps ? fmt::format("median data wait {} of a {} median step over {} steps",
                                                  dur(cost), dur(r.step_median), r.steps.size())
                                    : fmt::format("data wait {} of a {} window (no step markers)", dur(cost),
                                                  dur(r.step_median)),
                        0, 0, r.rank});
  if (r.io.calls)
    f.evidence.push_back({fmt::format("{} I/O calls read {:.1f} MB in {} (all of the rank's processes)", r.io.calls,
                                      static_cast<double>(r.io.bytes_read) / 1e6, dur(r.io.time)), 0, 0, r.rank});
  add_worst(f, r, wait, "waiting for data");
  f.knobs = {"dataloader.num_workers", "dataloader.prefetch_factor", "dataloader.persistent_workers"};
  return {f};
}

std::vector<Finding> rule_h2d_copy(const RankMetrics& r, const Thresholds& th) {
  if (!r.has_gpu || r.transfers.h2d_count == 0) return {};
  const Ns exposed = median_of(r, [](const StepMetrics& s) { return s.h2d_exposed; });
  const Ns pageable = median_of(r, [](const StepMetrics& s) { return s.h2d_pageable; });
  if (share_of(exposed, r.step_median) < th.h2d_exposed_share && share_of(pageable, r.step_median) < th.h2d_pageable_share)
    return {};
  const Ns faster = static_cast<Ns>(static_cast<double>(pageable) * (1.0 - 1.0 / th.pinned_speedup));
  const Gain gain = replayed_or(
      r, WhatIf::PrefetchedH2d, "the host-to-device copies prefetched (pinned, on a side stream)",
      {std::max(exposed, faster), fmt::format("the larger of: exposed copy time hidden, or pageable copies {:.1f}x "
                                              "faster once pinned",
                                              th.pinned_speedup)});
  Finding f = make(Category::H2dCopy, r, std::max(exposed, pageable), gain.ns, th);
  f.leaves_out = "the cost of pinning (page-locked buffers, a pin-memory thread) and copies that cannot overlap the "
                 "kernels that read them";
  const auto& T = r.transfers;
  f.title = fmt::format("Host-to-device copies: {} {} not overlapped with compute; {:.0f}% of bytes from "
                        "pageable memory",
                        dur(exposed), per(r), pct(share_of(static_cast<Ns>(T.h2d_pageable_bytes), static_cast<Ns>(T.h2d_bytes))));
  // Already pinned (an H100 run of the sample's fixed h2d case: 0% pageable, 0.8 ms a step still
  // exposed): pinning is not the fix any more, overlapping is.
  const bool pinned = share_of(pageable, r.step_median) < th.h2d_pageable_share;
  f.detail = pinned ? "The copies are already pinned but the step waits for them: copy the next batch on a side CUDA "
                      "stream while this step computes (a prefetcher that records an event the step waits on)."
                    : "Pin the host buffers (DataLoader pin_memory) and copy with non_blocking=True so copies run at "
                      "full bandwidth and overlap with compute.";
  f.gain_model = gain.model;
  f.evidence.push_back({fmt::format("{} H2D copies, {:.1f} MB; pageable {:.2f} GB/s, pinned {:.2f} GB/s", T.h2d_count,
                                    static_cast<double>(T.h2d_bytes) / 1e6, T.h2d_pageable_gbps, T.h2d_pinned_gbps), 0, 0,
                        r.rank});
  add_worst(f, r, [](const StepMetrics& s) { return s.h2d_exposed; }, "of exposed H2D copies");
  if (!pinned) f.knobs = {"dataloader.pin_memory"};
  return {f};
}

std::vector<Finding> rule_launch_bound(const RankMetrics& r, const Thresholds& th) {
  if (!r.has_gpu || r.launch.kernel_median >= th.launch_short_kernel) return {};
  const Ns idle = median_of(r, [](const StepMetrics& s) { return s.idle_launch; });
  if (share_of(idle, r.step_median) < th.launch_idle_share) return {};
  Finding f = make(Category::LaunchBound, r, idle, idle, th);
  f.leaves_out = "the host work that stays (graph capture and replay, compilation) and kernels that get no faster";
  f.title = fmt::format("Launch bound: the GPU idles {} {} ({:.0f}%) waiting for the CPU to launch short "
                        "kernels (median {})",
                        dur(idle), per(r), pct(f.share), dur(r.launch.kernel_median));
  f.detail = "Launch fewer, larger kernels: CUDA graphs (torch.compile mode reduce-overhead), fused or foreach "
             "optimizers, larger batches.";
  f.gain_model = "idle gaps the host caused are removed (graph replay launches the step at once)";
  f.evidence.push_back({fmt::format("{} kernels, {:.0f}% shorter than 10 µs; launch call median {:.1f} µs; median queue "
                                    "depth at launch {:.1f}",
                                    r.launch.kernels, pct(r.launch.short_kernel_share),
                                    static_cast<double>(r.launch.launch_call_median) / 1e3, r.launch.queue_mean),
                        0, 0, r.rank});
  add_worst(f, r, [](const StepMetrics& s) { return s.idle_launch; }, "GPU idle waiting for launches");
  f.knobs = {"compile.mode", "optimizer.foreach", "optimizer.fused", "sdpa.backend"};
  return {f};
}

std::vector<Finding> rule_cpu_bound(const RankMetrics& r, const Thresholds& th) {
  if (r.has_gpu) {
    if (r.launch.kernel_median < th.launch_short_kernel) return {};  // that is launch bound
    const Ns idle = median_of(r, [](const StepMetrics& s) { return s.idle_launch; });
    if (share_of(idle, r.step_median) < th.cpu_idle_share) return {};
    Finding f = make(Category::CpuBound, r, idle, idle, th);
    f.leaves_out = "the host work that stays (compilation, other threads' CPU time competing for the cores)";
    f.title = fmt::format("CPU bound: the GPU idles {} {} ({:.0f}%) because the host is late issuing work",
                          dur(idle), per(r), pct(f.share));
    f.detail = "The Python/host side of the step is the bottleneck: compile the model (torch.compile), use more CPU "
               "threads for host ops, move preprocessing into DataLoader workers.";
    f.gain_model = "idle gaps the host caused are removed";
    add_worst(f, r, [](const StepMetrics& s) { return s.idle_launch; }, "GPU idle, host late");
    f.knobs = {"compile.mode", "torch.num_threads", "cpu.omp_num_threads"};
    return {f};
  }
  if (!r.has_steps) return {};
  auto busy = [](const StepMetrics& s) {
    return std::max<Ns>(0, s.wall() - s.data_wait - s.sync_wait - s.io_main - s.collective_host);
  };
  const Ns cost = median_of(r, busy);
  if (share_of(cost, r.step_median) < th.cpu_share) return {};
  Finding f = make(Category::CpuBound, r, cost, 0, th);
  f.gain_estimated = false;
  f.severity = severity_for(f.share, th);
  f.title = fmt::format("CPU bound: the main thread computes {} of each {} step ({:.0f}%); no GPU work "
                        "was recorded",
                        dur(cost), dur(r.step_median), pct(f.share));
  f.detail = "The step is compute on the host: check the intra-op thread count (torch.set_num_threads, OMP_NUM_THREADS) "
             "against the cores the job may use, compile the model (torch.compile fuses its ops on the CPU too), use "
             "PyTorch's fused or multi-tensor optimizer step, or move the model to an accelerator.";
  f.gain_model = "not estimated: the saving depends on how the host compute scales with threads";
  add_worst(f, r, busy, "of host compute");
  f.knobs = {"torch.num_threads", "cpu.omp_num_threads", "compile.mode", "optimizer.fused",
             "optimizer.foreach", "sdpa.backend", "memory.channels_last", "torch.matmul_precision"};
  return {f};
}

// Memory is capacity, not time: cost and gain stay 0 and severity says how urgent it is.
Finding memory_finding(const RankMetrics& r, Severity severity) {
  Finding f;
  f.category = Category::Memory;
  f.rank = r.rank;
  f.severity = severity;
  f.gain_model = "not estimated: memory capacity, not time";
  f.gain_estimated = false;
  return f;
}

std::optional<Finding> memory_leak(const RankMetrics& r, const MemoryDevice& m, const Thresholds& th) {
  std::vector<std::int64_t> seen;
  for (auto v : m.step_peak)
    if (v >= 0) seen.push_back(v);
  if (seen.size() < th.leak_min_steps || m.growth_per_step <= 0 || m.growth_fit < th.leak_fit) return std::nullopt;
  // still growing in the second half: warm-up growth (allocator caches, heap arenas) levels off
  if (m.late_growth_per_step < th.leak_late_share * m.growth_per_step) return std::nullopt;
  const auto growth = static_cast<std::int64_t>(m.growth_per_step * static_cast<double>(seen.size() - 1));
  if (growth < th.leak_min_bytes || growth < seen.front() / 20) return std::nullopt;
  const auto per_step = static_cast<std::int64_t>(m.growth_per_step);
  std::string until_full;
  if (m.capacity > 0 && per_step > 0)
    until_full = fmt::format("; at this rate {} is full in about {} more steps", m.device,
                             std::max<std::int64_t>(0, (m.capacity - seen.back()) / per_step));
  Finding f = memory_finding(r, m.capacity > 0 ? Severity::High : Severity::Medium);
  f.title = fmt::format("Memory leak: {} memory grows {} per step ({} to {} over {} steps, R² {:.2f}){}", m.device,
                        bytes(per_step), bytes(seen.front()), bytes(seen.back()), seen.size(), m.growth_fit, until_full);
  f.detail = "Something keeps tensors alive from step to step: a list of losses or outputs that still hold their "
             "graph (append loss.item() or loss.detach()), caches keyed by step, hooks that store activations.";
  f.evidence.push_back({fmt::format("{} peak per step grows along a line: {} per step", m.device, bytes(per_step)),
                        r.steps.front().start, r.steps.back().end, r.rank});
  return f;
}

std::optional<Finding> memory_fragmentation(const RankMetrics& r, const MemoryDevice& m, const Thresholds& th) {
  const bool oversized = m.peak > 0 && static_cast<double>(m.reserved_peak) >= th.fragmentation_ratio * static_cast<double>(m.peak) &&
                         m.reserved_peak - m.peak >= th.fragmentation_min_bytes;
  if (!oversized && m.alloc_retries == 0 && m.ooms == 0) return std::nullopt;
  Finding f = memory_finding(r, m.ooms > 0 || m.alloc_retries > 0 ? Severity::High : Severity::Medium);
  f.title = fmt::format("Memory fragmentation on {}: the allocator reserves {} for a peak of {} allocated{}", m.device,
                        bytes(m.reserved_peak), bytes(m.peak),
                        m.alloc_retries || m.ooms ? fmt::format(" ({} allocation retries, {} out-of-memory errors)",
                                                                m.alloc_retries, m.ooms)
                                                  : std::string());
  f.detail = "Blocks of many sizes leave reserved memory that no request fits. Expandable segments let the caching "
             "allocator grow segments instead of reserving new ones (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True).";
  f.evidence.push_back({fmt::format("reserved {} vs allocated {} at peak", bytes(m.reserved_peak), bytes(m.peak))});
  f.knobs = {"cuda.alloc_conf"};
  return f;
}

std::optional<Finding> memory_headroom(const RankMetrics& r, const MemoryDevice& m, const Thresholds& th) {
  if (m.capacity <= 0 || m.peak <= 0 || static_cast<double>(m.peak) >= th.headroom_share * static_cast<double>(m.capacity))
    return std::nullopt;
  Finding f = memory_finding(r, Severity::Low);
  f.title = fmt::format("Memory headroom on {}: the peak is {} of {} ({:.0f}%)", m.device, bytes(m.peak),
                        bytes(m.capacity), 100.0 * static_cast<double>(m.peak) / static_cast<double>(m.capacity));
  f.detail = "The device could hold more: a larger batch per step (fewer, fuller steps), or less activation "
             "recomputation (checkpointing) where the job uses it.";
  f.evidence.push_back({fmt::format("peak allocated {} on a {} device", bytes(m.peak), bytes(m.capacity))});
  return f;
}

std::vector<Finding> rule_memory(const RankMetrics& r, const Thresholds& th) {
  std::vector<Finding> out;
  for (const auto& m : r.memory)
    for (auto check : {memory_leak, memory_fragmentation, memory_headroom})
      if (auto f = check(r, m, th)) out.push_back(std::move(*f));
  return out;
}

std::vector<Finding> rule_sync_stall(const RankMetrics& r, const Thresholds& th) {
  const Ns sync = median_of(r, [](const StepMetrics& s) { return s.sync_wait; });
  if (!r.has_gpu || share_of(sync, r.step_median) < th.sync_share) return {};
  // What-if: without the sync the host runs ahead and keeps the queue full: the idle time
  // the host's lateness caused (bounded by the time it spent blocked) goes.
  const Gain gain = replayed_or(
      r, WhatIf::NoSyncWait, "the synchronising calls no longer waiting for the GPU (bounded by the step's GPU work)",
      {std::min(sync, median_of(r, [](const StepMetrics& s) { return s.idle_sync; })),
       "GPU idle caused by the host's lateness after syncs, bounded by the blocked time"});
  Finding f = make(Category::SyncStall, r, sync, gain.ns, th);
  f.leaves_out = "work that needs the synchronised result sooner (it waits where it is used instead)";
  f.title = fmt::format("Synchronization: the host blocks {} {} ({:.0f}%) in {} calls; top: {}", dur(sync),
                        per(r), pct(f.share), r.sync_calls, r.top_sync_call.empty() ? "?" : r.top_sync_call);
  f.detail = "Each sync drains the GPU queue and leaves it idle while the host catches up: avoid .item(), .cpu(), "
             "print(tensor) and torch.cuda.synchronize() inside the step; accumulate metrics on the GPU and read them "
             "every N steps.";
  f.gain_model = gain.model;
  add_worst(f, r, [](const StepMetrics& s) { return s.sync_wait; }, "blocked in syncs");
  return {f};
}

std::vector<Finding> rule_exposed_communication(const RankMetrics& r, const Thresholds& th) {
  if (!r.has_gpu || r.gpu.communication == 0) return {};
  const Ns exposed = median_of(r, [](const StepMetrics& s) { return s.exposed_communication; });
  if (share_of(exposed, r.step_median) < th.exposed_comm_share) return {};
  // What-if: communication hidden under compute that does not already overlap it.
  const Ns free_compute = median_of(r, [](const StepMetrics& s) { return s.compute - s.comm_compute_overlap; });
  Finding f = make(Category::ExposedCommunication, r, exposed, std::min(exposed, free_compute), th);
  f.title = fmt::format("Exposed communication: {} {} ({:.0f}%) of collectives run with no compute to hide "
                        "behind ({:.0f}% overlap)",
                        dur(exposed), per(r), pct(f.share), pct(share_of(r.gpu.comm_compute_overlap, r.gpu.communication)));
  f.detail = "Overlap gradient all-reduce with the backward pass: tune DDP's bucket size, use gradient_as_bucket_view "
             "and static_graph, pick NCCL's algorithm/protocol/channels for the message sizes, or compress gradients.";
  f.gain_model = "exposed communication hidden under compute that does not already overlap communication";
  if (r.collectives.count)
    f.evidence.push_back({fmt::format("{} collectives, {:.1f} MB, {} in total ({} side)", r.collectives.count,
                                      static_cast<double>(r.collectives.bytes) / 1e6, dur(r.collectives.time),
                                      r.collectives.device_side ? "GPU" : "host"), 0, 0, r.rank});
  add_worst(f, r, [](const StepMetrics& s) { return s.exposed_communication; }, "of exposed communication");
  f.knobs = {"ddp.bucket_cap_mb", "ddp.gradient_as_bucket_view", "ddp.static_graph", "nccl.algo", "nccl.proto",
             "nccl.min_nchannels", "ddp.comm_hook"};
  return {f};
}

// Where the trace carries GEMM shapes: how far the step's GEMMs are from the device's peak.
void add_efficiency(Finding& f, const RankMetrics& r) {
  const Efficiency& e = r.efficiency;
  if (e.ops == 0 || e.mfu < 0) return;
  f.evidence.push_back({fmt::format("the step's GEMMs ({:.3g} GFLOP) would take {:.1f}% of the step at the device's "
                                    "peak (MFU): {}",
                                    e.flops_per_step / 1e9, 100 * e.mfu, e.peak)});
}

std::vector<Finding> rule_precision(const RankMetrics& r, const Thresholds& th) {
  if (!r.has_gpu || share_of(r.gemm.fp32_simt, r.gpu.busy) < th.fp32_gemm_share) return {};
  const Ns cost = median_of(r, [](const StepMetrics& s) { return s.fp32_gemm; });
  Gain gain{static_cast<Ns>(static_cast<double>(cost) * (1.0 - 1.0 / th.tf32_speedup)),
            fmt::format("FP32 GEMM time {:.1f}x faster on tensor cores (conservative)", th.tf32_speedup)};
  if (th.tf32_speedup == kTensorCoreSpeedup)  // the speed-up the replay used
    gain = replayed_or(r, WhatIf::TensorCoreGemms,
                       fmt::format("the FP32 GEMMs {:.1f}x faster on tensor cores (conservative)", th.tf32_speedup),
                       gain);
  Finding f = make(Category::Precision, r, cost, gain.ns, th);
  f.leaves_out = "casts and layout changes the faster format adds, and kernels it does not speed up as assumed";
  f.title = fmt::format("Precision: FP32 GEMMs on CUDA cores take {:.0f}% of GPU busy time; tensor cores are unused for "
                        "them",
                        pct(share_of(r.gemm.fp32_simt, r.gpu.busy)));
  // TF32 needs compute capability 8.0 (Ampere); older tensor cores take FP16 only.
  const bool no_tf32 = r.compute_major >= 0 && r.compute_major < 8;
  const bool no_tensor_cores = r.compute_major >= 0 && r.compute_major < 7;
  if (no_tensor_cores) return {};  // nothing faster to switch to on this GPU
  if (no_tf32) {
    f.detail = fmt::format("{} (compute capability {}.{}) has FP16 tensor cores but no TF32: train in fp16 autocast "
                           "(AMP) to run these GEMMs on them. This changes numerics: the tuner tries it only with "
                           "--allow-numerics.",
                           r.device.empty() ? std::string("This GPU") : r.device, r.compute_major, r.compute_minor);
  } else {
    f.detail = "Allow TF32 for matmuls and convolutions, or train in bf16/fp16 autocast: tensor cores run these GEMMs "
               "several times faster. This changes numerics: the tuner tries it only with --allow-numerics.";
  }
  f.gain_model = gain.model;
  f.evidence.push_back({fmt::format("{} FP32 SIMT GEMM kernels, {}; top: {}", r.gemm.fp32_simt_kernels,
                                    dur(r.gemm.fp32_simt), r.gemm.top_fp32_kernel), 0, 0, r.rank});
  if (no_tf32) f.knobs = {"amp.dtype"};
  else f.knobs = {"torch.tf32_matmul", "torch.cudnn_tf32", "amp.dtype", "torch.matmul_precision"};
  add_efficiency(f, r);
  return {f};
}

std::vector<Finding> rule_memory_bound(const RankMetrics& r, const Thresholds& th) {
  if (!r.has_gpu || share_of(r.memory_bound_kernels, r.gpu.compute) < th.memory_bound_share) return {};
  const Ns cost = median_of(r, [](const StepMetrics& s) { return s.memory_bound_kernels; });
  Gain gain{static_cast<Ns>(static_cast<double>(cost) * th.fusion_saving),
            fmt::format("{:.0f}% of their time removed by fusion", pct(th.fusion_saving))};
  if (th.fusion_saving == kFusionSaving)  // the saving the replay used
    gain = replayed_or(r, WhatIf::FusedMemoryBound,
                       fmt::format("{:.0f}% of the elementwise/reduction kernels' time removed by fusion",
                                   pct(th.fusion_saving)),
                       gain);
  Finding f = make(Category::MemoryBound, r, cost, gain.ns, th);
  f.leaves_out = "compilation time and kernels the compiler cannot fuse";
  f.title = fmt::format("Memory bound: elementwise, normalisation and reduction kernels take {:.0f}% of compute time",
                        pct(share_of(r.memory_bound_kernels, r.gpu.compute)));
  f.detail = "These kernels move data more than they compute; fusing them (torch.compile) removes round trips to memory.";
  f.gain_model = gain.model;
  f.knobs = {"compile.mode", "sdpa.backend", "memory.channels_last"};
  add_efficiency(f, r);
  return {f};
}

// The slowest rank by step time waited at collectives for the rank they wait for (another one)
// at least as long as its steps exceed the median rank's: its steps are long from waiting, not
// from work (its step mark falls after its wait), and that other rank is the straggler.
static bool slowest_rank_waited_out_its_excess(const Metrics& m, const std::vector<std::optional<Ns>>& rank_waits) {
  const auto& X = m.cross;
  if (X.last_arriver < 0 || X.last_arriver == X.slowest_rank || X.last_arriver_share < 0.5) return false;
  for (std::size_t i = 0; i < m.ranks.size() && i < rank_waits.size(); ++i)
    if (m.ranks[i].rank == X.slowest_rank && rank_waits[i])
      return *rank_waits[i] >= X.step_median_max - X.step_median_median;
  return false;
}

std::vector<Finding> rule_load_imbalance(const Metrics& m, const Thresholds& th,
                                         const std::vector<std::optional<Ns>>& rank_waits) {
  const auto& X = m.cross;
  if (X.ranks < 2 || X.step_spread < th.imbalance_spread || X.slowest_rank < 0) return {};
  if (slowest_rank_waited_out_its_excess(m, rank_waits)) return {};  // rule_late_arriver's
  Finding f;
  f.category = Category::LoadImbalance;
  f.rank = X.slowest_rank;
  f.cost = X.step_median_max - X.step_median_median;
  f.share = share_of(f.cost, X.step_median_max);
  f.gain = f.cost;
  f.gain_share = f.share;
  f.severity = severity_for(f.gain_share, th);
  f.title = fmt::format("Straggler: rank {} takes {} per step, {:.0f}% more than the median rank ({})",
                        X.slowest_rank, dur(X.step_median_max), pct(X.step_spread), dur(X.step_median_median));
  f.detail = "Every collective waits for the slowest rank. Check its data shard, its input pipeline and its host "
             "(thermal throttling, noisy neighbours), and balance the work per rank.";
  f.gain_model = "all ranks at the median rank's step time";
  if (X.matched_collectives)
    f.evidence.push_back({fmt::format("{} collectives matched across ranks: arrival skew median {}, max {}; "
                                      "rank {} arrives last in {:.0f}% of them",
                                      X.matched_collectives, dur(X.arrival_skew_median), dur(X.arrival_skew_max),
                                      X.last_arriver, pct(X.last_arriver_share)), 0, 0, -1});
  return {f};
}

// A rank the others wait for at collectives while every rank's step takes as long (the waits
// make the steps equal, so the step times show no straggler): the cost is the other ranks'
// wait for other ranks on their steps' critical paths (rank_wait), median over their steps,
// then over those ranks.
std::vector<Finding> rule_late_arriver(const Metrics& m, const Thresholds& th,
                                      const std::vector<std::optional<Ns>>& rank_waits) {
  const auto& X = m.cross;
  if (X.ranks < 2 || X.last_arriver < 0 || X.last_arriver_share < 0.5) return {};
  if (X.step_spread >= th.imbalance_spread && !slowest_rank_waited_out_its_excess(m, rank_waits)) return {};
  std::vector<Ns> waits;
  for (std::size_t i = 0; i < m.ranks.size(); ++i)
    if (m.ranks[i].rank != X.last_arriver && rank_waits[i]) waits.push_back(*rank_waits[i]);
  const Ns cost = percentile(waits, 0.5);
  if (waits.empty() || share_of(cost, X.step_median_median) < th.imbalance_spread) return {};
  Finding f;
  f.category = Category::LoadImbalance;
  f.rank = X.last_arriver;
  f.cost = cost;
  f.share = share_of(cost, X.step_median_median);
  f.gain = cost;
  f.gain_share = f.share;
  f.severity = severity_for(f.gain_share, th);
  f.title = fmt::format("Straggler: rank {} arrives last at {:.0f}% of the collectives; the other ranks wait {} of "
                        "each {} step for it ({:.0f}%)",
                        X.last_arriver, pct(X.last_arriver_share), dur(cost), dur(X.step_median_median), pct(f.share));
  f.detail = "Every collective waits for the slowest rank, so all steps take as long as its. Look at what this rank "
             "does before its collectives that the others do not (its data shard, extra work on one rank, logging or "
             "checkpointing on rank 0), its input pipeline and its host, and balance the work per rank.";
  f.gain_model = "the other ranks' wait for this rank on their critical paths (median step) removed";
  f.evidence.push_back({fmt::format("{} collectives matched across ranks: arrival skew median {}, max {}",
                                    X.matched_collectives, dur(X.arrival_skew_median), dur(X.arrival_skew_max)),
                        0, 0, -1});
  return {f};
}

// Launch bound and CPU bound read the same evidence (the GPU idle while the host is late) and
// tell it apart by the kernels' median length. Decided per rank, two ranks losing the same time
// to the same lateness could fall either side of the line by a microsecond of kernel length and
// get different labels; so the job decides once, on the median over its GPU ranks' kernel
// medians, and every rank is judged by that decision.
Thresholds job_thresholds(const Metrics& m, const Thresholds& th) {
  std::vector<Ns> medians;
  for (const auto& r : m.ranks)
    if (r.has_gpu && r.launch.kernels > 0) medians.push_back(r.launch.kernel_median);
  if (medians.size() < 2) return th;
  std::sort(medians.begin(), medians.end());
  const Ns job_median = medians[(medians.size() - 1) / 2];
  Thresholds jt = th;
  // every rank's median is below the line (launch bound) or none is (CPU bound)
  jt.launch_short_kernel = job_median < th.launch_short_kernel ? std::numeric_limits<Ns>::max() : 0;
  return jt;
}

std::vector<Finding> rank_findings(const RankMetrics& r, const Thresholds& th) {
  std::vector<Finding> out;
  using Rule = std::vector<Finding> (*)(const RankMetrics&, const Thresholds&);
  static constexpr Rule kRules[] = {rule_data_loading,          rule_h2d_copy,  rule_launch_bound, rule_sync_stall,
                                    rule_exposed_communication, rule_precision, rule_memory_bound, rule_cpu_bound,
                                    rule_memory};
  for (Rule rule : kRules)
    for (auto& f : rule(r, th)) out.push_back(std::move(f));
  return out;
}

std::optional<Ns> rank_wait_median(const RankMetrics& r) {
  if (r.paths.empty()) return std::nullopt;
  std::vector<Ns> per_step;
  for (const auto& path : r.paths) per_step.push_back(path.by_kind[static_cast<std::size_t>(PathKind::RankWait)]);
  return percentile(std::move(per_step), 0.5);
}

void job_findings(const Metrics& m, const Thresholds& th, const std::vector<std::optional<Ns>>& rank_waits,
                  std::vector<Finding>& out) {
  for (auto& f : rule_load_imbalance(m, th, rank_waits)) out.push_back(std::move(f));
  for (auto& f : rule_late_arriver(m, th, rank_waits)) out.push_back(std::move(f));
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) {
    if (a.gain != b.gain) return a.gain > b.gain;
    if (a.cost != b.cost) return a.cost > b.cost;
    return a.rank < b.rank;
  });
}

std::vector<Finding> run_rules(const Metrics& m, const Thresholds& job_th) {
  const Thresholds th = job_thresholds(m, job_th);
  std::vector<Finding> out;
  std::vector<std::optional<Ns>> rank_waits;
  for (const auto& r : m.ranks) {
    for (auto& f : rank_findings(r, th)) out.push_back(std::move(f));
    rank_waits.push_back(rank_wait_median(r));
  }
  job_findings(m, th, rank_waits, out);
  return out;
}

std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings) {
  std::vector<FindingGroup> groups;
  std::map<Category, std::size_t> group_of;  // per-rank findings only
  for (std::size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    const auto it = f.rank >= 0 ? group_of.find(f.category) : group_of.end();
    const std::size_t gi = it != group_of.end() ? it->second : groups.size();
    if (gi == groups.size()) {  // a new group (always, for a cross-rank finding)
      groups.push_back({f.category, {}, {}, i, f.gain, f.gain, f.cost, f.cost});
      if (f.rank >= 0) group_of.emplace(f.category, gi);
    }
    FindingGroup& g = groups[gi];
    g.findings.push_back(i);
    if (f.rank >= 0) g.ranks.push_back(f.rank);
    if (f.gain > findings[g.worst].gain) g.worst = i;
    g.gain_min = std::min(g.gain_min, f.gain), g.gain_max = std::max(g.gain_max, f.gain);
    g.cost_min = std::min(g.cost_min, f.cost), g.cost_max = std::max(g.cost_max, f.cost);
  }
  for (auto& g : groups) {
    std::sort(g.findings.begin(), g.findings.end(),
              [&](std::size_t a, std::size_t b) { return findings[a].rank < findings[b].rank; });
    std::sort(g.ranks.begin(), g.ranks.end());
    // a rank with two findings of the category (two devices' memory) is one rank
    g.ranks.erase(std::unique(g.ranks.begin(), g.ranks.end()), g.ranks.end());
  }
  return groups;
}

std::string rank_list(const std::vector<std::int32_t>& r) {
  std::string out;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j > i ? fmt::format("{}-{}", r[i], r[j]) : fmt::format("{}", r[i]);
    i = j + 1;
  }
  return out;
}

}  // namespace tt::analyzer
