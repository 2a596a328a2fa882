// Trace <-> SQLite (schema v3). Each event table is described once, as a tuple of column
// descriptors; the DDL, the INSERT, and the SELECT all come from that one description.
#include "tracetune/trace/store.h"

#include <cerrno>

#include <sys/resource.h>
#include <sys/stat.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "sqlite_util.h"
#include "tracetune/trace/file_io.h"

namespace tt::trace {
namespace fs = std::filesystem;
using sql::Stmt;

namespace {

// A column of a table: its SQL name, the member holding it (a std::vector or a PackedColumn
// of V), and the model value that is written as NULL ("unknown"). `nullable = false` columns
// are never NULL.
template <class Table, class Column>
struct Col {
  using V = typename Column::value_type;
  const char* name;
  Column Table::*member;
  bool nullable;
  std::int64_t null_value;
  bool derived = false;  // stored for SQL users, recomputed by Trace::finalize() on load
  int since = 1;         // the schema version that added it: older files read it as null_value
};

template <class Table, class Column>
constexpr Col<Table, Column> col(const char* name, Column Table::*m) {
  return {name, m, false, 0};
}
template <class Table, class Column>
constexpr Col<Table, Column> opt(const char* name, Column Table::*m, std::int64_t null_value) {
  return {name, m, true, null_value};
}

// A nullable column added in schema version `version`.
template <class Table, class Column>
constexpr Col<Table, Column> added(int version, const char* name, Column Table::*m, std::int64_t null_value) {
  return {name, m, true, null_value, false, version};
}

template <class Table, class Column>
constexpr Col<Table, Column> derived(const char* name, Column Table::*m) {
  return {name, m, false, 0, true};
}

// A column of a metadata table (processes, threads, devices, streams), whose rows are structs:
// its SQL name, the member holding it, and the member's "unknown" value, written as NULL
// (`nullable`). A text member writes "" as NULL. Read back through EntityRow's checks: a
// 32-bit member must fit (a non-nullable one in int32), a bool is 0 or 1.
template <class Row, class V>
struct MemberCol {
  const char* name;
  V Row::*member;
  bool nullable;
  std::int64_t null_value;
};

template <class Row, class V>
constexpr MemberCol<Row, V> member(const char* name, V Row::*m) {
  return {name, m, false, 0};
}
template <class Row, class V>
constexpr MemberCol<Row, V> member_or_null(const char* name, V Row::*m, std::int64_t null_value) {
  return {name, m, true, null_value};
}

// The metadata tables' columns after `id` (the row's index), in their SQL order.
constexpr auto kProcessCols = std::tuple(
    member("pid", &Process::pid), member_or_null("parent_pid", &Process::parent_pid, -1),
    member_or_null("rank", &Process::rank, -1), member_or_null("local_rank", &Process::local_rank, -1),
    member("host", &Process::host), member("name", &Process::name), member("command_line", &Process::command_line),
    member_or_null("start_ns", &Process::start, 0), member_or_null("end_ns", &Process::end, 0),
    member_or_null("exit_status", &Process::exit_status, -1), member("truncated", &Process::truncated));
constexpr auto kThreadCols = std::tuple(member_or_null("process_id", &Thread::process, kNone),
                                        member("tid", &Thread::tid), member("name", &Thread::name));
constexpr auto kDeviceCols = std::tuple(
    member_or_null("process_id", &Device::process, kNone), member("device_index", &Device::index),
    member("name", &Device::name), member("uuid", &Device::uuid), member("vendor", &Device::vendor),
    member_or_null("sm_count", &Device::sm_count, -1), member_or_null("total_memory", &Device::total_memory, -1),
    member_or_null("compute_major", &Device::compute_major, -1),
    member_or_null("compute_minor", &Device::compute_minor, -1));
constexpr auto kStreamCols = std::tuple(member_or_null("device_id", &Stream::device, kNone),
                                        member("stream", &Stream::stream), member("name", &Stream::name));

template <class V>
std::int64_t as_i64(V v) {
  if constexpr (std::is_enum_v<V>) return static_cast<std::int64_t>(static_cast<std::underlying_type_t<V>>(v));
  else return static_cast<std::int64_t>(v);
}

template <class Table, class Column>
void bind_col(Stmt& s, int idx, const Table& t, const Col<Table, Column>& c, std::size_t row) {
  using V = typename Column::value_type;
  const V v = (t.*c.member)[row];
  if constexpr (std::is_floating_point_v<V>) {
    s.bind(idx, static_cast<double>(v));
  } else {
    const std::int64_t x = as_i64(v);
    if (c.nullable && x == c.null_value) s.bind_null(idx);
    else s.bind(idx, x);
  }
}

// A cell that must hold an integer (NULL too when `nullable`): "kernels row 7: start_ns is
// text ('abc'), not an integer". A tampered file's 1.5e300 or 'abc' is refused, not read as
// INT64_MAX or 0.
Status integer_cell(const Stmt& s, int c, const char* table, const char* column, bool nullable, std::int64_t row) {
  const int type = s.type(c);
  if (type == SQLITE_INTEGER || (nullable && type == SQLITE_NULL)) return {};
  const char* what = type == SQLITE_FLOAT ? "a real number" : type == SQLITE_TEXT ? "text" : type == SQLITE_NULL ? "NULL" : "a blob";
  std::string shown = type == SQLITE_FLOAT || type == SQLITE_TEXT ? std::string(s.text(c).substr(0, 40)) : std::string();
  return make_error(fmt::format("{} row {}: {} is {}{}, not an integer", table, row, column, what,
                                shown.empty() ? "" : " ('" + shown + "')"));
}

// One cell of the current row, fetched once (sqlite3_column_value): its type and its integer
// are read from that value, where sqlite3_column_type + sqlite3_column_int64 fetch it twice.
struct Cell {
  sqlite3_value* v;
  int type;
  Cell(const Stmt& s, int c) : v(sqlite3_column_value(s.get(), c)), type(sqlite3_value_type(v)) {}
  std::int64_t i64() const { return sqlite3_value_int64(v); }
};

// An integer cell (integer_cell's check): its value, NULL read as `null_value` where allowed.
Status integer_value(const Stmt& s, int c, const char* table, const char* column, bool nullable, std::int64_t null_value,
                     std::int64_t row, std::int64_t& out) {
  const Cell cell(s, c);
  if (cell.type == SQLITE_INTEGER) {
    out = cell.i64();
    return {};
  }
  if (nullable && cell.type == SQLITE_NULL) {
    out = null_value;
    return {};
  }
  return integer_cell(s, c, table, column, nullable, row);  // the message
}

// Values a reading thread could not store itself (a packed column's value that needs a wider
// cell or a slot), set once the threads are done: (column, row, value).
struct DeferredSets {
  std::vector<std::function<void()>> sets;
  void run() {
    for (auto& f : sets) f();
    sets.clear();
  }
};

// Row `at` of column `col` becomes v. A packed column shared by reading threads takes only what
// fits its cells as they are (resize_columns widened them to 4 bytes: all but a slot's value);
// the rest waits in `later`. `later` is null where the column is this thread's alone.
template <class V>
void put(std::vector<V>& col, std::size_t at, V v, DeferredSets*) { col[at] = v; }
template <class V>
void put(PackedColumn<V>& col, std::size_t at, V v, DeferredSets* later) {
  if (col.try_set(at, v)) return;
  if (later) later->sets.emplace_back([&col, at, v] { col.set(at, v); });
  else col.set(at, v);
}

// Stores column `c` of row `at` of `t` from the next cell (`idx`); a derived column keeps the
// 0 it was sized with (finalize() computes it).
template <class Table, class Column>
Status load_col(const Stmt& s, int& idx, Table& t, std::size_t at, const Col<Table, Column>& c, const char* table,
                std::int64_t row, DeferredSets* later) {
  using V = typename Column::value_type;
  if (c.derived) return {};
  const int col_index = idx++;
  auto& out = t.*c.member;
  if constexpr (std::is_floating_point_v<V>) {
    put(out, at, static_cast<V>(s.f64(col_index)), later);
  } else {
    std::int64_t x = 0;
    if (auto st = integer_value(s, col_index, table, c.name, c.nullable, c.null_value, row, x); !st) return st;
    if constexpr (std::is_enum_v<V>) put(out, at, static_cast<V>(static_cast<std::underlying_type_t<V>>(x)), later);
    else put(out, at, static_cast<V>(x), later);
  }
  return {};
}

// A span table's layout. A rowid table has `id INTEGER PRIMARY KEY`, stores end_ns and has a
// <name>_track_time index. A clustered table is a WITHOUT ROWID table keyed on (track_id,
// start_ns, id): the table is its own time index, so there is no second copy of each row's
// key. It stores dur_ns (1 to 3 bytes for most calls, where end_ns takes 6) and has end_ns as a
// virtual generated column, so SQL sees the columns of a rowid table (end_ns last, after dur_ns).
template <class Table, class... Cols>
struct TableDef {
  const char* name;
  bool span;  // span tables store start_ns/end_ns/name_id; point tables ts_ns
  std::tuple<Cols...> cols;
  int clustered_since = 0;  // the schema version from which the table is clustered; 0: never
  // false: a read of `cols` alone into a table whose fixed columns (track, start, duration,
  // name) were read before (read_trace_details)
  bool fixed = true;

