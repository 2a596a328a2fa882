// The flame graph's sample tree (gui/lod/include/tracetune/gui/flame_graph.h) on hand-built samples.
#include "tracetune/gui/flame_graph.h"

#include <numeric>

#include <gtest/gtest.h>

#include "tracetune/trace/py_stacks.h"

namespace tt::gui {
namespace {

struct Samples {
  trace::Trace t;
  trace::PyStackBuilder b{t};
  std::uint32_t main = t.add_thread({trace::kNone, 1, "main"});
  std::uint32_t worker = t.add_thread({trace::kNone, 2, "worker"});
  std::uint32_t frame(std::string_view fn, std::string_view file, std::int32_t line) {
    return b.frame({t.strings.intern(fn), t.strings.intern(file), line});
  }
  void sample(const std::vector<std::uint32_t>& innermost_first, std::uint32_t on, int times = 1) {
    for (int i = 0; i < times; ++i) {
      t.py_samples.ts.push_back(static_cast<trace::Ns>(t.py_samples.size()));
      t.py_samples.track.push_back(on);
      t.py_samples.stack.push_back(innermost_first.empty() ? trace::kNone : b.stack(innermost_first));
    }
  }
  std::vector<std::uint32_t> all() const {
    std::vector<std::uint32_t> v(t.py_samples.size());
    std::iota(v.begin(), v.end(), 0u);
    return v;
  }
  std::string label(const FlameGraph& g, std::uint32_t node) const { return trace::py_frame_label(t, g.nodes[node].frame); }
};

TEST(FlameGraph, BuildsRootToLeafWithInclusiveAndSelfCounts) {
  Samples s;
  const auto module = s.frame("<module>", "/job/train.py", 60);
  const auto main = s.frame("main", "/job/train.py", 50);
  const auto hash = s.frame("hash_features", "/job/train.py", 27);
  const auto step = s.frame("step", "/venv/site-packages/torch/optim/sgd.py", 100);
  s.sample({hash, main, module}, s.main, 6);
  s.sample({step, main, module}, s.main, 3);
  s.sample({main, module}, s.main, 1);
  s.t.finalize();
  const FlameGraph g = build_flame_graph(s.t, s.all());
  ASSERT_EQ(g.nodes.size(), 5u);  // root, <module>, main, hash_features, step
  EXPECT_EQ(g.total(), 10u);
  EXPECT_EQ(g.max_depth, 3u);
  const FlameNode& root = g.nodes[0];
  ASSERT_EQ(root.children.size(), 1u);
  const std::uint32_t m = root.children[0];
  EXPECT_EQ(s.label(g, m), "<module> (job/train.py:60)");
  EXPECT_EQ(g.nodes[m].samples, 10u);
  EXPECT_EQ(g.nodes[m].self, 0u);
  const std::uint32_t mn = g.nodes[m].children.at(0);
  EXPECT_EQ(g.nodes[mn].samples, 10u);
  EXPECT_EQ(g.nodes[mn].self, 1u);
  ASSERT_EQ(g.nodes[mn].children.size(), 2u);
  const std::uint32_t h = g.nodes[mn].children[0], o = g.nodes[mn].children[1];  // widest first
  EXPECT_EQ(s.label(g, h), "hash_features (job/train.py:27)");
  EXPECT_EQ(g.nodes[h].samples, 6u);
  EXPECT_EQ(g.nodes[h].self, 6u);
  EXPECT_EQ(g.nodes[h].depth, 3u);
  EXPECT_DOUBLE_EQ(g.share(h), 0.6);
  EXPECT_DOUBLE_EQ(g.share(o), 0.3);
  // siblings laid side by side from their parent's start
  EXPECT_EQ(g.nodes[h].offset, 0u);
  EXPECT_EQ(g.nodes[o].offset, 6u);
  EXPECT_EQ(g.hottest_path(), (std::vector<std::uint32_t>{0, m, mn, h}));
  EXPECT_EQ(g.path_to(o), (std::vector<std::uint32_t>{0, m, mn, o}));
}

TEST(FlameGraph, MergesIdenticalFramesAcrossThreadsAndStackNodes) {
  Samples s;
  const auto loop = s.frame("_worker_loop", "/venv/site-packages/torch/utils/data/_utils/worker.py", 300);
  const auto aug = s.frame("augment", "/job/data.py", 88);
  s.sample({aug, loop}, s.main, 2);
  s.sample({aug, loop}, s.worker, 3);
  // the same frames interned twice (as two files merged without one builder would give): the
  // tree merges by function, file and line, not by frame or stack index
  const std::uint32_t loop2 = static_cast<std::uint32_t>(s.t.py_frames.size());
  s.t.py_frames.push_back(s.t.py_frames[loop]);
  s.t.py_stacks.push_back({trace::kNone, loop2});
  const std::uint32_t outer2 = static_cast<std::uint32_t>(s.t.py_stacks.size() - 1);
  s.t.py_stacks.push_back({outer2, aug});
  s.t.py_samples.ts.push_back(100);
  s.t.py_samples.track.push_back(s.worker);
  s.t.py_samples.stack.push_back(static_cast<std::uint32_t>(s.t.py_stacks.size() - 1));
  // another line of the same function is another frame
  s.sample({s.frame("augment", "/job/data.py", 90), loop}, s.worker, 1);
  s.t.finalize();
  const FlameGraph g = build_flame_graph(s.t, s.all());
  EXPECT_EQ(g.total(), 7u);
  ASSERT_EQ(g.nodes[0].children.size(), 1u);
  const FlameNode& l = g.nodes[g.nodes[0].children[0]];
  EXPECT_EQ(l.samples, 7u);
  ASSERT_EQ(l.children.size(), 2u);
  EXPECT_EQ(s.label(g, l.children[0]), "augment (job/data.py:88)");
  EXPECT_EQ(g.nodes[l.children[0]].samples, 6u);
  EXPECT_EQ(s.label(g, l.children[1]), "augment (job/data.py:90)");
  EXPECT_EQ(g.nodes[l.children[1]].samples, 1u);
}

TEST(FlameGraph, CountsOnlyTheSelectedSamples) {
  Samples s;
  const auto a = s.frame("a", "/job/x.py", 1);
  const auto b = s.frame("b", "/job/x.py", 2);
  s.sample({a}, s.main, 4);  // samples 0-3
  s.sample({b}, s.main, 4);  // samples 4-7
  s.t.finalize();
  const std::vector<std::uint32_t> some = {0, 1, 4};
  const FlameGraph g = build_flame_graph(s.t, some);
  EXPECT_EQ(g.total(), 3u);
  ASSERT_EQ(g.nodes[0].children.size(), 2u);
  EXPECT_EQ(s.label(g, g.nodes[0].children[0]), "a (job/x.py:1)");
  EXPECT_DOUBLE_EQ(g.share(g.nodes[0].children[0]), 2.0 / 3.0);
}

TEST(FlameGraph, EqualWidthsAreOrderedByName) {
  Samples s;
  s.sample({s.frame("zeta", "/job/x.py", 1)}, s.main, 2);
  s.sample({s.frame("alpha", "/job/x.py", 1)}, s.main, 2);
  s.t.finalize();
  const FlameGraph g = build_flame_graph(s.t, s.all());
  ASSERT_EQ(g.nodes[0].children.size(), 2u);
  EXPECT_EQ(s.label(g, g.nodes[0].children[0]), "alpha (job/x.py:1)");
  EXPECT_EQ(g.nodes[g.nodes[0].children[1]].offset, 2u);
}

TEST(FlameGraph, ASelectionWithoutSamplesIsAnEmptyRoot) {
  Samples s;
  s.sample({s.frame("a", "/job/x.py", 1)}, s.main, 2);
  s.t.finalize();
  const FlameGraph g = build_flame_graph(s.t, {});
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.total(), 0u);
  EXPECT_EQ(g.max_depth, 0u);
  EXPECT_EQ(g.share(0), 0.0);
  EXPECT_EQ(g.hottest_path(), std::vector<std::uint32_t>{0});
  const FlameGraph none = build_flame_graph(trace::Trace{}, {});
  EXPECT_EQ(none.total(), 0u);
}

TEST(FlameGraph, EmptyStacksAndBadIndicesCountForTheRootOnly) {
  Samples s;
  const auto a = s.frame("a", "/job/x.py", 1);
  s.sample({a}, s.main, 2);
  s.sample({}, s.main, 3);  // a thread with no Python frame
  s.t.finalize();
  std::vector<std::uint32_t> sel = s.all();
  sel.push_back(1000);  // not a sample
  const FlameGraph g = build_flame_graph(s.t, sel);
  EXPECT_EQ(g.total(), 6u);
  EXPECT_EQ(g.nodes[0].self, 4u);
  ASSERT_EQ(g.nodes[0].children.size(), 1u);
  EXPECT_EQ(g.nodes[g.nodes[0].children[0]].samples, 2u);
}

}  // namespace
}  // namespace tt::gui
