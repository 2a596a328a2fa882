// The SQLite store: a trace survives write -> read unchanged; bad files are refused with a
// clear message; outputs are private and never partial.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "io_trace.h"
#include "temp_dir.h"
#include "trace_fixture.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

using namespace tt::trace;
namespace fs = std::filesystem;
using tt::testing::TempDir;

namespace {

Trace fixture() { return tt::testing::all_categories_trace(); }

void exec_sql(const fs::path& db, const char* sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, sql, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

// Two columns (std::vector or PackedColumn) row by row.
template <class Column>
void expect_same(const Column& a, const Column& b, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], b[i]) << what << " row " << i;
}

template <class Column>
void expect_same_strings(const Trace& a, const Column& x, const Trace& b, const Column& y, const char* what) {
  ASSERT_EQ(x.size(), y.size()) << what;
  for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(a.strings.get(x[i]), b.strings.get(y[i])) << what;
}

// Every column of two traces' I/O calls, strings compared by value.
void expect_same_io(const Trace& a, const Trace& b) {
  const IoTable &x = a.io_calls, &y = b.io_calls;
  expect_same(x.start, y.start, "io.start");
  expect_same(x.dur, y.dur, "io.dur");
  expect_same(x.track, y.track, "io.track");
  expect_same_strings(a, x.name, b, y.name, "io.name");
  expect_same(x.op, y.op, "io.op");
  expect_same(x.fd, y.fd, "io.fd");
  expect_same_strings(a, x.path, b, y.path, "io.path");
  expect_same(x.bytes, y.bytes, "io.bytes");
  expect_same(x.offset, y.offset, "io.offset");
  expect_same(x.result, y.result, "io.result");
  expect_same(x.err, y.err, "io.err");
}

Trace dataloader_io(std::size_t calls, std::uint32_t workers = 2) {
  Trace t;
  tt::testing::add_dataloader_io(t, calls, workers);
  t.finalize();
  return t;
}

}  // namespace

TEST(Store, RoundTripKeepsEveryColumn) {
  TempDir dir;
  Trace t = fixture();
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  auto r = read_trace(db);
  ASSERT_TRUE(r.ok()) << r.error();
  const Trace& u = r.value();
  EXPECT_EQ(u.clock_domain, t.clock_domain);
  EXPECT_EQ(u.event_count(), t.event_count());
  expect_same(t.kernels.start, u.kernels.start, "kernels.start");
  expect_same(t.kernels.dur, u.kernels.dur, "kernels.dur");
  expect_same(t.kernels.correlation, u.kernels.correlation, "kernels.correlation");
  expect_same(t.kernels.config, u.kernels.config, "kernels.config");
  expect_same_strings(t, t.kernels.name, u, u.kernels.name, "kernels.name");
  expect_same(t.memcpys.direction, u.memcpys.direction, "memcpys.direction");
  expect_same(t.memcpys.src_kind, u.memcpys.src_kind, "memcpys.src_kind");
  expect_same(t.memcpys.bytes, u.memcpys.bytes, "memcpys.bytes");
  expect_same(t.memcpys.async, u.memcpys.async, "memcpys.async");
  expect_same(t.syncs.stream, u.syncs.stream, "syncs.stream");
  expect_same(t.syncs.event, u.syncs.event, "syncs.event");
  expect_same(t.ranges.depth, u.ranges.depth, "ranges.depth");
  expect_same(t.ranges.kind, u.ranges.kind, "ranges.kind");
  expect_same_strings(t, t.ranges.domain, u, u.ranges.domain, "ranges.domain");
  expect_same_strings(t, t.ranges.args, u, u.ranges.args, "ranges.args");
  expect_same(t.collectives.group_size, u.collectives.group_size, "collectives.group_size");
  expect_same(t.collectives.bytes, u.collectives.bytes, "collectives.bytes");
  expect_same(t.collectives.channels, u.collectives.channels, "collectives.channels");
  expect_same(t.counters.value, u.counters.value, "counters.value");
  expect_same(t.flows.id, u.flows.id, "flows.id");
  expect_same(t.flows.phase, u.flows.phase, "flows.phase");
  expect_same(t.steps.number, u.steps.number, "steps.number");
  ASSERT_EQ(u.processes.size(), t.processes.size());
  for (std::size_t i = 0; i < t.processes.size(); ++i) {
    EXPECT_EQ(u.processes[i].pid, t.processes[i].pid);
    EXPECT_EQ(u.processes[i].rank, t.processes[i].rank);
    EXPECT_EQ(u.processes[i].name, t.processes[i].name);
  }
  ASSERT_EQ(u.devices.size(), t.devices.size());
  EXPECT_EQ(u.devices[0].name, t.devices[0].name);
  EXPECT_EQ(u.devices[0].total_memory, t.devices[0].total_memory);
  ASSERT_EQ(u.diagnostics.size(), t.diagnostics.size());
  EXPECT_EQ(u.diagnostics[0].reason, t.diagnostics[0].reason);
}

