// A synthetic I/O trace shaped like a recording of the DataLoader sample (samples/dataloader,
// 2 workers; the "Trace DB bytes per event" paragraph of bench/collector_profile.md): the same
// mix of calls, with the durations, sizes, descriptors, clock values and path counts measured
// in that recording. What a trace DB costs per event depends on those magnitudes (SQLite stores
// integers in 0 to 8 bytes by value), so a test can check the DB's bytes per event on it.
// Deterministic: std::mt19937's output is fixed by the standard.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::testing {

// One kind of call: its share of all calls (%) and its typical duration, as recorded.
struct IoCallShape {
  trace::IoOp op;
  const char* func;
  int percent;
  trace::Ns dur;
};
inline constexpr IoCallShape kDataLoaderIoMix[] = {
    {trace::IoOp::Stat, "fstat64", 31, 3'700}, {trace::IoOp::Read, "read", 25, 23'000},
    {trace::IoOp::Seek, "lseek64", 18, 400},   {trace::IoOp::Close, "close", 12, 5'300},
    {trace::IoOp::Open, "open64", 9, 9'000},   {trace::IoOp::Write, "write", 4, 27'000},
    {trace::IoOp::Mmap, "mmap64", 1, 16'000}};

// Appends `calls` I/O calls: 40% on the main process's thread (module imports: 2,400 distinct
// ~60-character paths), the rest on `workers` worker processes (256 sample files). Times are
// CLOCK_MONOTONIC nanoseconds of a machine up for ~6 hours, ~0.5 ms apart per thread.
inline void add_dataloader_io(trace::Trace& t, std::size_t calls, std::uint32_t workers = 2) {
  std::mt19937 rng(15);
  auto below = [&](std::uint32_t n) { return static_cast<std::int64_t>(rng() % n); };
  std::vector<std::uint32_t> tracks;
  std::vector<trace::Ns> clock;
  for (std::uint32_t w = 0; w <= workers; ++w) {
    trace::Process p;
    p.pid = 4000 + w;
    p.name = w == 0 ? "python3" : "pt_data_worker";
    tracks.push_back(t.add_thread({t.add_process(std::move(p)), 4000 + w, ""}));
    clock.push_back(20'709'427'067'041 + 900'000'000 * static_cast<trace::Ns>(w));
  }
  auto& io = t.io_calls;
  for (std::size_t i = 0; i < calls; ++i) {
    const std::size_t k = below(5) < 2 ? 0 : 1 + static_cast<std::size_t>(below(workers));
    auto pick = static_cast<int>(below(100));
    const IoCallShape* s = kDataLoaderIoMix;
    while (pick >= s->percent) pick -= (s++)->percent;
    clock[k] += 2'000 + below(1'000'000);
    const trace::Ns dur = s->dur / 2 + below(static_cast<std::uint32_t>(s->dur));
    const std::string path = k == 0 ? "/usr/lib/python3/dist-packages/torch/_modules/part_" + std::to_string(i / 4 % 2'400) + ".py"
                                    : "/tmp/dbw-data/sample_" + std::to_string(below(256)) + ".timg";
    const std::int32_t fd = static_cast<std::int32_t>(3 + below(22));
    const bool read = s->op == trace::IoOp::Read, write = s->op == trace::IoOp::Write;
    const std::int64_t bytes = read ? 1 + below(30'000) : write ? 1 + below(441) : s->op == trace::IoOp::Mmap ? 602'240 : -1;
    const std::int64_t offset = s->op == trace::IoOp::Seek ? below(4) * 1'000 : s->op == trace::IoOp::Mmap ? 0 : -1;
    const bool enoent = s->op == trace::IoOp::Stat && below(25) == 0;
    std::int64_t result = read || write ? bytes : s->op == trace::IoOp::Open ? fd : s->op == trace::IoOp::Seek ? offset : 0;
    if (enoent) result = -1;
    io.push_span(clock[k], dur, tracks[k], t.strings.intern(s->func));
    io.op.push_back(s->op);
    io.fd.push_back(s->op == trace::IoOp::Open ? -1 : fd);
    io.path.push_back(t.strings.intern(path));
    io.bytes.push_back(bytes);
    io.offset.push_back(offset);
    io.result.push_back(result);
    io.err.push_back(enoent ? 2 : 0);
    clock[k] += dur;
  }
}

}  // namespace tt::testing
