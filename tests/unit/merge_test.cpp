// merge_raw: raw record files of several processes and hosts -> one Trace. Process rows
// (fork, exec, crash), event mapping, clock alignment, damage reporting, determinism.
#include "tracetune/collector/launcher.h"
#include "tracetune/collector/merge.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>
#include <random>

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <fmt/format.h>

#include "record_file_writer.h"
#include "tracetune/trace/py_stacks.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/summary.h"

namespace tt::collector {
namespace {

using testing::RecordFileWriter;
using testing::TempDir;
using trace::DiagnosticKind;
namespace fs = std::filesystem;

// Every table of a trace file as text, its rows in their stored order, the schema and the page size.
std::string dump_tables(const fs::path& db) {
  sqlite3* h = nullptr;
  std::string out;
  if (sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(h);
    return "cannot open " + db.string();
  }
  auto each_row = [&](const std::string& sql, auto&& row) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(h, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) out += "bad query: " + sql + "\n";
    while (s != nullptr && sqlite3_step(s) == SQLITE_ROW) row(s);
    sqlite3_finalize(s);
  };
  each_row("PRAGMA page_size", [&](sqlite3_stmt* s) { out += fmt::format("page size {}\n", sqlite3_column_int(s, 0)); });
  std::vector<std::string> tables;
  each_row("SELECT type, name, sql FROM sqlite_master ORDER BY type, name", [&](sqlite3_stmt* s) {
    const auto text = [&](int c) { return std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)) ?: ""); };
    out += text(0) + " " + text(1) + ": " + text(2) + "\n";
    if (text(0) == "table") tables.push_back(text(1));
  });
  for (const std::string& table : tables)
    each_row("SELECT * FROM " + table, [&](sqlite3_stmt* s) {
      out += table;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const auto* v = reinterpret_cast<const char*>(sqlite3_column_text(s, c));
        out += fmt::format(" {}:{}", sqlite3_column_type(s, c), v != nullptr ? v : "NULL");
      }
      out += "\n";
    });
  sqlite3_close(h);
  return out;
}

// merge_raw_to_file (tracetune merge, record) streams the events into the file: it must write
// the rows write_trace writes of merge_raw's trace, and the summary `tracetune info` gives of
// them. Checked on every raw set the tests below merge through merge_dirs.
void expect_streamed_merge_equal(std::span<const fs::path> dirs, MergeOptions opt) {
  opt.progress = nullptr;  // the caller counts its own merge's progress
  TempDir out;
  MergeReport report;
  auto merged = merge_raw(dirs, opt, report);  // again: the caller's trace stays as merged
  ASSERT_TRUE(merged) << merged.error();
  trace::Trace& in_memory = merged.value();
  ASSERT_TRUE(trace::write_trace(in_memory, out.path() / "memory.db", "test"));
  auto summary = merge_raw_to_file(dirs, opt, report, {out.path() / "streamed.db", "test", {}});
  ASSERT_TRUE(summary) << summary.error();
  EXPECT_EQ(dump_tables(out.path() / "memory.db"), dump_tables(out.path() / "streamed.db"));
  EXPECT_EQ(trace::summary_json(summary.value()), trace::summary_json(trace::summarize(in_memory)));
}

Result<trace::Trace> merge_dirs(std::vector<fs::path> dirs, MergeReport& report,
                                const MergeOptions& opt = {}) {
  auto t = merge_raw(dirs, opt, report);
  if (t) expect_streamed_merge_equal(dirs, opt);
  return t;
}

std::string_view s(const trace::Trace& t, trace::StringId id) {
  return t.strings.get(id);
}

const trace::Process* find_process(const trace::Trace& t, std::int64_t pid, std::string_view host = {}) {
  for (const auto& p : t.processes)
    if (p.pid == pid && (host.empty() || p.host == host)) return &p;
  return nullptr;
}

const trace::Diagnostic* find_diag(const trace::Trace& t, DiagnosticKind kind, std::string_view reason_part) {
  for (const auto& d : t.diagnostics)
    if (d.kind == kind && d.reason.find(reason_part) != std::string::npos) return &d;
  return nullptr;
}

// Index of the only range named `name`, or -1.
int range_named(const trace::Trace& t, std::string_view name) {
  int found = -1;
  for (std::size_t i = 0; i < t.ranges.size(); ++i)
    if (s(t, t.ranges.name[i]) == name) {
      if (found >= 0) return -2;
      found = static_cast<int>(i);
    }
  return found;
}

const trace::Thread& thread_of(const trace::Trace& t, std::uint32_t track) {
  return t.threads[t.tracks[track].owner];
}

