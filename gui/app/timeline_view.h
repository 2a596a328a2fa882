// The timeline: a ruler, a label column with the group tree (host → process → threads, GPU →
// streams) and one band per row, drawn from LOD results (lod_worker.h) so the draw cost
// follows the pixels on screen, not the events in the trace. Only rows inside the viewport
// (plus the pinned ones) are queried. Input: wheel zoom about the cursor, drag to pan,
// Shift+drag for an area selection, W/A/S/D, F (fit the selected event), Z (zoom to the area),
// 0 (fit all), P (pin the selected event's row), ? (keyboard help), Esc.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include <QWidget>

class QFontMetrics;

#include "document.h"
#include "lod_worker.h"
#include "renderer.h"

class QScrollBar;

namespace tt::gui {

struct AreaSelection {
  trace::Ns t0 = 0, t1 = 0;
  std::vector<std::uint32_t> rows;
};

class TimelineView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kRulerHeight = 26;
  static constexpr int kLabelWidth = 240;
  static constexpr int kLaneHeight = 17;
  static constexpr int kGroupHeight = 19;
  static constexpr int kCounterHeight = 30;
  static constexpr std::size_t kCollapseAbove = 40;  // rows; more open folded (see initial_collapse)
  static constexpr std::size_t kOpenProcessesUpTo = 64;  // with many rows, more processes open folded

  explicit TimelineView(QWidget* parent = nullptr);
  ~TimelineView() override;

  void setDocument(std::shared_ptr<const Document> doc);
  const Document* document() const { return doc_.get(); }

  // LOD in the calling thread instead of the worker: deterministic for tests and screenshots.
  void setSynchronous(bool on) { synchronous_ = on; }

  // ---- the view ----
  trace::Ns viewStart() const { return t0_; }
  trace::Ns viewEnd() const { return t1_; }
  void setView(trace::Ns t0, trace::Ns t1);
  void fitAll();
  void zoomAbout(double factor, double x);  // factor < 1 zooms in; x in widget pixels
  void panPixels(double dx);
  double xAt(trace::Ns t) const;
  trace::Ns timeAt(double x) const;
  int timelineWidth() const;

  // ---- selection ----
  EventRef selected() const { return selected_; }
  EventRef flowTarget() const { return flow_; }
  EventRef hovered() const { return hover_; }
  // The counter row under the mouse (its readout is in the hover box), kNone when none.
  std::uint32_t hoveredCounter() const { return hover_counter_; }
  void select(EventRef e);
  void fitSelected();
  void setHighlight(trace::Ns t0, trace::Ns t1);  // a finding's evidence; t1 <= t0 clears
  // Draws every step's critical path (from the analysis) over the rows it ran on (key C). Its
  // pieces are computed when first shown after the analysis (compute_path_pieces, in a worker
  // thread unless synchronous); the overlay appears when they are attached (pathPiecesReady()).
  void setCriticalPathVisible(bool on);
  bool criticalPathVisible() const { return path_visible_; }
  bool pathPiecesReady() const { return doc_ && doc_->path_pieces(); }
  const std::optional<AreaSelection>& area() const { return area_; }
  void setArea(std::optional<AreaSelection> a);
  void zoomToArea();
  // Next (or previous) event whose name contains `text`, from the selection; selects it.
  bool findNext(const QString& text, bool backwards);

  // ---- rows ----
  void toggleGroup(std::uint32_t group);
  // Expands the groups holding the rows of `rank` and scrolls to the first of them.
  void revealRank(int rank);
  bool groupCollapsed(std::uint32_t group) const;
  // Whether none of the groups holding `row` is collapsed (it may still be scrolled away).
  bool rowOpen(std::uint32_t row) const;
  void togglePin(std::uint32_t row);
  bool pinned(std::uint32_t row) const;
  // The band of `row` in widget coordinates (empty when scrolled away or hidden).
  QRect rowRect(std::uint32_t row) const;
  void addCriticalPath(Frame& f, double right) const;
  void requestPathPieces();  // computes the document's path pieces once the overlay wants them
  // The timeline part of a group's header line (a summary when collapsed); empty when hidden.
  QRect groupRect(std::uint32_t group) const;
  EventRef eventAt(QPoint p) const;

  void setHelpVisible(bool on);
  bool helpVisible() const { return help_; }

  // the newest LOD result drawn (tests and the benchmark)
  std::shared_ptr<const LodResult> lodResult() const { return lod_; }
  // Renders the whole widget into `img` with the same frame the window shows.
  void renderTo(QPainter& p);

