// Nsight Systems SQLite export -> Trace.
//
// Place in the data flow: `nsys export --type sqlite` (or `nsys profile --stats=true`) writes a
// .sqlite file; import_any() hands it here; the caller finalizes the Trace, which is then stored
// and analysed like any other source. The export is untrusted input: it is opened read-only via
// sql::open_untrusted, every table and column is checked before it is read, and a bad row is
// counted in the diagnostics instead of aborting the import.
//
// Schema: Nsight Systems "SQLite Schema Reference" (AnalysisGuide sqlite-schema-reference.rst,
// 2026.4, schema 3.28.1) and "SQLite Schema Event Values". Tables are created lazily by nsys, so
// any of them may be missing; optional columns are read as NULL when an older export lacks them.
//
//   CUPTI_ACTIVITY_KIND_KERNEL / _MEMCPY / _MEMSET / _SYNCHRONIZATION
//        -> kernels / memcpys / memsets / syncs on stream tracks (process, deviceId, streamId)
//   CUPTI_ACTIVITY_KIND_CUDA_EVENT -> syncs: event_record rows on the recording stream's track,
//        at the start of their cudaEventRecord call (the table has no host time of its own)
//   CUPTI_ACTIVITY_KIND_RUNTIME (eventClass 0 runtime, 1 driver), _DRIVER if present -> api_calls
//   NVTX_EVENTS     -> ranges: 59 push/pop and 60 start/end (Nvtx), 34 marks (Instant);
//                      75 domain-create rows only name the domains
//   OSRT_API        -> io_calls for file-I/O functions; every other call -> ranges (Other, "osrt")
//   CUDA_GPU_MEMORY_USAGE_EVENTS (--cuda-memory-usage=true) -> counters "cuda:N memory.reserved"
//   TARGET_INFO_GPU -> device properties; ThreadNames / PROCESSES -> names
//
// Enum traps (the reason this file exists rather than a generic SQL mapping):
//  * srcKind / dstKind / memKind use nsys's ENUM_CUDA_MEM_KIND: 0 Pageable, 1 Pinned, 2 Device,
//    3 Array, 4 Managed, 5 Device Static, 6 Managed Static, 7 Unknown. CUPTI's own
//    CUpti_ActivityMemoryKind is shifted by one (1 Pageable, 2 Pinned): decoding nsys values with
//    CUPTI's numbering would turn every pinned copy into a pageable one.
//  * copyKind keeps CUPTI's CUpti_ActivityMemcpyKind (1 HtoD, 2 DtoH, 3 HtoA, 4 AtoH, 5 AtoA,
//    6 AtoD, 7 DtoA, 8 DtoD, 9 HtoH, 10 PtoP) and nsys adds 11-13 for unified-memory migrations.
//  * syncType keeps CUpti_ActivitySynchronizationType (1 event, 2 stream wait event, 3 stream,
//    4 context).
//    When the export carries its ENUM_* tables, their symbol names win over these defaults.
//  * globalTid packs <hw:8><vm:8><pid:24><tid:24>; globalPid is the same with tid 0.
//  * Activity deviceId matches TARGET_INFO_GPU.id (the join nsys's own cuda_gpu_trace report
//    uses); cuDevice is only a fallback.
#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "sqlite_util.h"
#include "tracetune/trace/importers.h"

namespace tt::trace {
namespace {

// ---- enumerations: documented numbering, re-keyed by the export's ENUM_* tables ----

// One value of an nsys enumeration: its symbol without the common prefix, what it becomes in
// our model, and the label used in event names.
template <class E>
struct Known {
  std::string_view symbol;
  E value;
  std::string_view label;
};

// Index = documented id (ENUM_CUDA_MEMCPY_OPER, CUPTI numbering plus nsys's UVM kinds). Array
// memory lives on the device, so copies to or from arrays count as device copies.
constexpr Known<MemcpyDirection> kCopyKinds[] = {
    {"UNKNOWN", MemcpyDirection::Unknown, "Unknown"}, {"HTOD", MemcpyDirection::HtoD, "HtoD"},
    {"DTOH", MemcpyDirection::DtoH, "DtoH"},          {"HTOA", MemcpyDirection::HtoD, "HtoA"},
    {"ATOH", MemcpyDirection::DtoH, "AtoH"},          {"ATOA", MemcpyDirection::DtoD, "AtoA"},
    {"ATOD", MemcpyDirection::DtoD, "AtoD"},          {"DTOA", MemcpyDirection::DtoD, "DtoA"},
    {"DTOD", MemcpyDirection::DtoD, "DtoD"},          {"HTOH", MemcpyDirection::HtoH, "HtoH"},
    {"PTOP", MemcpyDirection::PtoP, "PtoP"},          {"UVM_HTOD", MemcpyDirection::HtoD, "UVM HtoD"},
    {"UVM_DTOH", MemcpyDirection::DtoH, "UVM DtoH"},  {"UVM_DTOD", MemcpyDirection::DtoD, "UVM DtoD"},
};

// Index = documented id (ENUM_CUDA_MEM_KIND). NOT CUPTI's numbering: see the header comment.
constexpr Known<MemoryKind> kMemKinds[] = {
    {"PAGEABLE", MemoryKind::Pageable, "Pageable"},
    {"PINNED", MemoryKind::Pinned, "Pinned"},
    {"DEVICE", MemoryKind::Device, "Device"},
    {"ARRAY", MemoryKind::Array, "Array"},
    {"MANAGED", MemoryKind::Managed, "Managed"},
    {"DEVICE_STATIC", MemoryKind::Device, "Device Static"},
    {"MANAGED_STATIC", MemoryKind::Managed, "Managed Static"},
    {"UNKNOWN", MemoryKind::Unknown, "Unknown"},
};

// Index = documented id (ENUM_CUPTI_SYNC_TYPE). Labels match the Kineto importer's names.
constexpr Known<SyncType> kSyncTypes[] = {
    {"UNKNOWN", SyncType::Unknown, "Unknown Sync"},
    {"EVENT_SYNCHRONIZE", SyncType::EventSync, "Event Sync"},
    {"STREAM_WAIT_EVENT", SyncType::StreamWaitEvent, "Stream Wait Event"},
    {"STREAM_SYNCHRONIZE", SyncType::StreamSync, "Stream Sync"},
    {"CONTEXT_SYNCHRONIZE", SyncType::ContextSync, "Context Sync"},
};

template <class E>
class EnumMap {
 public:
  EnumMap(std::span<const Known<E>> known, std::string_view table, std::string_view prefix)
      : known_(known), table_(table), prefix_(prefix) {
    for (std::size_t i = 0; i < known.size(); ++i) by_id_[static_cast<std::int64_t>(i)] = &known[i];
  }
  std::string_view table() const { return table_; }
  // Replaces the defaults with the export's own (id, symbol) rows: nsys documents the ENUM tables
  // as the meaning of the numbers, so they win if a future version renumbers. Symbols we do not
  // know map to nothing, so their rows are reported as unknown values rather than guessed.
  void load(const std::vector<std::pair<std::int64_t, std::string>>& rows) {
    if (rows.empty()) return;  // an empty table says nothing; keep the documented numbering
    by_id_.clear();
    for (const auto& [id, symbol] : rows) {
      std::string_view s = symbol;
      if (!s.starts_with(prefix_)) continue;
      s.remove_prefix(prefix_.size());
      for (const auto& k : known_)
        if (k.symbol == s) by_id_[id] = &k;
    }
  }
  const Known<E>* find(std::int64_t id) const {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }

