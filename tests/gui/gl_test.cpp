// The OpenGL renderer on a real GL context (CTest runs this under Xvfb with Mesa's software
// rasteriser, so it needs no GPU): a synthetic frame drawn by GlRenderer into an FBO must show
// the same pixels PainterRenderer draws into a QImage (fills exact, merged-run stripes,
// outlines, translucent overlays blended the same way), and the real window on a real trace,
// drawn through the QOpenGLWidget canvas, must match the QPainter frame and still take mouse
// input through the canvas. No GL context here is a failure, not a skip: scripts/setup.sh
// installs Xvfb and Mesa.
#include <QApplication>
#include <QFile>
#include <QOffscreenSurface>
#include <QOpenGLContext>
#include <QOpenGLFramebufferObject>
#include <QOpenGLPaintDevice>
#include <QOpenGLWidget>
#include <QPainter>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include "gl_renderer.h"
#include "timeline_view.h"

using namespace tt::gui;

namespace {

const QString kTrace = QStringLiteral(TT_CORPUS_DIR) + "/kineto/hta/ns_resolution_rank_0.json.gz";

int channel_diff(QRgb a, QRgb b) {
  return std::max({std::abs(qRed(a) - qRed(b)), std::abs(qGreen(a) - qGreen(b)), std::abs(qBlue(a) - qBlue(b))});
}

// Share of pixels whose colours differ by at most `tol` per channel.
double agreement(const QImage& a, const QImage& b, int tol) {
  if (a.size() != b.size()) return 0;
  qint64 same = 0;
  for (int y = 0; y < a.height(); ++y)
    for (int x = 0; x < a.width(); ++x) same += channel_diff(a.pixel(x, y), b.pixel(x, y)) <= tol;
  return static_cast<double>(same) / (static_cast<double>(a.width()) * a.height());
}

bool ink(QRgb p) {
  const int r = qRed(p), g = qGreen(p), b = qBlue(p);
  return std::max({r, g, b}) - std::min({r, g, b}) > 40 || std::max({r, g, b}) < 200;
}

Frame test_frame() {
  Frame f;
  f.background = 0xffffffffu;
  f.rects.push_back({QRectF(10, 10, 100, 40), 0xff3366ccu});                    // solid
  f.rects.push_back({QRectF(120, 10, 100, 40), 0xff43a047u, 0, true});          // a merged run
  f.rects.push_back({QRectF(10, 60, 100, 40), 0xffffeb3bu, 0xff000000u});       // outlined (selected)
  f.rects.push_back({QRectF(230.4, 10.6, 50.2, 20.3), 0xff8e24aau});            // fractional edges
  for (int i = 0; i < 200; ++i)                                                 // many thin blocks
    f.rects.push_back({QRectF(10 + i * 1.9, 200, 1, 30), i % 2 ? 0xffe53935u : 0xff1e88e5u});
  f.lines.push_back({QLineF(120, 80, 300, 80), 0xff616161u, 1, false});
  f.lines.push_back({QLineF(120, 120, 300, 170), 0xffd81b60u, 2, true});
  f.texts.push_back({QRectF(300, 10, 90, 20), QStringLiteral("<b>gemm</b>"), 0xff212121u, Qt::AlignLeft});
  f.overlays.push_back({QRectF(60, 180, 100, 40), 0x60ff9800u});                // translucent highlight
  f.overlays.push_back({QRectF(300, 100, 80, 60), 0xf0fffde7u, 0xff9e9e9eu});   // tooltip box
  f.overlay_texts.push_back({QRectF(305, 105, 70, 20), QStringLiteral("tip"), 0xff212121u, Qt::AlignLeft});
  return f;
}

}  // namespace

class GlTest : public QObject {
  Q_OBJECT

 private slots:
  void init() { QTest::failOnWarning(QRegularExpression(".*")); }

  void initTestCase() {
    QString why;
    QVERIFY2(opengl_available(&why), qPrintable("no OpenGL context (run under xvfb-run with Mesa): " + why));
  }

