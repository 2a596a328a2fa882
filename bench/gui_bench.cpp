// The GUI on a generated trace (default 10M events, 2 ranks), figures from one run (never a
// pass/fail time):
//   1. load: a trace DB read into the columnar model, the timeline index, the analysis
//   2. memory: resident bytes per event after loading (RSS growth, and what the model and the
//      index account for)                                                  target <= 48 B/event
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

std::size_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
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
  malloc_trim(0);
  const std::size_t rss0 = rss_bytes();
  const auto t0 = Clock::now();
  auto r = tt::gui::load_document(db, {});
  const double load_ms = ms_since(t0);
  fs::remove(db);
  if (!r) {
    std::fprintf(stderr, "gui_bench: %s\n", r.error().c_str());
    return 1;
  }
  auto doc = std::move(r).value();
  malloc_trim(0);
  const std::size_t rss1 = rss_bytes();
  const double n = static_cast<double>(doc->trace.event_count());
  std::printf("\n1. load (%zu events, %zu timeline rows)\n", doc->trace.event_count(), doc->index.rows.size());
  std::printf("   total %.2f s = read %.2f s + index %.3f s + analysis %.2f s\n", load_ms / 1e3, doc->load_seconds,
              doc->index_seconds, doc->analyze_seconds());
  std::printf("\n2. memory (target <= 48 B/event)\n");
  std::printf("   RSS growth over the load: %.1f MiB = %.1f B/event\n", (rss1 - rss0) / 1048576.0, (rss1 - rss0) / n);
  std::printf("   accounted: model %.1f B/event + timeline index %.2f B/event = %.1f B/event\n",
              doc->trace.event_bytes() / n, doc->index.index_bytes / n, doc->resident_bytes / n);

  tt::gui::TimelineView view;
  view.setSynchronous(true);  // time the queries themselves, on this thread
  view.resize(1600, 1000);
  view.setDocument(doc);
  QImage img(view.size(), QImage::Format_RGB32);
  {  // the first frame fills the glyph cache: not a view change
    QPainter p(&img);
    view.renderTo(p);
  }
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
