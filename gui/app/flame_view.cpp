#include "flame_view.h"

#include <algorithm>
#include <limits>

#include <QComboBox>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollArea>
#include <QVBoxLayout>

#include "text.h"
#include "tracetune/analyzer/attribution.h"
#include "tracetune/trace/py_stacks.h"

namespace tt::gui {

namespace {

// FNV-1a: the same colour for the same file in every run (qHash is seeded per process).
std::uint32_t stable_hash(std::string_view s) {
  std::uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

constexpr int kHoverPad = 6;

}  // namespace

// ---- the view ----

FlameView::FlameView(QWidget* parent) : QWidget(parent) {
  setMouseTracking(true);
  setMinimumHeight(kRowHeight * 4);
}

void FlameView::setGraph(const trace::Trace* t, FlameGraph g) {
  trace_ = t;
  graph_ = std::move(g);
  zoom_ = 0;
  hover_ = trace::kNone;
  setMinimumHeight(std::max(4, static_cast<int>(graph_.max_depth) + 1) * kRowHeight + 1);
  updateGeometry();
  update();
}

void FlameView::setZoom(std::uint32_t node) {
  if (node >= graph_.nodes.size() || node == zoom_) return;
  zoom_ = node;
  update();
  emit zoomed(node);
}

QSize FlameView::sizeHint() const { return {480, (static_cast<int>(graph_.max_depth) + 1) * kRowHeight + 1}; }

QRectF FlameView::nodeRect(std::uint32_t node) const {
  if (node >= graph_.nodes.size() || graph_.total() == 0) return {};
  const FlameNode& n = graph_.nodes[node];
  const FlameNode& z = graph_.nodes[zoom_];
  const double y = static_cast<double>(n.depth) * kRowHeight;
  if (n.depth <= z.depth) {  // the zoomed frame and its ancestors span the width
    std::uint32_t a = zoom_;
    while (graph_.nodes[a].depth > n.depth) a = graph_.nodes[a].parent;
    return a == node ? QRectF(0, y, width(), kRowHeight) : QRectF();
  }
  std::uint32_t a = node;
  while (graph_.nodes[a].depth > z.depth) a = graph_.nodes[a].parent;
  if (a != zoom_) return {};
  const double scale = double(width()) / double(z.samples);
  const QRectF r(double(n.offset - z.offset) * scale, y, double(n.samples) * scale, kRowHeight);
  return r.width() >= 1 ? r : QRectF();
}

std::uint32_t FlameView::nodeAt(QPoint p) const {
  if (graph_.total() == 0 || p.x() < 0 || p.x() >= width() || p.y() < 0) return trace::kNone;
  const std::uint32_t depth = static_cast<std::uint32_t>(p.y() / kRowHeight);
  const std::vector<std::uint32_t> above = graph_.path_to(zoom_);
  if (depth < above.size()) return above[depth];
  std::uint32_t n = zoom_;  // down from the zoomed frame through the callee under x
  while (graph_.nodes[n].depth < depth) {
    const auto& kids = graph_.nodes[n].children;
    const auto under = std::find_if(kids.begin(), kids.end(), [&](std::uint32_t c) {
      const QRectF r = nodeRect(c);
      return !r.isEmpty() && r.left() <= p.x() && p.x() < r.right();
    });
    if (under == kids.end()) return trace::kNone;
    n = *under;
  }
  return n;
}

QString FlameView::label(std::uint32_t node) const {
  if (node >= graph_.nodes.size()) return {};
  if (node == 0 || !trace_) return tr("all samples");
  return qs(trace::py_frame_label(*trace_, graph_.nodes[node].frame));
}

QString FlameView::hoverText(std::uint32_t node) const {
  if (node >= graph_.nodes.size()) return {};
  const FlameNode& n = graph_.nodes[node];
  auto percent = [](double share) { return QString::number(100 * share, 'f', 1) + "%"; };
  QString text;
  if (node == 0 || !trace_) {
    text = tr("all samples");
  } else {
    const trace::PyFrame& f = trace_->py_frames[n.frame];
    text = qs(trace_->strings.get(f.function)) + "\n" + qs(trace_->strings.get(f.file));
    if (f.line >= 0) text += ":" + QString::number(f.line);
  }
  text += "\n" + tr("%1 samples, %2 of the selection").arg(n.samples).arg(percent(graph_.share(node)));
  const FlameNode& z = graph_.nodes[zoom_];
  if (zoom_ != 0 && z.samples > 0 && n.depth > z.depth)
    text += tr(", %1 of the zoomed frame").arg(percent(double(n.samples) / double(z.samples)));
  if (n.self > 0 && node != 0) text += "\n" + tr("innermost in %1 samples").arg(n.self);
  return text;
}

QColor FlameView::colour(std::uint32_t node) const {
  if (node == 0 || !trace_) return QColor(0xd5, 0xd8, 0xdc);
  const trace::PyFrame& f = trace_->py_frames[graph_.nodes[node].frame];
  const std::string_view file = trace_->strings.get(f.file);
  // the hue says the file; the shade tells its functions apart; the job's own files are in
  // strong colours, libraries (torch, Python) faded
  const int hue = static_cast<int>(stable_hash(file) % 360);
  const int shade = static_cast<int>(stable_hash(trace_->strings.get(f.function)) % 5) * 12;
  return analyzer::is_library_file(file) ? QColor::fromHsv(hue, 30 + shade / 2, 215 + shade / 2)
                                         : QColor::fromHsv(hue, 90 + shade, 250 - shade / 2);
}

void FlameView::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  if (graph_.total() == 0) {
    p.setPen(Qt::darkGray);
    p.drawText(rect(), Qt::AlignCenter, tr("No Python stack samples in this selection."));
    return;
  }
  const QFontMetrics fm = p.fontMetrics();
  auto draw = [&](std::uint32_t node, const QRectF& r) {
    p.fillRect(r.adjusted(0, 0, -1, -1), colour(node));
    if (node == zoom_ && zoom_ != 0) {
      p.setPen(QPen(Qt::black, 1));
      p.drawRect(r.adjusted(0, 0, -1, -1));
    }
    if (r.width() < 20) return;
    p.setPen(Qt::black);
    p.drawText(r.adjusted(3, 0, -3, 0), Qt::AlignLeft | Qt::AlignVCenter,
               fm.elidedText(label(node), Qt::ElideRight, static_cast<int>(r.width()) - 6));
  };
  for (std::uint32_t a : graph_.path_to(zoom_))
    if (a != zoom_) draw(a, nodeRect(a));
  std::vector<std::uint32_t> todo{zoom_};
  while (!todo.empty()) {
    const std::uint32_t n = todo.back();
    todo.pop_back();
    const QRectF r = nodeRect(n);
    if (r.isEmpty() || r.top() > height()) continue;  // children are narrower still, or lower
    draw(n, r);
    for (std::uint32_t c : graph_.nodes[n].children) todo.push_back(c);
  }
  drawHoverBox(p);
}

void FlameView::drawHoverBox(QPainter& p) const {
  if (hover_ == trace::kNone) return;
  const QString text = hoverText(hover_);
  const QRect need = p.fontMetrics().boundingRect(QRect(0, 0, 600, 400), Qt::AlignLeft | Qt::TextDontClip, text);
  QRect box(hover_pos_ + QPoint(14, 14), need.size() + QSize(2 * kHoverPad, 2 * kHoverPad));
  if (box.right() > width()) box.moveRight(std::max(box.width(), hover_pos_.x() - 4));
  if (box.bottom() > height()) box.moveBottom(std::max(box.height(), hover_pos_.y() - 4));
  p.fillRect(box, QColor(255, 255, 225));
  p.setPen(Qt::darkGray);
  p.drawRect(box.adjusted(0, 0, -1, -1));
  p.setPen(Qt::black);
  p.drawText(box.adjusted(kHoverPad, kHoverPad, -kHoverPad, -kHoverPad), Qt::AlignLeft | Qt::AlignTop, text);
}

void FlameView::mouseMoveEvent(QMouseEvent* ev) {
  hover_pos_ = ev->position().toPoint();
  hover_ = nodeAt(hover_pos_);
  update();
}

void FlameView::mousePressEvent(QMouseEvent* ev) {
  if (ev->button() != Qt::LeftButton) return;
  const std::uint32_t n = nodeAt(ev->position().toPoint());
  if (n != trace::kNone) setZoom(n);
}

void FlameView::leaveEvent(QEvent*) {
  hover_ = trace::kNone;
  update();
}

// ---- the panel ----

FlamePanel::FlamePanel(QObject* parent) : AnalysisPanel(parent) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  choice_box_ = new QComboBox(widget_);
  summary_ = new QLabel(tr("No trace loaded."), widget_);
  summary_->setTextFormat(Qt::PlainText);
  summary_->setWordWrap(true);
  view_ = new FlameView;
  scroll_ = new QScrollArea(widget_);
  scroll_->setWidgetResizable(true);
  scroll_->setWidget(view_);
  layout->addWidget(choice_box_);
  layout->addWidget(summary_);
  layout->addWidget(scroll_, 1);
  connect(choice_box_, &QComboBox::currentIndexChanged, this, [this](int i) { show(i); });
}