TEST(Store, IoCallsRoundTrip) {
  TempDir dir;
  Trace t;
  const auto tr = t.add_thread({t.add_process({}), 99, "worker"});
  auto& io = t.io_calls;
  io.start = {10, 20};
  io.dur = {5, 7};
  io.track = {tr, tr};
  io.name = {t.strings.intern("openat"), t.strings.intern("pread64")};
  io.op = {IoOp::Open, IoOp::Read};
  io.fd = {-1, 3};
  io.path = {t.strings.intern("/data/x.bin"), t.strings.intern("/data/x.bin")};
  io.bytes = {-1, 4096};
  io.offset = {-1, 8192};
  io.result = {3, 4096};
  io.err = {0, 0};
  ASSERT_TRUE(write_trace(t, dir.path() / "io.db", "test").ok());
  auto u = read_trace(dir.path() / "io.db");
  ASSERT_TRUE(u.ok()) << u.error();
  expect_same(t.io_calls.fd, u->io_calls.fd, "fd");
  expect_same(t.io_calls.bytes, u->io_calls.bytes, "bytes");
  expect_same(t.io_calls.offset, u->io_calls.offset, "offset");
  expect_same(t.io_calls.op, u->io_calls.op, "op");
  EXPECT_EQ(u->strings.get(u->io_calls.path[1]), "/data/x.bin");
}

TEST(Store, OutputIsPrivateAndAtomic) {
  TempDir dir;
  Trace t = fixture();
  const fs::path db = dir.path() / "out.db";
  {
    std::ofstream(db) << "previous good content";
  }
  ::chmod(db.c_str(), 0644);
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  struct stat st {};
  ASSERT_EQ(::stat(db.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
  // no temporaries left behind
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) files += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(files, 1u);
}

TEST(Store, FailedWriteLeavesNothing) {
  TempDir dir;
  Trace t = fixture();
  auto st = write_trace(t, dir.path() / "missing_dir" / "out.db", "test");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("missing_dir"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(Store, RefusesWhatIsNotATrace) {
  TempDir dir;
  const fs::path text = dir.path() / "notes.txt";
  std::ofstream(text) << "hello";
  auto a = read_trace(text);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("not an SQLite database"), std::string::npos);
  EXPECT_NE(a.error().find("notes.txt"), std::string::npos);

  const fs::path foreign = dir.path() / "foreign.db";
  exec_sql(foreign, "CREATE TABLE foo(x); INSERT INTO foo VALUES(1);");
  auto b = read_trace(foreign);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("not a tracetune trace"), std::string::npos);
}

TEST(Store, RefusesTriggersViewsAndNewerSchemas) {
  TempDir dir;
  Trace t = fixture();
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  const fs::path with_view = dir.path() / "view.db";
  fs::copy_file(db, with_view);
  exec_sql(with_view, "CREATE VIEW v AS SELECT * FROM kernels;");
  auto a = read_trace(with_view);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.error().find("view"), std::string::npos);

  const fs::path with_trigger = dir.path() / "trigger.db";
  fs::copy_file(db, with_trigger);
  exec_sql(with_trigger, "CREATE TRIGGER tr AFTER INSERT ON kernels BEGIN DELETE FROM kernels; END;");
  auto b = read_trace(with_trigger);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().find("trigger"), std::string::npos);

  const fs::path newer = dir.path() / "newer.db";
  fs::copy_file(db, newer);
  exec_sql(newer, "UPDATE meta SET value='99' WHERE key='schema_version';");
  auto c = read_trace(newer);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("schema version 99"), std::string::npos);
  EXPECT_NE(c.error().find("this build reads 1 to 3"), std::string::npos);
}