  bool clustered(int version) const { return clustered_since != 0 && version >= clustered_since; }
};

template <class Table, class... Cols>
constexpr TableDef<Table, Cols...> span_table(const char* name, Cols... cols) {
  return {name, true, std::tuple<Cols...>(cols...)};
}

template <class Table, class... Cols>
constexpr TableDef<Table, Cols...> clustered_span_table(int since, const char* name, Cols... cols) {
  return {name, true, std::tuple<Cols...>(cols...), since};
}

using K = KernelTable;
using M = MemcpyTable;
using S = MemsetTable;
using A = ApiCallTable;
using Y = SyncTable;
using R = RangeTable;
using P = StepTable;
using C = CollectiveTable;
using I = IoTable;

const auto kKernels = span_table<K>("kernels",
    opt("correlation", &K::correlation, 0), opt("external_id", &K::external_id, 0),
    opt("config_id", &K::config, kNone), opt("graph_id", &K::graph_id, 0));
const auto kMemcpys = span_table<M>("memcpys",
    col("bytes", &M::bytes), opt("correlation", &M::correlation, 0),
    col("direction", &M::direction), col("src_kind", &M::src_kind), col("dst_kind", &M::dst_kind),
    opt("async", &M::async, 2));
const auto kMemsets = span_table<S>("memsets",
    col("bytes", &S::bytes), opt("correlation", &S::correlation, 0), col("mem_kind", &S::mem_kind),
    col("value", &S::value));
const auto kApiCalls = span_table<A>("api_calls",
    opt("correlation", &A::correlation, 0), opt("external_id", &A::external_id, 0),
    opt("cbid", &A::cbid, 0), col("return_value", &A::return_value), col("api", &A::api));
const auto kSyncs = span_table<Y>("syncs",
    opt("correlation", &Y::correlation, 0), col("type", &Y::type), opt("stream", &Y::stream, -1),
    opt("event", &Y::event, -1));
const auto kRanges = span_table<R>("ranges",
    col("kind", &R::kind), derived("depth", &R::depth), col("domain_id", &R::domain),
    opt("external_id", &R::external_id, 0), added(2, "args_id", &R::args, 0));
// What the timeline's first frame needs of the three big tables: the fixed columns (and the
// ranges' depth, which finalize() computes from them). The other columns come later
// (read_trace with `later`, then read_trace_details).
const auto kKernelsTimeline = span_table<K>("kernels");
const auto kApiCallsTimeline = span_table<A>("api_calls");
const auto kRangesTimeline = span_table<R>("ranges", derived("depth", &R::depth));
// Whether a read of `d` fills column `c`: a details read leaves a derived column (the ranges'
// depth, computed by finalize() from the fixed columns) as it is.
template <class Def, class Col>
bool reads(const Def& d, const Col& c) { return d.fixed || !c.derived; }
// A table's columns but the fixed ones, read into a table that has those.
template <class Def>
Def details_of(Def d) {
  d.fixed = false;
  return d;
}
const auto kSteps = span_table<P>("steps", col("number", &P::number));
const auto kCollectives = span_table<C>("collectives",
    col("op_id", &C::op), col("bytes", &C::bytes), col("count", &C::count),
    col("dtype_id", &C::dtype), opt("group_size", &C::group_size, -1),
    col("communicator_id", &C::communicator), col("algorithm_id", &C::algorithm),
    col("protocol_id", &C::protocol), opt("channels", &C::channels, -1), opt("seq", &C::seq, -1),
    opt("peer", &C::peer, -1), opt("root", &C::root, -1), col("side", &C::side),
    opt("correlation", &C::correlation, 0));
// Clustered from version 3: an I/O-heavy recording is mostly io_calls rows (issue 15: at most
// 48 bytes per event on disk; 63 with a rowid table, its index and end_ns).
const auto kIoCalls = clustered_span_table<I>(3, "io_calls",
    col("op", &I::op), opt("fd", &I::fd, -1), col("path_id", &I::path), opt("bytes", &I::bytes, -1),
    opt("offset", &I::offset, -1), col("result", &I::result), col("errno", &I::err));

// ---- enum tables: documentation inside the file, like nsys's ENUM_* tables ----

template <class E>
void enum_rows(std::string& sql, const char* table, int count) {
  sql += "CREATE TABLE " + std::string(table) + "(id INTEGER PRIMARY KEY, name TEXT NOT NULL);\n";
  for (int i = 0; i < count; ++i) {
    sql += "INSERT INTO " + std::string(table) + " VALUES(" + std::to_string(i) + ",'" +
           std::string(to_string(static_cast<E>(i))) + "');\n";
  }
}

// The table of the current schema (see TableDef for the two layouts), in `schema` ("main",
// "load"). A clustered table's end_ns is added once its rows are in (write_clustered_table).
template <class Def>
void span_ddl(std::string& sql, const Def& d, const char* schema = "main") {
  const bool clustered = d.clustered(kSchemaVersion);
  sql += "CREATE TABLE " + std::string(schema) + "." + d.name + (clustered ? "(id INTEGER NOT NULL" : "(id INTEGER PRIMARY KEY") +
         ", track_id INTEGER NOT NULL REFERENCES tracks(id), start_ns INTEGER NOT NULL" +
         (clustered ? "" : ", end_ns INTEGER NOT NULL") + ", name_id INTEGER NOT NULL REFERENCES strings(id)";
  std::apply([&](const auto&... c) { ((sql += ", " + std::string(c.name) + (c.nullable ? " INTEGER" : " INTEGER NOT NULL")), ...); }, d.cols);
  sql += clustered ? ", dur_ns INTEGER NOT NULL, PRIMARY KEY(track_id, start_ns, id)) WITHOUT ROWID;\n" : ");\n";
}

// A rowid table's time index, created after the bulk insert (much faster than maintaining it
// row by row); a clustered table is its own.
template <class Def>
void track_time_index(std::string& sql, const Def& d) {
  if (d.clustered(kSchemaVersion)) return;
  sql += "CREATE INDEX " + std::string(d.name) + "_track_time ON " + d.name + "(track_id, start_ns);\n";
}

std::string build_schema() {
  std::string s = R"SQL(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE processes(id INTEGER PRIMARY KEY, pid INTEGER NOT NULL, parent_pid INTEGER,
  rank INTEGER, local_rank INTEGER, host TEXT, name TEXT, command_line TEXT,
  start_ns INTEGER, end_ns INTEGER, exit_status INTEGER, truncated INTEGER NOT NULL DEFAULT 0);
CREATE TABLE threads(id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id),
  tid INTEGER NOT NULL, name TEXT);
CREATE TABLE devices(id INTEGER PRIMARY KEY, process_id INTEGER REFERENCES processes(id),
  device_index INTEGER NOT NULL, name TEXT, uuid TEXT, vendor TEXT, sm_count INTEGER,
  total_memory INTEGER, compute_major INTEGER, compute_minor INTEGER);
CREATE TABLE streams(id INTEGER PRIMARY KEY, device_id INTEGER REFERENCES devices(id),
  stream INTEGER NOT NULL, name TEXT);
CREATE TABLE tracks(id INTEGER PRIMARY KEY, type INTEGER NOT NULL, owner_id INTEGER);
CREATE TABLE launch_configs(id INTEGER PRIMARY KEY, grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
  block_x INTEGER, block_y INTEGER, block_z INTEGER, registers INTEGER,
  shared_static INTEGER, shared_dynamic INTEGER);
CREATE TABLE counters(id INTEGER PRIMARY KEY, track_id INTEGER NOT NULL REFERENCES tracks(id),
  ts_ns INTEGER NOT NULL, name_id INTEGER NOT NULL REFERENCES strings(id), value REAL NOT NULL);
CREATE TABLE flows(id INTEGER PRIMARY KEY, track_id INTEGER NOT NULL REFERENCES tracks(id),
  ts_ns INTEGER NOT NULL, category_id INTEGER NOT NULL REFERENCES strings(id),
  flow_id INTEGER NOT NULL, phase TEXT NOT NULL);
CREATE TABLE diagnostics(id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, source TEXT NOT NULL,
  reason TEXT NOT NULL, count INTEGER NOT NULL);
)SQL";
  span_ddl(s, kKernels);
  span_ddl(s, kMemcpys);
  span_ddl(s, kMemsets);
  span_ddl(s, kApiCalls);
  span_ddl(s, kSyncs);
  span_ddl(s, kRanges);
  span_ddl(s, kSteps);
  span_ddl(s, kCollectives);
  span_ddl(s, kIoCalls);
  enum_rows<TrackType>(s, "enum_track_type", 4);
  enum_rows<MemcpyDirection>(s, "enum_memcpy_direction", 6);
  enum_rows<MemoryKind>(s, "enum_memory_kind", 6);
  enum_rows<ApiKind>(s, "enum_api_kind", 3);
  enum_rows<SyncType>(s, "enum_sync_type", 6);
  enum_rows<RangeKind>(s, "enum_range_kind", 9);
  enum_rows<CollectiveSide>(s, "enum_collective_side", 2);
  enum_rows<IoOp>(s, "enum_io_op", 8);
  enum_rows<DiagnosticKind>(s, "enum_diagnostic_kind", 4);
  return s;
}

// Per-track time-range indexes and the correlation lookups, created after the bulk insert.
std::string build_indexes() {
  std::string s;
  track_time_index(s, kKernels);
  track_time_index(s, kMemcpys);
  track_time_index(s, kMemsets);
  track_time_index(s, kApiCalls);
  track_time_index(s, kSyncs);
  track_time_index(s, kRanges);
  track_time_index(s, kSteps);
  track_time_index(s, kCollectives);
  track_time_index(s, kIoCalls);
  return s + R"SQL(
CREATE INDEX counters_track_time ON counters(track_id, ts_ns);
CREATE INDEX flows_track_time ON flows(track_id, ts_ns);
CREATE INDEX kernels_correlation ON kernels(correlation);
CREATE INDEX api_calls_correlation ON api_calls(correlation);
)SQL";
}

// The time column a span table of schema `version` stores: end_ns, or a clustered table's dur_ns.
template <class Def>
const char* stored_time(const Def& d, int version) {
  return d.clustered(version) ? "dur_ns" : "end_ns";
}

template <class Def>
std::string insert_sql(const Def& d, const char* schema) {
  std::string names = std::string("id, track_id, start_ns, ") + stored_time(d, kSchemaVersion) + ", name_id";
  std::string values = "?,?,?,?,?";
  std::apply([&](const auto&... c) { ((names += ", " + std::string(c.name), values += ",?"), ...); }, d.cols);
  return "INSERT INTO " + std::string(schema) + "." + d.name + "(" + names + ") VALUES(" + values + ")";
}

// The columns a file of schema `version` has; the ones added later read as NULL.
template <class Def>
std::string select_sql(const Def& d, int version) {
  std::string s = d.fixed ? std::string("track_id, start_ns, ") + stored_time(d, version) + ", name_id, " : "";
  auto column = [&](const auto& c) {
    if (c.derived) return std::string();
    return c.since > version ? "NULL, " : std::string(c.name) + ", ";
  };
  std::apply([&](const auto&... c) { ((s += column(c)), ...); }, d.cols);
  return "SELECT " + s + "id FROM " + d.name;  // id last: for messages
}

// True when `keep` takes the rows of `track` (an empty filter takes every track).
bool keeps(const TrackFilter& keep, std::int64_t track) {
  if (keep.empty()) return true;
  return track >= 0 && static_cast<std::uint64_t>(track) < keep.size() && keep[static_cast<std::size_t>(track)];
}

// Inserts every row of `t` into the table of `d` in `schema`, with ids from `first_id` on.
template <class Table, class Def>
Status insert_span_rows(sqlite3* db, const Table& t, const Def& d, const char* schema, std::int64_t first_id = 1) {
  auto st = Stmt::prepare(db, insert_sql(d, schema));
  if (!st) return make_error(st.error());
  Stmt& s = st.value();
  for (std::size_t row = 0; row < t.size(); ++row) {
    s.bind(1, first_id + static_cast<std::int64_t>(row));
    s.bind(2, static_cast<std::int64_t>(t.track[row]));
    s.bind(3, t.start[row]);
    s.bind(4, d.clustered(kSchemaVersion) ? t.dur[row] : t.start[row] + t.dur[row]);
    s.bind(5, static_cast<std::int64_t>(t.name[row]));
    int idx = 6;
    std::apply([&](const auto&... c) { (bind_col(s, idx++, t, c, row), ...); }, d.cols);
    if (s.step() != SQLITE_DONE) return make_error(std::string(d.name) + ": " + sqlite3_errmsg(db));
    s.reset();
  }
  return {};
}

// A clustered table is written through a copy in the in-memory database "load" (write_trace
// attaches it). Rows inserted one by one, even in key order, fill a WITHOUT ROWID table's pages
// to about 88%; SQLite packs them when it copies a whole table into an empty one of the same
// schema ("INSERT INTO t SELECT * FROM u", its transfer optimization, which VACUUM uses): 36.2
// against 31.9 B per I/O call of the DataLoader sample. The transfer does not take a generated
// column in a table with a primary key, so end_ns is added after it. The copy holds the rows in
// memory until the file is closed (about their size in the file).
template <class Def>
Status create_staged_table(sqlite3* db, const Def& d) {
  std::string load_ddl;
  span_ddl(load_ddl, d, "load");
  if (auto st = sql::exec(db, load_ddl.c_str()); !st) return make_error(std::string(d.name) + ": " + st.error());
  return {};
}

