// Interned strings for the columnar trace: every event name, path and domain is stored once
// and events hold a 32-bit id. Id 0 is always the empty string.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tt::trace {

using StringId = std::uint32_t;

class StringTable {
 public:
  StringTable();
  StringTable(StringTable&&) noexcept;
  StringTable& operator=(StringTable&&) noexcept;
  ~StringTable();

  // Invalid UTF-8 is interned as valid_utf8(s): every name in a trace is valid UTF-8.
  StringId intern(std::string_view s);
  // The id of `s` if interned, else kNotFound.
  StringId find(std::string_view s) const;
  std::string_view get(StringId id) const { return views_[id]; }
  std::size_t size() const { return views_.size(); }
  std::size_t bytes() const;  // heap held by the table

  static constexpr StringId kNotFound = 0xffffffffu;

 private:
  void grow();
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::size_t block_used_ = 0, block_cap_ = 0;
  std::vector<std::string_view> views_;
  std::vector<std::uint32_t> slots_;  // open addressing; value = id + 1, 0 = empty
  std::vector<std::uint32_t> hashes_;  // hash per id, for rehashing without recomputing
};

// Names, hosts and paths reach the trace, its JSON and the GUI from files anyone can craft
// (record files, nsys exports, tampered DBs): invalid UTF-8 becomes U+FFFD, byte by byte
// (overlong forms and surrogates included). Valid text comes back unchanged.
std::string valid_utf8(std::string_view in);
// The offset of the first byte that is not part of valid UTF-8, or npos.
std::size_t first_invalid_utf8(std::string_view in);

// "a,b,,c" -> {"a", "b", "", "c"}: every item between separators, empty ones included (an
// empty text is one empty item), as views into `text`. For command-line lists.
std::vector<std::string_view> split_list(std::string_view text, char sep = ',');

// A framework annotation's name split into the op and the arguments it carried: PyTorch names
// its NVTX ranges "aten::mm, seq = 12, op_id = 7, sizes = [[2, 3], [3, 4]]", a distinct name
// per call. The op is what precedes the first ", <identifier> = "; `args` the rest (empty
// when the name carries none, or when nothing precedes it).
struct AnnotationName {
  std::string_view op, args;
};
AnnotationName split_annotation_name(std::string_view name);

}  // namespace tt::trace
