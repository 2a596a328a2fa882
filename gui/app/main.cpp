// tracetune-gui [FILE]: the desktop timeline and analysis viewer. With --screenshot it renders
// the main window offscreen to a PNG and exits (tests and docs use it). --compare BASE NEW opens
// the compare view (compare_view.h) instead.
#include <cstdint>
#include <cstdio>

#include <QApplication>
#include <QCommandLineParser>
#include <QDockWidget>
#include <QImage>
#include <QStatusBar>
#include <QTableView>
#include <QTimer>

#include "compare_view.h"
#include "main_window.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/units.h"

using namespace tt::gui;

namespace {

int fail(const QString& msg, int code = 1) {
  std::fprintf(stderr, "tracetune-gui: %s\n", msg.toLocal8Bit().constData());
  return code;
}

// --compare BASE NEW: the compare view, shown or rendered to `shot` (empty: shown).
int run_compare(const QStringList& files, const QString& shot, int W, int H) {
  if (files.size() != 2) return fail("--compare wants two files: BASE NEW", 2);
  CompareView view;
  view.setWindowTitle(QStringLiteral("tracetune-gui: %1 -> %2").arg(files[0], files[1]));
  view.baseTimeline()->setSynchronous(!shot.isEmpty());
  view.newTimeline()->setSynchronous(!shot.isEmpty());
  view.resize(W, H);
  view.show();
  QString error;
  if (!view.loadNow(files[0], files[1], &error)) return fail(error);
  if (shot.isEmpty()) return QApplication::exec();
  view.stepsView()->selectRow(0);
  view.showStep(0);  // both timelines at the first aligned step
  QApplication::processEvents();
  const QImage img = view.grab().toImage().convertToFormat(QImage::Format_RGB888);
  if (!img.save(shot, "PNG", 0)) return fail("cannot write " + shot);
  return 0;
}

// --screenshot, --help and --version need no display: pick the offscreen platform before Qt
// starts, unless an OpenGL screenshot is asked for on a display (it needs a GL context).
void pick_platform(int argc, char** argv) {
  bool gl_on_display = false;
  for (int i = 1; i < argc; ++i)
    if ((qstrcmp(argv[i], "--renderer") == 0 && i + 1 < argc && qstrcmp(argv[i + 1], "opengl") == 0) ||
        qstrcmp(argv[i], "--renderer=opengl") == 0)
      gl_on_display = !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
  for (int i = 1; i < argc; ++i)
    for (const char* flag : {"--screenshot", "--help", "-h", "--help-all", "--version", "-v"})
      if (qstrcmp(argv[i], flag) == 0 && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") &&
          !(gl_on_display && qstrcmp(flag, "--screenshot") == 0))
        qputenv("QT_QPA_PLATFORM", "offscreen");
}

// The command line's options, added to a parser by add_to().
struct Options {
  QCommandLineOption shot{"screenshot", "Render the main window offscreen to OUT.png and exit.", "OUT.png"};
  QCommandLineOption size{"size", "Window size for --screenshot (default 1600x1000).", "WxH", "1600x1000"};
  QCommandLineOption range{"range", "Time window for --screenshot, in ms from the trace's start (default: all).", "A:B"};
  QCommandLineOption finding{"finding", "For --screenshot: click the N-th finding (1 = largest gain) first.", "N"};
  QCommandLineOption cap{"memory-cap",
                         "Refuse traces needing more than this many MiB in memory (default: 3/4 of physical memory); "
                         "checked before reading from an estimate, then exactly.",
                         "MiB"};
  QCommandLineOption trials{"trials", "Show `tracetune tune`'s trials file (*.trials.json) in the Tuner trials panel.",
                            "FILE"};
  QCommandLineOption tuned{"tuned",
                           "Show a tuned config (tuned.toml) as `tracetune run --config` would apply it, in the Tuned "
                           "config panel (a refused one with the reason). --trials also opens the X.toml beside "
                           "X.trials.json.",
                           "FILE"};
  QCommandLineOption renderer{"renderer",
                              "How the timeline is drawn: opengl, qpainter, or auto (default: OpenGL on a hardware GL "
                              "driver, else QPainter; --screenshot uses QPainter unless opengl is asked for).",
                              "KIND", "auto"};
  QCommandLineOption panel{"panel",
                           "For --screenshot: show this panel's tab, widened (e.g. Ranks, Steps, \"Tuned config\").",
                           "TITLE"};
  QCommandLineOption compare{"compare", "Compare two traces (BASE NEW, as `tracetune diff`): step bars, aligned steps, "
                                        "kernel deltas and both timelines; a click on a step shows it in both."};
  QCommandLineOption path{"critical-path", "Draw every step's critical path over the timeline (key C toggles it)."};