// Schema version 2 added ranges.args_id: a version 1 file (no such column) still reads, its
// ranges without args; a range's args survive a round trip.
TEST(Store, ReadsVersionOneFilesAndKeepsRangeArgs) {
  TempDir dir;
  Trace t = fixture();
  ASSERT_GT(t.ranges.size(), 0u);
  t.ranges.args.set(0, t.strings.intern("seq = 12, sizes = [[2, 3]]"));
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  auto now = read_trace(db);
  ASSERT_TRUE(now.ok()) << now.error();
  std::size_t with_args = 0;
  for (StringId a : now->ranges.args)
    if (a != 0) {
      ++with_args;
      EXPECT_EQ(now->strings.get(a), "seq = 12, sizes = [[2, 3]]");
    }
  EXPECT_EQ(with_args, 1u);

  const fs::path v1 = dir.path() / "v1.db";
  fs::copy_file(db, v1);
  exec_sql(v1, "ALTER TABLE ranges DROP COLUMN args_id; UPDATE meta SET value='1' WHERE key='schema_version';");
  auto old = read_trace(v1);
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_EQ(old->ranges.size(), t.ranges.size());
  for (StringId a : old->ranges.args) EXPECT_EQ(a, 0u);
  expect_same(now->ranges.start, old->ranges.start, "ranges.start");
}

TEST(Store, RefusesDanglingReferences) {
  TempDir dir;
  Trace t = fixture();
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  exec_sql(db, "UPDATE kernels SET track_id = 100000 WHERE id = 1;");
  auto r = read_trace(db);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("corrupt trace"), std::string::npos);
}

TEST(Store, TruncatedFileIsAnError) {
  TempDir dir;
  Trace t = fixture();
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  fs::resize_file(db, fs::file_size(db) / 3);
  auto r = read_trace(db);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("t.db"), std::string::npos);
}

