#include "document.h"

#include <chrono>
#include <optional>
#include <new>

#include <fmt/format.h>
#include <unistd.h>

#include "tracetune/trace/estimate.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

namespace tt::gui {

std::uint64_t default_memory_cap() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4 * 3;
}

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string over_cap_message(const std::filesystem::path& path, std::size_t bytes, std::size_t events, std::uint64_t cap) {
  return fmt::format(
      "{}: this trace needs about {} MiB in memory for {} events, over the memory cap of {} MiB. "
      "Open it on a machine with more memory, or raise the cap with --memory-cap MiB.",
      path.string(), bytes >> 20, events, cap >> 20);
}

}  // namespace

Document::~Document() {
  if (details_.valid()) details_.wait();  // the read writes into `trace`
}

const Status& Document::wait_details() const {
  static const Status kWhole;
  return details_.valid() ? details_.get() : kWhole;
}

bool Document::details_failed(std::string* why) const {
  if (!details_.valid() || details_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
  const Status& st = details_.get();
  if (!st && why != nullptr) *why = st.error();
  return !st;
}

void Document::read_details_later(trace::PendingDetails pending, std::uint64_t memory_cap_bytes,
                                  std::shared_future<void> start) {
  details_ = std::async(std::launch::async, [this, pending = std::move(pending), memory_cap_bytes, start]() mutable -> Status {
               if (start.valid()) start.wait();
               auto read = trace::read_trace_details(pending, trace);
               // closes the file now (its page caches, and its disk space if it was removed): the
               // shared state keeps this function as long as the document
               pending.conns.reset();
               if (!read) return read;
               // this thread alone changes the model's size: its bytes can be counted here
               if (memory_cap_bytes && trace.event_bytes() > memory_cap_bytes)
                 return make_error(over_cap_message(path, trace.event_bytes(), trace.event_count(), memory_cap_bytes));
               return {};
             }).share();
}

const analyzer::Analysis& Document::analysis() const {
  static const analyzer::Analysis kEmpty;
  // The attached report lives as long as the document: references stay valid.
  const auto a = attached_.load();
  return a ? a->analysis : kEmpty;
}

double Document::analyze_seconds() const {
  const auto a = attached_.load();
  return a ? a->seconds : 0;
}

void Document::attach_analysis(analyzer::Analysis a, double seconds) const {
  analyzer::StepPieces pieces;
  if (a.options.path_pieces) {  // one place for the overlay to read them from
    for (auto& r : a.metrics.ranks) {
      pieces.emplace_back();
      for (auto& p : r.paths) pieces.back().push_back(std::move(p.pieces));
    }
  }
  auto fresh = std::make_shared<const Attached>(Attached{std::move(a), seconds, std::move(pieces)});
  std::shared_ptr<const Attached> none;
  attached_.compare_exchange_strong(none, std::move(fresh));  // first one wins
}

const analyzer::StepPieces* Document::path_pieces() const {
  // the attached report and pieces live as long as the document: the pointer stays valid
  const auto a = attached_.load();
  if (!a) return nullptr;
  if (a->analysis.options.path_pieces) return &a->pieces;
  return later_pieces_.load().get();
}

void Document::attach_path_pieces(analyzer::StepPieces pieces) const {
  auto fresh = std::make_shared<const analyzer::StepPieces>(std::move(pieces));
  std::shared_ptr<const analyzer::StepPieces> none;
  later_pieces_.compare_exchange_strong(none, std::move(fresh));  // first one wins
}

void analyze_document(const Document& doc) {
  if (doc.analysed() || !doc.wait_details()) return;
  const auto t0 = Clock::now();
  analyzer::Options opt;
  opt.path_pieces = doc.trace.py_samples.size() > 0;  // the Python attribution of host segments reads them
  auto a = analyzer::analyze(doc.trace, opt, doc.path.string());
  doc.attach_analysis(std::move(a), since(t0));
}

void compute_path_pieces(const Document& doc, const std::atomic<bool>* stop) {
  if (!doc.analysed() || doc.path_pieces()) return;
  analyzer::Options opt = doc.analysis().options;
  opt.stop = stop;
  analyzer::StepPieces pieces = analyzer::step_path_pieces(doc.trace, opt);
  if (!analyzer::stopped(stop)) doc.attach_path_pieces(std::move(pieces));  // given up: incomplete
}

namespace {

Result<std::shared_ptr<const Document>> load_unguarded(const std::filesystem::path& path, const LoadOptions& opt,
                                                       const LoadProgress& progress) {
  auto report = [&](int pct, const std::string& stage) { if (progress) progress(pct, stage); };
  if (auto st = trace::check_input_path(path); !st) return make_error(st.error());
  // gzip input inflates within the cap too: its size field cannot be trusted (a bomb)
  std::optional<trace::InflateLimitScope> inflate_cap;
  if (opt.memory_cap_bytes) inflate_cap.emplace(opt.memory_cap_bytes);
  const auto format = trace::detect_format(path);
  if (format == trace::InputFormat::Unknown || format == trace::InputFormat::OtherSqlite)
    return make_error(path.string() +
                      ": not a trace tracetune can open (expected a tracetune DB, Kineto JSON or an nsys SQLite export)");
  // Before reading: a trace whose estimate (which errs low) is already over the cap is refused
  // now, not after minutes of reading or an OOM kill. The exact checks below still run.
  if (opt.memory_cap_bytes) {
    report(0, "estimating the memory " + path.filename().string() + " needs");
    auto est = trace::estimate_load(path);
    if (est && est->total() > opt.memory_cap_bytes)
      return make_error(fmt::format(
          "{}: this trace needs about {} MiB in memory{} ({}), over the memory cap of {} MiB. "
          "Open it on a machine with more memory, or raise the cap with --memory-cap MiB.",
          path.string(), est->total() >> 20, est->events ? fmt::format(" for about {} events", est->events) : "",
          est->basis, opt.memory_cap_bytes >> 20));
    // an estimate that fails (a damaged file) leaves the verdict to the reader, which names the problem
  }
  auto doc = std::make_shared<Document>();
  doc->path = path;
  const auto t0 = Clock::now();
  report(0, "reading " + path.filename().string());
  std::optional<trace::PendingDetails> details;  // read after the first frame's columns
  if (format == trace::InputFormat::TracetuneDb) {
    auto r = trace::read_trace(path, {}, opt.analyze ? nullptr : &details);
    if (!r) return make_error(r.error());
    doc->trace = std::move(r).value();
  } else {
    const std::filesystem::path inputs[] = {path};
    if (auto st = trace::import_any(inputs, doc->trace); !st) return make_error(st.error());
    doc->trace.finalize();
  }
  doc->load_seconds = since(t0);
  const std::size_t events = doc->trace.event_count();
  auto over_cap = [&](std::size_t bytes) {
    return make_error(over_cap_message(path, bytes, events, opt.memory_cap_bytes));
  };
  // measured before the details' read starts: from then on it writes the columns it fills
  const std::size_t model_bytes = doc->trace.event_bytes();
  if (opt.memory_cap_bytes && model_bytes > opt.memory_cap_bytes) return over_cap(model_bytes);

  report(60, "indexing the timeline");
  const auto t1 = Clock::now();
  doc->index = build_timeline_index(doc->trace);
  doc->index_seconds = since(t1);
  doc->resident_bytes = model_bytes + doc->index.index_bytes;
  if (opt.memory_cap_bytes && doc->resident_bytes > opt.memory_cap_bytes) return over_cap(doc->resident_bytes);
  // after the index (which would share the cores with it), beside the first frame
  if (details) doc->read_details_later(std::move(*details), opt.memory_cap_bytes);

  if (opt.analyze) {
    report(75, "analysing");
    analyze_document(*doc);
  }
  report(100, "done");
  return std::shared_ptr<const Document>(std::move(doc));
}

}  // namespace

Result<std::shared_ptr<const Document>> load_document(const std::filesystem::path& path, const LoadOptions& opt,
                                                      const LoadProgress& progress) {
  try {
    return load_unguarded(path, opt, progress);
  } catch (const std::bad_alloc&) {
    return make_error(path.string() + ": ran out of memory while loading; lower --memory-cap so the check stops it "
                      "earlier, or open it on a machine with more memory");
  } catch (const std::exception& e) {
    return make_error(path.string() + ": " + e.what());
  }
}

}  // namespace tt::gui
