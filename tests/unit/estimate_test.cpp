// estimate_load: a trace's memory estimated before reading it. The estimate must count what the
// reader will hold (every event table's rows) and err low, never read events, and see through a
// wrapped gzip size field.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "io_trace.h"
#include "temp_dir.h"
#include "tracetune/trace/estimate.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

using namespace tt::trace;
namespace fs = std::filesystem;
using tt::testing::TempDir;

namespace {

const fs::path kShared = TT_CORPUS_DIR;

std::uint64_t column_bytes(const Trace& t) {
  const RowBytes b = row_bytes();
  return t.kernels.size() * b.kernels + t.memcpys.size() * b.memcpys + t.memsets.size() * b.memsets +
         t.api_calls.size() * b.api_calls + t.syncs.size() * b.syncs + t.ranges.size() * b.ranges +
         t.steps.size() * b.steps + t.collectives.size() * b.collectives + t.io_calls.size() * b.io_calls +
         t.counters.size() * b.counters + t.flows.size() * b.flows;
}

}  // namespace

TEST(Estimate, RowBytesAreTheColumnsOfOneEvent) {
  const RowBytes b = row_bytes();
  // start (8), dur (packed: at least 1), track, name, correlation, external id (4 each), config,
  // graph id (packed: 1 each)
  EXPECT_EQ(b.kernels, 8u + 1u + 4u * 4 + 1u + 1u);
  EXPECT_EQ(b.counters, 8u + 4u + 4u + 8u);
  // start, bytes, offset, result (8 each), dur (packed: 1), track, name, fd, path (4 each),
  // errno (2), op (1)
  EXPECT_EQ(b.io_calls, 52u);
}

TEST(Estimate, TracetuneDbCountsEveryEventTable) {
  ASSERT_TRUE(fs::exists(kShared / "kineto/hta/nccl_data.json.gz")) << "tests/data/corpus is missing";
  auto t = load_any(kShared / "kineto/hta/nccl_data.json.gz");
  ASSERT_TRUE(t.ok()) << t.error();
  TempDir dir;
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t.value(), db, "estimate_test").ok());
  auto e = estimate_load(db);
  ASSERT_TRUE(e.ok()) << e.error();
  EXPECT_EQ(e->events, t->event_count());
  EXPECT_EQ(e->model_bytes, column_bytes(t.value()));
  auto read = read_trace(db);
  ASSERT_TRUE(read.ok());
  EXPECT_LE(e->model_bytes, read->event_bytes());  // errs low: strings and slack are not counted
  EXPECT_GT(e->model_bytes, read->event_bytes() / 2);
  EXPECT_GT(e->transient_bytes, 0u);
  EXPECT_LE(e->transient_bytes, e->model_bytes);
}

// io_calls has no rowid from schema 3 on: it is counted by its last key, in either layout.
TEST(Estimate, CountsIoCallsOfEverySchema) {
  Trace t;
  tt::testing::add_dataloader_io(t, 1'000);
  TempDir dir;
  const fs::path db = dir.path() / "io.db";
  ASSERT_TRUE(write_trace(t, db, "estimate_test").ok());
  auto now = estimate_load(db);
  ASSERT_TRUE(now.ok()) << now.error();
  EXPECT_EQ(now->events, 1'000u);
  EXPECT_EQ(now->model_bytes, 1'000u * row_bytes().io_calls);
  auto v2 = estimate_load(fs::path(TT_TEST_DATA_DIR) / "store/io-schema2.tracetune.db");
  ASSERT_TRUE(v2.ok()) << v2.error();
  EXPECT_EQ(v2->events, 300u);
}

TEST(Estimate, NsysExportCountsItsEventTables) {
  const fs::path nsys = fs::path(TT_TEST_DATA_DIR) / "../fuzz/corpus/sqlite/nsys_small.sqlite";
  auto e = estimate_load(nsys);
  ASSERT_TRUE(e.ok()) << e.error();
  auto t = load_any(nsys);
  ASSERT_TRUE(t.ok()) << t.error();
  EXPECT_GT(e->events, 0u);
  EXPECT_LE(e->model_bytes, t->event_bytes());
}

TEST(Estimate, KinetoGzipUsesTheSizeTrailer) {
  const fs::path gz = kShared / "kineto/hta/ns_resolution_rank_0.json.gz";
  ASSERT_TRUE(fs::exists(gz)) << "tests/data/corpus is missing";
  auto e = estimate_load(gz);
  ASSERT_TRUE(e.ok()) << e.error();
  constexpr std::uint64_t kJsonBytes = 15377659;  // gunzip -c | wc -c
  EXPECT_EQ(e->model_bytes, static_cast<std::uint64_t>(kKinetoModelBytesPerJsonByte * kJsonBytes));
  EXPECT_EQ(e->transient_bytes, kJsonBytes + fs::file_size(gz));
  EXPECT_EQ(e->events, 0u);  // not known for JSON
  auto t = load_any(gz);
  ASSERT_TRUE(t.ok());
  EXPECT_LE(e->model_bytes, t->event_bytes());
  EXPECT_EQ(e->basis.find("wrapped"), std::string::npos);
}

TEST(Estimate, WrappedGzipSizeFallsBackToTheCompressedSize) {
  const fs::path gz = kShared / "kineto/hta/ns_resolution_rank_0.json.gz";
  ASSERT_TRUE(fs::exists(gz)) << "tests/data/corpus is missing";
  TempDir dir;
  const fs::path copy = dir.path() / "wrapped.json.gz";
  fs::copy_file(gz, copy);
  {
    // a text of 4 GiB + 1000 bytes would leave ISIZE = 1000
    std::fstream f(copy, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    const char isize[4] = {static_cast<char>(1000 & 0xff), static_cast<char>(1000 >> 8), 0, 0};
    f.write(isize, 4);
  }
  auto e = estimate_load(copy);
  ASSERT_TRUE(e.ok()) << e.error();
  const auto text = static_cast<std::uint64_t>(kKinetoGzipRatio * static_cast<double>(fs::file_size(copy)));
  EXPECT_EQ(e->transient_bytes, text + fs::file_size(copy));
  EXPECT_NE(e->basis.find("wrapped"), std::string::npos);
}

TEST(Estimate, KinetoDirectorySumsItsRankFiles) {
  const fs::path dir = kShared / "kineto/param/dlrm_8rank";
  ASSERT_TRUE(fs::exists(dir)) << "tests/data/corpus is missing";
  auto all = estimate_load(dir);
  ASSERT_TRUE(all.ok()) << all.error();
  std::uint64_t sum = 0, largest = 0;
  for (int r = 0; r < 8; ++r) {
    auto one = estimate_load(dir / ("rank-" + std::to_string(r) + ".json.gz"));
    ASSERT_TRUE(one.ok());
    sum += one->model_bytes;
    largest = std::max(largest, one->transient_bytes);
  }
  EXPECT_EQ(all->model_bytes, sum);
  EXPECT_EQ(all->transient_bytes, largest);  // rank files are read one at a time
}

TEST(Estimate, RefusesWhatItCannotRecognise) {
  TempDir dir;
  std::ofstream(dir.path() / "x.txt") << "hello";
  EXPECT_FALSE(estimate_load(dir.path() / "x.txt").ok());
  EXPECT_FALSE(estimate_load(dir.path() / "missing.db").ok());
}