 private:
  std::span<const Known<E>> known_;
  std::string_view table_, prefix_;
  std::unordered_map<std::int64_t, const Known<E>*> by_id_;
};

// ---- OS runtime functions that are file I/O ----

enum class IoResult : std::uint8_t { Nothing, Fd, Bytes, Offset };  // what the return value is
struct IoFn {
  std::string_view name;
  IoOp op;
  IoResult result;
};
// Names without their "64" suffix (open64, pread64, lseek64, fstat64, mmap64, fopen64 ...).
// fread/fwrite return item counts and fopen a FILE*, so those results are not bytes or fds.
constexpr IoFn kIoFns[] = {
    {"open", IoOp::Open, IoResult::Fd},       {"openat", IoOp::Open, IoResult::Fd},
    {"creat", IoOp::Open, IoResult::Fd},      {"fopen", IoOp::Open, IoResult::Nothing},
    {"read", IoOp::Read, IoResult::Bytes},    {"pread", IoOp::Read, IoResult::Bytes},
    {"readv", IoOp::Read, IoResult::Bytes},   {"preadv", IoOp::Read, IoResult::Bytes},
    {"fread", IoOp::Read, IoResult::Nothing}, {"write", IoOp::Write, IoResult::Bytes},
    {"pwrite", IoOp::Write, IoResult::Bytes}, {"writev", IoOp::Write, IoResult::Bytes},
    {"pwritev", IoOp::Write, IoResult::Bytes}, {"fwrite", IoOp::Write, IoResult::Nothing},
    {"close", IoOp::Close, IoResult::Nothing}, {"fclose", IoOp::Close, IoResult::Nothing},
    {"lseek", IoOp::Seek, IoResult::Offset},  {"stat", IoOp::Stat, IoResult::Nothing},
    {"fstat", IoOp::Stat, IoResult::Nothing}, {"lstat", IoOp::Stat, IoResult::Nothing},
    {"fstatat", IoOp::Stat, IoResult::Nothing}, {"mmap", IoOp::Mmap, IoResult::Nothing},
};

const IoFn* classify_io(std::string_view fn) {
  if (fn.ends_with("64")) fn.remove_suffix(2);
  for (const auto& f : kIoFns)
    if (f.name == fn) return &f;
  return nullptr;
}

// ---- schema access ----

struct Col {
  std::string_view name;
  bool required;
};

template <std::size_t A, std::size_t B>
constexpr std::array<Col, A + B> cat(const Col (&a)[A], const Col (&b)[B]) {
  std::array<Col, A + B> out{};
  for (std::size_t i = 0; i < A; ++i) out[i] = a[i];
  for (std::size_t i = 0; i < B; ++i) out[A + i] = b[i];
  return out;
}

// Every table read here starts with start/end at columns 0 and 1, then either the device
// prefix or the host prefix below; table-specific columns follow.
constexpr Col kDeviceCols[] = {{"start", true},    {"end", true},
                               {"deviceId", true}, {"streamId", true},
                               {"correlationId", false}, {"globalPid", false}};
enum DeviceCol : int { kStart, kEnd, kDeviceId, kStreamId, kCorrelation, kGlobalPid, kDeviceColCount };

constexpr Col kHostCols[] = {{"start", true}, {"end", true}, {"globalTid", true}};
enum HostCol : int { kGlobalTid = 2, kHostColCount };

// Tables whose rows become events; an export with none of them has nothing to import.
constexpr std::string_view kEventTables[] = {
    "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",          "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER",          "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "NVTX_EVENTS",                "OSRT_API",                            "CUDA_GPU_MEMORY_USAGE_EVENTS",
    "CUPTI_ACTIVITY_KIND_CUDA_EVENT",
};

bool is_null(const sql::Stmt& r, int c) { return sqlite3_column_type(r.get(), c) == SQLITE_NULL; }

// Identifiers may come from the untrusted file (table names in sqlite_schema): escape quotes.
std::string sql_ident(std::string_view id) {
  std::string out = "\"";
  for (char c : id) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

struct Span {
  Ns start = 0, dur = 0;
};


struct PairHash {
  std::size_t operator()(const std::pair<std::int64_t, std::int64_t>& p) const {
    const auto a = static_cast<std::uint64_t>(p.first) * 0x9E3779B97F4A7C15ull;
    const auto b = static_cast<std::uint64_t>(p.second) + 0x7F4A7C159E3779B9ull;
    return static_cast<std::size_t>(a ^ (b + (a << 6) + (a >> 2)));
  }
};

// CUPTI marks "no stream / no event" with 0xffffffff (uint32 -1); some writers store -1.
std::int64_t id_or_unknown(std::int64_t v) { return v < 0 || v == 0xffffffffLL ? -1 : v; }

// The process part of a globalTid / globalPid (hardware, VM and pid bits): -1 when unknown.
std::int64_t process_key(std::int64_t global_id) { return global_id < 0 ? -1 : global_id >> 24; }

class NsysImporter {
 public:
  NsysImporter(Trace& t, sqlite3* db, std::string source) : t_(t), db_(db), src_(std::move(source)) {}
  Status run();

 private:
  struct GpuInfo {
    std::int64_t id = -1, cu_device = -1;
    Device props;
    bool used = false;
  };
  struct DeviceRow {  // the device prefix of an activity row, validated
    Span span;
    std::int64_t pkey, device, stream;
    std::uint32_t correlation;
  };
  struct OsrtFn {
    StringId name;
    const IoFn* io;
  };

  bool has(std::string_view table) const { return tables_.count(std::string(table)) != 0; }
  Result<std::unordered_set<std::string>> columns_of(std::string_view table);
  Result<sql::Stmt> select(std::string_view table, std::span<const Col> cols, std::string_view where = {});
  template <class F>
  Status for_each_row(std::string_view table, std::span<const Col> cols, F&& fn, std::string_view where = {});
  template <class E>
  Status load_enum(EnumMap<E>& map);

  // counted problems, flushed into Trace::diagnostics at the end
  void count(DiagnosticKind kind, std::string reason, std::uint64_t n = 1) { diag_[{kind, std::move(reason)}] += n; }
  void skip(std::string_view table, std::string_view what) {
    count(DiagnosticKind::Skipped, std::string(table) + ": " + std::string(what));
  }
  template <class E>
  const Known<E>* lookup(const EnumMap<E>& map, const sql::Stmt& r, int c, std::string_view table,
                         std::string_view column);

  StringId str(const sql::Stmt& r, int c);
  std::optional<Span> span_of(const sql::Stmt& r, std::string_view table);
  std::optional<DeviceRow> device_row(const sql::Stmt& r, std::string_view table);
  std::optional<std::pair<Span, std::uint32_t>> host_row(const sql::Stmt& r, std::string_view table);

  std::uint32_t process_index(std::int64_t pkey);
  std::uint32_t thread_track(std::int64_t global_tid);
  std::uint32_t device_index(std::int64_t pkey, std::int64_t device);
  std::uint32_t stream_track(std::int64_t pkey, std::int64_t device, std::int64_t stream);
  StringId memcpy_name(const Known<MemcpyDirection>* kind, const Known<MemoryKind>* src,
                       const Known<MemoryKind>* dst);

  Status load_schema();
  Status load_names();
  Status load_gpus();
  Status load_metadata();
  Status import_api(std::string_view table, ApiKind default_kind);
  Status import_kernels();
  Status import_memcpys();
  Status import_memsets();
  Status import_syncs();
  Status import_event_records();
  Status import_nvtx();
  Status import_osrt();
  Status import_memory_usage();
  Status count_unimported();
  void finish();

  Trace& t_;
  sqlite3* db_;
  std::string src_;
  std::unordered_set<std::string> tables_;
  sql::Stmt string_q_;
  std::unordered_map<std::int64_t, StringId> strings_;  // nsys StringIds.id -> ours
  std::uint64_t missing_strings_ = 0;

  EnumMap<MemcpyDirection> copy_kinds_{kCopyKinds, "ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_"};
  EnumMap<MemoryKind> mem_kinds_{kMemKinds, "ENUM_CUDA_MEM_KIND", "CUDA_MEMOPR_MEMORY_KIND_"};
  EnumMap<SyncType> sync_types_{kSyncTypes, "ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_"};

  std::unordered_map<std::int64_t, std::string> process_names_;  // process key -> name
  std::unordered_map<std::int64_t, std::string> thread_names_;   // globalTid -> name
  std::vector<GpuInfo> gpus_;

  std::unordered_map<std::int64_t, std::uint32_t> processes_;  // process key -> index
  std::unordered_map<std::int64_t, std::uint32_t> threads_;    // globalTid -> track
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> devices_;
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::uint32_t> streams_;

  // (process key, correlation id) -> 1 async / 0 sync, from the memcpy API that issued a copy
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, std::uint8_t, PairHash> memcpy_async_;
  // (process key, correlation id) -> start of the cudaEventRecord / cuEventRecord call
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, Ns, PairHash> record_calls_;
  struct ApiTraits {
    int memcpy = -1;            // -1 not a memcpy API, else its async flag
    bool event_record = false;  // cudaEventRecord*, cuEventRecord*
  };
  std::unordered_map<std::int64_t, ApiTraits> api_traits_;  // nameId -> what the call is
  std::map<std::tuple<int, int, int>, StringId> memcpy_names_;
  std::unordered_map<std::int64_t, OsrtFn> osrt_fns_;  // nameId -> classification

  std::map<std::pair<DiagnosticKind, std::string>, std::uint64_t> diag_;
};

// ---- schema helpers ----

Result<std::unordered_set<std::string>> NsysImporter::columns_of(std::string_view table) {
  auto info = sql::Stmt::prepare(db_, "SELECT name FROM pragma_table_info(?1)");
  if (!info) return make_error(src_ + ": cannot read the columns of " + std::string(table) + ": " + info.error());
  info->bind(1, table);
  std::unordered_set<std::string> cols;
  int rc;
  while ((rc = info->step()) == SQLITE_ROW) cols.emplace(info->text(0));
  if (rc != SQLITE_DONE)
    return make_error(src_ + ": cannot read the columns of " + std::string(table) + ": " + sqlite3_errmsg(db_));
  return cols;
}

// SELECT of `cols` in order; an optional column the table lacks reads as NULL, a missing
// required one is an error naming the table and column.
Result<sql::Stmt> NsysImporter::select(std::string_view table, std::span<const Col> cols, std::string_view where) {
  auto present = columns_of(table);
  if (!present) return make_error(present.error());
  std::string q = "SELECT ";
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (i > 0) q += ", ";
    if (present->count(std::string(cols[i].name)) != 0) {
      q += sql_ident(cols[i].name);
    } else if (cols[i].required) {
      return make_error(src_ + ": table " + std::string(table) + " has no column '" + std::string(cols[i].name) +
                        "' (required); unsupported Nsight Systems export schema");
    } else {
      q += "NULL";
    }
  }
  q += " FROM " + sql_ident(table);
  if (!where.empty()) q += " WHERE " + std::string(where);
  auto st = sql::Stmt::prepare(db_, q);
  if (!st) return make_error(src_ + ": cannot query " + std::string(table) + ": " + st.error());
  return st;
}

template <class F>
Status NsysImporter::for_each_row(std::string_view table, std::span<const Col> cols, F&& fn, std::string_view where) {
  auto st = select(table, cols, where);
  if (!st) return make_error(st.error());
  int rc;
  while ((rc = st->step()) == SQLITE_ROW) fn(*st);
  // A corrupt page shows up here, not at prepare time: say where it happened.
  if (rc != SQLITE_DONE) return make_error(src_ + ": reading " + std::string(table) + ": " + sqlite3_errmsg(db_));
  return {};
}

template <class E>
Status NsysImporter::load_enum(EnumMap<E>& map) {
  if (!has(map.table())) return {};
  static constexpr Col cols[] = {{"id", true}, {"name", true}};
  std::vector<std::pair<std::int64_t, std::string>> rows;
  auto st = for_each_row(map.table(), cols, [&](const sql::Stmt& r) {
    if (!is_null(r, 0)) rows.emplace_back(r.i64(0), valid_utf8(r.text(1)));
  });
  if (!st) return st;
  map.load(rows);
  return {};
}

template <class E>
const Known<E>* NsysImporter::lookup(const EnumMap<E>& map, const sql::Stmt& r, int c, std::string_view table,
                                     std::string_view column) {
  if (is_null(r, c)) return nullptr;  // an optional column an older export lacks: plainly unknown
  const std::int64_t v = r.i64(c);
  const Known<E>* k = map.find(v);
  if (k == nullptr)
    skip(table, std::string(column) + " value " + std::to_string(v) + " not in " + std::string(map.table()) +
                    " (imported as unknown)");
  return k;
}

Status NsysImporter::load_schema() {
  auto q = sql::Stmt::prepare(db_, "SELECT name FROM sqlite_schema WHERE type = 'table'");
  if (!q) return make_error(src_ + ": not a readable SQLite database (" + q.error() + ")");
  int rc;
  while ((rc = q->step()) == SQLITE_ROW) tables_.emplace(q->text(0));
  if (rc != SQLITE_DONE) return make_error(src_ + ": cannot list tables: " + sqlite3_errmsg(db_));
  return {};
}

// ---- strings, names, tracks ----

// nsys stores most names as ids into StringIds. Looked up lazily (and cached) because
// StringIds also holds every callchain symbol, most of which no imported row refers to.
StringId NsysImporter::str(const sql::Stmt& r, int c) {
  if (is_null(r, c)) return 0;
  const std::int64_t id = r.i64(c);
  if (auto it = strings_.find(id); it != strings_.end()) return it->second;
  StringId out = 0;
  string_q_.bind(1, id);
  if (string_q_.step() == SQLITE_ROW) out = t_.strings.intern(string_q_.text(0));
  else ++missing_strings_;
  string_q_.reset();
  strings_.emplace(id, out);
  return out;
}

std::optional<Span> NsysImporter::span_of(const sql::Stmt& r, std::string_view table) {
  if (is_null(r, 0) || is_null(r, 1)) {
    skip(table, "rows with NULL start or end");
    return std::nullopt;
  }
  // a tampered export's 'abc' or 1e308 would read as 0 or INT64_MAX
  if (sqlite3_column_type(r.get(), 0) != SQLITE_INTEGER || sqlite3_column_type(r.get(), 1) != SQLITE_INTEGER) {
    skip(table, "rows whose start or end is not an integer");
    return std::nullopt;
  }
  const Ns start = r.i64(0), end = r.i64(1);
  Ns dur = 0;
  if (end < start || __builtin_sub_overflow(end, start, &dur)) {
    skip(table, "rows with end before start");
    return std::nullopt;
  }
  return Span{start, dur};
}

std::optional<NsysImporter::DeviceRow> NsysImporter::device_row(const sql::Stmt& r, std::string_view table) {
  auto span = span_of(r, table);
  if (!span) return std::nullopt;
  if (is_null(r, kDeviceId) || is_null(r, kStreamId)) {
    skip(table, "rows with NULL deviceId or streamId");
    return std::nullopt;
  }
  return DeviceRow{*span, is_null(r, kGlobalPid) ? -1 : process_key(r.i64(kGlobalPid)), r.i64(kDeviceId),
                   id_or_unknown(r.i64(kStreamId)), static_cast<std::uint32_t>(r.i64_or(kCorrelation, 0))};
}

std::optional<std::pair<Span, std::uint32_t>> NsysImporter::host_row(const sql::Stmt& r, std::string_view table) {
  auto span = span_of(r, table);
  if (!span) return std::nullopt;
  if (is_null(r, kGlobalTid)) {
    skip(table, "rows with NULL globalTid (no thread to put them on)");
    return std::nullopt;
  }
  return std::pair{*span, thread_track(r.i64(kGlobalTid))};
}

std::uint32_t NsysImporter::process_index(std::int64_t pkey) {
  if (pkey < 0) return kNone;
  if (auto it = processes_.find(pkey); it != processes_.end()) return it->second;
  Process p;
  p.pid = pkey & 0xFFFFFF;
  if (auto n = process_names_.find(pkey); n != process_names_.end()) p.name = n->second;
  const std::uint32_t idx = t_.add_process(std::move(p));
  processes_.emplace(pkey, idx);
  return idx;
}

std::uint32_t NsysImporter::thread_track(std::int64_t global_tid) {
  if (auto it = threads_.find(global_tid); it != threads_.end()) return it->second;
  Thread th;
  th.process = process_index(process_key(global_tid));
  th.tid = global_tid & 0xFFFFFF;
  if (auto n = thread_names_.find(global_tid); n != thread_names_.end()) th.name = n->second;
  const std::uint32_t track = t_.add_thread(std::move(th));
  threads_.emplace(global_tid, track);
  return track;
}

// One Device per (process, GPU), like one per rank file in the Kineto importer: the model's
// Device records which process used it, and stream tracks find their process through it.
std::uint32_t NsysImporter::device_index(std::int64_t pkey, std::int64_t device) {
  if (auto it = devices_.find({pkey, device}); it != devices_.end()) return it->second;
  GpuInfo* info = nullptr;
  for (auto& g : gpus_)
    if (g.id == device) { info = &g; break; }
  if (info == nullptr)
    for (auto& g : gpus_)
      if (g.cu_device == device) { info = &g; break; }
  Device d;
  if (info != nullptr) {
    d = info->props;
    info->used = true;
  }
  d.process = process_index(pkey);
  d.index = static_cast<std::int32_t>(device);
  const std::uint32_t idx = t_.add_device(std::move(d));
  devices_.emplace(std::pair{pkey, device}, idx);
  return idx;
}

std::uint32_t NsysImporter::stream_track(std::int64_t pkey, std::int64_t device, std::int64_t stream) {
  const auto key = std::tuple{pkey, device, stream};
  if (auto it = streams_.find(key); it != streams_.end()) return it->second;
  Stream s;
  s.device = device_index(pkey, device);
  s.stream = stream;
  const std::uint32_t track = t_.add_stream(std::move(s));
  streams_.emplace(key, track);
  return track;
}

// "Memcpy HtoD (Pageable -> Device)", the form the Kineto importer reads from PyTorch traces.
StringId NsysImporter::memcpy_name(const Known<MemcpyDirection>* kind, const Known<MemoryKind>* src,
                                   const Known<MemoryKind>* dst) {
  const auto idx = [](const auto* k, const auto& all) { return k == nullptr ? -1 : static_cast<int>(k - all); };
  const auto key = std::tuple{idx(kind, kCopyKinds), idx(src, kMemKinds), idx(dst, kMemKinds)};
  if (auto it = memcpy_names_.find(key); it != memcpy_names_.end()) return it->second;
  std::string n = "Memcpy ";
  n += kind != nullptr ? kind->label : "Unknown";
  n += " (";
  n += src != nullptr ? src->label : "Unknown";
  n += " -> ";
  n += dst != nullptr ? dst->label : "Unknown";
  n += ")";
  const StringId id = t_.strings.intern(n);
  memcpy_names_.emplace(key, id);
  return id;
}

// ---- reference tables ----

Status NsysImporter::load_names() {
  if (has("ThreadNames")) {
    static constexpr Col cols[] = {{"globalTid", true}, {"nameId", true}};
    std::vector<std::pair<std::int64_t, StringId>> rows;
    auto st = for_each_row("ThreadNames", cols, [&](const sql::Stmt& r) {
      if (!is_null(r, 0)) rows.emplace_back(r.i64(0), str(r, 1));
    });
    if (!st) return st;
    // later rows win: a thread renamed during the capture keeps its last name
    for (const auto& [tid, name] : rows) thread_names_[tid] = std::string(t_.strings.get(name));
  }
  if (has("PROCESSES")) {
    static constexpr Col cols[] = {{"globalPid", true}, {"name", true}};
    auto st = for_each_row("PROCESSES", cols, [&](const sql::Stmt& r) {
      if (!is_null(r, 0) && !is_null(r, 1)) process_names_[process_key(r.i64(0))] = valid_utf8(r.text(1));
    });
    if (!st) return st;
  }
  return {};
}

Status NsysImporter::load_gpus() {
  if (!has("TARGET_INFO_GPU")) return {};
  static constexpr Col cols[] = {{"id", true},           {"name", false},         {"uuid", false},
                                 {"smCount", false},     {"totalMemory", false},  {"computeMajor", false},
                                 {"computeMinor", false}, {"cuDevice", false}};
  enum : int { kId, kName, kUuid, kSms, kMemory, kMajor, kMinor, kCuDevice };
  return for_each_row("TARGET_INFO_GPU", cols, [&](const sql::Stmt& r) {
    if (is_null(r, kId)) {
      skip("TARGET_INFO_GPU", "rows with NULL id");
      return;
    }
    GpuInfo g;
    g.id = r.i64(kId);
    g.cu_device = r.i64_or(kCuDevice, -1);
    g.props.name = valid_utf8(r.text(kName));
    g.props.uuid = valid_utf8(r.text(kUuid));
    g.props.vendor = "NVIDIA";
    g.props.sm_count = static_cast<std::int32_t>(r.i64_or(kSms, -1));
    g.props.total_memory = r.i64_or(kMemory, -1);
    g.props.compute_major = static_cast<std::int32_t>(r.i64_or(kMajor, -1));
    g.props.compute_minor = static_cast<std::int32_t>(r.i64_or(kMinor, -1));
    gpus_.push_back(std::move(g));
  });
}

Status NsysImporter::load_metadata() {
  t_.metadata.emplace_back(src_ + ":format", "nsys-sqlite");
  if (has("META_DATA_EXPORT")) {  // EXPORT_SCHEMA_VERSION, EXPORT_PRODUCT_VERSION, ...
    static constexpr Col cols[] = {{"name", true}, {"value", true}};
    int kept = 0;
    auto st = for_each_row("META_DATA_EXPORT", cols, [&](const sql::Stmt& r) {
      if (++kept <= 64 && !is_null(r, 0))  // a handful in practice; bounded against odd files
        t_.metadata.emplace_back(src_ + ":" + valid_utf8(r.text(0)), valid_utf8(r.text(1)));
    });
    if (!st) return st;
  }
  if (has("TARGET_INFO_SESSION_START_TIME")) {  // lets a caller align nsys's session clock to UTC
    static constexpr Col cols[] = {{"utcEpochNs", false}};
    auto st = for_each_row("TARGET_INFO_SESSION_START_TIME", cols, [&](const sql::Stmt& r) {
      if (!is_null(r, 0)) t_.metadata.emplace_back(src_ + ":utcEpochNs", std::to_string(r.i64(0)));
    });
    if (!st) return st;
  }
  return {};
}

// ---- event tables ----

Status NsysImporter::import_api(std::string_view table, ApiKind default_kind) {
  if (!has(table)) return {};
  static constexpr Col own[] = {{"nameId", true}, {"correlationId", false}, {"returnValue", false},
                                {"eventClass", false}};
  enum : int { kName = kHostColCount, kCorr, kReturn, kClass };
  static constexpr auto cols = cat(kHostCols, own);
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    auto row = host_row(r, table);
    if (!row) return;
    const auto [span, track] = *row;
    const StringId name = str(r, kName);
    const auto corr = static_cast<std::uint32_t>(r.i64_or(kCorr, 0));
    ApiKind kind = default_kind;
    if (!is_null(r, kClass)) {  // ENUM_NSYS_EVENT_CLASS: 0 CUDA runtime, 1 CUDA driver, 13 EGL driver
      const std::int64_t c = r.i64(kClass);
      kind = c == 0 ? ApiKind::Runtime : (c == 1 || c == 13) ? ApiKind::Driver : ApiKind::Other;
    }
    auto& a = t_.api_calls;
    a.push_span(span.start, span.dur, track, name);
    a.correlation.push_back(corr);
    a.external_id.push_back(0);
    a.cbid.push_back(0);  // nsys does not export CUPTI callback ids
    a.return_value.push_back(static_cast<std::int32_t>(r.i64_or(kReturn, 0)));
    a.api.push_back(kind);

    // Remember whether a copy was issued synchronously (the memcpy rows do not say) and when
    // an event was recorded (the CUDA_EVENT rows have no host time).
    if (corr == 0 || is_null(r, kName)) return;
    auto [it, fresh] = api_traits_.try_emplace(r.i64(kName));
    if (fresh) {
      const std::string_view n = t_.strings.get(name);
      if (n.find("emcpy") != std::string_view::npos) it->second.memcpy = n.find("Async") != std::string_view::npos ? 1 : 0;
      it->second.event_record = n.find("EventRecord") != std::string_view::npos;
    }
    const std::pair key{process_key(r.i64(kGlobalTid)), std::int64_t{corr}};
    if (it->second.memcpy >= 0) memcpy_async_[key] = static_cast<std::uint8_t>(it->second.memcpy);
    if (it->second.event_record) record_calls_[key] = span.start;
  });
}