TEST(Merge, OneProcessEveryEventKind) {
  TempDir dir;
  RecordFileWriter w(100, "node-a");
  w.header.ppid = 1;
  w.header.rank = 0;
  w.header.local_rank = 0;
  w.process_info("python train.py", "/usr/bin/python3.12");
  w.thread_name(101, "pt_data_worker");
  const std::int64_t t0 = w.header.start_mono_ns;
  w.io(100, IoFunc::OpenAt, t0 + 10, t0 + 20, "/data/a.bin", -1, -1, 7);
  w.io(101, IoFunc::Pread64, t0 + 30, t0 + 80, "/data/a.bin", 4096, 7, 4096, 0, 8192);
  w.io(101, IoFunc::Fread, t0 + 90, t0 + 95, "/data/b.txt", 10, -1, 10);
  w.io(101, IoFunc::Fstatat, t0 + 96, t0 + 97, "/data", -1, -1, -1, 2);
  w.io(100, IoFunc::Mmap, t0 + 98, t0 + 99, "/data/a.bin", 1 << 20, 7);
  w.io(100, IoFunc::Lseek64, t0 + 99, t0 + 100, "", -1, 7);
  w.io(100, IoFunc::Fclose, t0 + 100, t0 + 101, "");
  w.range(100, RangeSource::Nvtx, t0 + 200, t0 + 300, "forward", "torch");
  w.range(100, RangeSource::Python, t0 + 210, t0 + 220, "model.forward");
  w.range(100, RangeSource::User, t0 + 230, t0 + 240, "my span", "mine");
  w.mark(100, RangeSource::Nvtx, t0 + 250, "nvtx.category 3 Communication", "torch");
  w.mark(100, RangeSource::Nvtx, t0 + 260, "loss spike", "torch");
  w.step(100, StepKind::Step, t0 + 150, t0 + 400, 12);
  w.step(100, StepKind::BatchWait, t0 + 150, t0 + 190, 12);
  w.step(100, StepKind::OptimizerStep, t0 + 350, t0 + 390, 12);
  w.counter(101, t0 + 500, "queue_depth", 3.0);
  w.exit(t0 + 1000, 0);
  w.write(dir.path() / "node-a" / "proc-100-1.ttr");

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  trace::Trace& t = r.value();

  EXPECT_EQ(t.clock_domain, "CLOCK_MONOTONIC");
  ASSERT_EQ(report.hosts.size(), 1u);
  EXPECT_EQ(report.hosts[0].host, "node-a");
  EXPECT_EQ(report.hosts[0].offset_ns, 0);
  EXPECT_EQ(report.files, 1u);
  EXPECT_EQ(report.processes, 1u);
  EXPECT_EQ(report.truncated, 0u);
  EXPECT_NE(std::find(t.metadata.begin(), t.metadata.end(),
                      std::pair<std::string, std::string>("clock_offset_ns:node-a", "0")),
            t.metadata.end());

  ASSERT_EQ(t.processes.size(), 1u);
  const trace::Process& p = t.processes[0];
  EXPECT_EQ(p.pid, 100);
  EXPECT_EQ(p.parent_pid, 1);
  EXPECT_EQ(p.rank, 0);
  EXPECT_EQ(p.host, "node-a");
  EXPECT_EQ(p.name, "python3.12");
  EXPECT_EQ(p.command_line, "python train.py");
  EXPECT_EQ(p.start, t0);
  EXPECT_EQ(p.end, t0 + 1000);
  EXPECT_EQ(p.exit_status, 0);
  EXPECT_FALSE(p.truncated);

  // Threads: the main thread first (named after the process), then each writer tid.
  ASSERT_EQ(t.threads.size(), 2u);
  EXPECT_EQ(t.threads[0].tid, 100);
  EXPECT_EQ(t.threads[0].name, "python3.12");
  EXPECT_EQ(t.threads[1].tid, 101);
  EXPECT_EQ(t.threads[1].name, "pt_data_worker");
  EXPECT_EQ(t.threads[1].process, 0u);

  ASSERT_EQ(t.io_calls.size(), 7u);
  EXPECT_EQ(s(t, t.io_calls.name[0]), "openat");
  EXPECT_EQ(t.io_calls.op[0], trace::IoOp::Open);
  EXPECT_EQ(t.io_calls.result[0], 7);
  EXPECT_EQ(s(t, t.io_calls.path[0]), "/data/a.bin");
  EXPECT_EQ(t.io_calls.start[0], t0 + 10);
  EXPECT_EQ(t.io_calls.dur[0], 10);
  EXPECT_EQ(thread_of(t, t.io_calls.track[0]).tid, 100);
  EXPECT_EQ(s(t, t.io_calls.name[1]), "pread64");
  EXPECT_EQ(t.io_calls.op[1], trace::IoOp::Read);
  EXPECT_EQ(t.io_calls.bytes[1], 4096);
  EXPECT_EQ(t.io_calls.offset[1], 8192);
  EXPECT_EQ(t.io_calls.fd[1], 7);
  EXPECT_EQ(thread_of(t, t.io_calls.track[1]).tid, 101);
  EXPECT_EQ(s(t, t.io_calls.name[2]), "fread");
  EXPECT_EQ(t.io_calls.op[2], trace::IoOp::Read);
  EXPECT_EQ(t.io_calls.op[3], trace::IoOp::Stat);
  EXPECT_EQ(t.io_calls.err[3], 2);
  EXPECT_EQ(t.io_calls.op[4], trace::IoOp::Mmap);
  EXPECT_EQ(t.io_calls.op[5], trace::IoOp::Seek);
  EXPECT_EQ(s(t, t.io_calls.path[5]), "");
  EXPECT_EQ(t.io_calls.op[6], trace::IoOp::Close);
  EXPECT_EQ(s(t, t.io_calls.name[6]), "fclose");

  const int fwd = range_named(t, "forward");
  ASSERT_GE(fwd, 0);
  EXPECT_EQ(t.ranges.kind[fwd], trace::RangeKind::Nvtx);
  EXPECT_EQ(s(t, t.ranges.domain[fwd]), "torch");
  EXPECT_EQ(t.ranges.dur[fwd], 100);
  const int py = range_named(t, "model.forward");
  ASSERT_GE(py, 0);
  EXPECT_EQ(t.ranges.kind[py], trace::RangeKind::UserAnnotation);
  EXPECT_EQ(s(t, t.ranges.domain[py]), "python");
  const int user = range_named(t, "my span");
  ASSERT_GE(user, 0);
  EXPECT_EQ(t.ranges.kind[user], trace::RangeKind::UserAnnotation);
  EXPECT_EQ(s(t, t.ranges.domain[user]), "mine");
  const int mark = range_named(t, "loss spike");
  ASSERT_GE(mark, 0);
  EXPECT_EQ(t.ranges.kind[mark], trace::RangeKind::Instant);
  EXPECT_EQ(t.ranges.dur[mark], 0);
  EXPECT_EQ(t.ranges.start[mark], t0 + 260);
  EXPECT_EQ(range_named(t, "nvtx.category 3 Communication"), -1);
  const auto* cat = find_diag(t, DiagnosticKind::Note, "NVTX category");
  ASSERT_NE(cat, nullptr);
  EXPECT_EQ(cat->count, 1u);

  const int wait = range_named(t, "DataLoader: waiting for batch");
  ASSERT_GE(wait, 0);
  EXPECT_EQ(t.ranges.kind[wait], trace::RangeKind::UserAnnotation);
  EXPECT_EQ(s(t, t.ranges.domain[wait]), "tracetune");
  EXPECT_EQ(t.ranges.dur[wait], 40);
  const int opt = range_named(t, "optimizer.step");
  ASSERT_GE(opt, 0);
  EXPECT_EQ(s(t, t.ranges.domain[opt]), "tracetune");
  EXPECT_EQ(t.ranges.size(), 6u);

  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(s(t, t.steps.name[0]), "step");
  EXPECT_EQ(t.steps.number[0], 12);
  EXPECT_EQ(t.steps.start[0], t0 + 150);
  EXPECT_EQ(t.steps.dur[0], 250);
  EXPECT_EQ(thread_of(t, t.steps.track[0]).tid, 100);

  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(s(t, t.counters.name[0]), "queue_depth");
  EXPECT_DOUBLE_EQ(t.counters.value[0], 3.0);
  EXPECT_EQ(thread_of(t, t.counters.track[0]).tid, 101);

  // The merged trace is a valid model: finalize sorts it and recomputes nesting.
  t.finalize();
  EXPECT_EQ(t.event_count(), 7u + 6u + 1u + 1u);
}