TEST(Store, PlantedSymlinkAtTheTargetIsReplacedNotFollowed) {
  TempDir dir;
  const fs::path victim = dir.path() / "victim.txt";
  {
    std::ofstream(victim) << "do not touch";
  }
  const fs::path out = dir.path() / "trace.db";
  fs::create_symlink(victim, out);
  Trace t = fixture();
  ASSERT_TRUE(write_trace(t, out, "test").ok());
  EXPECT_FALSE(fs::is_symlink(out));
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "do not touch");
  struct stat st {};
  ASSERT_EQ(::stat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

// A shard reads only its ranks' tracks; the outline says what choosing ranks needs without the events.
TEST(Store, ReadsOnlyTheTracksKeptAndAnOutline) {
  TempDir dir;
  Trace t;
  const fs::path two[] = {fs::path(TT_TEST_DATA_DIR) / "kineto/two_ranks"};
  ASSERT_TRUE(import_any(two, t).ok());
  t.finalize();
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  auto whole = read_trace(db);
  ASSERT_TRUE(whole.ok()) << whole.error();
  const Trace& w = whole.value();
  ASSERT_GE(w.processes.size(), 2u);

  auto outline = read_trace_outline(db);
  ASSERT_TRUE(outline.ok()) << outline.error();
  EXPECT_EQ(outline->events, w.event_count());
  EXPECT_EQ(outline->trace.steps.size(), w.steps.size());
  EXPECT_EQ(outline->trace.kernels.size(), 0u);
  ASSERT_EQ(outline->per_track.size(), w.tracks.size());
  std::uint64_t gpu = 0;
  for (const auto& c : outline->per_track) gpu += c.gpu_ops;
  EXPECT_EQ(gpu, w.kernels.size() + w.memcpys.size() + w.memsets.size());

  // keep the tracks of the process that ran the kernels
  const std::uint32_t p = w.process_of_track(w.kernels.track[0]);
  TrackFilter keep(w.tracks.size(), 0);
  for (std::uint32_t tr = 0; tr < w.tracks.size(); ++tr) keep[tr] = w.process_of_track(tr) == p;
  auto part = read_trace(db, keep);
  ASSERT_TRUE(part.ok()) << part.error();
  EXPECT_EQ(part->processes.size(), w.processes.size());  // indices are the whole trace's
  std::size_t mine = 0;
  for (std::size_t i = 0; i < w.kernels.size(); ++i) mine += w.process_of_track(w.kernels.track[i]) == p;
  EXPECT_EQ(part->kernels.size(), mine);
  EXPECT_LT(mine, w.kernels.size());  // the other rank's kernel is left out
  std::size_t others = 0;
  for (std::size_t i = 0; i < w.steps.size(); ++i) others += w.process_of_track(w.steps.track[i]) != p;
  EXPECT_GT(others, 0u);  // the fixture has a step on another process, which is left out
  EXPECT_EQ(part->steps.size(), w.steps.size() - others);
}

// Issue 15: an I/O-heavy recording takes at most 48 bytes per event on disk, fixed costs (a
// page per table) included, at the DataLoader sample's size (32,830 events, 2,462 strings).
TEST(Store, IoTraceTakesAtMost48BytesPerEvent) {
  TempDir dir;
  Trace t;
  tt::testing::add_dataloader_io(t, 32'830);
  const fs::path db = dir.path() / "io.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  const double per_event = static_cast<double>(fs::file_size(db)) / static_cast<double>(t.event_count());
  RecordProperty("bytes_per_event", std::to_string(per_event));
  EXPECT_LE(per_event, 48.0) << fs::file_size(db) << " bytes for " << t.event_count() << " events";
}

// Schema version 3 clusters io_calls on (track_id, start_ns, id) and stores dur_ns. A version 2
// file, written by tracetune's own writer at schema 2 (tests/data/store/README.md), still reads,
// every I/O column as written; saved again it is a version 3 file that reads the same.
TEST(Store, ReadsVersionTwoIoCalls) {
  const Trace want = dataloader_io(300);
  auto v2 = read_trace(fs::path(TT_TEST_DATA_DIR) / "store/io-schema2.tracetune.db");
  ASSERT_TRUE(v2.ok()) << v2.error();
  expect_same_io(want, v2.value());

  TempDir dir;
  const fs::path db = dir.path() / "v3.db";
  ASSERT_TRUE(write_trace(v2.value(), db, "test").ok());
  auto v3 = read_trace(db);
  ASSERT_TRUE(v3.ok()) << v3.error();
  expect_same_io(want, v3.value());
}

// A clustered table is read in per-track pieces of about 131,072 rows (read_trace): tracks of
// about 104,000 and 156,000 calls (one piece, two) come back whole and in order, all of them or
// only the track kept.
TEST(Store, ReadsClusteredTablesInPiecesAndByTrack) {
  TempDir dir;
  Trace t = dataloader_io(260'000, 1);
  const fs::path db = dir.path() / "io.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  auto all = read_trace(db);
  ASSERT_TRUE(all.ok()) << all.error();
  expect_same_io(t, all.value());

  TrackFilter keep(t.tracks.size(), 0);
  keep[t.io_calls.track.back()] = 1;
  auto part = read_trace(db, keep);
  ASSERT_TRUE(part.ok()) << part.error();
  const auto slices = t.slices_io();
  ASSERT_EQ(part->io_calls.size(), slices.back().end - slices.back().begin);
  expect_same(std::vector<Ns>(t.io_calls.start.begin() + slices.back().begin, t.io_calls.start.end()),
              part->io_calls.start, "kept io.start");
}

// What SQL users see of a clustered table: the columns of a rowid table, end_ns computed from
// dur_ns, and window queries that search the primary key.
TEST(Store, ClusteredIoCallsKeepTheirSqlColumns) {
  TempDir dir;
  Trace t = dataloader_io(1'000);
  const fs::path db = dir.path() / "io.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto one_row = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(h, sql, -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
    std::string row;
    if (s != nullptr && sqlite3_step(s) == SQLITE_ROW)
      for (int c = 0; c < sqlite3_column_count(s); ++c)
        row += (c ? "|" : "") + std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, c)));
    sqlite3_finalize(s);
    return row;
  };
  EXPECT_EQ(one_row("SELECT start_ns, end_ns, dur_ns FROM io_calls WHERE id = 7"),
            std::to_string(t.io_calls.start[6]) + "|" + std::to_string(t.io_calls.end(6)) + "|" +
                std::to_string(t.io_calls.dur[6]));
  EXPECT_EQ(one_row("SELECT count(*) FROM io_calls WHERE end_ns <> start_ns + dur_ns"), "0");
  const std::string plan = one_row("EXPLAIN QUERY PLAN SELECT * FROM io_calls WHERE track_id = 1 AND start_ns < 5");
  EXPECT_NE(plan.find("USING PRIMARY KEY (track_id=? AND start_ns<?)"), std::string::npos) << plan;
  EXPECT_EQ(one_row("SELECT count(*) FROM sqlite_schema WHERE name = 'io_calls_track_time'"), "0");
  sqlite3_close(h);
}

