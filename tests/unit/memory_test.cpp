// Memory per step and the memory rule (docs/analysis.md, "Memory"). The Kineto documents here are
// written by the test in the shape PyTorch's profiler gives [memory] events (profile_memory=True:
// an instant per allocation with "Device Type", "Device Id", "Total Allocated", "Total Reserved");
// the CPU PyTorch on this machine is built without Kineto and cannot record one (its legacy
// exporter writes no memory events). The recorded-job side is tests/integration/memory_test.py.
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/trace/importers.h"

namespace tt::analyzer {
namespace {

constexpr std::int64_t kMiB = 1 << 20;

// `steps` ProfilerStep#N ranges of 10 ms on one thread; in step i a [memory] event per
// allocation of `alloc(i)` bytes and a free of half of it (all of it with `free_all`), on CUDA
// device 0 (capacity 80 GiB) with `reserved(i, total)` reserved.
template <class Alloc, class Reserved>
std::string kineto_with_memory(int steps, Alloc alloc, Reserved reserved, bool free_all = false) {
  std::string ev = R"({"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}})";
  std::int64_t total = 0;
  for (int i = 0; i < steps; ++i) {
    const long ts = 1000 + i * 10'000;  // µs
    ev += fmt::format(R"(, {{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1,
                      "ts": {}, "dur": 10000}})", i, ts);
    for (int k = 0; k < 2; ++k) {
      total += k == 0 ? alloc(i) : -alloc(i) / (free_all ? 1 : 2);
      ev += fmt::format(R"(, {{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
                        "tid": 1, "ts": {}, "args": {{"Device Type": 1, "Device Id": 0, "Addr": 1234, "Bytes": {},
                        "Total Allocated": {}, "Total Reserved": {}}}}})",
                        ts + 100 + k * 1000, alloc(i), total, reserved(i, total));
    }
  }
  return R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85899345920}], "traceEvents": [)" +
         ev + "]}";
}

Analysis analyse(const std::string& json) {
  trace::Trace t;
  auto st = trace::import_kineto_buffer(json, "memory.json", t);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error());
  t.finalize();
  return analyze(t, Options{}, "memory.json");
}

const Finding* memory_finding(const Analysis& a, std::string_view title_start) {
  for (const auto& f : a.findings)
    if (f.category == Category::Memory && f.title.starts_with(title_start)) return &f;
  return nullptr;
}

TEST(Memory, KinetoMemoryEventsBecomePerStepPeaks) {
  const auto a = analyse(kineto_with_memory(6, [](int) { return 100 * kMiB; },
                                            [](int, std::int64_t total) { return total + 20 * kMiB; }));
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const auto& mem = a.metrics.ranks[0].memory;
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].device, "cuda:0");
  ASSERT_EQ(mem[0].step_peak.size(), 6u);
  // step i: allocated peaks at 50 MiB * i + 100 MiB (half of each allocation stays)
  for (int i = 0; i < 6; ++i) EXPECT_EQ(mem[0].step_peak[static_cast<std::size_t>(i)], (50 * i + 100) * kMiB) << i;
  EXPECT_NEAR(mem[0].growth_per_step, 50.0 * kMiB, 1.0);
  EXPECT_NEAR(mem[0].growth_fit, 1.0, 1e-9);
  EXPECT_EQ(mem[0].capacity, 85899345920);
  // 50 MiB kept every step, 250 MiB over six steps: a leak, and the projection to full
  const Finding* leak = memory_finding(a, "Memory leak");
  ASSERT_NE(leak, nullptr);
  EXPECT_NE(leak->title.find("grows 50.0 MiB per step"), std::string::npos) << leak->title;
  EXPECT_NE(leak->title.find("is full in about"), std::string::npos) << leak->title;
  EXPECT_EQ(leak->gain, 0);
  // 350 MiB of 80 GiB: headroom
  EXPECT_NE(memory_finding(a, "Memory headroom on cuda:0"), nullptr);
  EXPECT_EQ(memory_finding(a, "Memory fragmentation"), nullptr);
}