// Copies the staged rows into the empty main table (the transfer) and adds the generated end_ns.
template <class Def>
Status move_staged_table(sqlite3* db, const Def& d) {
  const std::string name(d.name);
  Status st = sql::exec(db, ("INSERT INTO main." + name + " SELECT * FROM load." + name + "; DROP TABLE load." + name).c_str());
  if (st) st = sql::exec(db, ("ALTER TABLE main." + name + " ADD COLUMN end_ns INTEGER GENERATED ALWAYS AS (start_ns + dur_ns) VIRTUAL").c_str());
  if (!st) return make_error(name + ": " + st.error());
  return {};
}

template <class Table, class Def>
Status write_clustered_table(sqlite3* db, const Table& t, const Def& d) {
  Status st = create_staged_table(db, d);
  if (st) st = insert_span_rows(db, t, d, "load");
  if (st) st = move_staged_table(db, d);
  return st;
}

template <class Table, class Def>
Status write_span_table(sqlite3* db, const Table& t, const Def& d) {
  return d.clustered(kSchemaVersion) ? write_clustered_table(db, t, d) : insert_span_rows(db, t, d, "main");
}

// The rows one read takes: ids in [from, to) of a rowid table, or the rows of one track of a
// clustered table whose start_ns is in [from, to). A clustered chunk's missing bound is open, so
// that every row of the track is read, a start_ns that is not an integer too (and refused).
struct RowChunk {
  std::optional<std::int64_t> track;  // set: a clustered table's track
  std::optional<std::int64_t> from, to;
  std::size_t rows = 0;  // about how many rows, to reserve
};

RowChunk id_chunk(std::int64_t from, std::int64_t to) {
  return {std::nullopt, from, to, static_cast<std::size_t>(to - from)};  // ids are dense: the exact count
}

std::string chunk_where(const RowChunk& c) {
  if (!c.track) return " WHERE id >= ?1 AND id < ?2 ORDER BY id";
  std::string w = " WHERE track_id = ?3";
  if (c.from) w += " AND start_ns >= ?1";
  if (c.to) w += " AND start_ns < ?2";
  return w + " ORDER BY track_id, start_ns, id";
}

// A span's duration from its stored time column (end_ns, or a clustered table's dur_ns).
Result<Ns> span_duration(const char* table, std::int64_t row, Ns start, std::int64_t stored, bool stored_is_dur) {
  Ns dur = stored, end = stored;
  if (stored_is_dur) {
    if (dur < 0) return make_error(fmt::format("{} row {}: dur_ns {} is negative", table, row, dur));
    if (__builtin_add_overflow(start, dur, &end)) return make_error(fmt::format("{} row {}: end_ns overflows 64 bits", table, row));
    return dur;
  }
  if (end < start) return make_error(fmt::format("{} row {}: end_ns {} is before start_ns {}", table, row, end, start));
  if (__builtin_sub_overflow(end, start, &dur))
    return make_error(fmt::format("{} row {}: the duration overflows 64 bits", table, row));
  return dur;
}

// Cells of 4 bytes for a packed column (every value but a slot's then fits: see put), nothing
// for a vector.
template <class V> void widen_cells(std::vector<V>&) {}
template <class V> void widen_cells(PackedColumn<V>& col) { col.widen(4); }

// Every column of a span table (`d` describes the table's own) resized to n rows.
template <class Table, class Def>
void resize_columns(Table& t, const Def& d, std::size_t n) {
  auto size = [n](auto& col) {
    widen_cells(col);
    col.resize(n);
  };
  if (d.fixed) { size(t.start); size(t.dur); size(t.track); size(t.name); }
  std::apply([&](const auto&... col) { ((reads(d, col) ? size(t.*col.member) : void()), ...); }, d.cols);
}

// Rows [from, from + n) of a column copied over rows [to, to + n) (to <= from).
template <class V>
void move_rows(std::vector<V>& col, std::size_t from, std::size_t n, std::size_t to) {
  std::copy(col.begin() + static_cast<std::ptrdiff_t>(from), col.begin() + static_cast<std::ptrdiff_t>(from + n),
            col.begin() + static_cast<std::ptrdiff_t>(to));
}
template <class V>
void move_rows(PackedColumn<V>& col, std::size_t from, std::size_t n, std::size_t to) {
  col.copy_within(from, n, to);
}

// Where read_span_rows stores rows: rows [at, end) of a table's columns sized beforehand
// (ChunkedRead's share of a table for one chunk), or, with `grow`, from row `at` on, the
// columns grown as rows come (then cut to the rows read by finish_rows).
template <class Table, class Def>
struct RowSlots {
  Table& t;
  const Def& d;
  std::size_t at, end;
  bool grow;
  DeferredSets* later = nullptr;  // where the columns are shared with other reading threads

  // The slot of the next row; false when the sized share is full.
  bool next() {
    if (at < end) return true;
    if (!grow) return false;
    end = std::max<std::size_t>(at + 1024, end * 2);
    resize_columns(t, d, end);
    return true;
  }
  void finish_rows() {
    if (grow) resize_columns(t, d, at);
  }
};

// The row's fixed columns (track, start, duration, name) into slot `at`.
template <class Table>
Status load_span_cells(const Stmt& s, Table& t, std::size_t at, const char* table, const char* stored, bool clustered,
                       std::int64_t row, DeferredSets* later) {
  const char* fixed[] = {"track_id", "start_ns", stored, "name_id"};
  std::int64_t v[4];
  for (int col = 0; col < 4; ++col)
    if (auto bad = integer_value(s, col, table, fixed[col], false, 0, row, v[col]); !bad) return bad;
  auto dur = span_duration(table, row, v[1], v[2], clustered);
  if (!dur) return make_error(dur.error());
  t.track[at] = static_cast<std::uint32_t>(v[0]);
  t.start[at] = v[1];
  put(t.dur, at, dur.value(), later);
  t.name[at] = static_cast<StringId>(v[3]);
  return {};
}

// Reads the rows of chunk `c`, in id order (a clustered table's key order: the same for files
// this writer wrote), into `out`'s slots. Cells are read straight into the columns: one
// sqlite3_column_value per cell, no per-row allocation.
template <class Table, class Def>
Status read_span_rows(sqlite3* db, RowSlots<Table, Def>& out, int version, const RowChunk& c, const TrackFilter& keep) {
  const Def& d = out.d;
  auto st = Stmt::prepare(db, select_sql(d, version) + chunk_where(c));
  if (!st) return make_error(std::string(d.name) + ": " + st.error());
  Stmt& s = st.value();
  if (c.from) s.bind(1, *c.from);
  if (c.to) s.bind(2, *c.to);
  if (c.track) s.bind(3, *c.track);
  const int fixed = d.fixed ? 4 : 0;
  const int id_column =
      fixed + static_cast<int>(std::apply([](const auto&... col) { return (0 + ... + (col.derived ? 0 : 1)); }, d.cols));
  const bool clustered = d.clustered(version);
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    const std::int64_t row = s.i64(id_column);
    if (d.fixed && !keeps(keep, s.i64(0))) continue;
    if (!out.next()) return make_error(fmt::format("{} row {}: more rows than ids in {}..{} (ids not unique)", d.name, row,
                                                   c.from.value_or(0), c.to.value_or(0)));
    if (d.fixed) {
      if (auto bad = load_span_cells(s, out.t, out.at, d.name, stored_time(d, version), clustered, row, out.later); !bad)
        return bad;
    }
    int idx = fixed;
    Status loaded;
    std::apply([&](const auto&... col) {
      ((loaded ? (void)(loaded = load_col(s, idx, out.t, out.at, col, d.name, row, out.later)) : (void)0), ...);
    }, d.cols);
    if (!loaded) return loaded;
    ++out.at;
  }
  if (rc != SQLITE_DONE) return make_error(std::string(d.name) + ": " + sqlite3_errmsg(db));
  out.finish_rows();
  return {};
}

// A rowid table's chunks: id ranges of `rows_per_chunk`.
Status id_chunks(sqlite3* db, const std::string& table, std::size_t rows_per_chunk, std::vector<RowChunk>& out) {
  // two subqueries: each is one b-tree descent, while "min(id), max(id)" together scan
  auto q = Stmt::prepare(db, "SELECT (SELECT min(id) FROM " + table + "), (SELECT max(id) FROM " + table + ")");
  if (!q) return make_error(q.error());
  // the query always yields a row (NULLs for an empty table): anything else is an error, not
  // an empty table (a read error here once read a whole table as empty)
  if (q->step() != SQLITE_ROW) return make_error(table + ": " + sqlite3_errmsg(db));
  if (q->type(0) == SQLITE_NULL) return {};
  const std::int64_t lo = q->i64(0);
  std::int64_t hi = 0;
  if (__builtin_add_overflow(q->i64(1), 1, &hi)) return make_error(table + ": implausible row ids");
  const auto step = static_cast<std::int64_t>(rows_per_chunk);
  for (std::int64_t a = lo; a < hi; a += step) out.push_back(id_chunk(a, std::min(hi, a + step)));
  return {};
}

// One track's rows (start times first..last, about `rows`) as pieces of equal time spans,
// `rows_per_chunk` rows each as far as the calls are spread evenly in time.
void split_track(std::int64_t track, Ns first, Ns last, std::uint64_t rows, std::size_t rows_per_chunk,
                 std::vector<RowChunk>& out) {
  const std::uint64_t pieces = std::clamp<std::uint64_t>(rows / rows_per_chunk + 1, 1, 256);
  const std::size_t reserve = static_cast<std::size_t>(std::min<std::uint64_t>(rows / pieces + 1, rows_per_chunk));
  std::optional<Ns> from;
  for (std::uint64_t i = 1; i <= pieces; ++i) {
    std::optional<Ns> to;
    if (i < pieces) to = first + static_cast<Ns>((static_cast<__int128>(last) - first) * i / pieces);
    out.push_back({track, from, to, reserve});
    from = to;
  }
}

struct RowKey {
  std::int64_t track, id;
  Ns start;
};

// The key (track_id, start_ns, id) of the row `q` selects, then resets `q`; nullopt when there
// is none. A cell that is not an integer is refused: the walk over tracks relies on integers.
Result<std::optional<RowKey>> step_key(sqlite3* db, Stmt& q, const std::string& table) {
  const int rc = q.step();
  if (rc == SQLITE_DONE) {
    q.reset();
    return std::optional<RowKey>();
  }
  if (rc != SQLITE_ROW) return make_error(table + ": " + sqlite3_errmsg(db));
  const std::int64_t row = q.type(2) == SQLITE_INTEGER ? q.i64(2) : 0;
  for (int c = 0; c < 3; ++c)
    if (auto bad = integer_cell(q, c, table.c_str(), q.column_name(c), false, row); !bad) return make_error(bad.error());
  const RowKey key{q.i64(0), q.i64(2), q.i64(1)};
  q.reset();
  return std::optional<RowKey>(key);
}