// A tampered clustered table is refused with the row and column, as a rowid table is.
TEST(Store, RefusesBadClusteredRows) {
  TempDir dir;
  Trace t = dataloader_io(100);
  const fs::path db = dir.path() / "io.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  const std::pair<const char*, const char*> cases[] = {
      {"UPDATE io_calls SET dur_ns = -5 WHERE id = 3", "io_calls row 3: dur_ns -5 is negative"},
      {"UPDATE io_calls SET dur_ns = 'soon' WHERE id = 3", "io_calls row 3: dur_ns is text ('soon')"},
      {"UPDATE io_calls SET start_ns = 'late' WHERE id = 4", "io_calls row 4: start_ns is text ('late')"},
      {"UPDATE io_calls SET track_id = 1.5 WHERE id = 5", "io_calls row 5: track_id is a real number"},
      {"UPDATE io_calls SET start_ns = 9223372036854775000, dur_ns = 10000 WHERE id = 6", "io_calls row 6: end_ns overflows"}};
  for (const auto& [update, message] : cases) {
    const fs::path bad = dir.path() / "bad.db";
    fs::remove(bad);
    fs::copy_file(db, bad);
    exec_sql(bad, update);
    auto r = read_trace(bad);
    ASSERT_FALSE(r.ok()) << update;
    EXPECT_NE(r.error().find(message), std::string::npos) << r.error();
  }
}