TEST(Memory, SteadyMemoryIsNoLeakAndReservedFarAboveAllocatedIsFragmentation) {
  // each step allocates 1 GiB and frees all of it (total returns to 0); the allocator reserves 4 GiB
  const auto a = analyse(kineto_with_memory(8, [](int) { return 1024 * kMiB; },
                                            [](int, std::int64_t) { return 4096 * kMiB; }, true));
  const auto& mem = a.metrics.ranks[0].memory;
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(memory_finding(a, "Memory leak"), nullptr) << mem[0].growth_per_step;
  const Finding* frag = memory_finding(a, "Memory fragmentation on cuda:0");
  ASSERT_NE(frag, nullptr);
  EXPECT_EQ(frag->knobs, std::vector<std::string>{"cuda.alloc_conf"});
}

TEST(Memory, FewStepsOrNoisyGrowthIsNotALeak) {
  auto noisy = [](int i) { return (i % 3 == 0 ? 900 : 100) * kMiB; };
  const auto a = analyse(kineto_with_memory(4, [](int) { return 200 * kMiB; },
                                            [](int, std::int64_t total) { return total; }));
  EXPECT_EQ(memory_finding(a, "Memory leak"), nullptr);  // 4 steps: too few to call it
  const auto b = analyse(kineto_with_memory(9, noisy, [](int, std::int64_t total) { return total; }));
  ASSERT_FALSE(b.metrics.ranks[0].memory.empty());
  EXPECT_LT(b.metrics.ranks[0].memory[0].growth_fit, 0.99);
}

TEST(Memory, MemoryEventsWithoutTotalsAreSkippedWithADiagnostic) {
  trace::Trace t;
  const std::string json = R"({"traceEvents": [{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5,
    "args": {"Bytes": 12}}]})";
  ASSERT_TRUE(trace::import_kineto_buffer(json, "m.json", t).ok());
  EXPECT_EQ(t.counters.size(), 0u);
  EXPECT_EQ(t.ranges.size(), 0u);
  bool said = false;
  for (const auto& d : t.diagnostics) said = said || d.reason.find("[memory]") != std::string::npos;
  EXPECT_TRUE(said);
}

// torch 2.x writes host allocations with "Device Type": 0 and "Device Id": -1; they were once
// skipped as events "without device" (a real profile_memory=True trace showed no memory).
TEST(Memory, CpuMemoryEventsWithDeviceIdMinusOneAreCounters) {
  trace::Trace t;
  const std::string json = R"({"traceEvents": [{"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5,
    "args": {"Total Reserved": 0, "Total Allocated": 65536, "Bytes": 65536, "Device Id": -1, "Device Type": 0}}]})";
  ASSERT_TRUE(trace::import_kineto_buffer(json, "m.json", t).ok());
  ASSERT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.strings.get(t.counters.name[0]), "cpu memory.allocated");
  EXPECT_EQ(t.counters.value[0], 65536.0);
  for (const auto& d : t.diagnostics) EXPECT_EQ(d.reason.find("[memory]"), std::string::npos) << d.reason;
}

TEST(Memory, ReservedSamplesAloneGivePeaksAndGrowth) {
  // an nsys export with --cuda-memory-usage: only "cuda:N memory.reserved", growing 32 MiB a step
  trace::Trace t;
  trace::Process p;
  p.pid = 1;
  const auto proc = t.add_process(p);
  const auto main = t.add_thread({proc, 1, "main"});
  for (int i = 0; i < 8; ++i) {
    const trace::Ns s = i * 10'000'000;
    t.steps.push_span(s, 10'000'000, main, t.strings.intern("ProfilerStep#" + std::to_string(i)));
    t.steps.number.push_back(i);
    t.counters.ts.push_back(s + 5'000'000);
    t.counters.track.push_back(main);
    t.counters.name.push_back(t.strings.intern("cuda:0 memory.reserved"));
    t.counters.value.push_back(static_cast<double>((512 + 32 * i) * kMiB));
  }
  t.finalize();
  const auto a = analyze(t, Options{}, "nsys");
  ASSERT_EQ(a.metrics.ranks.size(), 1u);
  const auto& mem = a.metrics.ranks[0].memory;
  ASSERT_EQ(mem.size(), 1u);
  EXPECT_EQ(mem[0].step_peak.size(), 8u);
  EXPECT_EQ(mem[0].peak, (512 + 32 * 7) * kMiB);
  EXPECT_NEAR(mem[0].growth_per_step, 32.0 * kMiB, 1.0);
  EXPECT_EQ(memory_finding(a, "Memory fragmentation"), nullptr);  // reserved = used: no fragmentation
}

}  // namespace
}  // namespace tt::analyzer