// A clustered table's chunks: its tracks (those `keep` leaves out skipped), each split by
// split_track. Two b-tree descents per track: the keys of its first and of its last row. The
// writer numbers a track's rows consecutively, so their ids give its row count, where count(*)
// would read every row; that count only balances the chunks, which cover every row whatever
// the ids say.
Status track_chunks(sqlite3* db, const std::string& table, std::size_t rows_per_chunk, const TrackFilter& keep,
                    std::vector<RowChunk>& out) {
  const std::string select_key = "SELECT track_id, start_ns, id FROM " + table;
  auto first = Stmt::prepare(db, select_key + " ORDER BY track_id, start_ns, id LIMIT 1");
  auto next = Stmt::prepare(db, select_key + " WHERE track_id > ?1 ORDER BY track_id, start_ns, id LIMIT 1");
  auto last = Stmt::prepare(db, select_key + " WHERE track_id = ?1 ORDER BY start_ns DESC, id DESC LIMIT 1");
  for (auto* q : {&first, &next, &last})
    if (!*q) return make_error(table + ": " + q->error());
  for (Stmt* q = &first.value();; q = &next.value()) {
    auto head = step_key(db, *q, table);
    if (!head) return make_error(head.error());
    if (!head.value()) return {};
    const RowKey a = *head.value();
    if (keeps(keep, a.track)) {
      last->bind(1, a.track);
      auto tail = step_key(db, last.value(), table);
      if (!tail) return make_error(tail.error());
      const RowKey b = tail.value().value_or(a);
      const std::uint64_t rows = b.id >= a.id ? static_cast<std::uint64_t>(b.id) - static_cast<std::uint64_t>(a.id) + 1 : 1;
      split_track(a.track, a.start, std::max(a.start, b.start), rows, rows_per_chunk, out);
    }
    next->bind(1, a.track);
  }
}

// One event table read as chunks on parallel connections: the per-row cost of SQLite, not I/O,
// bounds loading, so a big table must be split across cores too. A rowid table read whole
// (no track filter) goes straight into its columns: sized once to the id ranges' rows, each
// chunk fills its own share, and the shares are closed up where ids were missing. Otherwise
// (a clustered table, whose chunks' sizes are estimates, or a filter) each chunk fills a part
// of its own and the parts are concatenated in order.
template <class Table, class Def>
struct ChunkedRead {
  Table* dst;
  const Def* def;
  int version;  // the file's schema version
  const TrackFilter* keep;
  std::vector<RowChunk> chunks;
  std::vector<std::size_t> filled;  // direct: rows each chunk read into its share
  std::vector<DeferredSets> later;  // direct: each chunk's values set after the threads
  std::vector<Table> parts;         // otherwise: each chunk's rows
  std::size_t first_row = 0;        // direct: the row the first chunk's share begins at

  bool direct() const { return !def->clustered(version) && keep->empty(); }

  Status plan(sqlite3* db, std::size_t rows_per_chunk, std::vector<std::function<Status(sqlite3*)>>& jobs) {
    const std::string name(def->name);
    auto st = def->clustered(version) ? track_chunks(db, name, rows_per_chunk, *keep, chunks)
                                      : id_chunks(db, name, rows_per_chunk, chunks);
    if (!st) return st;
    if (!direct()) {
      parts.resize(chunks.size());
      for (std::size_t i = 0; i < chunks.size(); ++i)
        jobs.emplace_back([this, i](sqlite3* conn) {
          RowSlots<Table, Def> out{parts[i], *def, 0, 0, true};
          return read_span_rows(conn, out, version, chunks[i], *keep);
        });
      return {};
    }
    // a details read fills its columns from row 0; the fixed ones are the table's size already
    first_row = def->fixed ? dst->size() : 0;
    std::size_t at = first_row;
    std::vector<std::size_t> share_at;
    for (const auto& c : chunks) {
      share_at.push_back(at);
      at += c.rows;
    }
    resize_columns(*dst, *def, at);
    filled.assign(chunks.size(), 0);
    later.resize(chunks.size());
    for (std::size_t i = 0; i < chunks.size(); ++i)
      jobs.emplace_back([this, i, from = share_at[i]](sqlite3* conn) {
        RowSlots<Table, Def> out{*dst, *def, from, from + chunks[i].rows, false, &later[i]};
        auto st = read_span_rows(conn, out, version, chunks[i], *keep);
        filled[i] = out.at - from;
        return st;
      });
    return {};
  }

  void finish() {
    for (auto& l : later) l.run();
    later.clear();
    if (direct()) return close_up();
    std::size_t n = 0;
    for (const auto& p : parts) n += p.size();
    auto append = [&](auto member) {
      auto& out = (*dst).*member;
      out.reserve(out.size() + n);
      for (auto& p : parts) out.insert(out.end(), (p.*member).begin(), (p.*member).end());
    };
    if (def->fixed) { append(&Table::start); append(&Table::dur); append(&Table::track); append(&Table::name); }
    std::apply([&](const auto&... c) { (append(c.member), ...); }, def->cols);
    parts.clear();
  }

  // Moves each share's rows down over the rows missing before it (ids with no row), then cuts
  // the columns to the rows read.
  void close_up() {
    std::size_t at = first_row, to = first_row;
    for (std::size_t i = 0; i < chunks.size(); ++i) {
      if (to != at) {
        auto move = [&](auto member) { move_rows((*dst).*member, at, filled[i], to); };
        if (def->fixed) { move(&Table::start); move(&Table::dur); move(&Table::track); move(&Table::name); }
        std::apply([&](const auto&... c) { ((reads(*def, c) ? move(c.member) : void()), ...); }, def->cols);
      }
      to += filled[i];
      at += chunks[i].rows;
    }
    resize_columns(*dst, *def, to);
  }
};

template <class Table, class Def>
ChunkedRead<Table, Def> chunked(Table& t, const Def& d, int version, const TrackFilter& keep) {
  return {&t, &d, version, &keep, {}, {}, {}, {}, 0};
}

void bind_text_or_null(Stmt& s, int i, const std::string& v) {
  if (v.empty()) s.bind_null(i); else s.bind(i, std::string_view(v));
}

Status table_error(sqlite3* db, std::string_view table) {
  return make_error(std::string(table) + ": " + sqlite3_errmsg(db));
}

// Inserts rows 0..n-1 of an entity or point table with one statement: `bind_row(s, i)` binds
// row i's values.
template <class BindRow>
Status insert_rows(sqlite3* db, const char* sql, std::string_view table, std::size_t n, BindRow bind_row) {
  auto prepared = Stmt::prepare(db, sql);
  if (!prepared) return make_error(prepared.error());
  Stmt& s = prepared.value();
  for (std::size_t i = 0; i < n; ++i) {
    bind_row(s, i);
    if (s.step() != SQLITE_DONE) return table_error(db, table);
    s.reset();
  }
  return {};
}

Status write_meta(sqlite3* db, const Trace& t, std::string_view created_by) {
  auto prepared = Stmt::prepare(db, "INSERT INTO meta VALUES(?,?)");
  if (!prepared) return make_error(prepared.error());
  Stmt& s = prepared.value();
  auto put = [&](std::string_view k, std::string_view v) {
    s.bind(1, k); s.bind(2, v);
    const int rc = s.step();
    s.reset();
    return rc == SQLITE_DONE;
  };
  if (!put("schema_version", std::to_string(kSchemaVersion)) || !put("clock_domain", t.clock_domain) ||
      !put("time_unit", "ns") || !put("created_by", created_by))
    return table_error(db, "meta");
  for (const auto& [k, v] : t.metadata)
    if (!put(k, v)) return table_error(db, "meta");
  return {};
}

Status write_strings(sqlite3* db, const Trace& t) {
  return insert_rows(db, "INSERT INTO strings VALUES(?,?)", "strings", t.strings.size(), [&](Stmt& s, std::size_t i) {
    const auto id = static_cast<StringId>(i);
    s.bind(1, static_cast<std::int64_t>(id));
    s.bind(2, t.strings.get(id));
  });
}

template <class Row, class V>
void bind_member(Stmt& s, int idx, const Row& row, const MemberCol<Row, V>& c) {
  const V& v = row.*c.member;
  if constexpr (std::is_same_v<V, std::string>) {
    bind_text_or_null(s, idx, v);
  } else {
    if (c.nullable) s.bind_or_null(idx, static_cast<std::int64_t>(v), c.null_value);
    else s.bind(idx, static_cast<std::int64_t>(v));
  }
}

// A metadata table: row i is `rows[i]` with id i, its columns bound by `cols`.
template <class Row, class Cols>
Status write_member_table(sqlite3* db, const char* table, const std::vector<Row>& rows, const Cols& cols) {
  std::string sql = fmt::format("INSERT INTO {} VALUES(?", table);
  for (std::size_t k = 0; k < std::tuple_size_v<Cols>; ++k) sql += ",?";
  sql += ')';
  return insert_rows(db, sql.c_str(), table, rows.size(), [&](Stmt& s, std::size_t i) {
    s.bind(1, static_cast<std::int64_t>(i));
    int idx = 2;
    std::apply([&](const auto&... c) { (bind_member(s, idx++, rows[i], c), ...); }, cols);
  });
}

Status write_processes(sqlite3* db, const Trace& t) {
  return write_member_table(db, "processes", t.processes, kProcessCols);
}
Status write_threads(sqlite3* db, const Trace& t) { return write_member_table(db, "threads", t.threads, kThreadCols); }
Status write_devices(sqlite3* db, const Trace& t) { return write_member_table(db, "devices", t.devices, kDeviceCols); }
Status write_streams(sqlite3* db, const Trace& t) { return write_member_table(db, "streams", t.streams, kStreamCols); }

Status write_tracks(sqlite3* db, const Trace& t) {
  return insert_rows(db, "INSERT INTO tracks VALUES(?,?,?)", "tracks", t.tracks.size(), [&](Stmt& s, std::size_t i) {
    s.bind(1, static_cast<std::int64_t>(i));
    s.bind(2, static_cast<std::int64_t>(t.tracks[i].type));
    s.bind_or_null(3, t.tracks[i].owner, kNone);
  });
}

Status write_launch_configs(sqlite3* db, const Trace& t) {
  return insert_rows(db, "INSERT INTO launch_configs VALUES(?,?,?,?,?,?,?,?,?,?)", "launch_configs",
                     t.launch_configs.size(), [&](Stmt& s, std::size_t i) {
    const LaunchConfig& c = t.launch_configs[i];
    const std::uint32_t v[] = {c.grid_x, c.grid_y, c.grid_z, c.block_x, c.block_y, c.block_z,
                               c.registers, c.shared_static, c.shared_dynamic};
    s.bind(1, static_cast<std::int64_t>(i));
    for (int j = 0; j < 9; ++j) s.bind(2 + j, static_cast<std::int64_t>(v[j]));
  });
}

// The tables the events refer to: processes, threads, devices, streams, tracks, launch configs.
Status write_entity_tables(sqlite3* db, const Trace& t) {
  for (auto write : {write_processes, write_threads, write_devices, write_streams, write_tracks, write_launch_configs})
    if (auto st = write(db, t); !st) return st;
  return {};
}

Status write_counters(sqlite3* db, const Trace& t, std::int64_t first_id = 1) {
  return insert_rows(db, "INSERT INTO counters VALUES(?,?,?,?,?)", "counters", t.counters.size(), [&](Stmt& s, std::size_t i) {
    s.bind(1, first_id + static_cast<std::int64_t>(i));
    s.bind(2, static_cast<std::int64_t>(t.counters.track[i]));
    s.bind(3, t.counters.ts[i]);
    s.bind(4, static_cast<std::int64_t>(t.counters.name[i]));
    s.bind(5, t.counters.value[i]);
  });
}

Status write_flows(sqlite3* db, const Trace& t, std::int64_t first_id = 1) {
  return insert_rows(db, "INSERT INTO flows VALUES(?,?,?,?,?,?)", "flows", t.flows.size(), [&](Stmt& s, std::size_t i) {
    const char phase[2] = {static_cast<char>(t.flows.phase[i]), 0};
    s.bind(1, first_id + static_cast<std::int64_t>(i));
    s.bind(2, static_cast<std::int64_t>(t.flows.track[i]));
    s.bind(3, t.flows.ts[i]);
    s.bind(4, static_cast<std::int64_t>(t.flows.category[i]));
    s.bind(5, static_cast<std::int64_t>(t.flows.id[i]));
    sqlite3_bind_text(s.get(), 6, phase, 1, SQLITE_TRANSIENT);
  });
}

