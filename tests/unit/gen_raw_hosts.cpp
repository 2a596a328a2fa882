// gen_raw_hosts DIR HOSTS PROCS EVENTS: a raw record set of a job on HOSTS hosts with PROCS
// processes each, as `tracetune record` leaves it (DIR/<host>/proc-<pid>.ttr), for the merge's
// memory test and bench (tests/integration/merge_memory_test.py, bench/scale_figures.md).
//
// Each process holds about EVENTS events: steps, one ncclAllReduce NVTX range per step (a
// host-side collective, ending at the same moment on every rank), and I/O calls and Python
// ranges in between. Every host has its own monotonic clock and a realtime anchor that is off by
// up to 300 us, so the merge aligns the clocks from the collectives. Deterministic.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "record_file_writer.h"

namespace {

using tt::collector::IoFunc;
using tt::collector::RangeSource;
using tt::collector::StepKind;
using tt::collector::testing::RecordFileWriter;

constexpr std::int64_t kTrueStart = 1'700'000'000'000'000'000;  // realtime of the job's start
constexpr std::int64_t kStepNs = 10'000'000;

void write_process(const std::filesystem::path& dir, int host, int proc, int procs, long events) {
  const std::int64_t pid = 1000 + proc;
  RecordFileWriter w(pid, fmt::format("host-{:03d}", host), 1u << 16);  // small chunks: files near their records' size
  const std::int64_t boot = 1'000'000'000 + std::int64_t{host} * 7'000'000;  // this host's monotonic clock at the start
  w.header.start_mono_ns = boot;
  w.header.start_real_ns = kTrueStart + (host % 7) * 50'000;  // the anchor's error: 0..300 us
  w.header.rank = host * procs + proc;
  w.header.local_rank = proc;
  w.process_info(fmt::format("python train.py --rank {}", w.header.rank), "/usr/bin/python3");
  const std::uint32_t tid = w.main_tid(), loader = w.main_tid() + 1;
  w.thread_name(loader, "pt_data_worker");
  const long steps = std::max(4L, events / 100);
  const long per_step = std::max(1L, (events - 2 * steps) / steps);
  for (long s = 0; s < steps; ++s) {
    const std::int64_t t0 = boot + s * kStepNs;
    for (long k = 0; k < per_step; ++k) {
      const std::int64_t at = t0 + 100'000 + k * ((kStepNs - 2'000'000) / per_step);
      if (k % 2 == 0)
        w.io(loader, IoFunc::Read, at, at + 20'000, fmt::format("/data/shard-{}.bin", k % 16), 65536, 7, 65536);
      else
        w.range(tid, RangeSource::Python, at, at + 30'000, k % 4 == 1 ? "forward" : "backward", "train");
    }
    const std::int64_t reduce_end = t0 + kStepNs - 200'000;  // the same instant on every rank
    w.range(tid, RangeSource::Nvtx, reduce_end - 500'000 - proc * 10'000, reduce_end, "ncclAllReduce", "NCCL", 0,
            1 << 20);
    w.step(tid, StepKind::Step, t0, t0 + kStepNs - 100'000, s);
  }
  w.exit(boot + steps * kStepNs, 0);
  w.write(dir / fmt::format("host-{:03d}", host) / fmt::format("proc-{}.ttr", pid));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: gen_raw_hosts DIR HOSTS PROCS EVENTS\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  const int hosts = std::atoi(argv[2]), procs = std::atoi(argv[3]);
  const long events = std::atol(argv[4]);
  if (hosts < 1 || procs < 1 || events < 1) {
    std::fprintf(stderr, "gen_raw_hosts: HOSTS, PROCS and EVENTS must be positive\n");
    return 2;
  }
  for (int h = 0; h < hosts; ++h)
    for (int p = 0; p < procs; ++p) write_process(dir, h, p, procs, events);
  return 0;
}
