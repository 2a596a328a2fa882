// A generated training-like trace for benchmarks: R ranks, each with a main thread of nested
// CPU ops and runtime calls, and 2 GPU streams of kernels and copies, repeated per step.
// Deterministic for a given size and seed.
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "tracetune/trace/model.h"

namespace tt::bench {

inline trace::Trace make_synthetic_trace(std::size_t target_events, int ranks = 2, std::uint32_t seed = 42) {
  using namespace tt::trace;
  Trace t;
  t.clock_domain = "synthetic";
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> kernel_dur(2'000, 200'000), gap(500, 20'000), pick(0, 63);
  std::vector<StringId> names;
  for (int i = 0; i < 64; ++i) names.push_back(t.strings.intern("kernel_" + std::to_string(i) + "<float, 128>"));
  const StringId op = t.strings.intern("aten::linear"), launch = t.strings.intern("cudaLaunchKernel"),
                 step_name = t.strings.intern("ProfilerStep"), h2d = t.strings.intern("Memcpy HtoD (Pinned -> Device)");
  const std::size_t per_rank = target_events / static_cast<std::size_t>(ranks);
  std::uint32_t corr = 1;
  for (int r = 0; r < ranks; ++r) {
    Process p;
    p.pid = 1000 + r;
    p.rank = r;
    p.name = "python";
    const auto pi = t.add_process(p);
    Device d;
    d.process = pi;
    d.index = r;
    d.name = "Synthetic GPU";
    const auto di = t.add_device(d);
    const auto thread = t.add_thread({pi, 1000 + r, "main"});
    const auto s_compute = t.add_stream({di, 7, ""});
    const auto s_copy = t.add_stream({di, 13, ""});
    Ns cpu = 1'000'000, gpu = 1'000'000;
    std::size_t made = 0;
    std::int64_t step = 0;
    while (made < per_rank) {
      const Ns step_start = cpu;
      for (int k = 0; k < 200 && made < per_rank; ++k) {
        const Ns kd = kernel_dur(rng);
        // an op with one launch inside
        t.ranges.push(cpu, 6'000, thread, op, RangeKind::CpuOp, 0, corr);
        auto& a = t.api_calls;
        a.start.push_back(cpu + 1'000); a.dur.push_back(4'000); a.track.push_back(thread); a.name.push_back(launch);
        a.correlation.push_back(corr); a.external_id.push_back(corr); a.cbid.push_back(211); a.return_value.push_back(0);
        a.api.push_back(ApiKind::Runtime);
        gpu = std::max(gpu + gap(rng), cpu + 5'000);
        auto& kt = t.kernels;
        kt.start.push_back(gpu); kt.dur.push_back(kd); kt.track.push_back(s_compute); kt.name.push_back(names[pick(rng)]);
        kt.correlation.push_back(corr); kt.external_id.push_back(corr); kt.config.push_back(kNone); kt.graph_id.push_back(0);
        gpu += kd;
        cpu += 7'000;
        ++corr;
        made += 3;
        if (k % 50 == 0) {
          auto& m = t.memcpys;
          m.start.push_back(gpu); m.dur.push_back(30'000); m.track.push_back(s_copy); m.name.push_back(h2d);
          m.bytes.push_back(1 << 22); m.correlation.push_back(0); m.direction.push_back(MemcpyDirection::HtoD);
          m.src_kind.push_back(MemoryKind::Pinned); m.dst_kind.push_back(MemoryKind::Device); m.async.push_back(1);
          ++made;
        }
      }
      cpu = std::max(cpu, gpu);
      t.steps.start.push_back(step_start); t.steps.dur.push_back(cpu - step_start); t.steps.track.push_back(thread);
      t.steps.name.push_back(step_name); t.steps.number.push_back(step++);
      ++made;
    }
  }
  t.finalize();
  return t;
}

}  // namespace tt::bench