// Point events (one timestamp, ids from 1): counters and flows.
Status write_point_tables(sqlite3* db, const Trace& t) {
  if (auto st = write_counters(db, t); !st) return st;
  return write_flows(db, t);
}

Status write_diagnostics(sqlite3* db, const Trace& t) {
  return insert_rows(db, "INSERT INTO diagnostics VALUES(?,?,?,?,?)", "diagnostics", t.diagnostics.size(),
                     [&](Stmt& s, std::size_t i) {
    const Diagnostic& d = t.diagnostics[i];
    s.bind(1, static_cast<std::int64_t>(i + 1));
    s.bind(2, static_cast<std::int64_t>(d.kind));
    s.bind(3, std::string_view(d.source));
    s.bind(4, std::string_view(d.reason));
    s.bind(5, static_cast<std::int64_t>(d.count));
  });
}

// The span tables, each from its one description (kKernels ...).
Status write_event_tables(sqlite3* db, const Trace& t) {
  for (auto st : {write_span_table(db, t.kernels, kKernels), write_span_table(db, t.memcpys, kMemcpys),
                  write_span_table(db, t.memsets, kMemsets), write_span_table(db, t.api_calls, kApiCalls),
                  write_span_table(db, t.syncs, kSyncs), write_span_table(db, t.ranges, kRanges),
                  write_span_table(db, t.steps, kSteps), write_span_table(db, t.collectives, kCollectives),
                  write_span_table(db, t.io_calls, kIoCalls)})
    if (!st) return st;
  return {};
}

// ---- Python stack samples: three tables, present only in traces that hold samples ----

constexpr const char* kPySamplesDdl = R"SQL(
CREATE TABLE py_frames(id INTEGER PRIMARY KEY, function_id INTEGER NOT NULL REFERENCES strings(id),
  file_id INTEGER NOT NULL REFERENCES strings(id), line INTEGER NOT NULL);
CREATE TABLE py_stacks(id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES py_stacks(id),
  frame_id INTEGER NOT NULL REFERENCES py_frames(id));
CREATE TABLE py_samples(id INTEGER PRIMARY KEY, track_id INTEGER NOT NULL REFERENCES tracks(id),
  ts_ns INTEGER NOT NULL, stack_id INTEGER REFERENCES py_stacks(id));
)SQL";

Status write_py_sample_rows(sqlite3* db, const Trace& t, std::int64_t first_id = 1) {
  return insert_rows(db, "INSERT INTO py_samples VALUES(?,?,?,?)", "py_samples", t.py_samples.size(), [&](Stmt& s, std::size_t i) {
    s.bind(1, first_id + static_cast<std::int64_t>(i));
    s.bind(2, static_cast<std::int64_t>(t.py_samples.track[i]));
    s.bind(3, t.py_samples.ts[i]);
    s.bind_or_null(4, t.py_samples.stack[i], kNone);
  });
}

Status write_py_frames_and_stacks(sqlite3* db, const Trace& t) {
  auto st = insert_rows(db, "INSERT INTO py_frames VALUES(?,?,?,?)", "py_frames", t.py_frames.size(), [&](Stmt& s, std::size_t i) {
    s.bind(1, static_cast<std::int64_t>(i));
    s.bind(2, static_cast<std::int64_t>(t.py_frames[i].function));
    s.bind(3, static_cast<std::int64_t>(t.py_frames[i].file));
    s.bind(4, static_cast<std::int64_t>(t.py_frames[i].line));
  });
  if (!st) return st;
  return insert_rows(db, "INSERT INTO py_stacks VALUES(?,?,?)", "py_stacks", t.py_stacks.size(), [&](Stmt& s, std::size_t i) {
    s.bind(1, static_cast<std::int64_t>(i));
    s.bind_or_null(2, t.py_stacks[i].parent, kNone);
    s.bind(3, static_cast<std::int64_t>(t.py_stacks[i].frame));
  });
}

Status write_py_samples(sqlite3* db, const Trace& t) {
  if (t.py_samples.size() == 0 && t.py_frames.empty()) return {};
  if (auto st = sql::exec(db, kPySamplesDdl); !st) return make_error("py_samples schema: " + st.error());
  if (auto st = write_py_frames_and_stacks(db, t); !st) return st;
  return write_py_sample_rows(db, t);
}

Status write_all(sqlite3* db, const Trace& t, std::string_view created_by) {
  if (auto st = write_meta(db, t, created_by); !st) return st;
  if (auto st = write_strings(db, t); !st) return st;
  if (auto st = write_entity_tables(db, t); !st) return st;
  if (auto st = write_point_tables(db, t); !st) return st;
  if (auto st = write_diagnostics(db, t); !st) return st;
  if (auto st = write_py_samples(db, t); !st) return st;
  return write_event_tables(db, t);
}

}  // namespace

std::string_view schema_sql() {
  static const std::string s = build_schema();
  return s;
}