  void frameMatchesThePainterRenderer() {
    const Frame f = test_frame();
    const QSize size(400, 300);
    QImage ref(size, QImage::Format_ARGB32_Premultiplied);
    {
      QPainter p(&ref);
      PainterRenderer().render(f, p);
    }

    QOpenGLContext ctx;
    QVERIFY(ctx.create());
    QOffscreenSurface surface;
    surface.create();
    QVERIFY(ctx.makeCurrent(&surface));
    QOpenGLFramebufferObject fbo(size);
    QVERIFY(fbo.bind());
    GlRenderer gl;
    {
      QOpenGLPaintDevice dev(size);
      QPainter p(&dev);
      gl.render(f, p);
    }
    QCOMPARE(gl.glFrames(), 1u);
    QCOMPARE(gl.fallbackFrames(), 0u);
    QVERIFY(!gl.glDescription().isEmpty());
    const QImage img = fbo.toImage().convertToFormat(QImage::Format_ARGB32_Premultiplied);
    fbo.release();
    gl.releaseGl();
    ctx.doneCurrent();

    // fills are exact
    QCOMPARE(img.pixel(30, 45) & 0xffffff, 0x3366ccu);
    QCOMPARE(img.pixel(30, 45), ref.pixel(30, 45));
    QCOMPARE(img.pixel(250, 20), ref.pixel(250, 20));
    QCOMPARE(img.pixel(5, 5), 0xffffffffu);
    // the outline: 2 px inside the rectangle, yellow within
    QCOMPARE(img.pixel(10, 80) & 0xffffff, 0u);
    QCOMPARE(img.pixel(11, 80) & 0xffffff, 0u);
    QCOMPARE(img.pixel(12, 80), ref.pixel(12, 80));
    QCOMPARE(img.pixel(109, 80) & 0xffffff, 0u);
    QCOMPARE(img.pixel(60, 99) & 0xffffff, 0u);
    // the merged run: a lighter fill with darker "/" stripes, 1 px in 8 (outside the overlay)
    const QRgb light = QColor::fromRgba(0xff43a047u).lighter(130).rgba(),
               dark = QColor::fromRgba(0xff43a047u).darker(140).rgba();
    int n_light = 0, n_dark = 0, n_other = 0;
    for (int y = 30; y < 50; ++y)
      for (int x = 120; x < 220; ++x) {
        const QRgb c = img.pixel(x, y);
        (c == light ? n_light : c == dark ? n_dark : n_other)++;
      }
    QCOMPARE(n_other, 0);
    for (int y = 10; y < 50; ++y)  // the stripes sit on QPainter's pixels
      for (int x = 120; x < 220; ++x) QCOMPARE(img.pixel(x, y), ref.pixel(x, y));
    QVERIFY2(std::abs(n_dark * 8 - (n_light + n_dark)) <= 40, qPrintable(QString("%1 dark of %2").arg(n_dark).arg(n_light + n_dark)));
    // a translucent overlay blends like QPainter's source-over, and the result stays opaque
    for (const QPoint at : {QPoint(70, 190), QPoint(65, 215), QPoint(66, 215)}) {
      QVERIFY2(channel_diff(img.pixel(at), ref.pixel(at)) <= 2, qPrintable(QString::number(img.pixel(at), 16) + " vs " + QString::number(ref.pixel(at), 16)));
      QCOMPARE(qAlpha(img.pixel(at)), 255);
    }
    QVERIFY(img.pixel(70, 190) != ref.pixel(5, 5));
    // thin blocks, lines and text: nearly every pixel agrees (antialiased arrow and glyph edges aside)
    const double same = agreement(img, ref, 8);
    qInfo("synthetic frame: %.2f%% of pixels agree with QPainter's (%s)", same * 100, qPrintable(gl.glDescription()));
    QVERIFY2(same > 0.985, qPrintable(QString("only %1 of the pixels agree").arg(same)));
    // the label and the tooltip text are drawn
    int text_ink = 0;
    for (int y = 10; y < 30; ++y)
      for (int x = 300; x < 390; ++x) text_ink += ink(img.pixel(x, y));
    QVERIFY(text_ink > 20);
  }

  void timelineWindowDrawsThroughTheCanvas() {
    if (!QFile::exists(kTrace)) QFAIL("tests/data/corpus is missing");
    auto doc = load_document(kTrace.toStdString(), {});
    QVERIFY2(doc.ok(), doc.ok() ? "" : doc.error().c_str());
    TimelineView view;
    view.setSynchronous(true);
    view.resize(1200, 1000);
    view.setDocument(doc.value());
    QString why;
    QVERIFY2(view.setOpenGL(true, &why), qPrintable(why));
    QVERIFY(view.openGL());
    QCOMPARE(view.renderer().name(), QStringLiteral("OpenGL"));
    view.show();
    QVERIFY(QTest::qWaitForWindowExposed(&view));
    const auto& idx = doc.value()->index;
    view.setView(idx.start + (idx.end - idx.start) / 3, idx.start + (idx.end - idx.start) / 2);
    QApplication::processEvents();

    auto* canvas = qobject_cast<QOpenGLWidget*>(view.canvas());
    QVERIFY(canvas);
    const QImage gl = canvas->grabFramebuffer().convertToFormat(QImage::Format_ARGB32_Premultiplied);
    const auto& renderer = static_cast<const GlRenderer&>(view.renderer());
    QVERIFY(renderer.glFrames() >= 1);
    QImage ref(view.size(), QImage::Format_ARGB32_Premultiplied);
    {
      QPainter p(&ref);
      view.renderTo(p);  // not an OpenGL device: the same frame through the QPainter path
    }
    QVERIFY(renderer.fallbackFrames() >= 1);
    QCOMPARE(gl.size(), ref.size());
    if (const QByteArray dir = qgetenv("TT_GL_TEST_IMAGES"); !dir.isEmpty()) {
      gl.save(QString::fromLocal8Bit(dir) + "/timeline-opengl.png");
      ref.save(QString::fromLocal8Bit(dir) + "/timeline-qpainter.png");
    }
    const double same = agreement(gl, ref, 8);
    qInfo("timeline window: %.2f%% of pixels agree with QPainter's", same * 100);
    QVERIFY2(same > 0.97, qPrintable(QString("only %1 of the pixels agree").arg(same)));
    // every visible span row has something drawn in its band
    int rows = 0;
    const auto lod = view.lodResult();
    QVERIFY(lod);
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
      const QRect rr = view.rowRect(r);
      const auto* rl = lod->find(r);
      if (rr.isEmpty() || rr.bottom() >= gl.height() || !rl || rl->lanes.empty() || rl->lanes[0].empty()) continue;
      int n = 0;
      for (int x = TimelineView::kLabelWidth; x < TimelineView::kLabelWidth + view.timelineWidth(); ++x)
        n += ink(gl.pixel(x, rr.top() + TimelineView::kLaneHeight / 2));
      QVERIFY2(n > 0, qPrintable(QString("row %1 (%2) is blank").arg(r).arg(QString::fromStdString(idx.rows[r].label))));
      ++rows;
    }
    QVERIFY(rows >= 3);

