// The GUI on a generated trace (default 10M events, 2 ranks), figures from one run (never a
// pass/fail time), wall and CPU seconds (CPU: every thread of this process, so the figures
// hold on a machine others load too):
//   1. load: a trace DB read into the columnar model and the timeline index, up to the first
//      frame of the timeline (target <= 2 s); beside it the floor, SQLite's own scan of the
//      same rows (every column of every event table SELECTed and stepped on one connection);
//      the big tables' other columns, which the document reads after the first frame (the
//      details: waited for here, as the analysis waits for them in the window); then the
//      analysis that fills the panels (target <= 3 s)
//   2. memory: resident bytes per event after loading (RSS growth, and what the model and the
//      index account for), before and after the analysis             target <= 40 B/event
//   3. per view change (random zooms and pans from the whole trace down to microseconds, on
//      a 1600x1000 window): the LOD queries of the visible rows, and building + drawing the
//      frame with the QPainter renderer into an image; medians and p90   target <= 16 ms;
//      when an OpenGL context can be made, the same frames drawn by the OpenGL renderer into an
//      FBO too, side by side (glFinish included, so the rasterisation is counted)
//
// usage: gui_bench [EVENTS] [VIEW_CHANGES]       (offscreen; writes a DB under /tmp)
//        xvfb-run -a gui_bench ...               (QT_QPA_PLATFORM=xcb: adds the OpenGL figures;
//                                                 under Xvfb that is Mesa's CPU rasteriser)
#include <malloc.h>
#include <sqlite3.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <QApplication>
#ifdef TT_HAVE_QT_OPENGL
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLFramebufferObject>
#include <QOpenGLFunctions>
#include <QOpenGLPaintDevice>

#include "gl_renderer.h"
#endif
#include <QImage>
#include <QPainter>

#include "document.h"
#include "synthetic_trace.h"
#include "timeline_view.h"
#include "tracetune/trace/store.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// CPU seconds of every thread of this process so far.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// A stage's wall and CPU seconds.
struct Timed {
  Clock::time_point wall0 = Clock::now();
  double cpu0 = cpu_seconds();
  double wall() const { return ms_since(wall0) / 1e3; }
  double cpu() const { return cpu_seconds() - cpu0; }
};

// The floor of reading: SQLite's own scan of every event table's rows, every column stepped
// (sqlite3_column_int64, summed so nothing is optimised away), on one connection. Returns the
// rows scanned, or -1 when the file cannot be read.
long long select_floor(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return -1;
  long long rows = 0, sum = 0;
  for (const char* table : {"kernels", "memcpys", "memsets", "api_calls", "syncs", "ranges", "steps", "collectives",
                            "io_calls", "counters", "flows"}) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, (std::string("SELECT * FROM ") + table).c_str(), -1, &s, nullptr) != SQLITE_OK) continue;
    const int ncol = sqlite3_column_count(s);
    while (sqlite3_step(s) == SQLITE_ROW) {
      for (int c = 0; c < ncol; ++c) sum += sqlite3_column_int64(s, c);
      ++rows;
    }
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return sum == 42 ? rows + 1 : rows;  // sum used
}

std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

