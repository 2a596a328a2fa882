// A loaded trace as the GUI holds it: the columnar Trace, the timeline's row index over it,
// and the analyzer's report, built together in a worker thread (load_document) and then
// shared read-only (std::shared_ptr<const Document>) by the window, the views and the LOD
// worker. Nothing in a Document changes after it is built.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/gui/timeline_index.h"
#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::gui {

struct Document {
  std::filesystem::path path;
  trace::Trace trace;
  TimelineIndex index;  // points into `trace`: a Document is never copied or moved
  analyzer::Analysis analysis;
  double load_seconds = 0, index_seconds = 0, analyze_seconds = 0;
  std::size_t resident_bytes = 0;  // trace columns + strings + timeline index

  Document() = default;
  Document(const Document&) = delete;
  Document& operator=(const Document&) = delete;
};

struct LoadOptions {
  std::uint64_t memory_cap_bytes = 0;  // 0: no cap
  bool analyze = true;
};

// Stages reported while loading: (percent 0..100, what is happening). Called on the loading
// thread.
using LoadProgress = std::function<void(int percent, const std::string& stage)>;

// The default cap: three quarters of the machine's physical memory.
std::uint64_t default_memory_cap();

// Opens a tracetune DB, or imports a Kineto JSON (file or directory) or an nsys SQLite export;
// builds the timeline index and runs the analyzer. Every failure (unreadable, foreign or
// corrupt file, over the memory cap, out of memory) is an error message, never a crash.
Result<std::shared_ptr<const Document>> load_document(const std::filesystem::path& path, const LoadOptions& opt,
                                                      const LoadProgress& progress = {});

}  // namespace tt::gui
