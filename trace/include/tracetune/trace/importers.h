// Importers turn traces other tools wrote into our Trace model.
//  - Kineto / PyTorch-profiler Chrome-trace JSON (plain or gzipped; a file, or a directory of
//    per-rank files), including the legacy 2021 categories.
//  - Nsight Systems SQLite exports.
// Nothing in an input is dropped silently: whatever is not imported is counted in
// Trace::diagnostics with the reason. Errors name the file and the problem on one line.
#pragma once

#include <filesystem>
#include <functional>
#include <vector>
#include <span>
#include <string_view>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::trace {

// Name prefix of a Kineto stream track made from a thread id because the events carried no
// stream id ("no stream id: tid 801").
inline constexpr std::string_view kNoStreamIdPrefix = "no stream id: tid";

enum class InputFormat { Unknown, KinetoJson, NsysSqlite, TracetuneDb, OtherSqlite };

// Sniffs a path: a directory of JSON files is Kineto; SQLite files are told apart by schema.
InputFormat detect_format(const std::filesystem::path& path);

// A Kineto file held in memory from 4 windows' size on is parsed in windows of about this size
// (kineto_import.cpp, "reading in windows"): the parser's memory is one window's, not the file's.
inline constexpr std::size_t kKinetoWindowBytes = std::size_t{4} << 20;

// Parses one Kineto JSON document already in memory (used by the file importer and fuzzers).
// `source` names it in errors and diagnostics; `rank_hint` is used when the file has no
// distributedInfo.rank (-1: unknown). `window_bytes`: the window size (tests read small inputs
// in small windows); the trace is the same whatever it is. On an error `out` holds no
// meaningful partial trace.
Status import_kineto_buffer(std::string_view json, std::string_view source, Trace& out,
                            int rank_hint = -1, std::size_t window_bytes = kKinetoWindowBytes);

// The files of a Kineto input: a directory's *.json / *.json.gz sorted by name (an error when
// it has none), or the path itself.
Result<std::vector<std::filesystem::path>> kineto_files(const std::filesystem::path& path);

// How far a streamed import has read: the file, and bytes of it read of its size.
using ImportProgress = std::function<void(const std::string& file, std::uint64_t read, std::uint64_t total)>;

// A file or a directory of per-rank files (rank from each file's distributedInfo). Files from
// 256 MiB on (gzip: 32 MiB) are read as a stream, in batches of events: memory is the trace
// model's, not the file's (TRACETUNE_STREAM_FROM_BYTES changes the size; docs/trace-format.md).
Status import_kineto(const std::filesystem::path& path, Trace& out, const ImportProgress& progress = {});

// An Nsight Systems SQLite export (opened read-only, defensively).
Status import_nsys(const std::filesystem::path& path, Trace& out);

// Any supported input, dispatched by detect_format(). Several inputs become one trace.
Status import_any(std::span<const std::filesystem::path> inputs, Trace& out, const ImportProgress& progress = {});

// What every reading command wants: our trace DB read directly, anything else imported on
// the fly; finalized either way.
Result<Trace> load_any(const std::filesystem::path& input);

}  // namespace tt::trace