// Two hosts whose monotonic clocks started at different boots: each host's events move by
// its own (realtime - monotonic) anchor, so the same wall-clock instant lines up.
TEST(Merge, TwoHostsAreAlignedOnRealtime) {
  TempDir dir;
  const std::int64_t real0 = 1'700'000'000'000'000'000;
  // Host a booted long ago (large monotonic), host b recently.
  RecordFileWriter a(10, "node-a");
  a.header.start_mono_ns = 900'000'000'000;
  a.header.start_real_ns = real0;
  a.io(10, IoFunc::Read, 900'000'000'500, 900'000'000'600, "");
  a.exit(900'000'001'000, 0);
  a.write(dir.path() / "node-a" / "proc-10.ttr");
  // A second file on node-a with a 3 us anchor error (an NTP step between the two reads):
  // the median of three picks a sound anchor.
  RecordFileWriter a2(11, "node-a");
  a2.header.start_mono_ns = 900'000'000'100;
  a2.header.start_real_ns = real0 + 100 + 3000;
  a2.exit(900'000'000'200, 0);
  a2.write(dir.path() / "node-a" / "proc-11.ttr");
  RecordFileWriter a3(12, "node-a");
  a3.header.start_mono_ns = 900'000'000'200;
  a3.header.start_real_ns = real0 + 200;
  a3.exit(900'000'000'300, 0);
  a3.write(dir.path() / "node-a" / "proc-12.ttr");

  RecordFileWriter b(10, "node-b");  // same pid on another host: a different process
  b.header.start_mono_ns = 5'000'000'000;
  b.header.start_real_ns = real0 + 250;                      // started 250 ns after a's first process
  b.io(10, IoFunc::Read, 5'000'000'250, 5'000'000'350, "");  // wall clock: real0 + 500
  b.exit(5'000'001'000, 0);
  fs::path other = dir.path() / "second-dir";
  b.write(other / "node-b" / "proc-10.ttr");

  MergeReport report;
  auto r = merge_dirs({dir.path(), other}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  EXPECT_EQ(t.clock_domain, "CLOCK_REALTIME (aligned from per-host monotonic clocks)");
  ASSERT_EQ(report.hosts.size(), 2u);
  EXPECT_EQ(report.hosts[0].host, "node-a");
  EXPECT_EQ(report.hosts[0].files, 3u);
  EXPECT_EQ(report.hosts[0].offset_ns, real0 - 900'000'000'000);
  EXPECT_EQ(report.hosts[1].host, "node-b");
  EXPECT_EQ(report.hosts[1].files, 1u);
  EXPECT_EQ(report.hosts[1].offset_ns, real0 + 250 - 5'000'000'000);
  for (const auto& h : report.hosts)
    EXPECT_NE(std::find(t.metadata.begin(), t.metadata.end(),
                        std::pair<std::string, std::string>("clock_offset_ns:" + h.host,
                                                            std::to_string(h.offset_ns))),
              t.metadata.end());

  ASSERT_EQ(t.processes.size(), 4u);
  const auto* pa = find_process(t, 10, "node-a");
  const auto* pb = find_process(t, 10, "node-b");
  ASSERT_NE(pa, nullptr);
  ASSERT_NE(pb, nullptr);
  EXPECT_EQ(pa->start, real0);
  EXPECT_EQ(pb->start, real0 + 250);
  EXPECT_EQ(pb->end, real0 + 250 + 1000);
  ASSERT_EQ(t.io_calls.size(), 2u);
  std::vector<std::int64_t> starts(t.io_calls.start.begin(), t.io_calls.start.end());
  std::sort(starts.begin(), starts.end());
  EXPECT_EQ(starts[0], real0 + 500);  // both reads happened at the same wall-clock instant
  EXPECT_EQ(starts[1], real0 + 500);
}

TEST(Merge, ProcessWithoutExitIsTruncatedAtItsLastEvent) {
  TempDir dir;
  RecordFileWriter w(300, "h");
  const std::int64_t t0 = w.header.start_mono_ns;
  w.io(300, IoFunc::Read, t0 + 10, t0 + 20, "");
  w.range(301, RangeSource::Nvtx, t0 + 30, t0 + 7000, "long");
  w.counter(300, t0 + 500, "c", 1);
  w.write(dir.path() / "proc-300.ttr");  // SIGKILL: no exit record, header never updated

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_TRUE(t.processes[0].truncated);
  EXPECT_EQ(t.processes[0].end, t0 + 7000);
  EXPECT_EQ(t.processes[0].exit_status, -1);
  EXPECT_EQ(report.truncated, 1u);
  const auto* d = find_diag(t, DiagnosticKind::Truncated, "process 300 ");
  ASSERT_NE(d, nullptr);
  EXPECT_NE(d->reason.find(std::to_string(t0 + 7000)), std::string::npos) << d->reason;
  EXPECT_EQ(d->source, (dir.path() / "proc-300.ttr").string());
}

TEST(Merge, ExitRecordWithoutHeaderUpdateStillEnds) {
  TempDir dir;
  RecordFileWriter w(310, "h");
  const std::int64_t t0 = w.header.start_mono_ns;
  w.add(RecordType::Exit, ExitRecord{t0 + 90, 128 + 9, 2}, 310);  // fatal signal path
  w.write(dir.path() / "p.ttr");
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const auto& p = r->processes.at(0);
  EXPECT_FALSE(p.truncated);
  EXPECT_EQ(p.exit_status, 137);
  EXPECT_EQ(p.end, t0 + 90);
  EXPECT_EQ(report.truncated, 0u);
  EXPECT_NE(find_diag(r.value(), DiagnosticKind::Note, "signal 9"), nullptr);
}

TEST(Merge, NegativeDurationsAreClampedAndCounted) {
  TempDir dir;
  RecordFileWriter w(400, "h");
  w.io(400, IoFunc::Read, 2000, 1500, "");
  w.range(400, RangeSource::User, 3000, 2000, "backwards");
  w.io(400, IoFunc::Read, 4000, 4100, "");
  w.exit(5000, 0);
  w.write(dir.path() / "p.ttr");
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  EXPECT_EQ(t.io_calls.dur[0], 0);
  EXPECT_EQ(t.io_calls.start[0], 2000);
  EXPECT_EQ(t.io_calls.dur[1], 100);
  EXPECT_EQ(t.ranges.dur[0], 0);
  const auto* d = find_diag(t, DiagnosticKind::Note, "clamped");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 2u);
}

// TSC-timed I/O reaches the trace in CLOCK_MONOTONIC ns; a file without the pairs to map it
// loses its I/O records, and says so.
TEST(Merge, TscTimedIoIsMappedOrReportedUnmapped) {
  TempDir dir;
  RecordFileWriter w(410, "h");
  w.header.flags |= kIoClockTsc;
  w.clock_sync(4'000'000, 1'000'000);  // 4 ticks per ns
  w.clock_sync(4'400'000, 1'100'000);
  w.io(410, IoFunc::Read, 4'040'000, 4'040'400, "/x", 8, 3, 8);
  w.exit(1'200'000, 0);
  w.write(dir.path() / "a" / "p.ttr");
  RecordFileWriter u(411, "h");
  u.header.flags |= kIoClockTsc;
  u.clock_sync(4'000'000, 1'000'000);
  u.io(411, IoFunc::Read, 4'040'000, 4'040'400, "/x", 8, 3, 8);
  u.io(411, IoFunc::Read, 4'080'000, 4'080'400, "/x", 8, 3, 8);
  u.exit(1'200'000, 0);
  u.write(dir.path() / "b" / "p.ttr");
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  ASSERT_EQ(t.io_calls.size(), 1u);
  EXPECT_EQ(t.io_calls.start[0], 1'010'000);
  EXPECT_EQ(t.io_calls.dur[0], 100);
  const auto* d = find_diag(t, DiagnosticKind::Skipped, "timed by the TSC");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->count, 2u);
}

// Issue 17 #12: crafted anchors of +-2^63 and a span from INT64_MIN to INT64_MAX saturate
// (counted) instead of wrapping; a host name of invalid UTF-8 is sanitised; the trace then
// passes the store's own reader.
TEST(Merge, CraftedTimesSaturateAndHostsBecomeValidUtf8) {
  TempDir dir;
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min(), kMax = std::numeric_limits<std::int64_t>::max();
  RecordFileWriter a(500, "node-a");
  a.io(500, IoFunc::Read, a.header.start_mono_ns + 10, a.header.start_mono_ns + 20, "");
  a.exit(a.header.start_mono_ns + 100, 0);
  a.write(dir.path() / "node-a" / "proc-500.ttr");
  RecordFileWriter b(501, "node-\xff\xfe");
  b.header.start_real_ns = kMax;
  b.header.start_mono_ns = kMin;
  b.io(501, IoFunc::Read, kMin, kMax, "");
  b.io(501, IoFunc::Write, 10, 20, "");
  b.exit(kMax, 0);
  b.write(dir.path() / "node-b" / "proc-501.ttr");
  RecordFileWriter c(502, "node-c");  // offset +10: a span to near INT64_MAX ends past it
  c.header.start_real_ns = 10;
  c.header.start_mono_ns = 0;
  c.io(502, IoFunc::Read, 0, kMax - 5, "");
  c.exit(kMax - 5, 0);
  c.write(dir.path() / "node-c" / "proc-502.ttr");

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  trace::Trace& t = r.value();
  for (std::size_t i = 0; i < t.io_calls.size(); ++i) {
    std::int64_t end = 0;
    EXPECT_GE(t.io_calls.dur[i], 0);
    EXPECT_FALSE(__builtin_add_overflow(t.io_calls.start[i], t.io_calls.dur[i], &end)) << i;
  }
  EXPECT_NE(find_diag(t, DiagnosticKind::Note, "clamped"), nullptr);
  const auto* pb = find_process(t, 501);
  ASSERT_NE(pb, nullptr);
  EXPECT_EQ(pb->host, "node-\xEF\xBF\xBD\xEF\xBF\xBD");
  TempDir out;
  ASSERT_TRUE(trace::write_trace(t, out.path() / "t.db", "test"));
  auto back = trace::read_trace(out.path() / "t.db");
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->io_calls.size(), 4u);
}

TEST(Merge, ForkChildKeepsItsParent) {
  TempDir dir;
  RecordFileWriter parent(500, "h");
  parent.process_info("python train.py", "/usr/bin/python3");
  parent.fork(parent.header.start_mono_ns + 100, 501);
  parent.exit(parent.header.start_mono_ns + 9000, 0);
  parent.write(dir.path() / "proc-500.ttr");
  RecordFileWriter child(501, "h");
  child.header.ppid = 500;
  child.header.flags |= kForkChild;
  child.header.start_mono_ns = parent.header.start_mono_ns + 100;
  child.io(501, IoFunc::Read, child.header.start_mono_ns + 5, child.header.start_mono_ns + 50, "/data/x");
  child.exit(child.header.start_mono_ns + 100, 0);
  child.write(dir.path() / "proc-501.ttr");

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const auto* c = find_process(r.value(), 501);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->parent_pid, 500);
  EXPECT_FALSE(c->truncated);
  EXPECT_EQ(report.processes, 2u);
  // Fork/exec/exit records describe processes; they are not events.
  EXPECT_EQ(r->event_count(), 1u);
}

// exec keeps the pid and starts a new file; the old one is flagged kExecReplaced. Two rows,
// two command lines, neither truncated.
TEST(Merge, ExecReplacedFileIsOwnProcessAndNotTruncated) {
  TempDir dir;
  RecordFileWriter before(600, "h");
  before.process_info("bash run.sh", "/usr/bin/bash");
  before.exec(before.header.start_mono_ns + 200, "/usr/bin/python3");
  before.header.flags |= kExecReplaced;
  before.header.end_mono_ns = before.header.start_mono_ns + 200;
  before.write(dir.path() / "proc-600-1.ttr");
  RecordFileWriter after(600, "h");
  after.header.start_mono_ns = before.header.start_mono_ns + 201;
  after.process_info("python3 train.py", "/usr/bin/python3");
  after.io(600, IoFunc::Open, after.header.start_mono_ns + 10, after.header.start_mono_ns + 20, "/etc/hosts");
  after.exit(after.header.start_mono_ns + 1000, 3);
  after.write(dir.path() / "proc-600-2.ttr");

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].pid, 600);
  EXPECT_EQ(t.processes[0].command_line, "bash run.sh");
  EXPECT_EQ(t.processes[0].name, "bash");
  EXPECT_FALSE(t.processes[0].truncated);
  EXPECT_EQ(t.processes[0].end, before.header.start_mono_ns + 200);
  EXPECT_EQ(t.processes[0].exit_status, -1);
  EXPECT_EQ(t.processes[1].pid, 600);
  EXPECT_EQ(t.processes[1].command_line, "python3 train.py");
  EXPECT_FALSE(t.processes[1].truncated);
  EXPECT_EQ(t.processes[1].exit_status, 3);
  EXPECT_EQ(report.truncated, 0u);
  // Each file's main thread belongs to its own row.
  ASSERT_EQ(t.threads.size(), 2u);
  EXPECT_EQ(t.threads[0].process, 0u);
  EXPECT_EQ(t.threads[1].process, 1u);
  EXPECT_EQ(thread_of(t, t.io_calls.track[0]).process, 1u);
}

// Drops counted in the header (kDropsInHeader: a killed process, or threads that ran on after
// the exit handler) add to those of the Dropped records; without the flag the header's counts
// mean nothing (a file of an older collector).
TEST(Merge, DropCountsInTheHeaderAddToDroppedRecords) {
  for (const bool flagged : {true, false}) {
    TempDir dir;
    RecordFileWriter w(700, "h");
    w.io(700, IoFunc::Read, 100, 200, "/x");
    const std::string reason = "recording stopped: reserving file space for a chunk: file too large (errno 27)";
    w.dropped(5, reason);
    w.header.flags |= kRecordingStopped | (flagged ? std::uint32_t{kDropsInHeader} : 0u);
    w.header.dropped[kDropStopped] = 1000;
    w.header.dropped[kDropNested] = 3;
    std::snprintf(w.header.stop_reason, sizeof w.header.stop_reason, "%s", reason.c_str());
    w.write(dir.path() / "p.ttr");

    MergeReport report;
    auto r = merge_dirs({dir.path()}, report);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(report.dropped_records, flagged ? 1008u : 5u);
    std::uint64_t stopped = 0;
    for (const auto& d : r->diagnostics)
      if (d.kind == DiagnosticKind::Dropped && d.reason == reason) stopped += d.count;
    EXPECT_EQ(stopped, flagged ? 1005u : 5u);
    const auto* nested = find_diag(*r, DiagnosticKind::Dropped, "signal handler");
    EXPECT_EQ(nested != nullptr, flagged);
  }
}

TEST(Merge, DamageBecomesDiagnosticsAndReportCounts) {
  TempDir dir;
  RecordFileWriter w(700, "h");
  w.str("/x");
  w.io(700, IoFunc::Read, 100, 200, "/x");
  w.tear(w.io(700, IoFunc::Read, 300, 400, "/x"));
  const unsigned char unknown[16] = {};
  w.new_chunk();
  w.add_raw(120, unknown, sizeof unknown, 700);
  w.dropped(5, "disk full");
  w.dropped(2, "disk full");
  w.header.flags |= kRecordingStopped;
  RangeRecord orphan{};  // its name's String record was lost with the torn chunk tail
  orphan.start_ns = 500;
  orphan.end_ns = 600;
  orphan.name = 999;
  w.add(RecordType::Range, orphan, 700);
  w.step(700, static_cast<StepKind>(9), 600, 700, 1);
  w.exit(1000, 0);
  w.header.chunks_reserved = 5;  // the file is shorter than the chunks it reserved
  w.write(dir.path() / "p.ttr");

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  EXPECT_EQ(report.torn_records, 1u);
  EXPECT_EQ(report.dropped_records, 7u);
  const auto* torn = find_diag(t, DiagnosticKind::Truncated, "torn");
  ASSERT_NE(torn, nullptr);
  EXPECT_EQ(torn->count, 1u);
  const auto* dropped = find_diag(t, DiagnosticKind::Dropped, "disk full");
  ASSERT_NE(dropped, nullptr);
  EXPECT_EQ(dropped->count, 7u);
  const auto* skipped = find_diag(t, DiagnosticKind::Skipped, "type");
  ASSERT_NE(skipped, nullptr);
  EXPECT_EQ(skipped->count, 1u);
  EXPECT_EQ(t.io_calls.size(), 1u);
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(s(t, t.ranges.name[0]), "");
  const auto* unresolved = find_diag(t, DiagnosticKind::Note, "without a String record");
  ASSERT_NE(unresolved, nullptr);
  EXPECT_EQ(unresolved->count, 1u);
  EXPECT_NE(find_diag(t, DiagnosticKind::Skipped, "unknown kind"), nullptr);
  EXPECT_EQ(t.steps.size(), 0u);
  EXPECT_NE(find_diag(t, DiagnosticKind::Note, "file ends inside"), nullptr);
  EXPECT_EQ(report.warnings.size(), 1u);  // recording stopped early
}

TEST(Merge, UnreadableFilesAreSkippedNotFatal) {
  TempDir dir;
  RecordFileWriter good(800, "h");
  good.exit(good.header.start_mono_ns + 10, 0);
  good.write(dir.path() / "a.ttr");
  RecordFileWriter bad(801, "h");
  bad.header.magic[0] = 'Z';
  bad.write(dir.path() / "b.ttr");
  std::ofstream(dir.path() / "notes.txt") << "not a record file, not *.ttr";

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(report.files, 1u);
  EXPECT_EQ(report.skipped_files, 1u);
  ASSERT_EQ(report.warnings.size(), 1u);
  EXPECT_NE(report.warnings[0].find("b.ttr"), std::string::npos);
  const auto* d = find_diag(r.value(), DiagnosticKind::Skipped, "bad magic");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->source, (dir.path() / "b.ttr").string());
}

