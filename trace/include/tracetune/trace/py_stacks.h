// Python stack samples in the trace model (Trace::py_frames, py_stacks, py_samples): building
// the interned frame and stack tables, and reading a sample's stack back.
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::trace {

// Interns frames and stack nodes into a Trace, each once: what the merger uses, file after file
// (a builder made for a trace that already holds some indexes them first).
class PyStackBuilder {
 public:
  explicit PyStackBuilder(Trace& t);
  std::uint32_t frame(const PyFrame& f);                           // index into py_frames
  std::uint32_t node(std::uint32_t parent, std::uint32_t frame);  // index into py_stacks
  // The node of a stack given innermost frame first (frames: indices into py_frames); kNone
  // for an empty stack.
  std::uint32_t stack(const std::vector<std::uint32_t>& innermost_first);

 private:
  Trace& t_;
  std::map<std::tuple<StringId, StringId, std::int32_t>, std::uint32_t> frames_;
  std::unordered_map<std::uint64_t, std::uint32_t> nodes_;  // parent << 32 | frame
};

// The frames of the stack ending at `node`, innermost first (empty for kNone or a bad node).
std::vector<std::uint32_t> py_stack_frames(const Trace& t, std::uint32_t node);

// "function (file:line)" of a frame, the file shortened to its last two path components.
std::string py_frame_label(const Trace& t, std::uint32_t frame);

// The file's last two path components ("/a/b/data.py" -> "b/data.py").
std::string short_file(std::string_view path);

// Every sample as collapsed stacks (Brendan Gregg's format, which flamegraph.pl and speedscope
// read): one line per distinct (thread, stack), "process (pid N);thread label;outermost;...;innermost
// COUNT", frames as py_frame_label, lines sorted.
std::string to_collapsed_stacks(const Trace& t);

}  // namespace tt::trace