// The packed columns (durations, kernels' config and graph id, API calls' cbid and return
// value) read back exactly when a big table is read in parallel chunks: a value that needs a
// slot (a duration of 2^31 ns or more, a cbid near 2^32, a negative return value) is set after
// the reading threads, in chunks of all widths; and in one chunk per track (a filter). The cells
// come back as narrow as the values allow.
TEST(Store, PackedColumnsSurviveAParallelRead) {
  TempDir dir;
  Trace t;
  const auto p = t.add_process({});
  const auto thread = t.add_thread({p, 1, "main"});
  const auto d = t.add_device({});
  const auto stream = t.add_stream({d, 7, ""});
  t.intern_config({1, 1, 1, 128, 1, 1, 32, 0, 0});
  const auto name = t.strings.intern("k");
  const std::uint32_t n = 300'000;  // three chunks of 131,072 rows
  for (std::uint32_t i = 0; i < n; ++i) {
    const bool odd = i % 49'999 == 7;  // a few per chunk
    auto& k = t.kernels;
    k.push_span(Ns{i} * 10'000, odd ? 5'000'000'000 + i : i % 300, stream, name);
    k.correlation.push_back(i + 1);
    k.external_id.push_back(0);
    k.config.push_back(i % 3 == 0 ? 0 : kNone);
    k.graph_id.push_back(odd ? 0xfffffff0u : 0);
    auto& a = t.api_calls;
    a.push_span(Ns{i} * 10'000, odd ? 1 : 4'000, thread, name);
    a.correlation.push_back(i + 1);
    a.external_id.push_back(0);
    a.cbid.push_back(odd ? 0xfffffffeu : 211);
    a.return_value.push_back(odd ? -3 : 0);
    a.api.push_back(ApiKind::Runtime);
  }
  t.finalize();
  const fs::path db = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, db, "test").ok());
  auto check = [&](const Trace& u) {
    expect_same(t.kernels.dur, u.kernels.dur, "kernels.dur");
    expect_same(t.kernels.config, u.kernels.config, "kernels.config");
    expect_same(t.kernels.graph_id, u.kernels.graph_id, "kernels.graph_id");
    expect_same(t.kernels.start, u.kernels.start, "kernels.start");
    expect_same(t.api_calls.dur, u.api_calls.dur, "api_calls.dur");
    expect_same(t.api_calls.cbid, u.api_calls.cbid, "api_calls.cbid");
    expect_same(t.api_calls.return_value, u.api_calls.return_value, "api_calls.return_value");
    EXPECT_EQ(u.kernels.config.width(), 1u);  // kNone and 0
    EXPECT_EQ(u.kernels.dur.width(), 4u);     // slots
  };
  auto all = read_trace(db);
  ASSERT_TRUE(all.ok()) << all.error();
  check(all.value());
  auto kept = read_trace(db, TrackFilter(t.tracks.size(), 1));  // a filter: chunks read into parts
  ASSERT_TRUE(kept.ok()) << kept.error();
  check(kept.value());
}

namespace {

// The columns read_trace's `later` leaves for read_trace_details, and the fixed ones, of two
// traces: the same, row by row (strings by value).
void expect_same_big_tables(const Trace& t, const Trace& u) {
  expect_same(t.kernels.start, u.kernels.start, "kernels.start");
  expect_same(t.kernels.dur, u.kernels.dur, "kernels.dur");
  expect_same(t.kernels.track, u.kernels.track, "kernels.track");
  expect_same_strings(t, t.kernels.name, u, u.kernels.name, "kernels.name");
  expect_same(t.kernels.correlation, u.kernels.correlation, "kernels.correlation");
  expect_same(t.kernels.external_id, u.kernels.external_id, "kernels.external_id");
  expect_same(t.kernels.config, u.kernels.config, "kernels.config");
  expect_same(t.kernels.graph_id, u.kernels.graph_id, "kernels.graph_id");
  expect_same(t.api_calls.start, u.api_calls.start, "api_calls.start");
  expect_same(t.api_calls.dur, u.api_calls.dur, "api_calls.dur");
  expect_same(t.api_calls.correlation, u.api_calls.correlation, "api_calls.correlation");
  expect_same(t.api_calls.external_id, u.api_calls.external_id, "api_calls.external_id");
  expect_same(t.api_calls.cbid, u.api_calls.cbid, "api_calls.cbid");
  expect_same(t.api_calls.return_value, u.api_calls.return_value, "api_calls.return_value");
  expect_same(t.api_calls.api, u.api_calls.api, "api_calls.api");
  expect_same(t.ranges.start, u.ranges.start, "ranges.start");
  expect_same(t.ranges.dur, u.ranges.dur, "ranges.dur");
  expect_same(t.ranges.depth, u.ranges.depth, "ranges.depth");
  expect_same(t.ranges.kind, u.ranges.kind, "ranges.kind");
  expect_same_strings(t, t.ranges.domain, u, u.ranges.domain, "ranges.domain");
  expect_same(t.ranges.external_id, u.ranges.external_id, "ranges.external_id");
  expect_same_strings(t, t.ranges.args, u, u.ranges.args, "ranges.args");
  EXPECT_EQ(u.kernels.config.width(), t.kernels.config.width());  // narrowed as finalize() narrows
  EXPECT_EQ(u.api_calls.cbid.width(), t.api_calls.cbid.width());
  EXPECT_EQ(u.ranges.args.width(), t.ranges.args.width());
}

// read_trace with `later`, then read_trace_details.
Trace read_in_two_parts(const fs::path& db) {
  std::optional<PendingDetails> later;
  auto first = read_trace(db, {}, &later);
  EXPECT_TRUE(first.ok()) << first.error();
  if (!first.ok()) return {};
  Trace u = std::move(first).value();
  EXPECT_TRUE(later.has_value());
  if (!later) return u;
  EXPECT_EQ(u.kernels.correlation.size(), 0u);  // left for the second part
  EXPECT_EQ(u.ranges.depth.size(), u.ranges.size());  // what the timeline draws is there
  auto st = read_trace_details(*later, u);
  EXPECT_TRUE(st.ok()) << st.error();
  return u;
}

}  // namespace