  void add_to(QCommandLineParser& cli) const {
    cli.setApplicationDescription(
        "Shows a recorded job as a timeline (host > process > threads; GPU > streams) with the analyzer's findings.\n"
        "FILE: a tracetune trace DB, a Kineto/PyTorch-profiler JSON (.json, .json.gz, or a directory of per-rank files)\n"
        "or an Nsight Systems SQLite export.");
    cli.addHelpOption();
    cli.addVersionOption();
    cli.addPositionalArgument("FILE", "The trace to open.", "[FILE]");
    cli.addOptions({shot, size, range, finding, cap, trials, tuned, renderer, panel, compare, path});
  }
};

// --size WxH, checked: false (with the message) when out of 400x300..8000x8000.
bool window_size(const QString& value, int* W, int* H) {
  const QStringList wh = value.split('x');
  *W = wh.size() == 2 ? wh[0].toInt() : 0;
  *H = wh.size() == 2 ? wh[1].toInt() : 0;
  if (*W >= 400 && *H >= 300 && *W <= 8000 && *H <= 8000) return true;
  fail("--size wants WxH between 400x300 and 8000x8000");
  return false;
}

// --renderer: OpenGL when asked (failing if it cannot be had), or by default on a hardware GL
// driver outside screenshots; QPainter otherwise. An empty string when it went well.
QString choose_renderer(MainWindow& w, const QString& kind, bool screenshot) {
  QString why;
  if (kind == "opengl") return w.timeline()->setOpenGL(true, &why) ? QString() : "--renderer opengl: " + why;
  if (kind == "auto" && !screenshot) {
    if (!TimelineView::openGLPreferred(&why) || !w.timeline()->setOpenGL(true, &why))
      w.statusBar()->showMessage("Drawing with QPainter: " + why, 10000);
    else
      w.statusBar()->showMessage("Drawing with OpenGL", 5000);
  }
  return {};
}

// The screenshot's --range, --finding and --panel, applied to the loaded window: an empty
// string, or the usage error.
QString prepare_screenshot(MainWindow& w, const QCommandLineParser& cli, const Options& o, int W) {
  if (cli.isSet(o.range)) {
    const QStringList ab = cli.value(o.range).split(':');
    bool ok_a = false, ok_b = false;
    const double a = ab.size() == 2 ? ab[0].toDouble(&ok_a) : 0, b = ab.size() == 2 ? ab[1].toDouble(&ok_b) : 0;
    if (!ok_a || !ok_b || b <= a) return "--range wants A:B in ms with A < B";
    const auto origin = w.timeline()->document()->index.start;
    w.timeline()->setView(origin + static_cast<qint64>(a * 1e6), origin + static_cast<qint64>(b * 1e6));
  }
  if (cli.isSet(o.finding)) {
    bool ok = false;
    const int n = cli.value(o.finding).toInt(&ok), rows = w.findingsPanel()->model()->rowCount();
    if (!ok || n < 1 || n > rows) return QString("--finding wants 1..%1 for this trace").arg(rows);
    w.findingsPanel()->view()->selectRow(n - 1);
    w.findingsPanel()->activate(n - 1);
  }
  if (cli.isSet(o.panel)) {
    QStringList titles;
    QDockWidget* dock = nullptr;
    for (auto* d : w.findChildren<QDockWidget*>()) {
      titles << d->windowTitle();
      if (d->windowTitle().compare(cli.value(o.panel), Qt::CaseInsensitive) == 0) dock = d;
    }
    if (!dock) return "--panel wants one of: " + titles.join(", ");
    dock->raise();
    w.resizeDocks({dock}, {W * 3 / 5}, Qt::Horizontal);  // room for a table's columns
  }
  return {};
}

// --screenshot: the main window with FILE loaded, rendered offscreen to the PNG.
int run_screenshot(MainWindow& w, const QCommandLineParser& cli, const Options& o, const QStringList& files) {
  if (files.isEmpty()) return fail("--screenshot needs a FILE", 2);
  int W = 0, H = 0;
  if (!window_size(cli.value(o.size), &W, &H)) return 2;
  w.timeline()->setSynchronous(true);
  w.resize(W, H);
  w.show();
  QString error;
  if (!w.loadNow(files.front(), &error)) return fail(error);
  if (const QString usage = prepare_screenshot(w, cli, o, W); !usage.isEmpty()) return fail(usage, 2);
  QApplication::processEvents();
  const QImage img = w.grab().toImage().convertToFormat(QImage::Format_RGB888);
  if (!img.save(cli.value(o.shot), "PNG", 0)) return fail("cannot write " + cli.value(o.shot));  // 0: smallest file
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  pick_platform(argc, argv);
  QApplication app(argc, argv);
  QApplication::setOrganizationName("tracetune");
  QApplication::setApplicationName("tracetune-gui");
  QApplication::setApplicationVersion(TT_VERSION);
  QCommandLineParser cli;
  const Options o;
  o.add_to(cli);
  cli.process(app);

  LoadOptions opt;
  opt.memory_cap_bytes = default_memory_cap();
  // the CLI's strict parsers and environment check (trace/units.h, file_io.h): a bad number is named
  if (auto st = tt::trace::check_environment(); !st) return fail(QString::fromStdString(st.error()), 2);
  if (cli.isSet(o.cap)) {
    auto mib = tt::trace::parse_unsigned(cli.value(o.cap).toStdString(), "--memory-cap (MiB)", UINT64_MAX >> 20);
    if (!mib) return fail(QString::fromStdString(mib.error()), 2);
    opt.memory_cap_bytes = mib.value() << 20;
  }
  const QStringList files = cli.positionalArguments();
  if (cli.isSet(o.compare)) {
    int W = 0, H = 0;
    if (!window_size(cli.value(o.size), &W, &H)) return 2;
    return run_compare(files, cli.isSet(o.shot) ? cli.value(o.shot) : QString(), W, H);
  }
  if (files.size() > 1) return fail("one FILE at a time", 2);

  const QString kind = cli.value(o.renderer);
  if (kind != "auto" && kind != "opengl" && kind != "qpainter") return fail("--renderer wants opengl, qpainter or auto", 2);
  MainWindow w(opt);
  if (const QString error = choose_renderer(w, kind, cli.isSet(o.shot)); !error.isEmpty()) return fail(error);
  if (cli.isSet(o.trials)) {
    QString error;
    if (!w.loadTrials(cli.value(o.trials), &error)) return fail(error);
  }
  if (cli.isSet(o.tuned)) w.loadTunedConfig(cli.value(o.tuned));  // a refusal is shown in the panel
  if (cli.isSet(o.path)) w.timeline()->setCriticalPathVisible(true);
  if (cli.isSet(o.shot)) return run_screenshot(w, cli, o, files);
  w.show();
  if (!files.isEmpty()) QTimer::singleShot(0, &w, [&w, f = files.front()] { w.openFile(f); });
  return QApplication::exec();
}