Status NsysImporter::import_kernels() {
  constexpr std::string_view table = "CUPTI_ACTIVITY_KIND_KERNEL";
  if (!has(table)) return {};
  static constexpr Col own[] = {
      {"demangledName", false}, {"shortName", true},           {"gridX", true},
      {"gridY", true},          {"gridZ", true},               {"blockX", true},
      {"blockY", true},         {"blockZ", true},              {"registersPerThread", true},
      {"staticSharedMemory", true}, {"dynamicSharedMemory", true}, {"graphId", false},
      {"graphNodeId", false}};
  enum : int {
    kDemangled = kDeviceColCount, kShort, kGridX, kGridY, kGridZ, kBlockX, kBlockY, kBlockZ,
    kRegs, kStaticSmem, kDynamicSmem, kGraphId, kGraphNode,
  };
  static constexpr auto cols = cat(kDeviceCols, own);
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    auto row = device_row(r, table);
    if (!row) return;
    StringId name = str(r, kDemangled);
    if (t_.strings.get(name).empty()) name = str(r, kShort);
    const auto u32 = [&](int c) { return static_cast<std::uint32_t>(r.i64_or(c, 0)); };
    const LaunchConfig lc{.grid_x = u32(kGridX), .grid_y = u32(kGridY), .grid_z = u32(kGridZ),
                          .block_x = u32(kBlockX), .block_y = u32(kBlockY), .block_z = u32(kBlockZ),
                          .registers = u32(kRegs),
                          .shared_static = u32(kStaticSmem), .shared_dynamic = u32(kDynamicSmem)};
    // graphId is exported by recent schemas; older ones only have graphNodeId, whose low bits
    // still tell "launched from a graph" apart from 0 = "not from a graph".
    std::uint32_t graph = u32(kGraphId);
    if (graph == 0 && r.i64_or(kGraphNode, 0) != 0) graph = u32(kGraphNode) != 0 ? u32(kGraphNode) : 1;

    auto& k = t_.kernels;
    k.push_span(row->span.start, row->span.dur, stream_track(row->pkey, row->device, row->stream), name);
    k.correlation.push_back(row->correlation);
    k.external_id.push_back(0);
    k.config.push_back(t_.intern_config(lc));
    k.graph_id.push_back(graph);
  });
}