    // mouse input passes through the canvas to the view: click a kernel through the window
    QPoint at;
    for (std::uint32_t r = 0; r < idx.rows.size() && at.isNull(); ++r) {
      if (idx.rows[r].table != Table::Kernels) continue;
      const QRect rr = view.rowRect(r);
      if (rr.isEmpty() || rr.bottom() >= view.height()) continue;
      for (int x = TimelineView::kLabelWidth + 2; x < TimelineView::kLabelWidth + view.timelineWidth(); x += 2)
        if (const QPoint p(x, rr.top() + TimelineView::kLaneHeight / 2); view.eventAt(p).valid()) {
          at = p;
          break;
        }
    }
    QVERIFY2(!at.isNull(), "no kernel under any pixel of the kernel rows");
    const auto expected = view.eventAt(at);
    const std::uint64_t frames = renderer.glFrames();
    QTest::mouseClick(view.windowHandle(), Qt::LeftButton, {}, at);
    QVERIFY(view.selected().valid());
    QCOMPARE(view.selected().table, expected.table);
    QCOMPARE(view.selected().row, expected.row);
    QTRY_VERIFY(renderer.glFrames() > frames);  // the selection repainted the canvas

    // and back to QPainter
    QVERIFY(view.setOpenGL(false));
    QCOMPARE(view.canvas(), static_cast<QWidget*>(&view));
    QCOMPARE(view.renderer().name(), QStringLiteral("QPainter"));
  }

  // the command line: `--renderer opengl --screenshot` on a display draws the timeline through
  // OpenGL and gives the QPainter screenshot's picture; without a GL context it is refused
  void screenshotThroughOpenGL() {
    if (!QFile::exists(kTrace)) QFAIL("tests/data/corpus is missing");
    QTemporaryDir dir;
    auto shoot = [&](const QString& renderer, const QString& out, const QProcessEnvironment& env) {
      QProcess p;
      p.setProcessEnvironment(env);
      p.start(QStringLiteral(TT_GUI_EXE), {"--renderer", renderer, "--screenshot", out, "--size", "1200x800",
                                           "--range", "180:420", kTrace});
      p.waitForFinished(120000);
      return std::pair{p.exitCode(), QString::fromLocal8Bit(p.readAllStandardError())};
    };
    const auto env = QProcessEnvironment::systemEnvironment();
    const auto [rc_gl, err_gl] = shoot("opengl", dir.filePath("gl.png"), env);
    QVERIFY2(rc_gl == 0, qPrintable(err_gl));
    const auto [rc_p, err_p] = shoot("qpainter", dir.filePath("painter.png"), env);
    QVERIFY2(rc_p == 0, qPrintable(err_p));
    const QImage a(dir.filePath("gl.png")), b(dir.filePath("painter.png"));
    QCOMPARE(a.size(), QSize(1200, 800));
    const double same = agreement(a, b, 8);
    qInfo("--screenshot: %.2f%% of pixels agree with QPainter's", same * 100);
    QVERIFY2(same > 0.97, qPrintable(QString("only %1 of the pixels agree").arg(same)));

    auto offscreen = env;
    offscreen.insert("QT_QPA_PLATFORM", "offscreen");
    const auto [rc_off, err_off] = shoot("opengl", dir.filePath("off.png"), offscreen);
    QCOMPARE(rc_off, 1);
    QVERIFY2(err_off.contains("--renderer opengl: no OpenGL widgets on the 'offscreen' platform"), qPrintable(err_off));
    QVERIFY(!QFile::exists(dir.filePath("off.png")));
  }
};

QTEST_MAIN(GlTest)
#include "gl_test.moc"