TEST(Merge, UnusableInputIsAnError) {
  TempDir dir;
  MergeReport report;
  auto empty = merge_dirs({dir.path()}, report);
  ASSERT_FALSE(empty);
  EXPECT_NE(empty.error().find("no raw record files"), std::string::npos) << empty.error();
  EXPECT_NE(empty.error().find(dir.path().string()), std::string::npos) << empty.error();

  auto missing = merge_dirs({dir.path() / "nope"}, report);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("nope"), std::string::npos) << missing.error();

  RecordFileWriter bad(1, "h");
  bad.header.version = 7;
  bad.write(dir.path() / "only.ttr");
  MergeReport report2;
  auto all_bad = merge_dirs({dir.path()}, report2);
  ASSERT_FALSE(all_bad);
  EXPECT_NE(all_bad.error().find("only.ttr"), std::string::npos) << all_bad.error();
  EXPECT_NE(all_bad.error().find("version 7"), std::string::npos) << all_bad.error();
}

// Many files take the parallel path: the result must not depend on which reader finishes
// first, progress is reported once per file in order, and a directory named twice (or a
// parent and its child) does not duplicate processes.
TEST(Merge, ParallelReadIsDeterministicWithOrderedProgress) {
  TempDir dir;
  constexpr int kFiles = 24;
  for (int i = 0; i < kFiles; ++i) {
    RecordFileWriter w(1000 + i, "h");
    w.process_info("worker " + std::to_string(i), "/bin/worker");
    for (int k = 0; k < 50; ++k)
      w.io(static_cast<std::uint32_t>(1000 + i + (k % 3)), IoFunc::Read, 100 * k, 100 * k + 10,
           "/data/shard-" + std::to_string((i + k) % 7));
    if (i % 5 != 0) w.exit(100'000, 0);
    w.write(dir.path() / "h" / ("proc-" + std::to_string(1000 + i) + ".ttr"));
  }
  std::vector<std::pair<std::size_t, std::size_t>> progress;
  MergeOptions opt;
  opt.progress = [&](std::size_t done, std::size_t total) { progress.emplace_back(done, total); };
  MergeReport r1, r2;
  auto a = merge_dirs({dir.path(), dir.path() / "h", dir.path()}, r1, opt);
  ASSERT_TRUE(a) << a.error();
  auto b = merge_dirs({dir.path()}, r2);
  ASSERT_TRUE(b) << b.error();

  ASSERT_EQ(progress.size(), static_cast<std::size_t>(kFiles));
  for (std::size_t i = 0; i < progress.size(); ++i)
    EXPECT_EQ(progress[i], std::make_pair(i + 1, std::size_t{kFiles}));
  EXPECT_EQ(r1.files, static_cast<std::size_t>(kFiles));
  EXPECT_EQ(r1.truncated, 5u);
  ASSERT_EQ(a->processes.size(), static_cast<std::size_t>(kFiles));
  for (int i = 0; i < kFiles; ++i) EXPECT_EQ(a->processes[i].pid, 1000 + i);
  EXPECT_EQ(a->threads.size(), b->threads.size());
  ASSERT_EQ(a->io_calls.size(), static_cast<std::size_t>(kFiles * 50));
  ASSERT_EQ(a->io_calls.size(), b->io_calls.size());
  for (std::size_t i = 0; i < a->io_calls.size(); ++i) {
    ASSERT_EQ(a->io_calls.track[i], b->io_calls.track[i]);
    ASSERT_EQ(a->io_calls.path[i], b->io_calls.path[i]);
    ASSERT_EQ(a->io_calls.start[i], b->io_calls.start[i]);
  }
}

}  // namespace
TEST(Merge, NcclNvtxRangesWithBytesBecomeCollectives) {
  TempDir dir;
  RecordFileWriter w(600, "h");
  const std::int64_t t0 = w.header.start_mono_ns;
  w.range(600, RangeSource::Nvtx, t0 + 10, t0 + 50, "ncclAllReduce", "NCCL", 0, 4 << 20);
  w.range(600, RangeSource::Nvtx, t0 + 60, t0 + 70, "ncclAllGather", "NCCL", 0, 1024);
  w.range(600, RangeSource::Nvtx, t0 + 80, t0 + 90, "ncclAllReduce", "NCCL");       // no payload
  w.range(600, RangeSource::Nvtx, t0 + 95, t0 + 99, "ncclFake", "mine", 0, 64);      // other domain
  w.exit(t0 + 100, 0);
  w.write(dir.path() / "p.ttr");
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  EXPECT_EQ(t.ranges.size(), 4u);  // the ranges themselves stay
  ASSERT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.strings.get(t.collectives.op[0]), "allreduce");
  EXPECT_EQ(t.collectives.bytes[0], 4u << 20);
  EXPECT_EQ(t.collectives.dur[0], 40);
  EXPECT_EQ(t.collectives.side[0], trace::CollectiveSide::Host);
  EXPECT_EQ(t.strings.get(t.collectives.op[1]), "allgather");
  EXPECT_EQ(t.collectives.bytes[1], 1024u);
}