// The GUI's first frame reads only the columns it draws of the big tables; the rest, read
// afterwards, give the trace read whole: on a trace of every category, and on big tables read in
// parallel chunks with ids missing (rows moved down over them) and values that need slots.
TEST(Store, DetailsReadAfterTheTimelineGiveTheWholeRead) {
  TempDir dir;
  const fs::path db = dir.path() / "t.db";
  Trace t0 = fixture();
  ASSERT_TRUE(write_trace(t0, db, "test").ok());
  auto whole = read_trace(db);
  ASSERT_TRUE(whole.ok()) << whole.error();
  expect_same_big_tables(whole.value(), read_in_two_parts(db));

  Trace t;
  const auto p = t.add_process({});
  const auto thread = t.add_thread({p, 1, "main"});
  const auto d = t.add_device({});
  const auto stream = t.add_stream({d, 7, ""});
  t.intern_config({1, 1, 1, 128, 1, 1, 32, 0, 0});
  const auto name = t.strings.intern("k"), args = t.strings.intern("{\"a\": 1}");
  for (std::uint32_t i = 0; i < 300'000; ++i) {  // three chunks of 131,072 rows
    const bool odd = i % 49'999 == 7;
    t.kernels.push_span(Ns{i} * 10'000, i % 300, stream, name);
    t.kernels.correlation.push_back(i + 1);
    t.kernels.external_id.push_back(i / 2);
    t.kernels.config.push_back(i % 3 == 0 ? 0 : kNone);
    t.kernels.graph_id.push_back(odd ? 0xfffffff0u : 0);
    t.api_calls.push_span(Ns{i} * 10'000, 4'000, thread, name);
    t.api_calls.correlation.push_back(i + 1);
    t.api_calls.external_id.push_back(i / 2);
    t.api_calls.cbid.push_back(odd ? 0xfffffffeu : 211);
    t.api_calls.return_value.push_back(odd ? -3 : 0);
    t.api_calls.api.push_back(i % 5 ? ApiKind::Runtime : ApiKind::Driver);
    t.ranges.push_span(Ns{i} * 10'000, 9'000, thread, name);
    t.ranges.kind.push_back(i % 4 ? RangeKind::CpuOp : RangeKind::UserAnnotation);
    t.ranges.depth.push_back(0);
    t.ranges.domain.push_back(0);
    t.ranges.external_id.push_back(i / 2);
    t.ranges.args.push_back(i % 7 ? 0 : args);
  }
  t.finalize();
  const fs::path big = dir.path() / "big.db";
  ASSERT_TRUE(write_trace(t, big, "test").ok());
  exec_sql(big, "DELETE FROM kernels WHERE id % 1000 = 5 OR id BETWEEN 131000 AND 131100;"
                "DELETE FROM api_calls WHERE id % 777 = 3; DELETE FROM ranges WHERE id % 999 = 1;");
  auto big_whole = read_trace(big);
  ASSERT_TRUE(big_whole.ok()) << big_whole.error();
  ASSERT_LT(big_whole->kernels.size(), t.kernels.size());
  expect_same_big_tables(big_whole.value(), read_in_two_parts(big));
}

// A file whose rows finalize() re-sorts (another tool rewrote it) is read whole, so that its
// details move with their rows.
TEST(Store, AFileOutOfOrderIsReadWhole) {
  TempDir dir;
  const fs::path db = dir.path() / "t.db";
  Trace t0 = fixture();
  ASSERT_TRUE(write_trace(t0, db, "test").ok());
  exec_sql(db, "UPDATE kernels SET start_ns = start_ns + 1000000000, end_ns = end_ns + 1000000000 WHERE id = 1;");
  auto whole = read_trace(db);
  ASSERT_TRUE(whole.ok()) << whole.error();
  std::optional<PendingDetails> later;
  auto first = read_trace(db, {}, &later);
  ASSERT_TRUE(first.ok()) << first.error();
  EXPECT_FALSE(later.has_value());
  expect_same_big_tables(whole.value(), first.value());
}

// A bad cell among the details is the details' read's error, with read_trace's message.
TEST(Store, ABadDetailIsTheDetailsReadsError) {
  TempDir dir;
  const fs::path db = dir.path() / "t.db";
  Trace t0 = fixture();
  ASSERT_TRUE(write_trace(t0, db, "test").ok());
  for (const char* sql : {"UPDATE ranges SET args_id = 999999 WHERE id = 1;", "UPDATE kernels SET correlation = 'abc' WHERE id = 1;"}) {
    const fs::path bad = dir.path() / "bad.db";
    fs::copy_file(db, bad, fs::copy_options::overwrite_existing);
    exec_sql(bad, sql);
    auto whole = read_trace(bad);
    ASSERT_FALSE(whole.ok()) << sql;
    std::optional<PendingDetails> later;
    auto first = read_trace(bad, {}, &later);
    ASSERT_TRUE(first.ok()) << first.error();
    ASSERT_TRUE(later.has_value());
    Trace u = std::move(first).value();
    auto st = read_trace_details(*later, u);
    ASSERT_FALSE(st.ok()) << sql;
    EXPECT_EQ(st.error(), whole.error()) << sql;
  }
}

// The details come from the file read_trace read, on the connection it kept: removed or replaced
// since (the GUI bench removes its DB once loaded; a recording may rewrite it), it still gives
// them.
TEST(Store, DetailsComeFromTheFileFirstRead) {
  TempDir dir;
  const fs::path db = dir.path() / "t.db";
  Trace t0 = fixture();
  ASSERT_TRUE(write_trace(t0, db, "test").ok());
  auto whole = read_trace(db);
  ASSERT_TRUE(whole.ok()) << whole.error();
  std::optional<PendingDetails> later;
  auto first = read_trace(db, {}, &later);
  ASSERT_TRUE(first.ok()) << first.error();
  ASSERT_TRUE(later.has_value());
  fs::remove(db);
  Trace other;
  ASSERT_TRUE(write_trace(other, db, "test").ok());  // an empty trace in its place
  Trace u = std::move(first).value();
  auto st = read_trace_details(*later, u);
  ASSERT_TRUE(st.ok()) << st.error();
  expect_same_big_tables(whole.value(), u);
}

// The file descriptors this process has open.
std::size_t open_fds() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// A trace with no event rows (Python samples only, say) is read on one connection: the count
// of connections beside it wrapped around to SIZE_MAX and opened the file until the
// descriptors ran out (UBSan's checks then failed for want of one; Merge.PythonSamples... under
// the asan preset).
TEST(Store, ATraceWithoutEventRowsOpensNoMoreConnections) {
  TempDir dir;
  const fs::path db = dir.path() / "t.db";
  Trace empty;
  ASSERT_TRUE(write_trace(empty, db, "test").ok());
  const std::size_t before = open_fds();
  std::optional<PendingDetails> later;
  auto r = read_trace(db, {}, &later);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_LE(open_fds(), before + 32) << "at most 8 connections are kept for the details' read";
  later.reset();
  auto whole = read_trace(db);
  ASSERT_TRUE(whole.ok()) << whole.error();
  EXPECT_EQ(whole->event_count(), 0u);
}
