// Sorting what arrives as a few ascending runs (a rank's GPU ops gathered stream by stream and
// table by table, their ends stream by stream) in O(n log runs) instead of a full sort, with the
// very order std::sort gives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace tt::analyzer {

// Sorts v by `less` into the order std::sort(v.begin(), v.end(), less) gives. When v is made
// of at most max_runs strictly ascending runs, they are merged; when the merge has no two
// equivalent elements, that order is the only one any sort can give and it is kept. Otherwise
// (more runs, or equivalent elements, whose order std::sort leaves to its own partitioning)
// v is sorted with std::sort as it was, from its original order.
template <class T, class Less>
void sort_from_runs(std::vector<T>& v, Less less, std::size_t max_runs = 256) {
  std::vector<std::size_t> run_starts{0};
  for (std::size_t i = 1; i < v.size(); ++i) {
    if (less(v[i - 1], v[i])) continue;
    if (run_starts.size() == max_runs) {
      std::sort(v.begin(), v.end(), less);
      return;
    }
    run_starts.push_back(i);
  }
  if (run_starts.size() == 1) return;  // strictly ascending already
  struct Head {
    std::size_t at, end;
  };
  std::vector<Head> heads;  // a min-heap of the runs' first unmerged elements
  heads.reserve(run_starts.size());
  for (std::size_t r = 0; r < run_starts.size(); ++r)
    heads.push_back({run_starts[r], r + 1 < run_starts.size() ? run_starts[r + 1] : v.size()});
  const auto later = [&](const Head& a, const Head& b) { return less(v[b.at], v[a.at]); };
  std::make_heap(heads.begin(), heads.end(), later);
  std::vector<T> out;
  out.reserve(v.size());
  while (!heads.empty()) {
    std::pop_heap(heads.begin(), heads.end(), later);
    Head& h = heads.back();
    if (!out.empty() && !less(out.back(), v[h.at])) {  // two equivalent elements: std::sort's order
      std::sort(v.begin(), v.end(), less);
      return;
    }
    out.push_back(v[h.at]);
    if (++h.at < h.end) std::push_heap(heads.begin(), heads.end(), later);
    else heads.pop_back();
  }
  v.swap(out);
}

}  // namespace tt::analyzer