// ---- clock alignment from collectives (issue 16, item 4) ----

// A job's wall clock: every host sees the same instants; `skew` is how far its realtime clock
// (hence its files' anchors) is off, `mono0` its monotonic clock at wall-clock instant real0.
struct SimHost {
  std::string name;
  std::int64_t mono0 = 0;
  std::int64_t skew = 0;
  int ranks = 1;
};
constexpr std::int64_t kReal0 = 1'700'000'000'000'000'000;

// Writes one file per rank of `host`: each rank runs `collectives` allreduces whose true end
// is the same on every rank (+- 3 us), arriving with up to 20 us of jitter, and one read at
// wall-clock instant kReal0 + 500 us. Returns nothing; the files go to dir/<host>/.
void write_ranks_with_collectives(const fs::path& dir, const SimHost& host, int first_pid, int collectives,
                                  std::mt19937& rng) {
  std::uniform_int_distribution<std::int64_t> arrival_jitter(0, 20'000), end_jitter(-3'000, 3'000);
  auto mono = [&](std::int64_t real) { return real - kReal0 + host.mono0; };
  for (int r = 0; r < host.ranks; ++r) {
    const int pid = first_pid + r;
    RecordFileWriter w(pid, host.name);
    w.header.start_mono_ns = mono(kReal0 + 10'000 * r);
    w.header.start_real_ns = kReal0 + 10'000 * r + host.skew;  // the anchor, read off a skewed clock
    const auto tid = static_cast<std::uint32_t>(pid);
    w.io(tid, IoFunc::Read, mono(kReal0 + 500'000), mono(kReal0 + 510'000), "");
    for (int k = 0; k < collectives; ++k) {
      const std::int64_t end = kReal0 + 1'000'000 + 200'000LL * k;
      w.range(tid, RangeSource::Nvtx, mono(end - 100'000 + arrival_jitter(rng)), mono(end + end_jitter(rng)),
              "ncclAllReduce", "NCCL", 0, 1 << 20);
    }
    w.exit(mono(kReal0 + 1'000'000 + 200'000LL * collectives + 50'000), 0);
    w.write(dir / host.name / ("proc-" + std::to_string(pid) + ".ttr"));
  }
}

// Each process's collective ends, in start order.
std::map<std::uint32_t, std::vector<std::int64_t>> collective_ends_by_process(const trace::Trace& t) {
  std::map<std::uint32_t, std::vector<std::pair<std::int64_t, std::int64_t>>> spans;
  for (std::size_t i = 0; i < t.collectives.size(); ++i)
    spans[t.process_of_track(t.collectives.track[i])].push_back({t.collectives.start[i], t.collectives.end(i)});
  std::map<std::uint32_t, std::vector<std::int64_t>> ends;
  for (auto& [p, v] : spans) {
    std::sort(v.begin(), v.end());
    for (const auto& [start, end] : v) ends[p].push_back(end);
  }
  return ends;
}

std::string metadata_value(const trace::Trace& t, const std::string& key) {
  for (const auto& [k, v] : t.metadata)
    if (k == key) return v;
  return "(none)";
}

// Realtime anchors 5 ms fast on node-b and 5 ms slow on node-c: the anchors alone leave the same
// collective ending 5 ms apart; matched collectives bring every host onto node-a's clock (the
// host with most ranks) and every table of the host moves with it.
TEST(MergeClock, CollectivesCorrectSkewedRealtimeAnchors) {
  TempDir dir;
  std::mt19937 rng(16);
  const std::vector<SimHost> hosts = {{"node-a", 900'000'000'000, 0, 3},
                                      {"node-b", 5'000'000'000, 5'000'000, 2},
                                      {"node-c", 77'000'000'000, -5'000'000, 2}};
  constexpr int kCollectives = 12;
  for (std::size_t h = 0; h < hosts.size(); ++h)
    write_ranks_with_collectives(dir.path(), hosts[h], 100 * static_cast<int>(h + 1), kCollectives, rng);

  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  ASSERT_EQ(report.hosts.size(), 3u);
  const HostClock &a = report.hosts[0], &b = report.hosts[1], &c = report.hosts[2];
  EXPECT_TRUE(a.reference);
  EXPECT_EQ(a.correction_ns, 0);
  EXPECT_EQ(a.offset_ns, a.anchor_offset_ns);
  EXPECT_EQ(a.clock_line(), "reference clock for 12 collectives");
  EXPECT_NEAR(static_cast<double>(b.correction_ns), -5'000'000.0, 5'000.0);
  EXPECT_NEAR(static_cast<double>(c.correction_ns), 5'000'000.0, 5'000.0);
  for (const HostClock* h : {&b, &c}) {
    EXPECT_FALSE(h->reference);
    EXPECT_EQ(h->collectives, static_cast<std::size_t>(kCollectives));
    EXPECT_GE(h->residual_ns, 0);
    EXPECT_LT(h->residual_ns, 10'000);
    EXPECT_EQ(h->offset_ns, h->anchor_offset_ns + h->correction_ns);
    EXPECT_TRUE(h->clock_note.empty()) << h->clock_note;
    EXPECT_NE(h->clock_line().find(" ms from 12 collectives (residual "), std::string::npos) << h->clock_line();
    EXPECT_EQ(metadata_value(t, "clock_offset_ns:" + h->host), std::to_string(h->offset_ns));
    EXPECT_EQ(metadata_value(t, "clock_correction_ns:" + h->host), std::to_string(h->correction_ns));
    EXPECT_EQ(metadata_value(t, "clock_correction_collectives:" + h->host), "12");
  }
  EXPECT_EQ(b.clock_line().substr(0, 3), "-5.");  // "-5.001 ms from ...": within µs of 5 ms
  EXPECT_EQ(c.clock_line().substr(0, 1), "+");
  // The same collective ends within 50 µs on all 7 ranks.
  const auto ends = collective_ends_by_process(t);
  ASSERT_EQ(ends.size(), 7u);
  for (int k = 0; k < kCollectives; ++k) {
    std::int64_t lo = std::numeric_limits<std::int64_t>::max(), hi = std::numeric_limits<std::int64_t>::min();
    for (const auto& [p, v] : ends) {
      ASSERT_EQ(v.size(), static_cast<std::size_t>(kCollectives));
      lo = std::min(lo, v[static_cast<std::size_t>(k)]);
      hi = std::max(hi, v[static_cast<std::size_t>(k)]);
    }
    EXPECT_LE(hi - lo, 50'000) << "collective " << k;
  }
  // Other tables and the process rows moved with their host: the read at one wall-clock
  // instant lines up everywhere, and processes start at their true instants.
  ASSERT_EQ(t.io_calls.size(), 7u);
  const auto [first_read, last_read] = std::minmax_element(t.io_calls.start.begin(), t.io_calls.start.end());
  EXPECT_LE(*last_read - *first_read, 50'000);
  for (const auto& p : t.processes) EXPECT_NEAR(static_cast<double>(p.start - t.processes[0].start),
                                                10'000.0 * (p.pid % 100), 50'000.0) << p.host << " " << p.pid;
}

// Too few collectives in common (here 2, and none at all on node-c): the anchor offsets stay and
// the report says why.
TEST(MergeClock, TooFewCollectivesKeepAnchorOffsets) {
  TempDir dir;
  std::mt19937 rng(4);
  write_ranks_with_collectives(dir.path(), {"node-a", 900'000'000'000, 0, 2}, 100, 2, rng);
  write_ranks_with_collectives(dir.path(), {"node-b", 5'000'000'000, 5'000'000, 1}, 200, 2, rng);
  write_ranks_with_collectives(dir.path(), {"node-c", 77'000'000'000, -5'000'000, 1}, 300, 0, rng);
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(report.hosts.size(), 3u);
  EXPECT_TRUE(report.hosts[0].reference);
  for (std::size_t h = 1; h < 3; ++h) {
    const HostClock& clock = report.hosts[h];
    EXPECT_EQ(clock.correction_ns, 0);
    EXPECT_EQ(clock.residual_ns, -1);
    EXPECT_EQ(clock.offset_ns, clock.anchor_offset_ns);
    EXPECT_EQ(metadata_value(r.value(), "clock_offset_ns:" + clock.host), std::to_string(clock.anchor_offset_ns));
    EXPECT_EQ(metadata_value(r.value(), "clock_correction_ns:" + clock.host), "(none)");
    EXPECT_EQ(clock.clock_line(), clock.clock_note);
  }
  EXPECT_EQ(report.hosts[1].collectives, 2u);
  EXPECT_EQ(report.hosts[1].clock_note, "anchor offset kept: 2 collective(s) matched with host node-a, 3 needed");
  EXPECT_EQ(report.hosts[2].clock_note, "anchor offset kept: no collectives recorded on this host");
  // The 5 ms anchor error stays visible in the collectives' ends.
  const auto ends = collective_ends_by_process(r.value());
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_GT(std::abs(ends.begin()->second[0] - std::prev(ends.end())->second[0]), 4'000'000);
}

// A diagnostic naming a time ("its last event is at <t> ns") moves with its host's correction.
TEST(MergeClock, TimesInDiagnosticsMoveWithTheCorrection) {
  TempDir dir;
  std::mt19937 rng(7);
  const SimHost b{"node-b", 5'000'000'000, 5'000'000, 1};
  write_ranks_with_collectives(dir.path(), {"node-a", 900'000'000'000, 0, 1}, 100, 5, rng);
  write_ranks_with_collectives(dir.path(), b, 200, 5, rng);
  RecordFileWriter crashed(299, b.name);  // no exit record: truncated, with a diagnostic
  crashed.header.start_mono_ns = b.mono0 + 20'000;
  crashed.header.start_real_ns = kReal0 + 20'000 + b.skew;
  crashed.io(299, IoFunc::Read, b.mono0 + 30'000, b.mono0 + 40'000, "");
  crashed.write(dir.path() / b.name / "proc-299.ttr");
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(report.hosts.size(), 2u);
  EXPECT_NEAR(static_cast<double>(report.hosts[1].correction_ns), -5'000'000.0, 5'000.0);
  const auto* p = find_process(r.value(), 299, b.name);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(p->truncated);
  EXPECT_NEAR(static_cast<double>(p->end - kReal0), 40'000.0, 5'000.0);
  EXPECT_NE(find_diag(r.value(), DiagnosticKind::Truncated, "its last event is at " + std::to_string(p->end) + " ns"),
            nullptr);
}

// A single host keeps its monotonic clock: nothing to align, no line.
TEST(MergeClock, SingleHostHasNoCollectiveAlignment) {
  TempDir dir;
  std::mt19937 rng(1);
  write_ranks_with_collectives(dir.path(), {"node-a", 900'000'000'000, 0, 2}, 100, 5, rng);
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(report.hosts.size(), 1u);
  EXPECT_EQ(report.hosts[0].offset_ns, 0);
  EXPECT_FALSE(report.hosts[0].reference);
  EXPECT_EQ(report.hosts[0].clock_line(), "");
}

// PyTorch's NVTX ranges recorded live (emit_nvtx) carry per-call arguments in their names:
// the merger keeps the op as the name and the rest as the range's args. Python ranges are the
// user's own names and stay whole.
TEST(Merge, PyTorchNvtxNamesKeepTheOpAndMoveTheRestToArgs) {
  TempDir dir;
  RecordFileWriter w(700, "h");
  const std::int64_t t0 = w.header.start_mono_ns;
  w.range(700, RangeSource::Nvtx, t0 + 10, t0 + 50, "aten::mm, seq = 1, sizes = [[2, 3], [3, 4]]");
  w.range(700, RangeSource::Nvtx, t0 + 60, t0 + 70, "aten::mm, seq = 2, sizes = [[2, 3], [3, 4]]");
  w.range(700, RangeSource::Python, t0 + 80, t0 + 90, "eval, k = 3");
  w.exit(t0 + 100, 0);
  w.write(dir.path() / "h" / "proc-700.ttr");
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  const trace::Trace& t = r.value();
  ASSERT_EQ(t.ranges.size(), 3u);
  EXPECT_EQ(s(t, t.ranges.name[0]), "aten::mm");
  EXPECT_EQ(t.ranges.name[0], t.ranges.name[1]);
  EXPECT_EQ(s(t, t.ranges.args[0]), "seq = 1, sizes = [[2, 3], [3, 4]]");
  EXPECT_EQ(s(t, t.ranges.args[1]), "seq = 2, sizes = [[2, 3], [3, 4]]");
  EXPECT_EQ(s(t, t.ranges.name[2]), "eval, k = 3");
  EXPECT_EQ(t.ranges.args[2], 0u);
}

// torch.distributed collectives of a gloo group, as the Python integration writes them
// (NcclComm + host-side NcclColl records from every rank): one communicator entry in the
// trace's metadata, however many ranks name it (two once made the trace unwritable: "UNIQUE
// constraint failed: meta.key"), and the collectives named after the backend.
TEST(Merge, C10dCollectivesFromTwoRanksShareOneCommunicator) {
  TempDir dir;
  constexpr std::uint64_t kComm = 0x1234'5678'9abc'def0;
  for (int rank = 0; rank < 2; ++rank) {
    const int pid = 200 + rank;
    RecordFileWriter w(pid);
    const auto tid = static_cast<std::uint32_t>(pid);
    w.add(RecordType::NcclComm, NcclCommRecord{kComm, rank, 2, -1, w.str("c10d:gloo:0", tid)}, tid);
    NcclCollRecord c{};
    c.start_ns = w.header.start_mono_ns + 1'000'000 + 5'000 * rank;
    c.end_ns = w.header.start_mono_ns + 1'100'000;
    c.comm_id = kComm;
    c.seq = 0;
    c.count = 16;
    c.func = w.str("AllReduce", tid);
    c.dtype = w.str("ncclFloat32", tid);
    c.root = c.peer = -1;
    c.rank = rank;
    w.add(RecordType::NcclColl, c, tid);
    w.exit(w.header.start_mono_ns + 2'000'000, 0);
    w.write(dir.path() / "host" / ("proc-" + std::to_string(pid) + ".ttr"));
  }
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  trace::Trace& t = r.value();
  EXPECT_EQ(std::count_if(t.metadata.begin(), t.metadata.end(),
                          [](const auto& kv) { return kv.first.starts_with("nccl_comm:"); }),
            1);
  EXPECT_EQ(metadata_value(t, "nccl_comm:123456789abcdef0"), "c10d:gloo:0");
  ASSERT_EQ(t.collectives.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s(t, t.collectives.name[i]), "glooAllReduce");
    EXPECT_EQ(s(t, t.collectives.op[i]), "allreduce");
    EXPECT_EQ(t.collectives.bytes[i], 64u);
    EXPECT_EQ(t.collectives.group_size[i], 2);
    EXPECT_EQ(t.collectives.side[i], trace::CollectiveSide::Host);
  }
  TempDir out;
  EXPECT_TRUE(trace::write_trace(t, out.path() / "t.db", "test").ok());
}


// Python stack samples: frames defined once per file become the trace's interned frames, equal
// frames of two processes one row, stacks a shared node chain; the sampled thread (not the
// sampler) owns each sample; an undefined frame id and a depth the record cannot hold are counted;
// the tables survive the store, and a trace without samples has none of them.
TEST(Merge, PythonSamplesAreInternedAcrossProcessesAndStored) {
  TempDir dir;
  const std::int64_t t0 = 1'000'000'000;
  for (std::int64_t pid : {100, 200}) {
    RecordFileWriter w(pid, "node-a");
    const auto sampler = static_cast<std::uint32_t>(pid + 9);
    const auto main = static_cast<std::uint32_t>(pid);
    w.py_frame(sampler, 1, "<module>", "/job/train.py", 40);
    w.py_frame(sampler, 2, "augment", "/job/data.py", 88);
    w.py_frame(sampler, 2, "ignored", "/job/data.py", 1);  // a second definition of an id: the first wins
    w.py_sample(sampler, t0 + 10, main, {2, 1});
    w.py_sample(sampler, t0 + 20, main, {2, 1});
    w.py_sample(sampler, t0 + 30, main, {1});
    if (pid == 200) {
      w.py_sample(sampler, t0 + 40, main, {7, 1});    // frame 7 never defined
      w.py_sample(sampler, t0 + 50, main, {1}, 1000);  // claims more frames than it holds
    }
    w.exit(t0 + 1000, 0);
    w.write(dir.path() / "node-a" / ("proc-" + std::to_string(pid) + "-1.ttr"));
  }
  MergeReport report;
  auto r = merge_dirs({dir.path()}, report);
  ASSERT_TRUE(r) << r.error();
  trace::Trace& t = r.value();
  t.finalize();
  ASSERT_EQ(t.py_samples.size(), 7u);
  ASSERT_EQ(t.py_frames.size(), 3u);  // <module>, augment and the unknown frame
  EXPECT_EQ(t.py_stacks.size(), 3u);  // <module>; <module> > augment; <module> > unknown
  for (std::size_t i = 0; i < t.py_samples.size(); ++i) {
    const auto& th = t.threads[t.tracks[t.py_samples.track[i]].owner];
    EXPECT_EQ(th.tid, t.processes[th.process].pid) << "the sampled (main) thread owns the sample";
  }
  const auto leaf = trace::py_stack_frames(t, t.py_samples.stack[0]);
  ASSERT_EQ(leaf.size(), 2u);
  EXPECT_EQ(trace::py_frame_label(t, leaf[0]), "augment (job/data.py:88)");
  EXPECT_EQ(trace::py_frame_label(t, leaf[1]), "<module> (job/train.py:40)");
  auto note = [&](std::string_view reason) {
    return std::any_of(t.diagnostics.begin(), t.diagnostics.end(), [&](const auto& d) { return d.reason == reason; });
  };
  EXPECT_TRUE(note("Python sample frames without a PyFrame record (left unknown)"));
  EXPECT_TRUE(note("records too short for their type"));

  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(trace::write_trace(t, db, "test"));
  auto back = trace::read_trace(db);
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(back->py_samples.ts, t.py_samples.ts);
  EXPECT_EQ(back->py_samples.track, t.py_samples.track);
  EXPECT_EQ(back->py_samples.stack, t.py_samples.stack);
  ASSERT_EQ(back->py_frames.size(), t.py_frames.size());
  EXPECT_EQ(trace::to_collapsed_stacks(back.value()), trace::to_collapsed_stacks(t));
  EXPECT_NE(trace::to_collapsed_stacks(t).find(";<module> (job/train.py:40);augment (job/data.py:88) 2\n"),
            std::string::npos) << trace::to_collapsed_stacks(t);

  trace::Trace none;
  none.add_thread({trace::kNone, 1, "main"});
  const fs::path plain = dir.path() / "plain.db";
  ASSERT_TRUE(trace::write_trace(none, plain, "test"));
  auto plain_back = trace::read_trace(plain);
  ASSERT_TRUE(plain_back) << plain_back.error();
  EXPECT_EQ(plain_back->py_samples.size(), 0u);
}

}  // namespace tt::collector

// `record --trace`: one table of what can be recorded (launcher.h), parsed and listed from it.
TEST(TraceSources, ParsedAndListedFromOneTable) {
  EXPECT_EQ(tt::collector::trace_source_ids(), "io,nvtx,python,pystack,cuda,nccl");
  auto some = tt::collector::parse_trace_sources("io,cuda");
  ASSERT_TRUE(some.ok()) << some.error();
  EXPECT_EQ(some.value(), (std::vector<std::string>{"io", "cuda"}));
  auto bad = tt::collector::parse_trace_sources("io,gpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "unknown --trace item 'gpu' (known: io, nvtx, python, pystack, cuda, nccl)");
  EXPECT_EQ(tt::collector::RecordOptions{}.trace.size(), std::size(tt::collector::kTraceSources));
}
