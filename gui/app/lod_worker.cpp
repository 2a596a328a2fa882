#include "lod_worker.h"

namespace tt::gui {

std::shared_ptr<const LodResult> compute_lod(const LodRequest& req) {
  auto res = std::make_shared<LodResult>();
  res->doc = req.doc.get();
  res->generation = req.generation;
  res->window = req.window;
  if (!req.doc) return res;
  const auto& idx = req.doc->index;
  res->slot.assign(idx.rows.size(), -1);
  res->rows.reserve(req.rows.size());
  for (auto r : req.rows) {
    if (r >= idx.rows.size() || res->slot[r] >= 0) continue;
    const auto& row = idx.rows[r];
    RowLod out;
    out.row = r;
    if (row.table == Table::Counters) {
      counter_query(req.doc->trace.counters, row.counter, req.window, out.counter);
      res->items += out.counter.size();
    } else {
      out.lanes.resize(row.lanes.size());
      for (std::size_t l = 0; l < row.lanes.size(); ++l) {
        lod_query(row.lanes[l], req.window, out.lanes[l]);
        res->items += out.lanes[l].size();
      }
    }
    res->slot[r] = static_cast<int>(res->rows.size());
    res->rows.push_back(std::move(out));
  }
  return res;
}

LodWorker::LodWorker(Deliver deliver) : deliver_(std::move(deliver)), thread_([this] { run(); }) {}

LodWorker::~LodWorker() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void LodWorker::submit(LodRequest req) {
  {
    std::lock_guard lock(mu_);
    pending_ = std::move(req);  // an unstarted older request is superseded
  }
  cv_.notify_one();
}

void LodWorker::run() {
  for (;;) {
    LodRequest req;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stop_ || pending_.has_value(); });
      if (stop_) return;
      req = std::move(*pending_);
      pending_.reset();
    }
    auto res = compute_lod(req);
    deliver_(std::move(res));
  }
}

}  // namespace tt::gui
