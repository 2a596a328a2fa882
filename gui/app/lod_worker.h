// The LOD queries of the visible rows, computed off the GUI thread. The view submits a request
// on every view change; the worker keeps only the newest pending one (older ones are dropped
// unstarted) and hands each result to `deliver` on its own thread; the view then queues it to
// the GUI thread and draws the newest result it has, so the window never waits on a query.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "document.h"

namespace tt::gui {

struct RowLod {
  std::uint32_t row = 0;
  std::vector<std::vector<LodItem>> lanes;  // per lane
  std::vector<CounterColumn> counter;       // counter rows
};

struct LodResult {
  const Document* doc = nullptr;  // the document it was computed for
  std::uint64_t generation = 0;
  LodWindow window;
  std::vector<RowLod> rows;
  std::vector<int> slot;  // timeline row -> index into `rows`, -1 when not computed
  std::size_t items = 0;
  const RowLod* find(std::uint32_t row) const {
    return row < slot.size() && slot[row] >= 0 ? &rows[static_cast<std::size_t>(slot[row])] : nullptr;
  }
};

struct LodRequest {
  std::shared_ptr<const Document> doc;
  std::vector<std::uint32_t> rows;
  LodWindow window;
  std::uint64_t generation = 0;
};

// Runs the queries of one request in the calling thread: O(items · log n) per lane.
std::shared_ptr<const LodResult> compute_lod(const LodRequest& req);

class LodWorker {
 public:
  using Deliver = std::function<void(std::shared_ptr<const LodResult>)>;
  explicit LodWorker(Deliver deliver);
  ~LodWorker();
  LodWorker(const LodWorker&) = delete;
  LodWorker& operator=(const LodWorker&) = delete;

  void submit(LodRequest req);

 private:
  void run();
  Deliver deliver_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<LodRequest> pending_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace tt::gui
