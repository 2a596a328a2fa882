// Estimating a trace's memory before reading it (estimate.h).
//
// Measured on this project's machine (2025, the Kineto files of tests/data/corpus, model bytes =
// Trace::event_bytes() after import, JSON bytes = the uncompressed text):
//
//   file (JSON MB)                 model B per JSON B   gzip ratio
//   mtia_rank_0 (86.9)                   0.070             29.3
//   a100_rank0_of16 (25.8)               0.145             18.6
//   resnet_rtx2080ti (25.8)              0.149             16.0
//   linear (21.1)                        0.158             17.8
//   ns_resolution_rank_0 (15.4)          0.166             13.3
//   nccl_data (9.8)                      0.148             13.0
//   mtia_inference_rank_0 (4.8)          0.162             14.2
//   dlrm_8rank/rank-* (0.9 each)         0.21-0.23         16.8-17.5
//   files under 0.4 MB                   0.4-4.3 (the ~70 KB of fixed tables dominate)   7.5-12.9
//
// The estimate uses the lowest multi-MB figure (0.07) so that it errs low, and 13x (the lowest
// gzip ratio of a multi-MB file) when ISIZE has wrapped.
//
// For a tracetune DB, max(id) of each event table is its row count (the writer numbers rows
// densely from 1) and costs one b-tree descent: 1 ms warm, 8 ms with a cold page cache for
// five tables of a 10M-event, 608 MB DB, where count(*) took 40 ms warm and 320 ms cold (it
// reads every page of the table). nsys exports are counted the same way (max(rowid)). io_calls
// has no rowid from schema 3 on (it is clustered on (track_id, start_ns, id)); the writer
// numbers its rows in that order, so the id of its last row in that order is the count, one
// descent in either layout (through io_calls_track_time before schema 3).
#include "tracetune/trace/estimate.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "sqlite_util.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/model.h"

namespace tt::trace {
namespace fs = std::filesystem;

namespace {

struct CountedTable {
  std::string_view name;
  std::size_t row_bytes;
  std::string_view rows_sql = {};  // the query of its row count; empty: max(rowid)
};

constexpr std::string_view kIoCallsRows =
    "SELECT (SELECT id FROM io_calls ORDER BY track_id DESC, start_ns DESC, id DESC LIMIT 1)";  // NULL when empty

// Rows of each table that exists (max(rowid) or its rows_sql; 0 for an empty or absent table)
// times its bytes.
// `chunked`: the reader loads each table in parallel chunks and then concatenates them, so it
// briefly holds the largest table twice (read_trace); the nsys importer appends row by row.
Result<LoadEstimate> estimate_sqlite(const fs::path& path, std::span<const CountedTable> tables, bool chunked) {
  auto db = sql::open_untrusted(path.string());
  if (!db) return make_error(db.error());
  LoadEstimate e;
  std::uint64_t largest = 0;
  int counted = 0;
  for (const auto& t : tables) {
    auto exists = sql::Stmt::prepare(db->get(), "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1");
    if (!exists) return make_error(path.string() + ": " + exists.error());
    exists->bind(1, t.name);
    if (exists->step() != SQLITE_ROW) continue;
    // the name is one of ours, not the file's: no quoting needed
    const std::string sql = t.rows_sql.empty() ? fmt::format("SELECT max(rowid) FROM \"{}\"", t.name) : std::string(t.rows_sql);
    auto q = sql::Stmt::prepare(db->get(), sql);
    if (!q) return make_error(fmt::format("{}: {}: {}", path.string(), t.name, q.error()));
    if (q->step() != SQLITE_ROW) return make_error(fmt::format("{}: {}: {}", path.string(), t.name, db->errmsg()));
    const auto rows = static_cast<std::uint64_t>(std::max<std::int64_t>(0, q->i64_or(0, 0)));
    e.events += rows;
    e.model_bytes += rows * t.row_bytes;
    largest = std::max<std::uint64_t>(largest, rows * t.row_bytes);
    ++counted;
  }
  e.transient_bytes = chunked ? largest : 0;
  e.basis = fmt::format("rows of {} event tables, estimated before reading", counted);
  return e;
}

Result<LoadEstimate> estimate_kineto(const fs::path& path) {
  std::error_code ec;
  std::vector<fs::path> files;
  if (fs::is_directory(path, ec)) {  // the files import_kineto reads
    auto listed = list_trace_files(path);
    if (!listed) return make_error(listed.error());
    files = std::move(listed.value());
  } else {
    files.push_back(path);
  }
  LoadEstimate e;
  bool wrapped = false;
  for (const auto& f : files) {
    auto probe = probe_gzip(f);
    if (!probe) return make_error(probe.error());
    const std::uint64_t size = probe->file_size;
    std::uint64_t text = size, held = 2 * size;  // plain JSON: read, then copied into the parser's padded buffer
    if (probe->gzip) {
      text = probe->isize;
      if (static_cast<double>(text) < kMinPlausibleGzipRatio * static_cast<double>(size)) {
        text = static_cast<std::uint64_t>(kKinetoGzipRatio * static_cast<double>(size));
        wrapped = true;
      }
      held = size + text;  // the compressed file and the text it inflates to
    }
    e.model_bytes += static_cast<std::uint64_t>(kKinetoModelBytesPerJsonByte * static_cast<double>(text));
    e.transient_bytes = std::max(e.transient_bytes, held);  // one file's text at a time
  }
  e.basis = fmt::format("{} of JSON{}, estimated before reading", files.size() == 1 ? "the size" : "the sizes",
                        wrapped ? " (gzip size field wrapped: guessed from the compressed size)" : "");
  return e;
}

}  // namespace

Result<LoadEstimate> estimate_load(const fs::path& path) {
  const RowBytes b = row_bytes();
  switch (detect_format(path)) {
    case InputFormat::TracetuneDb: {
      const CountedTable tables[] = {{"kernels", b.kernels},   {"memcpys", b.memcpys},         {"memsets", b.memsets},
                                     {"api_calls", b.api_calls}, {"syncs", b.syncs},           {"ranges", b.ranges},
                                     {"steps", b.steps},       {"collectives", b.collectives}, {"io_calls", b.io_calls, kIoCallsRows},
                                     {"counters", b.counters}, {"flows", b.flows}};
      return estimate_sqlite(path, tables, true);
    }
    case InputFormat::NsysSqlite: {
      // every row of these becomes one event (OSRT calls: an I/O call or a range; the smaller is counted)
      const CountedTable tables[] = {{"CUPTI_ACTIVITY_KIND_KERNEL", b.kernels},
                                     {"CUPTI_ACTIVITY_KIND_MEMCPY", b.memcpys},
                                     {"CUPTI_ACTIVITY_KIND_MEMSET", b.memsets},
                                     {"CUPTI_ACTIVITY_KIND_RUNTIME", b.api_calls},
                                     {"CUPTI_ACTIVITY_KIND_DRIVER", b.api_calls},
                                     {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", b.syncs},
                                     {"NVTX_EVENTS", b.ranges},
                                     {"OSRT_API", std::min(b.ranges, b.io_calls)}};
      return estimate_sqlite(path, tables, false);
    }
    case InputFormat::KinetoJson: return estimate_kineto(path);
    default: return make_error(path.string() + ": not a trace tracetune can open");
  }
}

}  // namespace tt::trace
