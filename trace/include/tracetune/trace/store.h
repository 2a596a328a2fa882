// The trace file: SQLite, schema v3 (docs/trace-format.md). write_trace() stores a Trace,
// read_trace() loads one back into the columnar model. Both sides list the columns once,
// in store.cpp, so they cannot drift apart.
#pragma once

#include <filesystem>
#include <optional>
#include <memory>
#include <span>
#include <vector>
#include <string_view>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::trace {

// Version 2 added ranges.args_id; version 3 clusters io_calls on (track_id, start_ns, id) and
// stores its dur_ns, end_ns becoming a generated column (store.cpp, TableDef). Files of every
// version from kOldestSchemaVersion on are read: a column newer than the file reads as its
// "none" value, a table in an older layout is read in that layout.
inline constexpr int kSchemaVersion = 3;
inline constexpr int kOldestSchemaVersion = 1;

// The DDL the writer starts from: the current schema's tables and enum tables, no indexes, and
// io_calls without its generated end_ns, which is added once its rows are in (store.cpp).
std::string_view schema_sql();

// Writes `t` (finalized on the way) to `path` atomically: a 0600 temporary in the same
// directory, renamed over `path` only when complete. `created_by` goes into meta.
Status write_trace(Trace& t, const std::filesystem::path& path, std::string_view created_by);

// A trace file written in parts, for a producer that cannot hold every event at once (`tracetune
// merge` of many hosts): the rows are those write_trace() writes for the whole trace when each
// part's tracks come after those of the parts before it (every table then stays sorted by
// (track, start)). The file appears, atomically, only when finish() succeeds; a writer destroyed
// before removes its temporary. Memory: SQLite's page caches (64 MiB for the file, 16 MiB for the
// staged table) and one part at a time; the rows of the clustered io_calls table are staged in a
// temporary file.
class TraceFileWriter {
 public:
  // `big_pages`: 64 KiB pages, which write_trace() takes for traces of over 200,000 events.
  static Result<std::unique_ptr<TraceFileWriter>> create(const std::filesystem::path& path, bool big_pages);
  ~TraceFileWriter();
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  // Appends the events of `part` (finalized here; its entities are not read: ids in it are
  // those of the whole trace). Ids continue from the rows of the parts before.
  Status append(Trace& part);
  // Moves every row on track k by shift_by_track[k], as shift_process_times() moves a trace.
  Status shift_times(std::span<const Ns> shift_by_track);
  // Writes everything but the events from `t` (meta, strings, processes, threads, devices,
  // streams, tracks, launch configs, diagnostics, Python frames and stacks), builds the indexes
  // and renames the file into place.
  Status finish(const Trace& t, std::string_view created_by);

 private:
  TraceFileWriter();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Which tracks' events to read (by track index; empty: all).
using TrackFilter = std::vector<char>;

// Loads a tracetune trace DB (opened read-only and defensively). The result is finalized.
// With `keep`, only the events of those tracks are read (the processes, threads, tracks and
// strings always are, so indices are those of the whole trace).
//
// With `later` (and no `keep`), the columns the timeline does not draw of the three big
// tables are left out of the first read: kernels' correlation, external_id, config and
// graph_id, api_calls' correlation, external_id, cbid, return_value and api, ranges' kind,
// domain, external_id and args (empty columns; the fixed columns, the ranges' depth and every
// other table are read). *later is then set to what read_trace_details() reads them with, and
// until it has, nothing may read those columns. A file whose rows finalize() must re-sort is
// read whole (*later left unset).
struct KeptConnections;  // read_trace's connections to the file, kept open (store.cpp)
struct PendingDetails {
  std::filesystem::path path;
  int version = 0;  // the file's schema version
  std::shared_ptr<KeptConnections> conns;  // the path may be removed or replaced meanwhile
};
Result<Trace> read_trace(const std::filesystem::path& path, const TrackFilter& keep = {},
                         std::optional<PendingDetails>* later = nullptr);

// Reads the columns read_trace() left out into `t` (which it returned, finalized) and checks
// them as read_trace() would have, on the connections read_trace() kept (as many threads as
// its parallel read had: the file it read, even when the path has been removed or replaced
// since). It writes only those columns:
// other threads may read the rest of `t` meanwhile. An error leaves them incomplete (not to be
// read).
Status read_trace_details(const PendingDetails& pending, Trace& t);

// What choosing the ranks of a trace DB needs, without reading its events: the processes,
// threads, devices, tracks, strings and steps, and per track its number of GPU ops (kernels,
// copies, sets) and host events (ranges, API and I/O calls). For an analysis that reads one
// share of the ranks (analyze --shard).
struct TrackEventCounts {
  std::uint64_t gpu_ops = 0, host = 0;
};
struct TraceOutline {
  Trace trace;                              // no events but the steps
  std::vector<TrackEventCounts> per_track;  // by track index
  std::uint64_t events = 0;                 // the whole trace's event_count()
};
Result<TraceOutline> read_trace_outline(const std::filesystem::path& path);

}  // namespace tt::trace
