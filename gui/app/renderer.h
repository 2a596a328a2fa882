// Drawing behind an interface. The timeline turns its LOD result into a Frame, a display list
// of rectangles, lines and plain-text labels in widget pixels, and a FrameRenderer draws it.
// PainterRenderer (QPainter, raster) is deterministic offscreen, so tests and `--screenshot`
// use it. GlRenderer (gl_renderer.h, built when Qt's OpenGL modules are found) draws the
// rectangles, the bulk of a frame, as one vertex batch through OpenGL when the timeline sits
// on a QOpenGLWidget, and the few lines and labels with QPainter on top.
#pragma once

#include <vector>

#include <QColor>
#include <QLineF>
#include <QRectF>
#include <QString>

class QPainter;

namespace tt::gui {

struct Frame {
  struct Rect {
    QRectF r;
    QRgb fill;
    QRgb outline = 0;  // 0: none
    bool hatched = false;  // merged runs
  };
  struct Text {
    QRectF r;
    QString text;  // always drawn as plain text
    QRgb color;
    int flags;     // Qt::AlignmentFlag
  };
  struct Line {
    QLineF l;
    QRgb color;
    qreal width = 1;
    bool arrow = false;
  };
  QRgb background = 0xffffffff;
  std::vector<Rect> rects;   // drawn first, in order
  std::vector<Line> lines;   // then lines (ruler ticks, flows)
  std::vector<Text> texts;   // then labels
  std::vector<Rect> overlays;  // then translucent overlays (selections, highlights)
  std::vector<Text> overlay_texts;
  void clear() { rects.clear(); lines.clear(); texts.clear(); overlays.clear(); overlay_texts.clear(); }
};

class FrameRenderer {
 public:
  virtual ~FrameRenderer() = default;
  virtual void render(const Frame& f, QPainter& p) = 0;
  // A short name for the status bar and tests ("QPainter", "OpenGL").
  virtual QString name() const = 0;
};

class PainterRenderer final : public FrameRenderer {
 public:
  void render(const Frame& f, QPainter& p) override;
  QString name() const override { return QStringLiteral("QPainter"); }
};

// The parts every renderer draws with QPainter (few per frame: ruler ticks, flow arrows, labels).
void paint_lines(const std::vector<Frame::Line>& lines, QPainter& p);
void paint_texts(const std::vector<Frame::Text>& texts, QPainter& p);

}  // namespace tt::gui