// Whether `file` cannot grow by another page under the file-size limit (ulimit -f): SQLite
// reports such a write as "disk I/O error" and its errno does not always survive.
bool at_file_size_limit(const fs::path& file, int page_size) {
  struct rlimit lim {};
  struct stat st {};
  if (::getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return false;
  return ::stat(file.c_str(), &st) == 0 && static_cast<rlim_t>(st.st_size) + static_cast<rlim_t>(page_size) > lim.rlim_cur;
}

namespace {

// The trace file being written: our AtomicOutput temporary opened by SQLite for one bulk
// transaction, with the database "load", where clustered tables are staged
// (write_clustered_table), attached.
struct OutputDb {
  fs::path path;
  AtomicOutput out;
  sql::Db db;
  int page_size = 4096;

  Status failed(const std::string& what) const {
    // SQLite says "disk I/O error"; the OS error under it is what the user can act on
    const int os = db.get() != nullptr ? sqlite3_system_errno(db.get()) : 0;
    if (os == EFBIG || at_file_size_limit(out.temp_path(), page_size))
      return make_error(path.string() + ": file too large: over the file-size limit (ulimit -f)");
    if (os == ENOSPC || os == EDQUOT) return make_error(path.string() + ": " + std::strerror(os));
    return make_error(path.string() + ": " + what);
  }
};

// Creates the temporary, opens it, attaches "load" (`stage`: ":memory:", or "" for a private
// temporary file that SQLite deletes on close) and begins the transaction that writes the schema.
Result<std::unique_ptr<OutputDb>> open_output(const fs::path& path, int page_size, const char* stage) {
  auto out = AtomicOutput::create(path);
  if (!out) return make_error(out.error());
  sql::configure_sqlite();
  auto o = std::make_unique<OutputDb>(OutputDb{path, std::move(out.value()), sql::Db(), page_size});
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(o->out.temp_path().c_str(), &raw,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, nullptr);
  o->db = sql::Db(raw);
  if (rc != SQLITE_OK) return make_error(o->failed("cannot create: " + o->db.errmsg()).error());
  // SQLite opens files only by name. The name is our O_EXCL temporary (AtomicOutput keeps its
  // descriptor), SQLITE_OPEN_NOFOLLOW refuses a symlink anywhere in the path, and SQLite has
  // written nothing yet: if the name no longer names the file we created (swapped in a directory
  // others can write), stop here before a byte goes into someone else's file. commit() checks
  // the name again before the rename.
  if (auto st = o->out.check_temp(); !st) return make_error(st.error());
  // The temporary is private and renamed only when complete, so no journal is needed; a
  // crash leaves a temporary, never a half-written trace under the real name.
  const std::string pragmas = "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
                              "PRAGMA page_size=" + std::to_string(page_size) +
                              "; PRAGMA cache_size=-65536; PRAGMA application_id=1953784948;";
  sqlite3* db = o->db.get();
  Status st = sql::exec(db, pragmas.c_str());
  // "load" cannot be attached inside a transaction
  if (st) st = sql::exec(db, fmt::format("ATTACH DATABASE '{}' AS load", stage).c_str());
  if (st) st = sql::exec(db, "BEGIN");
  if (!st) return make_error(o->failed(st.error()).error());
  if (st = sql::exec(db, std::string(schema_sql()).c_str()); !st) return make_error(o->failed("schema: " + st.error()).error());
  return o;
}

// Indexes, commit, close, and the rename into place.
Status finish_output(OutputDb& o) {
  if (auto st = sql::exec(o.db.get(), build_indexes().c_str()); !st) return o.failed("indexes: " + st.error());
  if (auto st = sql::exec(o.db.get(), "COMMIT"); !st) return o.failed(st.error());
  if (sqlite3_close_v2(o.db.get()) != SQLITE_OK) return o.failed("close failed");
  o.db = sql::Db();  // released
  return o.out.commit();  // 0600 through the descriptor, not the name
}

}  // namespace

Status write_trace(Trace& t, const fs::path& path, std::string_view created_by) {
  t.finalize();
  // Big pages make big traces faster to write and load; small traces stay small (every
  // table and index takes at least one page).
  auto o = open_output(path, t.event_count() > 200'000 ? 65536 : 4096, ":memory:");
  if (!o) return make_error(o.error());
  if (auto st = write_all(o.value()->db.get(), t, created_by); !st) return o.value()->failed(st.error());
  return finish_output(*o.value());
}

// ---- a trace file written in parts (TraceFileWriter) ----

namespace {

Ns saturating_sum(Ns a, Ns b) {
  Ns r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<Ns>::max() : std::numeric_limits<Ns>::min();
}

// SQL functions for TraceFileWriter::shift_times, which moves rows as shift_process_times
// (model.cpp) moves them in memory, each of a track k by shifts[k] (the function's user data):
// tt_shift(track); tt_start(track, start), saturating; tt_end(track, start, end) and
// tt_dur(track, start, dur), the end or duration cut so that the moved end stays within 64 bits.
Ns shift_of(sqlite3_context* c, sqlite3_value* track_value) {
  const auto& shifts = *static_cast<const std::vector<Ns>*>(sqlite3_user_data(c));
  const std::int64_t track = sqlite3_value_int64(track_value);
  return track >= 0 && static_cast<std::uint64_t>(track) < shifts.size() ? shifts[static_cast<std::size_t>(track)] : 0;
}
Ns fit_dur(Ns start, Ns dur) {
  constexpr Ns kMax = std::numeric_limits<Ns>::max();
  return start > 0 && dur > kMax - start ? kMax - start : dur;
}
void sql_shift(sqlite3_context* c, int, sqlite3_value** v) { sqlite3_result_int64(c, shift_of(c, v[0])); }
void sql_start(sqlite3_context* c, int, sqlite3_value** v) {
  sqlite3_result_int64(c, saturating_sum(sqlite3_value_int64(v[1]), shift_of(c, v[0])));
}
void sql_end(sqlite3_context* c, int, sqlite3_value** v) {
  const Ns start = saturating_sum(sqlite3_value_int64(v[1]), shift_of(c, v[0]));
  sqlite3_result_int64(c, start + fit_dur(start, sqlite3_value_int64(v[2]) - sqlite3_value_int64(v[1])));
}
void sql_dur(sqlite3_context* c, int, sqlite3_value** v) {
  const Ns start = saturating_sum(sqlite3_value_int64(v[1]), shift_of(c, v[0]));
  sqlite3_result_int64(c, fit_dur(start, sqlite3_value_int64(v[2])));
}

}  // namespace

struct TraceFileWriter::Impl {
  std::unique_ptr<OutputDb> out;
  // rows written so far per event table, by name: the next part's ids follow them
  std::map<std::string, std::int64_t, std::less<>> rows;
  bool py_tables = false;  // py_frames / py_stacks / py_samples created

  sqlite3* db() const { return out->db.get(); }
  std::int64_t next_id(std::string_view table, std::size_t added) {
    auto& n = rows[std::string(table)];
    const std::int64_t first = n + 1;
    n += static_cast<std::int64_t>(added);
    return first;
  }
  Status create_py_tables() {
    if (py_tables) return {};
    py_tables = true;
    if (auto st = sql::exec(db(), kPySamplesDdl); !st) return make_error("py_samples schema: " + st.error());
    return {};
  }
  template <class Table, class Def>
  Status append_span(const Table& t, const Def& d) {
    const std::int64_t first = next_id(d.name, t.size());
    return insert_span_rows(db(), t, d, d.clustered(kSchemaVersion) ? "load" : "main", first);
  }
  Status append_events(const Trace& p) {
    for (auto st : {append_span(p.kernels, kKernels), append_span(p.memcpys, kMemcpys), append_span(p.memsets, kMemsets),
                    append_span(p.api_calls, kApiCalls), append_span(p.syncs, kSyncs), append_span(p.ranges, kRanges),
                    append_span(p.steps, kSteps), append_span(p.collectives, kCollectives),
                    append_span(p.io_calls, kIoCalls)})
      if (!st) return st;
    if (auto st = write_counters(db(), p, next_id("counters", p.counters.size())); !st) return st;
    if (auto st = write_flows(db(), p, next_id("flows", p.flows.size())); !st) return st;
    if (p.py_samples.size() == 0) return {};
    if (auto st = create_py_tables(); !st) return st;
    return write_py_sample_rows(db(), p, next_id("py_samples", p.py_samples.size()));
  }
  // One UPDATE per table, rows of unshifted tracks untouched.
  Status shift_tables() {
    std::vector<std::string> updates;
    for (const char* table : {"kernels", "memcpys", "memsets", "api_calls", "syncs", "ranges", "steps", "collectives"})
      updates.push_back(fmt::format("UPDATE main.{0} SET start_ns = tt_start(track_id, start_ns), end_ns = "
                                    "tt_end(track_id, start_ns, end_ns) WHERE tt_shift(track_id) != 0",
                                    table));
    // The staged clustered table is copied rather than updated: an UPDATE of its key moves every
    // row within the b-tree (7x slower). Read in key order, the moved rows stay in key order (one
    // shift per track), so each insert appends.
    std::string columns = "id, track_id, tt_start(track_id, start_ns), name_id";
    std::apply([&](const auto&... c) { ((columns += std::string(", ") + c.name), ...); }, kIoCalls.cols);
    updates.push_back("ALTER TABLE load.io_calls RENAME TO io_calls_unshifted");
    std::string ddl;
    span_ddl(ddl, kIoCalls, "load");
    updates.push_back(ddl);
    updates.push_back("INSERT INTO load.io_calls SELECT " + columns +
                      ", tt_dur(track_id, start_ns, dur_ns) FROM load.io_calls_unshifted ORDER BY track_id, start_ns, id");
    updates.push_back("DROP TABLE load.io_calls_unshifted");
    for (const char* table : {"main.counters", "main.flows", "main.py_samples"})
      if (py_tables || std::string_view(table) != "main.py_samples")
        updates.push_back(fmt::format("UPDATE {0} SET ts_ns = tt_start(track_id, ts_ns) WHERE tt_shift(track_id) != 0", table));
    for (const std::string& u : updates)
      if (auto st = sql::exec(db(), u.c_str()); !st) return make_error("shifting times: " + st.error());
    return {};
  }
};

Result<std::unique_ptr<TraceFileWriter>> TraceFileWriter::create(const fs::path& path, bool big_pages) {
  // the clustered table is staged in a temporary file, not in memory: its rows are most of an
  // I/O-heavy trace
  auto o = open_output(path, big_pages ? 65536 : 4096, "");
  if (!o) return make_error(o.error());
  std::unique_ptr<TraceFileWriter> w(new TraceFileWriter());
  w->impl_ = std::make_unique<Impl>();
  w->impl_->out = std::move(o.value());
  // 16 MiB of cache for the staged table: moving it (shift_times) is 4x slower with the default 2 MiB
  if (auto st = sql::exec(w->impl_->db(), "PRAGMA load.cache_size=-16384"); !st)
    return make_error(w->impl_->out->failed(st.error()).error());
  if (auto st = create_staged_table(w->impl_->db(), kIoCalls); !st)
    return make_error(w->impl_->out->failed(st.error()).error());
  return w;
}

TraceFileWriter::TraceFileWriter() = default;
TraceFileWriter::~TraceFileWriter() = default;

Status TraceFileWriter::append(Trace& part) {
  part.finalize();
  if (auto st = impl_->append_events(part); !st) return impl_->out->failed(st.error());
  return {};
}

Status TraceFileWriter::shift_times(std::span<const Ns> shift_by_track) {
  if (std::none_of(shift_by_track.begin(), shift_by_track.end(), [](Ns s) { return s != 0; })) return {};
  std::vector<Ns> shifts(shift_by_track.begin(), shift_by_track.end());
  sqlite3* db = impl_->db();
  constexpr int kFlags = SQLITE_UTF8 | SQLITE_DETERMINISTIC;
  auto define = [&](const char* name, int args, void (*f)(sqlite3_context*, int, sqlite3_value**)) {
    return sqlite3_create_function_v2(db, name, args, kFlags, f != nullptr ? &shifts : nullptr, f, nullptr, nullptr,
                                      nullptr) == SQLITE_OK;
  };
  const std::pair<const char*, int> functions[] = {{"tt_shift", 1}, {"tt_start", 2}, {"tt_end", 3}, {"tt_dur", 3}};
  if (!define("tt_shift", 1, sql_shift) || !define("tt_start", 2, sql_start) || !define("tt_end", 3, sql_end) ||
      !define("tt_dur", 3, sql_dur))
    return impl_->out->failed("shifting times: " + impl_->out->db.errmsg());
  Status st = impl_->shift_tables();
  for (const auto& [name, args] : functions) define(name, args, nullptr);  // `shifts` ends here
  if (!st) return impl_->out->failed(st.error());
  return {};
}
Status TraceFileWriter::finish(const Trace& t, std::string_view created_by) {
  sqlite3* db = impl_->db();
  Status st = write_meta(db, t, created_by);
  if (st) st = write_strings(db, t);
  if (st) st = write_entity_tables(db, t);
  if (st) st = write_diagnostics(db, t);
  if (st && !t.py_frames.empty()) st = impl_->create_py_tables();
  if (st && impl_->py_tables) st = write_py_frames_and_stacks(db, t);
  if (st) st = move_staged_table(db, kIoCalls);
  if (!st) return impl_->out->failed(st.error());
  return finish_output(*impl_->out);
}

namespace {

// One row of an entity table read with typed cells: every integer cell is checked as
// integer_cell checks event cells (a tampered 1.5e300, 'abc' or NULL is refused with the table,
// row and column, not read as INT64_MAX or 0), and optionally against a range. The first
// failure is kept; later reads return 0.
class EntityRow {
 public:
  EntityRow(const Stmt& s, const char* table, std::int64_t row) : s_(s), table_(table), row_(row) {}

  std::int64_t i64(int c) { return read(c, false, 0); }
  std::int64_t i64_or(int c, std::int64_t null_value) { return read(c, true, null_value); }
  std::int64_t in_range(int c, std::int64_t lo, std::int64_t hi) {
    const std::int64_t v = i64(c);
    if (st_ && (v < lo || v > hi))
      st_ = make_error(fmt::format("{} row {}: {} {} is outside {}..{}", table_, row_, s_.column_name(c), v, lo, hi));
    return st_ ? v : 0;
  }
  std::int64_t non_negative(int c) {
    const std::int64_t v = i64(c);
    if (st_ && v < 0) st_ = make_error(fmt::format("{} row {}: {} {} is negative", table_, row_, s_.column_name(c), v));
    return st_ ? v : 0;
  }
  std::uint32_t id_or_none(int c) { return static_cast<std::uint32_t>(bounded_or(c, kNone)); }
  std::uint32_t u32(int c) { return static_cast<std::uint32_t>(in_range(c, 0, 0xffffffffll)); }
  // a 32-bit field: NULL is `null_value`, other values must fit
  std::int64_t bounded_or(int c, std::int64_t null_value) {
    const std::int64_t v = read(c, true, null_value);
    if (st_ && v != null_value && (v < INT32_MIN || v > 0xffffffffll))
      st_ = make_error(fmt::format("{} row {}: {} is {}, not a 32-bit value", table_, row_, s_.column_name(c), v));
    return st_ ? v : 0;
  }
  double real(int c) { return st_ ? s_.f64(c) : 0.0; }
  std::string text(int c) { return valid_utf8(s_.text(c)); }
  void fail(std::string why) {
    if (st_) st_ = make_error(std::move(why));
  }
  const Status& status() const { return st_; }

 private:
  std::int64_t read(int c, bool nullable, std::int64_t null_value) {
    if (!st_) return 0;
    if (auto bad = integer_cell(s_, c, table_, s_.column_name(c), nullable, row_); !bad) {
      st_ = bad;
      return 0;
    }
    return s_.type(c) == SQLITE_NULL ? null_value : s_.i64(c);
  }

  const Stmt& s_;
  const char* table_;
  std::int64_t row_;
  Status st_;
};

// Runs `sql` and hands each row to `read(EntityRow&)`; stops at the first bad cell. Messages
// number rows by their id: entities' ids count from 0 (the strings' 0 is the empty string),
// counters', flows' and diagnostics' from 1, as the writer numbers them.
template <class ReadRow>
Status read_entities(sqlite3* db, const char* table, const char* sql, ReadRow read) {
  auto s = Stmt::prepare(db, sql);
  if (!s) return make_error(s.error());
  const std::string_view name(table);
  std::int64_t row = name == "counters" || name == "flows" || name == "diagnostics" || name == "py_samples" ? 1 : 0;
  int rc;
  while ((rc = s->step()) == SQLITE_ROW) {
    EntityRow r(*s, table, row++);
    read(r);
    if (!r.status()) return r.status();
  }
  if (rc != SQLITE_DONE) return make_error(std::string(name) + ": " + sqlite3_errmsg(db));
  return {};
}

// meta: the schema version (checked, kept in `version`), the clock domain and the rest as metadata.
Status read_meta(sqlite3* db, Trace& t, int& version_number) {
  auto s = Stmt::prepare(db, "SELECT key, value FROM meta");
  if (!s) return make_error("not a tracetune trace (no meta table)");
  std::string version;
  int rc;
  while ((rc = s->step()) == SQLITE_ROW) {
    const std::string k = valid_utf8(s->text(0)), v = valid_utf8(s->text(1));
    if (k == "schema_version") version = v;
    else if (k == "clock_domain") t.clock_domain = v;
    else if (k != "time_unit" && k != "created_by") t.metadata.emplace_back(k, v);
  }
  if (rc != SQLITE_DONE) return make_error(std::string("meta: ") + sqlite3_errmsg(db));
  if (version.empty()) return make_error("not a tracetune trace (no schema_version)");
  for (int v = kOldestSchemaVersion; v <= kSchemaVersion; ++v)
    if (version == std::to_string(v)) {
      version_number = v;
      return {};
    }
  return make_error(fmt::format("trace schema version {} is not supported (this build reads {} to {})", version,
                                kOldestSchemaVersion, kSchemaVersion));
}

Status read_strings(sqlite3* db, Trace& t) {
  return read_entities(db, "strings", "SELECT id, value FROM strings ORDER BY id", [&](EntityRow& r) {
    const std::int64_t want = r.i64(0);
    if (r.status() && t.strings.intern(r.text(1)) != static_cast<StringId>(want))
      r.fail("strings table is not dense or has duplicates");
  });
}

template <class Row, class V>
void read_member(EntityRow& r, int c, Row& row, const MemberCol<Row, V>& col) {
  V& v = row.*col.member;
  if constexpr (std::is_same_v<V, std::string>) v = r.text(c);
  else if constexpr (std::is_same_v<V, bool>) v = r.in_range(c, 0, 1) != 0;
  else if constexpr (sizeof(V) == 8) v = col.nullable ? r.i64_or(c, col.null_value) : r.i64(c);
  else if (col.nullable) v = static_cast<V>(r.bounded_or(c, col.null_value));
  else v = static_cast<V>(r.in_range(c, INT32_MIN, INT32_MAX));
}

// A metadata table written by write_member_table, read in id order.
template <class Row, class Cols>
Status read_member_table(sqlite3* db, const char* table, std::vector<Row>& rows, const Cols& cols) {
  std::string sql = "SELECT ";
  std::apply([&](const auto&... c) { ((sql += c.name, sql += ", "), ...); }, cols);
  sql.resize(sql.size() - 2);
  sql += fmt::format(" FROM {} ORDER BY id", table);
  return read_entities(db, table, sql.c_str(), [&](EntityRow& r) {
    Row row;
    int c = 0;
    std::apply([&](const auto&... col) { (read_member(r, c++, row, col), ...); }, cols);
    rows.push_back(std::move(row));
  });
}

Status read_process_tables(sqlite3* db, Trace& t) {
  if (auto st = read_member_table(db, "processes", t.processes, kProcessCols); !st) return st;
  return read_member_table(db, "threads", t.threads, kThreadCols);
}

Status read_device_tables(sqlite3* db, Trace& t) {
  auto st = read_member_table(db, "devices", t.devices, kDeviceCols);
  if (!st) return st;
  st = read_member_table(db, "streams", t.streams, kStreamCols);
  if (!st) return st;
  st = read_entities(db, "tracks", "SELECT type, owner_id FROM tracks ORDER BY id", [&](EntityRow& r) {
    const auto type = static_cast<TrackType>(r.in_range(0, 0, 3));
    t.tracks.push_back({type, r.id_or_none(1)});
  });
  if (!st) return st;
  return read_entities(db, "launch_configs",
                       "SELECT grid_x, grid_y, grid_z, block_x, block_y, block_z, registers, shared_static, "
                       "shared_dynamic FROM launch_configs ORDER BY id",
                       [&](EntityRow& r) {
                         LaunchConfig c;
                         std::uint32_t* f[] = {&c.grid_x,    &c.grid_y,        &c.grid_z,
                                               &c.block_x,   &c.block_y,       &c.block_z,
                                               &c.registers, &c.shared_static, &c.shared_dynamic};
                         for (int j = 0; j < 9; ++j) *f[j] = r.u32(j);
                         t.launch_configs.push_back(c);
                       });
}

Status read_point_tables(sqlite3* db, Trace& t, const TrackFilter& keep) {
  auto st = read_entities(db, "counters", "SELECT track_id, ts_ns, name_id, value FROM counters ORDER BY id",
                          [&](EntityRow& r) {
                            if (!keeps(keep, r.i64(0))) return;
                            t.counters.track.push_back(r.u32(0));
                            t.counters.ts.push_back(r.i64(1));
                            t.counters.name.push_back(r.u32(2));
                            t.counters.value.push_back(r.real(3));
                          });
  if (!st) return st;
  st = read_entities(db, "flows", "SELECT track_id, ts_ns, category_id, flow_id, phase FROM flows ORDER BY id",
                     [&](EntityRow& r) {
                       if (!keeps(keep, r.i64(0))) return;
                       t.flows.track.push_back(r.u32(0));
                       t.flows.ts.push_back(r.i64(1));
                       t.flows.category.push_back(r.u32(2));
                       t.flows.id.push_back(static_cast<std::uint64_t>(r.i64(3)));
                       const std::string ph = r.text(4);
                       t.flows.phase.push_back(ph.empty() ? 'f' : static_cast<std::uint8_t>(ph[0]));
                     });
  if (!st) return st;
  return read_entities(db, "diagnostics", "SELECT kind, source, reason, count FROM diagnostics ORDER BY id",
                       [&](EntityRow& r) {
                         const auto kind = r.i64(0);
                         const auto count = r.non_negative(3);  // "count -5" is refused, not 2^64 - 5
                         t.diagnostics.push_back({static_cast<DiagnosticKind>(kind >= 0 && kind <= 3 ? kind : 3),
                                                  r.text(1), r.text(2), static_cast<std::uint64_t>(count)});
                       });
}

// The Python stack sample tables, where the file has them (traces without samples do not).
Status read_py_samples(sqlite3* db, Trace& t, const TrackFilter& keep) {
  {
    auto q = Stmt::prepare(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'py_samples'");
    if (!q || q->step() != SQLITE_ROW) return make_error("sqlite_master: " + std::string(sqlite3_errmsg(db)));
    if (q->i64(0) == 0) return {};
  }
  auto st = read_entities(db, "py_frames", "SELECT function_id, file_id, line FROM py_frames ORDER BY id", [&](EntityRow& r) {
    t.py_frames.push_back({r.u32(0), r.u32(1), static_cast<std::int32_t>(r.in_range(2, INT32_MIN, INT32_MAX))});
  });
  if (!st) return st;
  st = read_entities(db, "py_stacks", "SELECT parent_id, frame_id FROM py_stacks ORDER BY id", [&](EntityRow& r) {
    t.py_stacks.push_back({r.id_or_none(0), r.u32(1)});
  });
  if (!st) return st;
  return read_entities(db, "py_samples", "SELECT track_id, ts_ns, stack_id FROM py_samples ORDER BY id", [&](EntityRow& r) {
    if (!keeps(keep, r.i64(0))) return;
    t.py_samples.track.push_back(r.u32(0));
    t.py_samples.ts.push_back(r.i64(1));
    t.py_samples.stack.push_back(r.id_or_none(2));
  });
}

// Python samples' references: strings, frames, parents (always an earlier node, so no cycle), tracks.
Status check_py_sample_refs(const Trace& t) {
  for (const PyFrame& f : t.py_frames)
    if (f.function >= t.strings.size() || f.file >= t.strings.size()) return make_error("py_frames: string id out of range");
  for (std::size_t i = 0; i < t.py_stacks.size(); ++i) {
    const PyStackNode& n = t.py_stacks[i];
    if (n.frame >= t.py_frames.size()) return make_error("py_stacks: frame_id out of range");
    if (n.parent != kNone && n.parent >= i) return make_error("py_stacks: parent_id is not an earlier row");
  }
  for (std::size_t i = 0; i < t.py_samples.size(); ++i) {
    if (t.py_samples.track[i] >= t.tracks.size()) return make_error("py_samples: track out of range");
    if (t.py_samples.stack[i] != kNone && t.py_samples.stack[i] >= t.py_stacks.size())
      return make_error("py_samples: stack_id out of range");
  }
  return {};
}

// Rows per chunk of a parallel read: about two chunks per connection of the three big tables.
std::size_t chunk_rows(sqlite3* db, unsigned threads) {
  std::size_t total = 0;
  // rows are numbered densely by the writer: max(id) is the size without a scan
  auto q = Stmt::prepare(db, "SELECT coalesce((SELECT max(id) FROM ranges), 0) + coalesce((SELECT max(id) FROM kernels), 0) + "
                             "coalesce((SELECT max(id) FROM api_calls), 0)");
  if (q && q->step() == SQLITE_ROW) total = static_cast<std::size_t>(q->i64(0));
  return std::max<std::size_t>(1 << 17, total / (threads * 2) + 1);
}

// The connections a read uses: one per core, at most 8.
unsigned read_threads() { return std::min(std::max(1u, std::thread::hardware_concurrency()), 8u); }

// Reads the tables of `readers` (ChunkedReads) in chunks, on `db` and up to threads - 1 more
// connections in parallel: those in `extra`, and more opened to `path` (none when it is empty)
// and added to `extra` while fewer are there.
template <class... Reads>
Status run_chunked(sqlite3* db, const std::string& path, std::tuple<Reads...>& readers, unsigned threads,
                   std::vector<sql::Db>& extra) {
  const std::size_t chunk = chunk_rows(db, threads);
  std::vector<std::function<Status(sqlite3*)>> jobs;
  Status planned;
  std::apply([&](auto&... r) { ((planned.ok() ? (void)(planned = r.plan(db, chunk, jobs)) : (void)0), ...); }, readers);
  if (!planned) return planned;
  std::vector<Status> results(jobs.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&](sqlite3* conn) {
    for (std::size_t j; (j = next.fetch_add(1)) < jobs.size();) results[j] = jobs[j](conn);
  };
  // connections beside `db`: none without jobs (a trace whose event tables are all empty; the
  // count once wrapped around to SIZE_MAX here and opened connections until the file
  // descriptors ran out)
  const std::size_t more = jobs.empty() ? 0 : std::min<std::size_t>(threads, jobs.size()) - 1;
  while (!path.empty() && extra.size() < more) {
    auto c = sql::open_untrusted(path);
    if (!c) break;
    extra.push_back(std::move(c.value()));
  }
  std::vector<std::thread> pool;
  for (std::size_t i = 0; i < std::min(more, extra.size()); ++i) pool.emplace_back(worker, extra[i].get());
  worker(db);
  for (auto& th : pool) th.join();
  for (const auto& st : results)
    if (!st) return st;
  std::apply([](auto&... r) { (r.finish(), ...); }, readers);
  return {};
}

// The event tables, read in chunks by a few connections in parallel; the three big ones
// through `kernels`, `api_calls` and `ranges` (whole, or the timeline's columns only).
template <class KernelsDef, class ApiCallsDef, class RangesDef>
Status read_event_tables(sqlite3* db, const std::string& path, int version, Trace& t, const TrackFilter& keep,
                         const KernelsDef& kernels, const ApiCallsDef& api_calls, const RangesDef& ranges,
                         std::vector<sql::Db>& extra) {
  auto readers = std::make_tuple(chunked(t.ranges, ranges, version, keep), chunked(t.kernels, kernels, version, keep),
                                 chunked(t.api_calls, api_calls, version, keep), chunked(t.memcpys, kMemcpys, version, keep),
                                 chunked(t.io_calls, kIoCalls, version, keep), chunked(t.memsets, kMemsets, version, keep),
                                 chunked(t.syncs, kSyncs, version, keep), chunked(t.steps, kSteps, version, keep),
                                 chunked(t.collectives, kCollectives, version, keep));
  return run_chunked(db, path, readers, read_threads(), extra);
}

// The columns the timeline read left out of one table: read, checked to cover every row of
// the table, and shrunk.
template <class Table, class Def>
Status check_details_read(Table& t, const Def& d) {
  Status st;
  auto check = [&](const auto& c) {
    if (!reads(d, c)) return;
    auto& col = t.*c.member;
    if (st && col.size() != t.size())
      st = make_error(fmt::format("{}: {} rows, but {} of {} (the file changed while it was read)", d.name, t.size(),
                                  col.size(), c.name));
    shrink_column(col);
  };
  std::apply([&](const auto&... c) { (check(c), ...); }, d.cols);
  return st;
}

// The columns kKernelsTimeline, kApiCallsTimeline and kRangesTimeline leave out, read into `t`
// on `db` and the `extra` connections (opening more to `path` where it is not empty).
Status read_details_into(sqlite3* db, const std::string& path, int version, Trace& t, std::vector<sql::Db>& extra) {
  static const TrackFilter kAll;
  const auto kernels = details_of(kKernels);
  const auto api_calls = details_of(kApiCalls);
  const auto ranges = details_of(kRanges);
  auto readers = std::make_tuple(chunked(t.ranges, ranges, version, kAll), chunked(t.kernels, kernels, version, kAll),
                                 chunked(t.api_calls, api_calls, version, kAll));
  if (auto st = run_chunked(db, path, readers, read_threads(), extra); !st) return st;
  for (auto st : {check_details_read(t.kernels, kernels), check_details_read(t.api_calls, api_calls),
                  check_details_read(t.ranges, ranges)})
    if (!st) return st;
  return {};
}

Status check_span_refs(const SpanColumns& c, const char* name, std::size_t ntracks, std::size_t nstr) {
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c.track[i] >= ntracks)
      return make_error(fmt::format("{} row {}: track_id {} is out of range ({} tracks)", name, i + 1, c.track[i], ntracks));
    if (c.name[i] >= nstr)
      return make_error(fmt::format("{} row {}: name_id {} is out of range ({} strings)", name, i + 1, c.name[i], nstr));
    if (c.dur[i] < 0) return make_error(fmt::format("{} row {}: negative duration", name, i + 1));
  }
  return {};
}

// The metadata tables' references: tracks to their owners, threads and devices to processes,
// streams to devices.
Status check_owner_refs(const Trace& t) {
  for (const Track& tr : t.tracks) {
    const std::size_t owners[] = {t.threads.size(), t.streams.size(), t.processes.size(), t.devices.size()};
    if (tr.owner >= owners[static_cast<int>(tr.type)]) return make_error("track owner out of range");
  }
  for (const Thread& th : t.threads)
    if (th.process != kNone && th.process >= t.processes.size()) return make_error("thread process out of range");
  for (const Stream& st : t.streams)
    if (st.device != kNone && st.device >= t.devices.size()) return make_error("stream device out of range");
  for (const Device& d : t.devices)
    if (d.process != kNone && d.process >= t.processes.size()) return make_error("device process out of range");
  return {};
}

// Whether every string id of a column names one of the trace's `nstr` strings.
template <class Column> bool string_ids_below(const Column& column, std::size_t nstr) {
  return std::all_of(column.begin(), column.end(), [nstr](StringId id) { return id < nstr; });
}

// The string ids of the event tables' columns other than their names (and the details':
// check_detail_refs).
bool string_ids_in_range(const Trace& t) {
  for (const auto* v : {&t.collectives.op, &t.collectives.dtype, &t.collectives.communicator, &t.collectives.algorithm,
                        &t.collectives.protocol, &t.io_calls.path, &t.counters.name, &t.flows.category})
    if (!string_ids_below(*v, t.strings.size())) return false;
  return true;
}

// The references of the columns read_trace_details() fills (the ranges' domain and args
// strings, the kernels' launch configurations): read_trace checks them with the rest, the
// details' read checks only these.
Status check_detail_refs(const Trace& t) {
  if (!string_ids_below(t.ranges.domain, t.strings.size()) || !string_ids_below(t.ranges.args, t.strings.size()))
    return make_error("string id out of range");
  for (std::uint32_t c : t.kernels.config)
    if (c != kNone && c >= t.launch_configs.size()) return make_error("kernel config out of range");
  return {};
}

// Every reference between tables, so later code can index without checks. (Rows are still in
// id order, numbered from 1 as the writer numbers them.)
Status check_references(const Trace& t) {
  const auto nstr = t.strings.size();
  const auto ntracks = t.tracks.size();
  if (auto st = check_owner_refs(t); !st) return st;
  for (auto st : {check_span_refs(t.kernels, "kernels", ntracks, nstr), check_span_refs(t.memcpys, "memcpys", ntracks, nstr),
                  check_span_refs(t.memsets, "memsets", ntracks, nstr), check_span_refs(t.api_calls, "api_calls", ntracks, nstr),
                  check_span_refs(t.syncs, "syncs", ntracks, nstr), check_span_refs(t.ranges, "ranges", ntracks, nstr),
                  check_span_refs(t.steps, "steps", ntracks, nstr), check_span_refs(t.collectives, "collectives", ntracks, nstr),
                  check_span_refs(t.io_calls, "io_calls", ntracks, nstr)})
    if (!st) return st;
  if (!string_ids_in_range(t)) return make_error("string id out of range");
  if (auto st = check_detail_refs(t); !st) return st;
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (t.counters.track[i] >= ntracks) return make_error("counter track out of range");
  for (std::size_t i = 0; i < t.flows.size(); ++i)
    if (t.flows.track[i] >= ntracks) return make_error("flow track out of range");
  return check_py_sample_refs(t);
}

}  // namespace

// read_trace's connections to a file, kept for read_trace_details.
struct KeptConnections {
  sql::Db main;
  std::vector<sql::Db> extra;
  KeptConnections(sql::Db m, std::vector<sql::Db> e) : main(std::move(m)), extra(std::move(e)) {}
};

// The meta table, the strings and the process, thread, device, stream and track tables: what
// every read of a trace starts with. Returns the file's schema version.
Result<int> read_trace_entities(sqlite3* db, const std::string& p, Trace& t) {
  int version = 0;
  if (auto st = read_meta(db, t, version); !st) return make_error(p + ": " + st.error());
  for (auto* read : {read_strings, read_process_tables, read_device_tables})
    if (auto st = read(db, t); !st) return make_error(p + ": corrupt trace: " + st.error());
  return version;
}

Result<Trace> read_trace(const fs::path& path, const TrackFilter& keep, std::optional<PendingDetails>* later) {
  auto dbr = sql::open_untrusted(path.string());
  if (!dbr) return make_error(dbr.error());
  sqlite3* db = dbr->get();
  const std::string p = path.string();
  Trace t;
  auto read = read_trace_entities(db, p, t);
  if (!read) return make_error(read.error());
  const int version = read.value();
  if (auto st = read_point_tables(db, t, keep); !st) return make_error(p + ": corrupt trace: " + st.error());
  if (auto st = read_py_samples(db, t, keep); !st) return make_error(p + ": corrupt trace: " + st.error());
  const bool defer = later && keep.empty();
  std::vector<sql::Db> extra;  // the parallel read's other connections
  auto events = defer ? read_event_tables(db, p, version, t, keep, kKernelsTimeline, kApiCallsTimeline, kRangesTimeline, extra)
                      : read_event_tables(db, p, version, t, keep, kKernels, kApiCalls, kRanges, extra);
  if (!events) return make_error(p + ": corrupt trace: " + events.error());
  // Rows were written in (track, start) order; finalize() verifies that cheaply and only
  // re-sorts a file some other tool rewrote. Such a file's details are read now, so that the
  // sort moves them with their rows.
  const bool deferred = defer && in_track_order(t.kernels) && in_track_order(t.api_calls) && in_track_order(t.ranges);
  if (defer && !deferred) {
    if (auto st = read_details_into(db, p, version, t, extra); !st)
      return make_error(p + ": corrupt trace: " + st.error());
  }
  if (auto st = check_references(t); !st) return make_error(p + ": corrupt trace: " + st.error());
  t.finalize();
  if (deferred)
    *later = PendingDetails{path, version, std::make_shared<KeptConnections>(std::move(dbr.value()), std::move(extra))};
  return t;
}

Status read_trace_details(const PendingDetails& pending, Trace& t) {
  const std::string p = pending.path.string();
  if (!pending.conns) return make_error(p + ": no details pending");
  // On the connections read_trace kept, none opened now: a file removed or replaced since is
  // still the file read (a new connection would open whatever the path names now).
  KeptConnections& kept = *pending.conns;
  if (auto st = read_details_into(kept.main.get(), "", pending.version, t, kept.extra); !st)
    return make_error(p + ": corrupt trace: " + st.error());
  if (auto st = check_detail_refs(t); !st) return make_error(p + ": corrupt trace: " + st.error());
  return {};
}

Result<TraceOutline> read_trace_outline(const fs::path& path) {
  auto dbr = sql::open_untrusted(path.string());
  if (!dbr) return make_error(dbr.error());
  sqlite3* db = dbr->get();
  const std::string p = path.string();
  TraceOutline o;
  Trace& t = o.trace;
  auto read = read_trace_entities(db, p, t);
  if (!read) return make_error(read.error());
  const int version = read.value();
  {
    auto q = Stmt::prepare(db, "SELECT coalesce(min(id), 1), coalesce(max(id), 0) FROM steps");
    if (!q || q->step() != SQLITE_ROW) return make_error(p + ": corrupt trace: steps");
    const std::int64_t lo = q->i64(0), hi = q->i64(1) + 1;
    if (hi - lo > 100'000'000) return make_error(p + ": corrupt trace: steps: implausible row ids");
    RowSlots<StepTable, decltype(kSteps)> steps{t.steps, kSteps, t.steps.size(), t.steps.size(), true};
    if (auto st = read_span_rows(db, steps, version, id_chunk(lo, std::max(lo, hi)), TrackFilter{}); !st)
      return make_error(p + ": corrupt trace: " + st.error());
  }
  o.per_track.resize(t.tracks.size());
  static constexpr std::pair<const char*, bool> kCounted[] = {  // (table, GPU ops)
      {"kernels", true}, {"memcpys", true}, {"memsets", true}, {"ranges", false}, {"api_calls", false}, {"io_calls", false}};
  for (const auto& [table, gpu] : kCounted) {
    auto q = Stmt::prepare(db, std::string("SELECT track_id, count(*) FROM ") + table + " GROUP BY track_id");
    if (!q) return make_error(p + ": corrupt trace: " + q.error());
    int rc;
    while ((rc = q->step()) == SQLITE_ROW) {
      const std::int64_t track = q->i64(0), n = q->i64(1);
      if (track < 0 || static_cast<std::uint64_t>(track) >= o.per_track.size() || n < 0)
        return make_error(p + ": corrupt trace: " + table + ": track_id out of range");
      (gpu ? o.per_track[static_cast<std::size_t>(track)].gpu_ops : o.per_track[static_cast<std::size_t>(track)].host) +=
          static_cast<std::uint64_t>(n);
    }
    if (rc != SQLITE_DONE) return make_error(p + ": " + table + ": " + sqlite3_errmsg(db));
  }
  // every event: the counted tables' rows, the steps read, and the tables not counted per track
  for (const auto& c : o.per_track) o.events += c.gpu_ops + c.host;
  o.events += t.steps.size();
  for (const char* table : {"syncs", "collectives", "counters", "flows"}) {
    auto q = Stmt::prepare(db, std::string("SELECT count(*) FROM ") + table);
    if (!q) return make_error(p + ": corrupt trace: " + q.error());
    if (q->step() != SQLITE_ROW) return make_error(p + ": " + table + ": " + sqlite3_errmsg(db));
    o.events += static_cast<std::uint64_t>(std::max<std::int64_t>(0, q->i64(0)));
  }
  if (auto st = check_references(t); !st) return make_error(p + ": corrupt trace: " + st.error());
  t.finalize();
  return o;
}

}  // namespace tt::trace
