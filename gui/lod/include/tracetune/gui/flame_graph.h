// The flame graph of a set of Python stack samples (Trace::py_samples; docs/gui.md, "Flame
// graph"): the samples' stacks merged into one tree, root (every sample) → outermost frames →
// ... → innermost frames, where a node is a frame under its caller's node and its width is the
// samples whose stack passes through it. Frames are identical when their function, file and
// line are: two stacks through the same calls share their nodes, whatever thread or process
// took them. No Qt: the GUI's flame view draws it, the tests check it directly.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "tracetune/trace/model.h"

namespace tt::gui {

struct FlameNode {
  std::uint32_t frame = trace::kNone;   // index into Trace::py_frames; kNone for the root
  std::uint32_t parent = trace::kNone;  // kNone for the root
  std::uint32_t depth = 0;              // the root is 0, outermost frames 1
  std::uint64_t samples = 0;            // samples whose stack passes through this node
  std::uint64_t self = 0;               // samples whose innermost frame this node is
  std::uint64_t offset = 0;             // where it starts, in samples from the root's start
  std::vector<std::uint32_t> children;  // most samples first; ties by function, file, line
};

struct FlameGraph {
  std::vector<FlameNode> nodes;  // nodes[0] is the root; a child always after its parent
  std::uint32_t max_depth = 0;   // of the deepest node (0: no samples)

  std::uint64_t total() const { return nodes.empty() ? 0 : nodes[0].samples; }
  // The node's samples over the root's (0 when there are none).
  double share(std::uint32_t node) const;
  // The nodes from the root down to `node`, root first.
  std::vector<std::uint32_t> path_to(std::uint32_t node) const;
  // The widest child at each level from `node` down (the hottest path), `node` first.
  std::vector<std::uint32_t> hottest_path(std::uint32_t node = 0) const;
};

// The tree of `samples` (indices into t.py_samples; out-of-range indices and samples with an
// empty stack count for the root only). An empty list gives a root with 0 samples.
FlameGraph build_flame_graph(const trace::Trace& t, std::span<const std::uint32_t> samples);

}  // namespace tt::gui