// Bytes malloc has handed out and not had back (live heap objects, not pages it keeps).
std::size_t heap_in_use() {
  const struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t events = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 10'000'000;
  const int changes = argc > 2 ? std::atoi(argv[2]) : 60;
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");

  // the DB is written by a child so this process's memory holds only what loading makes
  const fs::path db = fs::temp_directory_path() / ("tracetune_gui_bench_" + std::to_string(getpid()) + ".db");
  std::printf("generating %zu events and writing %s ...\n", events, db.c_str());
  std::fflush(stdout);
  if (const pid_t pid = fork(); pid == 0) {
    auto t = tt::bench::make_synthetic_trace(events, 2);
    _exit(tt::trace::write_trace(t, db, "gui_bench").ok() ? 0 : 1);
  } else {
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "gui_bench: could not write %s\n", db.c_str());
      return 1;
    }
  }

  QApplication app(argc, argv);
  const Timed floor_time;
  const long long floor_rows = select_floor(db.string());
  const double floor_wall = floor_time.wall(), floor_cpu = floor_time.cpu();
  malloc_trim(0);
  const std::size_t rss0 = rss_bytes(), heap0 = heap_in_use();
  // as the window opens a file: the trace and its index, the first frame, then the analysis
  const Timed first_frame;
  tt::gui::LoadOptions timeline_only;
  timeline_only.analyze = false;
  auto r = tt::gui::load_document(db, timeline_only);
  fs::remove(db);
  if (!r) {
    std::fprintf(stderr, "gui_bench: %s\n", r.error().c_str());
    return 1;
  }
  auto doc = std::move(r).value();
  const double read_index_wall = first_frame.wall(), read_index_cpu = first_frame.cpu();
  tt::gui::TimelineView view;
  view.setSynchronous(true);  // time the queries themselves, on this thread
  view.resize(1600, 1000);
  view.setDocument(doc);
  QImage img(view.size(), QImage::Format_RGB32);
  {  // the first frame (it also fills the glyph cache: not a view change)
    QPainter p(&img);
    view.renderTo(p);
  }
  const double first_frame_wall = first_frame.wall(), first_frame_cpu = first_frame.cpu();
  // the columns the first frame did not need, read meanwhile by a thread of the document: the
  // analysis waits for them, as in the window
  const Timed details_time;
  if (const auto& details = doc->wait_details(); !details) {
    std::fprintf(stderr, "gui_bench: %s\n", details.error().c_str());
    return 1;
  }
  const double details_wall = details_time.wall(), details_cpu = details_time.cpu();
  malloc_trim(0);
  const std::size_t rss1 = rss_bytes(), heap1 = heap_in_use();
  const Timed analysis_time;
  tt::gui::analyze_document(*doc);
  const double analysis_wall = analysis_time.wall(), analysis_cpu = analysis_time.cpu();
  malloc_trim(0);
  const std::size_t rss2 = rss_bytes(), heap2 = heap_in_use();
  const double n = static_cast<double>(doc->trace.event_count());
  std::printf("\n1. load (%zu events, %zu timeline rows; seconds wall / CPU of all threads)\n", doc->trace.event_count(),
              doc->index.rows.size());
  std::printf("   to the first frame (target <= 2 s)   %5.2f / %5.2f s = read %.2f + index %.3f + first frame %.3f s wall\n",
              first_frame_wall, first_frame_cpu, doc->load_seconds, doc->index_seconds, first_frame_wall - read_index_wall);
  std::printf("     read + index                      %5.2f / %5.2f s\n", read_index_wall, read_index_cpu);
  std::printf("   details, still being read then      %5.2f / %5.2f s more (all read at %.2f s wall)\n", details_wall,
              details_cpu, first_frame_wall + details_wall);
  std::printf("     floor: SQLite's SELECT of the rows %5.2f / %5.2f s (%lld rows, one connection)\n", floor_wall,
              floor_cpu, floor_rows);
  std::printf("   analysis (target <= 3 s)            %5.2f / %5.2f s\n", analysis_wall, analysis_cpu);
  std::printf("\n2. memory (target <= 40 B/event)\n");
  std::printf("   RSS growth, trace + index + first frame + details: %.1f MiB = %.1f B/event\n", (double(rss1) - double(rss0)) / 1048576.0,
              (double(rss1) - double(rss0)) / n);
  std::printf("   RSS growth, after the analysis too:      %.1f MiB = %.1f B/event\n", (double(rss2) - double(rss0)) / 1048576.0,
              (double(rss2) - double(rss0)) / n);
  std::printf("   live heap growth (malloc's in-use bytes): %.1f B/event, then %.1f B/event with the analysis\n",
              (double(heap1) - double(heap0)) / n, (double(heap2) - double(heap0)) / n);
  std::printf("   accounted: model %.1f B/event + timeline index %.2f B/event = %.1f B/event\n",
              doc->trace.event_bytes() / n, doc->index.index_bytes / n,
              (doc->trace.event_bytes() + doc->index.index_bytes) / n);
  // the critical-path overlay (key C) shown for the first time: its pieces are computed then
  const bool pieces_kept = doc->path_pieces() != nullptr;
  const Timed pieces_time;
  tt::gui::compute_path_pieces(*doc);
  const double pieces_wall = pieces_time.wall(), pieces_cpu = pieces_time.cpu();
  malloc_trim(0);
  const std::size_t rss3 = rss_bytes();
  std::size_t pieces = 0;
  if (const auto* all = doc->path_pieces())
    for (const auto& rank : *all)
      for (const auto& path : rank) pieces += path.capacity() * sizeof(path[0]);
  std::printf("   C overlay first shown: pieces %s in %.2f / %.2f s; RSS growth then %.1f B/event (pieces %.1f B/event)\n",
              pieces_kept ? "kept by the analysis" : "computed", pieces_wall, pieces_cpu, (double(rss3) - double(rss0)) / n,
              pieces / n);
