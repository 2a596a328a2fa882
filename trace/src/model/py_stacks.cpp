#include "tracetune/trace/py_stacks.h"

#include <algorithm>
#include <map>

namespace tt::trace {

PyStackBuilder::PyStackBuilder(Trace& t) : t_(t) {
  for (std::uint32_t i = 0; i < t.py_frames.size(); ++i) {
    const PyFrame& f = t.py_frames[i];
    frames_.try_emplace({f.function, f.file, f.line}, i);
  }
  for (std::uint32_t i = 0; i < t.py_stacks.size(); ++i)
    nodes_.try_emplace(std::uint64_t{t.py_stacks[i].parent} << 32 | t.py_stacks[i].frame, i);
}

std::uint32_t PyStackBuilder::frame(const PyFrame& f) {
  const auto [it, added] = frames_.try_emplace({f.function, f.file, f.line}, static_cast<std::uint32_t>(t_.py_frames.size()));
  if (added) t_.py_frames.push_back(f);
  return it->second;
}

std::uint32_t PyStackBuilder::node(std::uint32_t parent, std::uint32_t frame) {
  const auto [it, added] = nodes_.try_emplace(std::uint64_t{parent} << 32 | frame, static_cast<std::uint32_t>(t_.py_stacks.size()));
  if (added) t_.py_stacks.push_back({parent, frame});
  return it->second;
}

std::uint32_t PyStackBuilder::stack(const std::vector<std::uint32_t>& innermost_first) {
  std::uint32_t at = kNone;
  for (auto f = innermost_first.rbegin(); f != innermost_first.rend(); ++f) at = node(at, *f);
  return at;
}

std::vector<std::uint32_t> py_stack_frames(const Trace& t, std::uint32_t node) {
  std::vector<std::uint32_t> out;
  // A well-formed tree has no cycle; the bound keeps a damaged one from looping.
  while (node < t.py_stacks.size() && out.size() <= t.py_stacks.size()) {
    out.push_back(t.py_stacks[node].frame);
    node = t.py_stacks[node].parent;
  }
  return out;
}

std::string short_file(std::string_view path) {
  const auto last = path.rfind('/');
  if (last == std::string_view::npos || last == 0) return std::string(path);
  const auto before = path.rfind('/', last - 1);
  return std::string(before == std::string_view::npos ? path : path.substr(before + 1));
}

std::string py_frame_label(const Trace& t, std::uint32_t frame) {
  if (frame >= t.py_frames.size()) return "?";
  const PyFrame& f = t.py_frames[frame];
  std::string s(t.strings.get(f.function));
  if (s.empty()) s = "?";
  s += " (" + short_file(t.strings.get(f.file));
  if (f.line >= 0) s += ":" + std::to_string(f.line);
  return s + ")";
}

}  // namespace tt::trace

namespace tt::trace {

namespace {
std::string fmt_process(const Process& p) {
  return (p.name.empty() ? std::string("process") : p.name) + " (pid " + std::to_string(p.pid) + ")";
}
// A frame name safe for the collapsed format: ';' separates frames, a newline ends the line.
std::string collapsed_name(std::string s) {
  for (char& c : s)
    if (c == ';' || c == '\n' || c == '\r') c = ':';
  return s;
}
}  // namespace

std::string to_collapsed_stacks(const Trace& t) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint64_t> counts;  // (track, stack) -> samples
  for (std::size_t i = 0; i < t.py_samples.size(); ++i) ++counts[{t.py_samples.track[i], t.py_samples.stack[i]}];
  std::vector<std::string> lines;
  for (const auto& [key, n] : counts) {
    std::string line;
    if (const std::uint32_t p = t.process_of_track(key.first); p != kNone && p < t.processes.size()) {
      const Process& pr = t.processes[p];
      line = collapsed_name(fmt_process(pr)) + ";";
    }
    line += collapsed_name(t.track_label(key.first));
    const std::vector<std::uint32_t> frames = py_stack_frames(t, key.second);
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) line += ";" + collapsed_name(py_frame_label(t, *f));
    lines.push_back(line + " " + std::to_string(n));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

}  // namespace tt::trace