void FlamePanel::setDocument(std::shared_ptr<const Document> doc) {
  doc_ = std::move(doc);
  choices_.clear();
  const QSignalBlocker block(choice_box_);
  choice_box_->clear();
  view_->setGraph(nullptr, {});
  if (!doc_) {
    summary_->setText(tr("No trace loaded."));
  } else if (!doc_->analysed()) {
    summary_->setText(tr("Analysing..."));
  } else if (doc_->trace.py_samples.size() == 0) {
    summary_->setText(tr("This trace holds no Python stack samples (`tracetune record` takes them from Python jobs "
                         "unless --trace leaves out pystack)."));
  } else {
    addChoices();
    choice_box_->setCurrentIndex(0);
    show(0);
  }
}

// The findings with a Python attribution, each rank's steps, and the whole trace.
void FlamePanel::addChoices() {
  const trace::Trace& t = doc_->trace;
  const analyzer::Analysis& a = doc_->analysis();
  for (const analyzer::Finding& f : a.findings)
    if (analyzer::finding_sample_scope(t, a.metrics, f)) {
      choices_.push_back({&f, -1, -1});
      choice_box_->addItem(tr("Finding, rank %1: %2").arg(f.rank).arg(qs(f.title)));
    }
  for (std::size_t r = 0; r < a.metrics.ranks.size(); ++r)
    for (std::size_t s = 0; s < a.metrics.ranks[r].steps.size(); ++s) {
      choices_.push_back({nullptr, static_cast<int>(r), static_cast<int>(s)});
      choice_box_->addItem(tr("%1, step %2").arg(qs(a.metrics.ranks[r].label)).arg(a.metrics.ranks[r].steps[s].number));
    }
  choices_.push_back({});
  choice_box_->addItem(tr("Whole trace"));
}

