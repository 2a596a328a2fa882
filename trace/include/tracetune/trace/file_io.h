// Reading inputs and writing outputs safely: whole-file reads with transparent gzip, and
// outputs that appear only when complete (temporary file + rename), private (0600), and
// never follow a planted symlink.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include <simdjson.h>

#include "tracetune/trace/result.h"

namespace tt::trace {

// Reads a file, gunzipping it when it starts with the gzip magic; the buffer carries
// simdjson's padding. Errors name the file ("FILE: truncated gzip stream").
Result<simdjson::padded_string> read_maybe_gzip(const std::filesystem::path& path);

// A file's gzip magic and ISIZE trailer (the last member's size mod 2^32), read without
// loading the file: two small reads.
struct GzipProbe {
  bool gzip = false;
  std::uint64_t file_size = 0;
  std::uint32_t isize = 0;  // 0 when not gzip or too short to have a trailer
};
Result<GzipProbe> probe_gzip(const std::filesystem::path& path);

// Decompresses a complete gzip image (one or more members) held in memory.
Result<std::string> gunzip(std::string_view data);

// A file being written that becomes `final_path` only on commit(). Until then the data sits
// in a 0600 temporary beside the target (same directory, so the rename is atomic); if the
// object is destroyed uncommitted the temporary is removed, so a failed run leaves no
// partial output and never clobbers an existing good file.
class AtomicOutput {
 public:
  static Result<AtomicOutput> create(const std::filesystem::path& final_path);
  AtomicOutput(AtomicOutput&&) noexcept;
  AtomicOutput& operator=(AtomicOutput&&) = delete;
  ~AtomicOutput();

  const std::filesystem::path& temp_path() const { return temp_; }
  Status commit();

 private:
  AtomicOutput(std::filesystem::path final_path, std::filesystem::path temp)
      : final_(std::move(final_path)), temp_(std::move(temp)) {}
  std::filesystem::path final_, temp_;
  bool committed_ = false;
};

}  // namespace tt::trace
