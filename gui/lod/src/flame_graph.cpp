#include "tracetune/gui/flame_graph.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "tracetune/trace/py_stacks.h"

namespace tt::gui {

namespace {

// The (function, file, line) a node merges by, as one hashable key under its parent.
struct ChildKey {
  std::uint32_t parent;
  trace::StringId function, file;
  std::int32_t line;
  bool operator==(const ChildKey&) const = default;
};
struct ChildKeyHash {
  std::size_t operator()(const ChildKey& k) const {
    std::uint64_t h = k.parent;
    for (std::uint64_t v : {std::uint64_t(k.function), std::uint64_t(k.file), std::uint64_t(std::uint32_t(k.line))})
      h = (h ^ v) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull;
    return static_cast<std::size_t>(h);
  }
};

class TreeBuilder {
 public:
  explicit TreeBuilder(const trace::Trace& t) : t_(t), leaf_of_stack_(t.py_stacks.size(), trace::kNone) {
    g_.nodes.emplace_back();  // the root
  }

  // The node of the stack ending at py_stacks node `stack` (the root for an empty stack).
  std::uint32_t leaf(std::uint32_t stack) {
    if (stack >= leaf_of_stack_.size()) return 0;
    std::uint32_t& memo = leaf_of_stack_[stack];
    if (memo != trace::kNone) return memo;
    std::uint32_t node = 0;
    const std::vector<std::uint32_t> frames = trace::py_stack_frames(t_, stack);  // innermost first
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) node = child(node, *f);
    return memo = node;
  }

  FlameGraph finish() {
    for (std::size_t i = g_.nodes.size(); i-- > 1;) g_.nodes[g_.nodes[i].parent].samples += g_.nodes[i].samples;
    for (FlameNode& n : g_.nodes) sort_children(n);
    lay_out();
    return std::move(g_);
  }

  FlameGraph& graph() { return g_; }

 private:
  std::uint32_t child(std::uint32_t parent, std::uint32_t frame) {
    if (frame >= t_.py_frames.size()) return parent;  // a damaged trace: the frame is left out
    const trace::PyFrame& f = t_.py_frames[frame];
    const auto [it, added] = children_.try_emplace(ChildKey{parent, f.function, f.file, f.line},
                                                   static_cast<std::uint32_t>(g_.nodes.size()));
    if (added) {
      FlameNode n;
      n.frame = frame;
      n.parent = parent;
      n.depth = g_.nodes[parent].depth + 1;
      g_.max_depth = std::max(g_.max_depth, n.depth);
      g_.nodes.push_back(std::move(n));
      g_.nodes[parent].children.push_back(it->second);
    }
    return it->second;
  }

  void sort_children(FlameNode& n) {
    auto key = [&](std::uint32_t c) {
      const trace::PyFrame& f = t_.py_frames[g_.nodes[c].frame];
      return std::tuple(t_.strings.get(f.function), t_.strings.get(f.file), f.line);
    };
    std::sort(n.children.begin(), n.children.end(), [&](std::uint32_t a, std::uint32_t b) {
      const std::uint64_t sa = g_.nodes[a].samples, sb = g_.nodes[b].samples;
      return sa != sb ? sa > sb : key(a) < key(b);
    });
  }

  // Each child starts where its previous sibling ends, the first at its parent's start.
  void lay_out() {
    for (FlameNode& n : g_.nodes) {  // parents come before their children
      std::uint64_t at = n.offset;
      for (std::uint32_t c : n.children) {
        g_.nodes[c].offset = at;
        at += g_.nodes[c].samples;
      }
    }
  }

  const trace::Trace& t_;
  FlameGraph g_;
  std::vector<std::uint32_t> leaf_of_stack_;
  std::unordered_map<ChildKey, std::uint32_t, ChildKeyHash> children_;
};

}  // namespace

double FlameGraph::share(std::uint32_t node) const {
  if (node >= nodes.size() || total() == 0) return 0;
  return static_cast<double>(nodes[node].samples) / static_cast<double>(total());
}

std::vector<std::uint32_t> FlameGraph::path_to(std::uint32_t node) const {
  std::vector<std::uint32_t> path;
  for (std::uint32_t n = node; n < nodes.size(); n = nodes[n].parent) path.push_back(n);
  std::reverse(path.begin(), path.end());
  return path;
}

std::vector<std::uint32_t> FlameGraph::hottest_path(std::uint32_t node) const {
  std::vector<std::uint32_t> path;
  for (std::uint32_t n = node; n < nodes.size();) {
    path.push_back(n);
    n = nodes[n].children.empty() ? trace::kNone : nodes[n].children.front();
  }
  return path;
}

FlameGraph build_flame_graph(const trace::Trace& t, std::span<const std::uint32_t> samples) {
  TreeBuilder b(t);
  for (std::uint32_t i : samples) {
    const std::uint32_t node = i < t.py_samples.size() ? b.leaf(t.py_samples.stack[i]) : 0;
    ++b.graph().nodes[node].self;
    ++b.graph().nodes[node].samples;
  }
  return b.finish();
}

}  // namespace tt::gui
