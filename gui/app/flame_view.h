// The flame graph panel (docs/gui.md, "Flame graph"): the Python stack samples of one selection
// (a finding's attributed samples, one step of a rank, or the whole trace) merged into a tree
// (gui/lod flame_graph.h) and drawn as an icicle: the root (every sample) on top, callees below
// their callers, each frame as wide as its share of the samples, labelled
// "function (file:line)" cut to its width and coloured by its file. Hovering shows a frame's
// function, file:line, samples and share; clicking one zooms into it (its ancestors stay on
// top, full width: clicking one zooms back out to it).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <QString>
#include <QWidget>

#include "panels.h"
#include "tracetune/gui/flame_graph.h"

class QComboBox;
class QLabel;
class QScrollArea;

namespace tt::gui {

class FlameView : public QWidget {
  Q_OBJECT
 public:
  static constexpr int kRowHeight = 18;
  explicit FlameView(QWidget* parent = nullptr);
  // Shows `g` over the frames of `t` (which must outlive the view's use of it), unzoomed.
  void setGraph(const trace::Trace* t, FlameGraph g);
  const FlameGraph& graph() const { return graph_; }
  std::uint32_t zoom() const { return zoom_; }
  void setZoom(std::uint32_t node);
  // The node drawn at `p` (trace::kNone: none), and the rectangle a node is drawn in (empty
  // when it is not drawn: outside the zoomed frame, or under a pixel wide).
  std::uint32_t nodeAt(QPoint p) const;
  QRectF nodeRect(std::uint32_t node) const;
  // "function (file:line)" of a node; the root's is "all samples".
  QString label(std::uint32_t node) const;
  // What hovering the node shows: function, file:line, samples and share (of the selection, and
  // of the zoomed frame when zoomed).
  QString hoverText(std::uint32_t node) const;
  std::uint32_t hovered() const { return hover_; }
  QSize sizeHint() const override;

 signals:
  void zoomed(std::uint32_t node);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void leaveEvent(QEvent*) override;

 private:
  QColor colour(std::uint32_t node) const;
  void drawHoverBox(class QPainter& p) const;
  const trace::Trace* trace_ = nullptr;
  FlameGraph graph_;
  std::uint32_t zoom_ = 0;
  std::uint32_t hover_ = trace::kNone;
  QPoint hover_pos_;
};

// A panel: which samples (a combo box of the findings with a Python attribution, each rank's
// steps, and the whole trace), a line saying what they are, and the flame view.
class FlamePanel : public AnalysisPanel {
  Q_OBJECT
 public:
  explicit FlamePanel(QObject* parent = nullptr);
  QString title() const override { return tr("Flame graph"); }
  QWidget* widget() override { return widget_; }
  void setDocument(std::shared_ptr<const Document> doc) override;
  // Shows the samples of this finding (a pointer into the document's findings) or of step
  // `step` of the rank at `rank` in Metrics::ranks; false when the panel has no such choice.
  bool showFinding(const analyzer::Finding* f);
  bool showStep(int rank, int step);
  FlameView* view() const { return view_; }
  QComboBox* choices() const { return choice_box_; }
  QString summaryText() const;

 private:
  struct Choice {
    const analyzer::Finding* finding = nullptr;  // else a step, else the whole trace
    int rank = -1, step = -1;
  };
  void addChoices();
  void show(int index);
  std::vector<std::uint32_t> samplesOf(const Choice& c, QString* scope) const;

  QWidget* widget_;
  QComboBox* choice_box_;
  QLabel* summary_;
  QScrollArea* scroll_;
  FlameView* view_;
  std::shared_ptr<const Document> doc_;
  std::vector<Choice> choices_;
};

}  // namespace tt::gui