#ifdef TT_HAVE_QT_OPENGL
  // the OpenGL renderer draws into an FBO of the window's size; on a raster image it falls
  // back to QPainter, so the QPainter figures below are unchanged by this
  QOpenGLContext gl_ctx;
  QOffscreenSurface gl_surface;
  std::unique_ptr<QOpenGLFramebufferObject> fbo;
  QString gl_why;
  if (tt::gui::opengl_available(&gl_why) && view.setOpenGL(true, &gl_why)) {
    gl_surface.create();
    if (gl_ctx.create() && gl_ctx.makeCurrent(&gl_surface)) {
      fbo = std::make_unique<QOpenGLFramebufferObject>(view.size());
      fbo->bind();
    }
  }
  auto draw_gl = [&]() -> double {
    if (!fbo) return -1;
    const auto c = Clock::now();
    {
      QOpenGLPaintDevice dev(view.size());
      QPainter p(&dev);
      view.renderTo(p);
    }
    gl_ctx.functions()->glFinish();
    return ms_since(c);
  };
  draw_gl();  // shaders, buffers, glyph cache
#else
  const QString gl_why = QStringLiteral("built without Qt's OpenGL modules");
  auto draw_gl = [] { return -1.0; };
#endif
  std::mt19937_64 rng(1);
  const auto s = doc->index.start, e = doc->index.end;
  std::vector<double> lod_ms, draw_ms, total_ms, items, gl_ms, gl_total_ms;
  for (int i = 0; i < changes; ++i) {
    // span: log-uniform from the whole trace down to 10 µs, anywhere in it
    const double f = std::pow(10.0, -std::uniform_real_distribution<double>(0, std::log10(double(e - s) / 1e4))(rng));
    const auto span = std::max<tt::trace::Ns>(10'000, static_cast<tt::trace::Ns>(double(e - s) * f));
    const auto a = s + static_cast<tt::trace::Ns>(std::uniform_real_distribution<double>(0, double(e - s - span))(rng));
    const auto c0 = Clock::now();
    view.setView(a, a + span);  // synchronous: runs the LOD queries of the visible rows
    const double lod = ms_since(c0);
    const auto c1 = Clock::now();
    {
      QPainter p(&img);
      view.renderTo(p);
    }
    const double draw = ms_since(c1);
    if (const double g = draw_gl(); g >= 0) {
      gl_ms.push_back(g);
      gl_total_ms.push_back(lod + g);
    }
    lod_ms.push_back(lod);
    draw_ms.push_back(draw);
    total_ms.push_back(lod + draw);
    items.push_back(view.lodResult() ? static_cast<double>(view.lodResult()->items) : 0);
  }
  std::printf("\n3. per view change, %d random views on 1600x1000 (target <= 16 ms)\n", changes);
  std::printf("   LOD queries (3 view widths)  median %6.2f ms  p90 %6.2f ms  (median %.0f items)\n", pct(lod_ms, 0.5),
              pct(lod_ms, 0.9), pct(items, 0.5));
  std::printf("   frame build + QPainter draw  median %6.2f ms  p90 %6.2f ms\n", pct(draw_ms, 0.5), pct(draw_ms, 0.9));
  std::printf("   LOD + draw                   median %6.2f ms  p90 %6.2f ms  max %6.2f ms\n", pct(total_ms, 0.5),
              pct(total_ms, 0.9), pct(total_ms, 1.0));
  if (gl_ms.empty()) {
    std::printf("   OpenGL renderer: not measured (%s)\n", gl_why.toLocal8Bit().constData());
  } else {
#ifdef TT_HAVE_QT_OPENGL
    const auto& gl = static_cast<const tt::gui::GlRenderer&>(view.renderer());
    std::printf("   frame build + OpenGL draw    median %6.2f ms  p90 %6.2f ms  (%s)\n", pct(gl_ms, 0.5), pct(gl_ms, 0.9),
                gl.glDescription().toLocal8Bit().constData());
    std::printf("   LOD + OpenGL draw            median %6.2f ms  p90 %6.2f ms  max %6.2f ms\n", pct(gl_total_ms, 0.5),
                pct(gl_total_ms, 0.9), pct(gl_total_ms, 1.0));
#endif
  }
  return 0;
}