Status NsysImporter::import_memcpys() {
  constexpr std::string_view table = "CUPTI_ACTIVITY_KIND_MEMCPY";
  if (!has(table)) return {};
  static constexpr Col own[] = {{"bytes", true}, {"copyKind", true}, {"srcKind", false}, {"dstKind", false}};
  enum : int { kBytes = kDeviceColCount, kCopyKind, kSrcKind, kDstKind };
  static constexpr auto cols = cat(kDeviceCols, own);
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    auto row = device_row(r, table);
    if (!row) return;
    const auto* kind = lookup(copy_kinds_, r, kCopyKind, table, "copyKind");
    const auto* src = lookup(mem_kinds_, r, kSrcKind, table, "srcKind");
    const auto* dst = lookup(mem_kinds_, r, kDstKind, table, "dstKind");
    std::uint8_t async = 2;  // unknown unless the issuing API call was seen
    if (auto it = memcpy_async_.find({row->pkey, row->correlation}); row->correlation != 0 && it != memcpy_async_.end())
      async = it->second;

    auto& m = t_.memcpys;
    m.push_span(row->span.start, row->span.dur, stream_track(row->pkey, row->device, row->stream), memcpy_name(kind, src, dst));
    m.bytes.push_back(static_cast<std::uint64_t>(r.i64_or(kBytes, 0)));
    m.correlation.push_back(row->correlation);
    m.direction.push_back(kind != nullptr ? kind->value : MemcpyDirection::Unknown);
    m.src_kind.push_back(src != nullptr ? src->value : MemoryKind::Unknown);
    m.dst_kind.push_back(dst != nullptr ? dst->value : MemoryKind::Unknown);
    m.async.push_back(async);
  });
}

