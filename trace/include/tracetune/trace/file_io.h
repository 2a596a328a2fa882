// Reading inputs and writing outputs safely: whole-file reads with transparent gzip, and
// outputs that appear only when complete (temporary file + rename), private (0600), and
// never follow a planted symlink.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "tracetune/trace/result.h"

namespace tt::trace {

// An input path that names a regular file or a directory, checked with one stat (never an
// open, which blocks forever on a FIFO). Errors name the path and the problem: "no such file",
// "too many levels of symbolic links (a symlink loop)", "not a regular file (a FIFO)".
Status check_input_path(const std::filesystem::path& path);

// The .json and .json.gz files of a directory of Kineto ranks, sorted. An entry that cannot
// be resolved (a symlink loop, a dangling link) is an error naming it, never an exception.
Result<std::vector<std::filesystem::path>> list_trace_files(const std::filesystem::path& dir);

// Refuses an output that resolves to one of the inputs (same device and inode: a hard link,
// a symlink or another spelling of the path), or to a trace file inside an input directory:
// writing it would destroy the input. "OUT: is the input IN; write the output elsewhere".
Status check_output_not_input(std::span<const std::filesystem::path> inputs, const std::filesystem::path& output);

// The most bytes a gzip input may inflate to (a gzip bomb is refused as it inflates, before
// it can exhaust memory). Default: an eighth of the memory available at start (the text, the
// JSON parser's index of 4 bytes per text byte and the model must all fit), at least 256 MiB,
// at most 4 GiB - 1 (the JSON parser's limit). TRACETUNE_MAX_INFLATE (bytes, or with a K, M or
// G suffix; check_environment() refuses a malformed value) overrides the default; an InflateLimitScope lowers it for one load on one thread
// (the GUI's --memory-cap).
std::uint64_t inflate_limit();

// The size variables the trace module reads: the inflate limit above, and the size from which
// Kineto files are imported as a stream (TRACETUNE_STREAM_FROM_BYTES; 0: always).
inline constexpr const char* kMaxInflateVariable = "TRACETUNE_MAX_INFLATE";
inline constexpr const char* kStreamFromBytesVariable = "TRACETUNE_STREAM_FROM_BYTES";
// Both checked at once, before any work: a malformed value is an error naming the variable
// ("TRACETUNE_MAX_INFLATE: '12X' is not a size ..."), never silently the default.
Status check_environment();

// While alive, inflate_limit() on this thread is at most `bytes` (scopes nest).
class InflateLimitScope {
 public:
  explicit InflateLimitScope(std::uint64_t bytes);
  ~InflateLimitScope();
  InflateLimitScope(const InflateLimitScope&) = delete;
  InflateLimitScope& operator=(const InflateLimitScope&) = delete;

 private:
  std::uint64_t saved_;
};

// Reads a file, gunzipping it when it starts with the gzip magic (at most inflate_limit()
// bytes); the buffer carries simdjson's padding. Errors name the file ("FILE: truncated gzip
// stream"). FIFOs, sockets and devices are refused at once.
Result<simdjson::padded_string> read_maybe_gzip(const std::filesystem::path& path);

// A file's gzip magic and ISIZE trailer (the last member's size mod 2^32), read without
// loading the file: two small reads.
struct GzipProbe {
  bool gzip = false;
  std::uint64_t file_size = 0;
  std::uint32_t isize = 0;  // 0 when not gzip or too short to have a trailer
};
Result<GzipProbe> probe_gzip(const std::filesystem::path& path);

// Decompresses a complete gzip image (one or more members) held in memory; refused once the
// output would pass `max_out` bytes.
Result<std::string> gunzip(std::string_view data, std::uint64_t max_out = inflate_limit());

// An output target we may replace: one that does not exist, a regular file, or a symlink the
// rename replaces (never its target). A FIFO, socket, device or directory -- also behind a
// symlink -- is refused, so that `-o /dev/null` cannot replace the machine's /dev/null with a
// file: "PATH: not a regular file (a character device): refused as an output; ...".
Status check_output_target(const std::filesystem::path& path);

// A file being written that becomes `final_path` only on commit(). Until then the data sits
// in a 0600 temporary beside the target (same directory, so the rename is atomic); if the
// object is destroyed uncommitted the temporary is removed, so a failed run leaves no
// partial output and never clobbers an existing good file.
//
// The temporary is created with O_EXCL | O_NOFOLLOW and its descriptor is kept: writers write
// through fd() and never reopen it by name, so a symlink or file swapped in under the
// temporary's name (in a directory others can write) is never written through. commit() checks
// that the name still names the file we created and that the target is one we may replace
// (check_output_target), then renames. A writer that can only open by name (SQLite) calls
// check_temp() after opening it with SQLITE_OPEN_NOFOLLOW and before writing: see write_trace.
class AtomicOutput {
 public:
  static Result<AtomicOutput> create(const std::filesystem::path& final_path);
  AtomicOutput(AtomicOutput&&) noexcept;
  AtomicOutput& operator=(AtomicOutput&&) = delete;
  ~AtomicOutput();

  int fd() const { return fd_; }  // the temporary, open read-write
  const std::filesystem::path& temp_path() const { return temp_; }
  // All of `data` at the current offset of fd(); "FINAL: cannot write: No space left on device".
  Status write(std::string_view data);
  // The temporary's name still names the file we created (not a file or link swapped in).
  Status check_temp() const;
  Status commit();

 private:
  AtomicOutput(std::filesystem::path final_path, std::filesystem::path temp, int fd)
      : final_(std::move(final_path)), temp_(std::move(temp)), fd_(fd) {}
  std::filesystem::path final_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// `text` written to `path` through an AtomicOutput: the file appears whole or not at all.
// "PATH: cannot write: No space left on device" when the write fails.
Status write_file_atomic(const std::filesystem::path& path, std::string_view text);

// The directory of the running executable (/proc/self/exe), or empty when unknown: where
// installed helpers (preload libraries, plugins) are found relative to it.
std::filesystem::path self_exe_dir();

}  // namespace tt::trace
