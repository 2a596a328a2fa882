// Inside the analyzer: ranks analysed in parallel (not a public header).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace tt::analyzer {

// Runs worker(take) on min(threads, items) threads, this one among them (threads 0: one per
// core). Each worker keeps its own state across items and loops `for (std::size_t i; take(i);)`
// over the item indices, each handed to exactly one worker.
template <class Worker>
void parallel_items(std::size_t items, unsigned threads, Worker&& worker) {
  std::atomic<std::size_t> next{0};
  auto take = [&](std::size_t& i) { return (i = next.fetch_add(1)) < items; };
  unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  n = static_cast<unsigned>(std::min<std::size_t>(n, items));
  std::vector<std::thread> pool;
  for (unsigned i = 1; i < n; ++i) pool.emplace_back([&] { worker(take); });
  worker(take);
  for (auto& th : pool) th.join();
}

}  // namespace tt::analyzer