Status NsysImporter::import_memsets() {
  constexpr std::string_view table = "CUPTI_ACTIVITY_KIND_MEMSET";
  if (!has(table)) return {};
  static constexpr Col own[] = {{"bytes", true}, {"value", false}, {"memKind", false}};
  enum : int { kBytes = kDeviceColCount, kValue, kMemKind };
  static constexpr auto cols = cat(kDeviceCols, own);
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    auto row = device_row(r, table);
    if (!row) return;
    const auto* mk = lookup(mem_kinds_, r, kMemKind, table, "memKind");
    const std::string name = "Memset (" + std::string(mk != nullptr ? mk->label : "Unknown") + ")";

    auto& m = t_.memsets;
    m.push_span(row->span.start, row->span.dur, stream_track(row->pkey, row->device, row->stream), t_.strings.intern(name));
    m.bytes.push_back(static_cast<std::uint64_t>(r.i64_or(kBytes, 0)));
    m.correlation.push_back(row->correlation);
    m.mem_kind.push_back(mk != nullptr ? mk->value : MemoryKind::Unknown);
    m.value.push_back(static_cast<std::uint32_t>(r.i64_or(kValue, 0)));
  });
}

Status NsysImporter::import_syncs() {
  constexpr std::string_view table = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
  if (!has(table)) return {};
  // globalTid is not in the documented schema (the host side is the correlated API call); it is
  // honoured if an export has it, so the wait lands on the waiting thread.
  static constexpr Col own[] = {{"syncType", true}, {"eventId", false}, {"globalTid", false}};
  enum : int { kSyncType = kDeviceColCount, kEventId, kTid };
  static constexpr auto cols = cat(kDeviceCols, own);
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    auto row = device_row(r, table);
    if (!row) return;
    const auto* type = lookup(sync_types_, r, kSyncType, table, "syncType");
    const std::uint32_t track = is_null(r, kTid) ? stream_track(row->pkey, row->device, row->stream)
                                                 : thread_track(r.i64(kTid));
    auto& s = t_.syncs;
    s.push_span(row->span.start, row->span.dur, track, t_.strings.intern(type != nullptr ? type->label : "Unknown Sync"));
    s.correlation.push_back(row->correlation);
    s.type.push_back(type != nullptr ? type->value : SyncType::Unknown);
    s.stream.push_back(row->stream);
    s.event.push_back(is_null(r, kEventId) ? -1 : id_or_unknown(r.i64(kEventId)));
  });
}

