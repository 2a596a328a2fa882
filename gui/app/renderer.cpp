#include "renderer.h"

#include <cmath>

#include <QPainter>
#include <QPainterPath>

namespace tt::gui {

namespace {

void draw_rects(const std::vector<Frame::Rect>& rects, QPainter& p) {
  for (const auto& r : rects) {
    const QColor fill = QColor::fromRgba(r.fill);
    if (r.hatched) {
      p.fillRect(r.r, fill.lighter(130));
      p.fillRect(r.r, QBrush(fill.darker(140), Qt::BDiagPattern));
    } else {
      p.fillRect(r.r, fill);
    }
    if (r.outline) {
      p.setPen(QPen(QColor::fromRgba(r.outline), 2));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.r.adjusted(1, 1, -1, -1));
    }
  }
}

}  // namespace

void paint_texts(const std::vector<Frame::Text>& texts, QPainter& p) {
  for (const auto& t : texts) {
    p.setPen(QColor::fromRgba(t.color));
    // QPainter::drawText never interprets markup: names are shown exactly as recorded
    p.drawText(t.r, t.flags | Qt::TextSingleLine, t.text);
  }
}

void paint_lines(const std::vector<Frame::Line>& lines, QPainter& p) {
  for (const auto& l : lines) {
    p.setPen(QPen(QColor::fromRgba(l.color), l.width));
    if (!l.arrow) {
      p.drawLine(l.l);
      continue;
    }
    p.setRenderHint(QPainter::Antialiasing, true);
    p.drawLine(l.l);
    // arrow head at the end point
    const double a = std::atan2(l.l.dy(), l.l.dx());
    const QPointF tip = l.l.p2();
    QPainterPath head;
    head.moveTo(tip);
    head.lineTo(tip - QPointF(std::cos(a - 0.45) * 9, std::sin(a - 0.45) * 9));
    head.lineTo(tip - QPointF(std::cos(a + 0.45) * 9, std::sin(a + 0.45) * 9));
    head.closeSubpath();
    p.fillPath(head, QColor::fromRgba(l.color));
    p.setRenderHint(QPainter::Antialiasing, false);
  }
}

void PainterRenderer::render(const Frame& f, QPainter& p) {
  p.setRenderHint(QPainter::Antialiasing, false);
  p.fillRect(p.viewport(), QColor::fromRgba(f.background));
  draw_rects(f.rects, p);
  paint_lines(f.lines, p);
  paint_texts(f.texts, p);
  for (const auto& r : f.overlays) {
    p.fillRect(r.r, QColor::fromRgba(r.fill));
    if (r.outline) {
      p.setPen(QPen(QColor::fromRgba(r.outline), 1));
      p.setBrush(Qt::NoBrush);
      p.drawRect(r.r);
    }
  }
  paint_texts(f.overlay_texts, p);
}

}  // namespace tt::gui