std::vector<std::uint32_t> FlamePanel::samplesOf(const Choice& c, QString* scope) const {
  const trace::Trace& t = doc_->trace;
  const analyzer::Metrics& m = doc_->analysis().metrics;
  std::optional<analyzer::SampleScope> s;
  if (c.finding) {
    s = analyzer::finding_sample_scope(t, m, *c.finding);
  } else if (c.rank >= 0) {
    const analyzer::RankMetrics& r = m.ranks[static_cast<std::size_t>(c.rank)];
    s = analyzer::step_sample_scope(t, m, r, r.steps[static_cast<std::size_t>(c.step)]);
  } else {
    s = analyzer::SampleScope{{}, false, "every thread, the whole trace"};
    for (std::uint32_t k = 0; k < t.tracks.size(); ++k)
      if (t.tracks[k].type == trace::TrackType::Thread)
        s->windows.push_back({k, std::numeric_limits<trace::Ns>::min(), std::numeric_limits<trace::Ns>::max()});
  }
  if (!s) return {};
  *scope = qs(s->scope);
  return analyzer::samples_in_windows(t, std::move(s->windows), s->fetching_only);
}

void FlamePanel::show(int index) {
  if (!doc_ || index < 0 || index >= static_cast<int>(choices_.size())) return;
  QString scope;
  const std::vector<std::uint32_t> samples = samplesOf(choices_[static_cast<std::size_t>(index)], &scope);
  view_->setGraph(&doc_->trace, build_flame_graph(doc_->trace, samples));
  summary_->setText(samples.empty() ? tr("%1: no Python stack samples.").arg(scope)
                                    : tr("%1: %2 samples. Click a frame to zoom into it, an upper frame to zoom back out.")
                                          .arg(scope)
                                          .arg(samples.size()));
}

bool FlamePanel::showFinding(const analyzer::Finding* f) {
  const auto it = std::find_if(choices_.begin(), choices_.end(), [&](const Choice& c) { return f && c.finding == f; });
  if (it == choices_.end()) return false;
  choice_box_->setCurrentIndex(static_cast<int>(it - choices_.begin()));
  return true;
}

bool FlamePanel::showStep(int rank, int step) {
  const auto it = std::find_if(choices_.begin(), choices_.end(),
                               [&](const Choice& c) { return !c.finding && c.rank == rank && c.step == step && rank >= 0; });
  if (it == choices_.end()) return false;
  choice_box_->setCurrentIndex(static_cast<int>(it - choices_.begin()));
  return true;
}

QString FlamePanel::summaryText() const { return summary_->text(); }

}  // namespace tt::gui