// Where each CUDA event was recorded (nsys's CUDA event trace): an event_record row on the
// recording stream with the record call's correlation id, which stream waits of the same event
// id then depend on (docs/trace-format.md, "syncs"), as the Kineto importer gives them.
Status NsysImporter::import_event_records() {
  constexpr std::string_view table = "CUPTI_ACTIVITY_KIND_CUDA_EVENT";
  if (!has(table)) return {};
  // `timestamp` (newer exports) is the device-side completion time, 0 unless collected.
  static constexpr Col cols[] = {{"deviceId", true}, {"streamId", true}, {"correlationId", false},
                                 {"globalPid", false}, {"eventId", true},  {"timestamp", false}};
  enum : int { kDevice, kStream, kCorr, kPid, kEvent, kTimestamp };
  const StringId name = t_.strings.intern("Event Record");
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    if (is_null(r, kDevice) || is_null(r, kStream) || is_null(r, kEvent) || is_null(r, kCorr)) {
      skip(table, "rows with NULL deviceId, streamId, eventId or correlationId");
      return;
    }
    const std::int64_t stream = id_or_unknown(r.i64(kStream)), event = id_or_unknown(r.i64(kEvent));
    const std::int64_t pkey = is_null(r, kPid) ? -1 : process_key(r.i64(kPid));
    const auto corr = static_cast<std::uint32_t>(r.i64(kCorr));
    if (stream < 0 || event < 0 || corr == 0) {
      skip(table, "rows without a stream, event or correlation id");
      return;
    }
    Ns at = r.i64_or(kTimestamp, 0);
    if (auto call = record_calls_.find({pkey, std::int64_t{corr}}); call != record_calls_.end()) at = call->second;
    if (at <= 0) {
      skip(table, "rows whose event record call is not in the export (no time to place them at)");
      return;
    }
    auto& s = t_.syncs;
    s.push_span(at, 0, stream_track(pkey, r.i64(kDevice), stream), name);
    s.correlation.push_back(corr);
    s.type.push_back(SyncType::EventRecord);
    s.stream.push_back(stream);
    s.event.push_back(event);
  });
}

