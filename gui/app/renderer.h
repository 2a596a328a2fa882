// Drawing behind an interface. The timeline turns its LOD result into a Frame, a display list
// of rectangles, lines and plain-text labels in widget pixels, and a FrameRenderer draws it.
// PainterRenderer (QPainter, raster) is the one used everywhere today: it is deterministic
// offscreen, so tests and `--screenshot` use the same code the window does. A GPU renderer
// (QOpenGLWidget with instanced quads for `rects`, QPainter for text on top) would implement
// the same interface; it is not written yet.
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
};

class PainterRenderer final : public FrameRenderer {
 public:
  void render(const Frame& f, QPainter& p) override;
};

}  // namespace tt::gui
