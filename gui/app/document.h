// A loaded trace as the GUI holds it: the columnar Trace, the timeline's row index over it,
// and the analyzer's report, built in a worker thread (load_document) and then shared
// read-only (std::shared_ptr<const Document>) by the window, the views and the LOD worker.
// The trace and the index never change after loading. The report may be attached later, once
// (the window shows the timeline while the analysis still runs): until then analysis() is
// empty and analysed() false. Attaching publishes it atomically, so any thread may read it.
// The critical paths' pieces (what the timeline's C overlay draws: 24 B each, 0.66 per event on
// a training trace) are not kept by the analysis unless its attribution needs them (a trace with
// Python samples): compute_path_pieces() computes them when the overlay is first shown and
// attaches them the same way.
// A trace DB loaded for the timeline first (LoadOptions::analyze false) arrives without the
// columns the timeline does not draw (trace::read_trace's `later`: correlation and external
// ids, launch configurations, callback ids, range kinds, domains, args...): a thread started by
// load_document reads them into `trace` while the window shows the first frame. Whatever reads
// those columns calls wait_details() first (the analysis, the event details, the flow arrow).
#pragma once

#include <atomic>
#include <future>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/gui/timeline_index.h"
#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"
#include "tracetune/trace/store.h"

namespace tt::gui {

struct Document {
  std::filesystem::path path;
  trace::Trace trace;
  TimelineIndex index;  // points into `trace`: a Document is never copied or moved
  double load_seconds = 0, index_seconds = 0;
  // trace columns + strings + timeline index, as loaded for the first frame (without the
  // details still being read then)
  std::size_t resident_bytes = 0;

  Document() = default;
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;
  ~Document();  // waits for the details' read

  // Waits until every column of `trace` is there (at once when it was read whole) and returns
  // the details' read status: when it failed, the columns it was to fill must not be read.
  const Status& wait_details() const;
  // Without waiting: the details' read has ended and failed (its error in *why, if given).
  bool details_failed(std::string* why = nullptr) const;
  // Starts reading the columns trace::read_trace left out into `trace` (load_document); the
  // model with them is held to the memory cap (0: none) too. The read begins once `start` is
  // ready (invalid: at once; a test holds it to ask before the read ends).
  void read_details_later(trace::PendingDetails pending, std::uint64_t memory_cap_bytes,
                          std::shared_future<void> start = {});

  bool analysed() const { return attached_.load() != nullptr; }
  const analyzer::Analysis& analysis() const;  // an empty report until analysed()
  double analyze_seconds() const;
  // Attaches the report; only the first call has an effect (references handed out stay valid).
  void attach_analysis(analyzer::Analysis a, double seconds) const;
  // Every step's critical-path pieces, per rank and path as in analysis().metrics.ranks[r].paths;
  // nullptr until known (analysed, and kept by the analysis or attached by compute_path_pieces).
  const analyzer::StepPieces* path_pieces() const;
  // Attaches the pieces computed later; only the first call has an effect.
  void attach_path_pieces(analyzer::StepPieces pieces) const;

 private:
  struct Attached {
    analyzer::Analysis analysis;
    double seconds = 0;
    analyzer::StepPieces pieces;  // moved out of analysis' paths when it kept them
  };
  mutable std::atomic<std::shared_ptr<const Attached>> attached_;
  mutable std::atomic<std::shared_ptr<const analyzer::StepPieces>> later_pieces_;
  std::shared_future<Status> details_;  // invalid: read whole
};

struct LoadOptions {
  std::uint64_t memory_cap_bytes = 0;  // 0: no cap
  bool analyze = true;                 // false: leave it to analyze_document()
};

// Stages reported while loading: (percent 0..100, what is happening). Called on the loading
// thread.
using LoadProgress = std::function<void(int percent, const std::string& stage)>;

// The default cap: three quarters of the machine's physical memory.
std::uint64_t default_memory_cap();

// Runs the analyzer on the document's trace and attaches the report (a no-op once analysed).
// It waits for the details first; when their read failed it attaches nothing.
// The critical paths' pieces are kept only where the Python attribution reads them (as
// `tracetune analyze` does): the report is the CLI's.
void analyze_document(const Document& doc);

// Computes every step's critical-path pieces (analyzer::step_path_pieces, a second pass over the
// trace without the what-if replays: a few seconds for 10M events) and attaches them; a no-op
// before the analysis or once doc.path_pieces() is set. Blocking: run it off the GUI thread.
// Setting *stop gives it up (the view closing): it returns once the rank's metrics, graph or
// step in progress are done, and attaches nothing.
void compute_path_pieces(const Document& doc, const std::atomic<bool>* stop = nullptr);

// Opens a tracetune DB, or imports a Kineto JSON (file or directory) or an nsys SQLite export;
// builds the timeline index and (unless opt.analyze is false) runs the analyzer. Every failure (unreadable, foreign or
// corrupt file, over the memory cap, out of memory) is an error message, never a crash.
// With opt.analyze false a trace DB's details are still being read when it returns
// (Document::wait_details() gives their errors); with it, they are read and checked first.
// The cap is checked before reading (trace::estimate_load, which errs low), then exactly after
// reading (model bytes) and after indexing (model + index).
Result<std::shared_ptr<const Document>> load_document(const std::filesystem::path& path, const LoadOptions& opt,
                                                      const LoadProgress& progress = {});

}  // namespace tt::gui