Status NsysImporter::import_nvtx() {
  constexpr std::string_view table = "NVTX_EVENTS";
  if (!has(table)) return {};
  // NVTX event types (SQLite Schema Event Values)
  constexpr std::int64_t kMark = 34, kPushPop = 59, kStartEnd = 60, kDomainCreate = 75;
  static constexpr Col own[] = {{"eventType", true}, {"text", false}, {"textId", false}, {"domainId", false}};
  enum : int { kType = kHostColCount, kText, kTextId, kDomain };
  static constexpr auto cols = cat(kHostCols, own);

  const auto text_view = [&](const sql::Stmt& r) -> std::string_view {
    // `text` holds plain strings; strings registered with nvtxDomainRegisterString are in textId
    return is_null(r, kText) ? t_.strings.get(str(r, kTextId)) : r.text(kText);
  };
  const auto text_of = [&](const sql::Stmt& r) { return t_.strings.intern(text_view(r)); };
  // A range's name and args: PyTorch's "aten::mm, seq = 12, sizes = [...]" is split into the
  // op and its per-call arguments before the name is interned.
  const auto name_and_args = [&](const sql::Stmt& r) -> std::pair<StringId, StringId> {
    const auto [op, args] = split_annotation_name(text_view(r));
    return {t_.strings.intern(op), args.empty() ? 0 : t_.strings.intern(args)};
  };

  // Domain names first: a domain-create row names (process, domainId) for the whole capture.
  std::unordered_map<std::pair<std::int64_t, std::int64_t>, StringId, PairHash> domains;
  std::uint64_t domain_rows = 0;
  auto st = for_each_row(table, cols, [&](const sql::Stmt& r) {
    ++domain_rows;
    if (!is_null(r, kDomain))
      domains[{is_null(r, kGlobalTid) ? -1 : process_key(r.i64(kGlobalTid)), r.i64(kDomain)}] = text_of(r);
  }, "\"eventType\" = 75");
  if (!st) return st;
  if (domain_rows > 0)
    count(DiagnosticKind::Note, "NVTX_EVENTS: domain-create rows (eventType 75) applied as range domains",
          domain_rows);

  std::map<std::int64_t, std::uint64_t> other_types;
  st = for_each_row(table, cols, [&](const sql::Stmt& r) {
    const std::int64_t type = r.i64(kType);
    if (type == kDomainCreate) return;
    if (type != kMark && type != kPushPop && type != kStartEnd) {
      ++other_types[type];
      return;
    }
    if (is_null(r, 0)) {
      skip(table, "rows with NULL start");
      return;
    }
    if (is_null(r, kGlobalTid)) {
      skip(table, "rows with NULL globalTid (no thread to put them on)");
      return;
    }
    if (sqlite3_column_type(r.get(), 0) != SQLITE_INTEGER) {
      skip(table, "rows whose start or end is not an integer");
      return;
    }
    Span span{r.i64(0), 0};
    if (type != kMark) {  // an unterminated or inverted range is skipped by span_of
      auto s = span_of(r, table);
      if (!s) return;
      span = *s;
    }
    const std::int64_t gtid = r.i64(kGlobalTid);
    StringId domain = 0;  // the default domain, or one no domain-create row named
    if (!is_null(r, kDomain))
      if (auto it = domains.find({process_key(gtid), r.i64(kDomain)}); it != domains.end()) domain = it->second;

    const auto [name, args] = name_and_args(r);
    t_.ranges.push(span.start, span.dur, thread_track(gtid), name, type == kMark ? RangeKind::Instant : RangeKind::Nvtx,
                   domain, 0, args);
  });
  if (!st) return st;
  for (const auto& [type, n] : other_types) {
    const char* what = type == 33 ? " (category naming)" : type == 39 ? " (thread naming)"
                     : type == 76 ? " (domain destroy)" : "";
    count(DiagnosticKind::Skipped,
          "NVTX_EVENTS: rows of eventType " + std::to_string(type) + what + " not imported", n);
  }
  return {};
}

Status NsysImporter::import_osrt() {
  constexpr std::string_view table = "OSRT_API";
  if (!has(table)) return {};
  static constexpr Col own[] = {{"nameId", true}, {"returnValue", false}};
  enum : int { kName = kHostColCount, kReturn };
  static constexpr auto cols = cat(kHostCols, own);
  const StringId osrt = t_.strings.intern("osrt");
  return for_each_row(table, cols, [&](const sql::Stmt& r) {
    auto row = host_row(r, table);
    if (!row) return;
    const auto [span, track] = *row;
    OsrtFn fn{0, nullptr};
    if (!is_null(r, kName)) {
      auto [it, fresh] = osrt_fns_.try_emplace(r.i64(kName), OsrtFn{0, nullptr});
      if (fresh) {
        const StringId n = str(r, kName);
        it->second = OsrtFn{n, classify_io(t_.strings.get(n))};
      }
      fn = it->second;
    }
    if (fn.io == nullptr) {  // pthread_*, poll, sem_wait, ...: kept as generic host ranges
      t_.ranges.push(span.start, span.dur, track, fn.name, RangeKind::Other, osrt);
      return;
    }
    // OSRT_API records only the return value: arguments (fd, path, offset) and errno are not
    // exported (OSRT_ARGUMENTS is documented as experimental), so they stay unknown.
    const std::int64_t ret = r.i64_or(kReturn, -1);
    auto& io = t_.io_calls;
    io.push_span(span.start, span.dur, track, fn.name);
    io.op.push_back(fn.io->op);
    const bool is_fd = fn.io->result == IoResult::Fd && ret >= 0 && ret <= 0x7fffffff;
    io.fd.push_back(is_fd ? static_cast<std::int32_t>(ret) : -1);
    io.path.push_back(0);
    io.bytes.push_back(fn.io->result == IoResult::Bytes && ret >= 0 ? ret : -1);
    io.offset.push_back(fn.io->result == IoResult::Offset && ret >= 0 ? ret : -1);
    io.result.push_back(ret);
    io.err.push_back(0);
  });
}