  // ---- rendering ----
  // On: the timeline draws on a QOpenGLWidget through GlRenderer (rectangles as one vertex
  // batch per frame). Off: QPainter on the raster backing store. Returns false (and says why)
  // when OpenGL is not built in or no context can be made here; the view stays as it was.
  bool setOpenGL(bool on, QString* why = nullptr);
  // What --renderer auto picks: OpenGL when a hardware context can be made here (a software
  // rasteriser such as llvmpipe draws slower than QPainter), else QPainter. Says why not.
  static bool openGLPreferred(QString* why);
  bool openGL() const { return canvas_ != nullptr; }
  const FrameRenderer& renderer() const { return *renderer_; }
  // The widget the frame is drawn on: the OpenGL canvas, or the view itself.
  QWidget* canvas() const;

 signals:
  void viewChanged(qint64 t0, qint64 t1);
  void selectionChanged();
  void areaChanged();
  void lodUpdated();

 protected:
  void paintEvent(QPaintEvent*) override;
  void resizeEvent(QResizeEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  void keyPressEvent(QKeyEvent*) override;
  void leaveEvent(QEvent*) override;

 private:
  static std::vector<bool> initial_collapse(const TimelineIndex& idx);
  void openGroupsOf(std::uint32_t row);
  void scrollToRow(std::uint32_t row);
  struct Entry {
    bool group = false;
    std::uint32_t id = 0;  // group or row index
    int y = 0, h = 0;      // in content coordinates (pinned: in the pinned strip)
    int level = 0;
  };
  int rowHeight(std::uint32_t row) const;
  void relayout();
  void requestLod();
  void onLod(std::shared_ptr<const LodResult> r);
  void buildFrame(Frame& f);
  // buildFrame's parts, in drawing order
  void drawEntry(Frame& f, const QFontMetrics& fm, const Entry& e, int top, bool pinned) const;
  void drawGroupEntry(Frame& f, const QFontMetrics& fm, const Entry& e, int top) const;
  void drawCounterRow(Frame& f, const QFontMetrics& fm, const Entry& e, int top, const RowLod& rl) const;
  void drawLanes(Frame& f, const QFontMetrics& fm, const Entry& e, int top, bool pinned, const RowLod& rl) const;
  void drawRuler(Frame& f) const;
  void drawOverlays(Frame& f) const;
  void drawHoverBox(Frame& f, const QFontMetrics& fm) const;
  void drawHelp(Frame& f, const QFontMetrics& fm) const;
  void emitView();
  void refresh();  // schedules a repaint of whatever the frame is drawn on
  int pinnedHeight() const;
  int scrollY() const;
  // y of an entry in widget coordinates
  int entryTop(const Entry& e, bool pinned) const;
  const Entry* entryAt(QPoint p, bool* pinned) const;
  std::optional<QPointF> eventAnchor(EventRef e) const;

  std::shared_ptr<const Document> doc_;
  std::shared_ptr<const LodResult> lod_;
  std::unique_ptr<LodWorker> worker_;
  std::unique_ptr<FrameRenderer> renderer_;
  Frame frame_;
  QScrollBar* vscroll_ = nullptr;
  QWidget* canvas_ = nullptr;  // the QOpenGLWidget when drawing with OpenGL
  bool synchronous_ = false;
  std::uint64_t generation_ = 0;

  trace::Ns t0_ = 0, t1_ = 1;
  std::vector<Entry> entries_, pinned_entries_;
  int content_height_ = 0;
  std::vector<bool> collapsed_;   // per group
  std::vector<std::vector<std::uint32_t>> group_rows_;  // per group: the span rows inside it
  std::vector<bool> pinned_;      // per row

  EventRef selected_, flow_, hover_;
  std::uint32_t hover_counter_ = trace::kNone;  // a counter row under the mouse
  trace::Ns hover_t_ = 0;                       // the time under the mouse for its readout
  QPoint hover_pos_;
  trace::Ns highlight_t0_ = 0, highlight_t1_ = 0;
  std::optional<AreaSelection> area_;
  bool help_ = false;
  bool path_visible_ = false;
  std::thread path_worker_;        // computes the path pieces (compute_path_pieces)
  bool path_worker_busy_ = false;  // set while it runs (GUI thread only)
  std::atomic<bool> path_stop_{false};  // set when the view closes: the worker gives up
  const Document* path_failed_for_ = nullptr;  // the document whose pieces could not be computed
  std::unordered_map<std::uint32_t, std::uint32_t> track_row_;  // trace track -> its first event row

  // mouse drag state
  enum class Drag { None, Pan, Area } drag_ = Drag::None;
  QPoint press_pos_, last_pos_;
  bool moved_ = false;
};

}  // namespace tt::gui