// Every device allocation and free nsys saw -> the counter "cuda:<deviceId> memory.reserved" on
// the process's main thread: the bytes the process holds from the driver after the event (for
// PyTorch, its caching allocator's reserved memory; the analyzer's "Memory" reads it). Host kinds
// (pageable, pinned) are left out; frees of memory allocated before the capture began clamp at 0.
Status NsysImporter::import_memory_usage() {
  constexpr std::string_view table = "CUDA_GPU_MEMORY_USAGE_EVENTS";
  if (!has(table)) return {};
  static constexpr Col cols[] = {{"start", true},   {"globalPid", true}, {"deviceId", true},
                                 {"bytes", true},   {"memKind", true},   {"memoryOperationType", true}};
  enum : int { kAt, kPid, kDevice, kBytes, kKind, kOp };
  struct Change {
    Ns at;
    std::int64_t pkey, device, delta;
  };
  std::vector<Change> changes;
  auto st = for_each_row(table, cols, [&](const sql::Stmt& r) {
    const auto* mk = lookup(mem_kinds_, r, kKind, table, "memKind");
    if (mk == nullptr || mk->value == MemoryKind::Pageable || mk->value == MemoryKind::Pinned) return;
    const std::int64_t bytes = r.i64(kBytes), op = r.i64(kOp);
    if (is_null(r, kAt) || is_null(r, kPid) || bytes < 0 || (op != 0 && op != 1)) {
      skip(table, "rows with a NULL time or process, negative bytes or an unknown memoryOperationType");
      return;
    }
    changes.push_back({r.i64(kAt), process_key(r.i64(kPid)), r.i64(kDevice), op == 0 ? bytes : -bytes});
  });
  if (!st) return st;
  std::stable_sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.at < b.at; });
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> held;  // (process, device) -> bytes
  std::uint64_t clamped = 0;
  for (const auto& c : changes) {
    std::int64_t& h = held[{c.pkey, c.device}];
    h += c.delta;
    if (h < 0) h = 0, ++clamped;
    const std::int64_t main_tid = (c.pkey << 24) | (c.pkey & 0xFFFFFF);
    t_.counters.ts.push_back(c.at);
    t_.counters.track.push_back(thread_track(main_tid));
    t_.counters.name.push_back(t_.strings.intern("cuda:" + std::to_string(c.device) + " memory.reserved"));
    t_.counters.value.push_back(static_cast<double>(h));
  }
  if (clamped > 0) count(DiagnosticKind::Note, std::string(table) + ": frees of memory allocated before the capture", clamped);
  return {};
}

// Event tables this importer does not read (scheduling, sampling, GPU metrics, ...) are
// reported with their row counts, so nothing in the file disappears silently.
Status NsysImporter::count_unimported() {
  static const std::unordered_set<std::string_view> imported(std::begin(kEventTables), std::end(kEventTables));
  for (const auto& table : tables_) {
    if (imported.count(table) != 0 || table.starts_with("sqlite_")) continue;
    auto cols = columns_of(table);
    if (!cols) return make_error(cols.error());
    if (cols->count("start") == 0 && cols->count("timestamp") == 0) continue;  // reference table
    auto q = sql::Stmt::prepare(db_, "SELECT count(*) FROM " + sql_ident(table));
    if (!q) return make_error(src_ + ": cannot query " + table + ": " + q.error());
    if (q->step() != SQLITE_ROW) return make_error(src_ + ": reading " + table + ": " + sqlite3_errmsg(db_));
    if (const std::int64_t n = q->i64(0); n > 0)
      count(DiagnosticKind::Skipped, table + ": table not imported", static_cast<std::uint64_t>(n));
  }
  return {};
}

void NsysImporter::finish() {
  // GPUs the capture saw but no activity ran on stay visible in the device list.
  for (const auto& g : gpus_) {
    if (g.used) continue;
    Device d = g.props;
    d.index = static_cast<std::int32_t>(g.id);
    t_.add_device(std::move(d));
  }
  if (missing_strings_ > 0)
    count(DiagnosticKind::Skipped, "StringIds: referenced ids missing (names left empty)", missing_strings_);
  for (const auto& [key, n] : diag_) t_.add_diagnostic(key.first, src_, key.second, n);
}

Status NsysImporter::run() {
  if (auto st = load_schema(); !st) return st;
  if (!has("StringIds")) return make_error(src_ + ": not an Nsight Systems export (no StringIds table)");
  bool any = false;
  for (auto t : kEventTables) any = any || has(t);
  if (!any)
    return make_error(src_ + ": Nsight Systems export without CUDA, NVTX or OS runtime tables; nothing to import");
  static constexpr Col string_cols[] = {{"value", true}, {"id", true}};
  auto sq = select("StringIds", string_cols, "\"id\" = ?1");
  if (!sq) return make_error(sq.error());
  string_q_ = std::move(sq.value());

  for (auto step : {&NsysImporter::load_names, &NsysImporter::load_gpus, &NsysImporter::load_metadata})
    if (auto st = (this->*step)(); !st) return st;
  if (auto st = load_enum(copy_kinds_); !st) return st;
  if (auto st = load_enum(mem_kinds_); !st) return st;
  if (auto st = load_enum(sync_types_); !st) return st;
  // API calls first: memcpys look up whether their issuing call was asynchronous.
  if (auto st = import_api("CUPTI_ACTIVITY_KIND_RUNTIME", ApiKind::Runtime); !st) return st;
  if (auto st = import_api("CUPTI_ACTIVITY_KIND_DRIVER", ApiKind::Driver); !st) return st;
  for (auto step : {&NsysImporter::import_kernels, &NsysImporter::import_memcpys, &NsysImporter::import_memsets,
                    &NsysImporter::import_syncs, &NsysImporter::import_event_records, &NsysImporter::import_nvtx, &NsysImporter::import_osrt,
                    &NsysImporter::import_memory_usage, &NsysImporter::count_unimported})
    if (auto st = (this->*step)(); !st) return st;
  finish();
  return {};
}

}  // namespace

Status import_nsys(const std::filesystem::path& path, Trace& out) {
  const std::string source = path.string();
  auto db = sql::open_untrusted(source);
  if (!db) return make_error(db.error());
  // nsys timestamps are integer ns on the capture session's clock.
  if (out.clock_domain == "unknown") out.clock_domain = "nsys";
  else if (out.clock_domain != "nsys")
    out.add_diagnostic(DiagnosticKind::Note, source,
                       "nsys timestamps (ns on the capture session clock) merged into a trace on clock '" +
                           out.clock_domain + "' without re-basing");
  NsysImporter imp(out, db->get(), source);
  return imp.run();
}

}  // namespace tt::trace
