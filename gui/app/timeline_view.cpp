#include "text.h"
#include "timeline_view.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cmath>
#include <span>
#include <string_view>
#include <tuple>

#include <QFontMetrics>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QWheelEvent>

#include "event_info.h"
#include "tracetune/gui/lod.h"
#ifdef TT_HAVE_QT_OPENGL
#include <QOpenGLContext>
#include <QOpenGLWidget>

#include "gl_renderer.h"
#endif

namespace tt::gui {

using trace::Ns;

namespace {

constexpr QRgb kLabelBg = 0xfff5f5f5u, kGroupBg = 0xffe3e7ecu, kRulerBg = 0xffeceff1u, kStripe = 0xfffafbfcu;
constexpr QRgb kText = 0xff212121u, kDimText = 0xff616161u;
constexpr int kScrollBarWidth = 12;


// A "nice" tick step (1, 2 or 5 × 10^k ns) giving ticks about `px` pixels apart.
Ns tick_step(double ns_per_px, double px) {
  const double raw = std::max(1.0, ns_per_px * px);
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (p * m >= raw) return static_cast<Ns>(p * m);
  return static_cast<Ns>(p * 10);
}

#ifdef TT_HAVE_QT_OPENGL
// The OpenGL drawing surface: covers the view, lets every mouse event through to it, and
// paints the view's frame with the view's renderer on each paintGL.
class GlCanvas final : public QOpenGLWidget {
 public:
  GlCanvas(TimelineView* view, GlRenderer* renderer) : QOpenGLWidget(view), view_(view), renderer_(renderer) {
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setFocusPolicy(Qt::NoFocus);
  }
  ~GlCanvas() override {
    QObject::disconnect(on_context_death_);
    release();
  }

 protected:
  void initializeGL() override {
    // the GL names must go before the context does (it is recreated on re-parenting)
    QObject::disconnect(on_context_death_);
    on_context_death_ =
        connect(context(), &QOpenGLContext::aboutToBeDestroyed, this, [this] { release(); }, Qt::DirectConnection);
  }
  void paintGL() override {
    QPainter p(this);
    view_->renderTo(p);
  }

 private:
  void release() {
    if (!renderer_ || !context()) return;
    makeCurrent();
    renderer_->releaseGl();
    doneCurrent();
  }
  TimelineView* view_;
  GlRenderer* renderer_;
  QMetaObject::Connection on_context_death_;
};
#endif

}  // namespace

TimelineView::TimelineView(QWidget* parent) : QWidget(parent), renderer_(std::make_unique<PainterRenderer>()) {
  setFocusPolicy(Qt::StrongFocus);
  setMouseTracking(true);
  setMinimumSize(400, 200);
  vscroll_ = new QScrollBar(Qt::Vertical, this);
  connect(vscroll_, &QScrollBar::valueChanged, this, [this] { requestLod(); refresh(); });
  worker_ = std::make_unique<LodWorker>([this](std::shared_ptr<const LodResult> r) {
    QMetaObject::invokeMethod(this, [this, r] { onLod(r); }, Qt::QueuedConnection);
  });
}

TimelineView::~TimelineView() {
  path_stop_ = true;  // closing: the pieces' computation gives up instead of running to its end
  if (path_worker_.joinable()) path_worker_.join();
  worker_.reset();
  delete canvas_;  // before renderer_, which it uses to free its GL names
}

// Which groups a trace opens with. A small trace opens whole. With many rows, expanding
// everything is what makes big timelines slow to scan, so the first view shows the ranks
// (processes) open with their GPU streams, and folds the groups without GPU rows (host threads)
// into summary lines; beyond kOpenProcessesUpTo processes, each process is one summary line.
// Profiler pseudo-processes start folded either way.
std::vector<bool> TimelineView::initial_collapse(const TimelineIndex& idx) {
  std::vector<bool> collapsed(idx.groups.size(), false);
  if (idx.rows.size() > kCollapseAbove) {
    std::vector<bool> holds_gpu(idx.groups.size(), false);
    for (const auto& row : idx.rows)
      if (is_gpu_table(row.table) && row.events > 0)
        for (auto g = row.group; g != trace::kNone; g = idx.groups[g].parent) holds_gpu[g] = true;
    std::size_t processes = 0;
    for (const auto& g : idx.groups) processes += g.level == 1;
    for (std::size_t g = 0; g < collapsed.size(); ++g) {
      const int level = idx.groups[g].level;
      if (level == 1) collapsed[g] = processes > kOpenProcessesUpTo;
      if (level >= 2) collapsed[g] = !holds_gpu[g];
    }
  }
  for (std::size_t g = 0; g < collapsed.size(); ++g) collapsed[g] = collapsed[g] || idx.groups[g].start_collapsed;
  return collapsed;
}

bool TimelineView::rowOpen(std::uint32_t row) const {
  if (!doc_ || row >= doc_->index.rows.size()) return false;
  for (auto g = doc_->index.rows[row].group; g != trace::kNone; g = doc_->index.groups[g].parent)
    if (collapsed_[g]) return false;
  return true;
}

void TimelineView::setDocument(std::shared_ptr<const Document> doc) {
  doc_ = std::move(doc);
  lod_.reset();
  selected_ = flow_ = hover_ = {};
  hover_counter_ = trace::kNone;
  path_failed_for_ = nullptr;
  area_.reset();
  highlight_t0_ = highlight_t1_ = 0;
  collapsed_.assign(doc_ ? doc_->index.groups.size() : 0, false);
  group_rows_.assign(collapsed_.size(), {});
  track_row_.clear();
  if (doc_) {
    const auto& idx = doc_->index;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r)
      if (idx.rows[r].table != Table::Counters) {
        for (auto g = idx.rows[r].group; g != trace::kNone; g = idx.groups[g].parent) group_rows_[g].push_back(r);
        track_row_.try_emplace(idx.rows[r].track, r);
      }
    collapsed_ = initial_collapse(idx);
  }
  pinned_.assign(doc_ ? doc_->index.rows.size() : 0, false);
  relayout();
  fitAll();
  emit selectionChanged();
  emit areaChanged();
}

// ---- view ----

int TimelineView::timelineWidth() const { return std::max(1, width() - kLabelWidth - kScrollBarWidth); }

double TimelineView::xAt(Ns t) const {
  return kLabelWidth + static_cast<double>(t - t0_) * timelineWidth() / static_cast<double>(t1_ - t0_);
}

Ns TimelineView::timeAt(double x) const {
  return t0_ + static_cast<Ns>((x - kLabelWidth) * static_cast<double>(t1_ - t0_) / timelineWidth());
}

void TimelineView::setView(Ns t0, Ns t1) {
  constexpr Ns kMinSpan = 100;
  if (t1 - t0 < kMinSpan) {
    const Ns mid = t0 + (t1 - t0) / 2;
    t0 = mid - kMinSpan / 2;
    t1 = t0 + kMinSpan;
  }
  if (doc_) {  // never further out than four times the trace
    const Ns span = std::max<Ns>(kMinSpan, doc_->index.end - doc_->index.start);
    if (t1 - t0 > 4 * span) {
      const Ns mid = t0 + (t1 - t0) / 2;
      t0 = mid - 2 * span;
      t1 = mid + 2 * span;
    }
  }
  if (t0 == t0_ && t1 == t1_) return;
  t0_ = t0;
  t1_ = t1;
  requestLod();
  refresh();
  emitView();
}

void TimelineView::emitView() { emit viewChanged(t0_, t1_); }

void TimelineView::fitAll() {
  if (!doc_) return;
  const Ns s = doc_->index.start, e = doc_->index.end;
  const Ns pad = std::max<Ns>(1, (e - s) / 50);
  setView(s - pad, e + pad);
}

void TimelineView::zoomAbout(double factor, double x) {
  x = std::clamp(x, double(kLabelWidth), double(kLabelWidth + timelineWidth()));
  const Ns anchor = timeAt(x);  // stays under the cursor
  const double left = static_cast<double>(anchor - t0_) * factor, right = static_cast<double>(t1_ - anchor) * factor;
  setView(anchor - static_cast<Ns>(std::llround(left)), anchor + static_cast<Ns>(std::llround(right)));
}

void TimelineView::panPixels(double dx) {
  const Ns d = static_cast<Ns>(std::llround(dx * static_cast<double>(t1_ - t0_) / timelineWidth()));
  setView(t0_ + d, t1_ + d);
}

// ---- selection ----

void TimelineView::select(EventRef e) {
  if (doc_ && e.valid() && !span_columns(doc_->trace, e.table)) e = {};
  selected_ = e;
  flow_ = doc_ && e.valid() ? correlated_event(*doc_, e) : EventRef{};
  refresh();
  emit selectionChanged();
}

void TimelineView::fitSelected() {
  if (!doc_ || !selected_.valid()) return;
  const Ns s = event_start(*doc_, selected_), e = event_end(*doc_, selected_);
  const Ns pad = std::max<Ns>(500, (e - s) / 10);
  setView(s - pad, e + pad);
}

void TimelineView::setHighlight(Ns t0, Ns t1) {
  highlight_t0_ = t0;
  highlight_t1_ = t1;
  refresh();
}

void TimelineView::setCriticalPathVisible(bool on) {
  path_visible_ = on;
  requestPathPieces();
  refresh();
}

void TimelineView::setArea(std::optional<AreaSelection> a) {
  area_ = std::move(a);
  refresh();
  emit areaChanged();
}

void TimelineView::zoomToArea() {
  if (area_ && area_->t1 > area_->t0) setView(area_->t0, area_->t1);
}

namespace {

// Which string ids name an event containing `needle`, case-insensitively (one pass over the
// string table); empty when none does.
std::vector<bool> names_containing(const trace::Trace& t, const std::string& needle) {
  std::vector<bool> match(t.strings.size(), false);
  bool any = false;
  for (trace::StringId i = 1; i < t.strings.size(); ++i) {
    const auto s = t.strings.get(i);
    const auto it = std::search(s.begin(), s.end(), needle.begin(), needle.end(),
                                [](char a, char b) { return std::tolower((unsigned char)a) == std::tolower((unsigned char)b); });
    if (it != s.end()) match[i] = any = true;
  }
  return any ? match : std::vector<bool>{};
}

// Events in time order: (start, table, row).
using EventKey = std::tuple<trace::Ns, int, std::uint32_t>;
EventKey event_key(trace::Ns start, EventRef e) { return {start, static_cast<int>(e.table), e.row}; }

// The matching event nearest after (or, `backwards`, before) `from`, over every span table.
std::optional<EventKey> nearest_match(const trace::Trace& t, const std::vector<bool>& match, EventKey from,
                                      bool backwards) {
  std::optional<EventKey> best;
  for (int ti = 0; ti <= static_cast<int>(Table::Collectives); ++ti) {
    const auto table = static_cast<Table>(ti);
    const auto* c = span_columns(t, table);
    for (std::uint32_t i = 0; i < c->size(); ++i) {
      if (!match[c->name[i]]) continue;
      const auto k = event_key(c->start[i], {table, i});
      if (backwards ? (k < from && (!best || k > *best)) : (k > from && (!best || k < *best))) best = k;
    }
  }
  return best;
}

}  // namespace

bool TimelineView::findNext(const QString& text, bool backwards) {
  if (!doc_ || text.isEmpty()) return false;
  const auto& t = doc_->trace;
  const auto match = names_containing(t, text.toStdString());
  if (match.empty()) return false;
  // from the selection (or the view's start), the nearest match in time order
  const Ns from = selected_.valid() ? event_start(*doc_, selected_) : (backwards ? t1_ : t0_);
  const auto cur = event_key(from, selected_.valid() ? selected_
                                                     : EventRef{backwards ? Table::Counters : Table::Ranges,
                                                                backwards ? trace::kNone : 0});
  auto best = nearest_match(t, match, cur, backwards);
  if (!best)  // wrap around to the other end of the trace
    best = nearest_match(t, match, backwards ? EventKey{INT64_MAX, INT32_MAX, UINT32_MAX} : EventKey{INT64_MIN, INT32_MIN, 0},
                         backwards);
  if (!best) return false;
  const EventRef e{static_cast<Table>(std::get<1>(*best)), std::get<2>(*best)};
  select(e);
  // bring it into view at the same zoom (or zoom out to fit it)
  const Ns s = event_start(*doc_, e), en = event_end(*doc_, e), span = t1_ - t0_;
  if (en - s > span) fitSelected();
  else if (s < t0_ || en > t1_) setView(s - span / 2 + (en - s) / 2, s + span / 2 + (en - s) / 2);
  const auto pos = locate(doc_->index, t, e);
  if (pos.row != trace::kNone) scrollToRow(pos.row);
  return true;
}

// Expands the groups holding `row` and scrolls it into view (a third down) unless it is pinned
// or already visible.
void TimelineView::scrollToRow(std::uint32_t row) {
  openGroupsOf(row);
  relayout();
  for (const auto& en : entries_)
    if (!en.group && en.id == row && !pinned_[row]) {
      const int view_h = height() - kRulerHeight - pinnedHeight();
      if (en.y < vscroll_->value() || en.y + en.h > vscroll_->value() + view_h) vscroll_->setValue(en.y - view_h / 3);
    }
}

void TimelineView::openGroupsOf(std::uint32_t row) {
  for (auto g = doc_->index.rows[row].group; g != trace::kNone; g = doc_->index.groups[g].parent) collapsed_[g] = false;
}

// ---- rows and layout ----

void TimelineView::toggleGroup(std::uint32_t g) {
  if (g >= collapsed_.size()) return;
  collapsed_[g] = !collapsed_[g];
  relayout();
}
void TimelineView::revealRank(int rank) {
  if (!doc_) return;
  const auto& idx = doc_->index;
  std::uint32_t first = trace::kNone;
  for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
    if (idx.rows[r].rank != rank) continue;
    if (first == trace::kNone) first = r;
    openGroupsOf(r);
  }
  relayout();
  if (first == trace::kNone) return;
  // scroll so the rank's first group header is at the top
  const auto g = idx.rows[first].group;
  for (const auto& e : entries_)
    if ((e.group && e.id == g) || (!e.group && e.id == first)) {
      vscroll_->setValue(e.y);
      break;
    }
}

bool TimelineView::groupCollapsed(std::uint32_t g) const { return g < collapsed_.size() && collapsed_[g]; }

void TimelineView::togglePin(std::uint32_t row) {
  if (row >= pinned_.size()) return;
  pinned_[row] = !pinned_[row];
  relayout();
}
bool TimelineView::pinned(std::uint32_t row) const { return row < pinned_.size() && pinned_[row]; }

int TimelineView::rowHeight(std::uint32_t row) const {
  const auto& r = doc_->index.rows[row];
  if (r.table == Table::Counters) return kCounterHeight;
  return static_cast<int>(std::max<std::size_t>(1, r.lanes.size())) * kLaneHeight + 2;
}

void TimelineView::relayout() {
  entries_.clear();
  pinned_entries_.clear();
  content_height_ = 0;
  if (doc_) {
    const auto& idx = doc_->index;
    std::vector<bool> emitted(idx.groups.size(), false);
    int y = 0, py = 0;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
      const int level = idx.rows[r].group == trace::kNone ? 0 : idx.groups[idx.rows[r].group].level + 1;
      if (pinned_[r]) {
        pinned_entries_.push_back({false, r, py, rowHeight(r), level});
        py += rowHeight(r);
        continue;
      }
      // the group chain, outermost first
      std::vector<std::uint32_t> chain;
      for (auto g = idx.rows[r].group; g != trace::kNone; g = idx.groups[g].parent) chain.push_back(g);
      std::reverse(chain.begin(), chain.end());
      bool visible = true;
      for (auto g : chain) {
        if (!emitted[g]) {
          emitted[g] = true;
          entries_.push_back({true, g, y, kGroupHeight, idx.groups[g].level});
          y += kGroupHeight;
        }
        if (collapsed_[g]) { visible = false; break; }
      }
      if (!visible) continue;
      entries_.push_back({false, r, y, rowHeight(r), level});
      y += rowHeight(r);
    }
    content_height_ = y;
  }
  const int view_h = std::max(0, height() - kRulerHeight - pinnedHeight());
  vscroll_->setRange(0, std::max(0, content_height_ - view_h));
  vscroll_->setPageStep(std::max(1, view_h));
  vscroll_->setSingleStep(kLaneHeight * 3);
  requestLod();
  refresh();
}

int TimelineView::pinnedHeight() const {
  return pinned_entries_.empty() ? 0 : pinned_entries_.back().y + pinned_entries_.back().h + 3;
}
int TimelineView::scrollY() const { return vscroll_->value(); }

int TimelineView::entryTop(const Entry& e, bool pinned) const {
  return pinned ? kRulerHeight + e.y : kRulerHeight + pinnedHeight() + e.y - scrollY();
}

QRect TimelineView::rowRect(std::uint32_t row) const {
  for (const auto& e : pinned_entries_)
    if (e.id == row) return QRect(kLabelWidth, entryTop(e, true), timelineWidth(), e.h);
  const int top_limit = kRulerHeight + pinnedHeight();
  for (const auto& e : entries_) {
    if (e.group || e.id != row) continue;
    const int top = entryTop(e, false);
    if (top + e.h <= top_limit || top >= height()) return {};
    return QRect(kLabelWidth, top, timelineWidth(), e.h);
  }
  return {};
}

QRect TimelineView::groupRect(std::uint32_t group) const {
  const int top_limit = kRulerHeight + pinnedHeight();
  for (const auto& e : entries_) {
    if (!e.group || e.id != group) continue;
    const int top = entryTop(e, false);
    if (top + e.h <= top_limit || top >= height()) return {};
    return QRect(kLabelWidth, top, timelineWidth(), e.h);
  }
  return {};
}

const TimelineView::Entry* TimelineView::entryAt(QPoint p, bool* pinned) const {
  if (p.y() < kRulerHeight) return nullptr;
  for (const auto& e : pinned_entries_) {
    const int top = entryTop(e, true);
    if (p.y() >= top && p.y() < top + e.h) { *pinned = true; return &e; }
  }
  if (p.y() < kRulerHeight + pinnedHeight()) return nullptr;
  // entries are sorted by y: binary search
  const int cy = p.y() - kRulerHeight - pinnedHeight() + scrollY();
  auto it = std::upper_bound(entries_.begin(), entries_.end(), cy, [](int y, const Entry& e) { return y < e.y; });
  if (it == entries_.begin()) return nullptr;
  --it;
  if (cy >= it->y + it->h) return nullptr;
  *pinned = false;
  return &*it;
}

EventRef TimelineView::eventAt(QPoint p) const {
  if (!doc_ || p.x() < kLabelWidth || p.x() >= kLabelWidth + timelineWidth()) return {};
  bool pin = false;
  const Entry* e = entryAt(p, &pin);
  if (!e || e->group) return {};
  const auto& row = doc_->index.rows[e->id];
  if (row.table == Table::Counters) return {};
  const int lane_i = (p.y() - entryTop(*e, pin) - 1) / kLaneHeight;
  if (lane_i < 0 || lane_i >= static_cast<int>(row.lanes.size())) return {};
  const auto& lane = row.lanes[static_cast<std::size_t>(lane_i)];
  // the events within ±2 px of the cursor; the longest of them (bounded scan)
  const auto [first, last] = lane_range(lane, timeAt(p.x() - 2), timeAt(p.x() + 3));
  EventRef best;
  Ns best_d = -1;
  const Ns at = timeAt(p.x() + 0.5);
  for (auto k = first; k < last && k < first + 4096; ++k) {
    const Ns d = lane.end_of(k) - lane.start_of(k);
    const bool under = lane.start_of(k) <= at && lane.end_of(k) >= at;
    const Ns score = under ? d + (Ns(1) << 60) : d;  // prefer the one right under the cursor
    if (score > best_d) { best_d = score; best = {row.table, lane.row(k)}; }
  }
  return best;
}

std::optional<QPointF> TimelineView::eventAnchor(EventRef e) const {
  if (!doc_ || !e.valid()) return std::nullopt;
  const auto pos = locate(doc_->index, doc_->trace, e);
  if (pos.row == trace::kNone) return std::nullopt;
  const QRect r = rowRect(pos.row);
  if (r.isEmpty()) return std::nullopt;
  const double y = r.top() + 1 + pos.lane * kLaneHeight + kLaneHeight / 2.0;
  return QPointF(std::clamp(xAt(event_start(*doc_, e)), double(kLabelWidth), double(kLabelWidth + timelineWidth())), y);
}

// ---- LOD ----

void TimelineView::requestLod() {
  if (!doc_ || width() <= kLabelWidth) return;
  LodRequest req;
  req.doc = doc_;
  for (const auto& e : pinned_entries_) req.rows.push_back(e.id);
  // the rows in the viewport, plus half a screen above and below for scrolling
  const int view_h = height() - kRulerHeight - pinnedHeight();
  const int lo = scrollY() - view_h / 2, hi = scrollY() + view_h + view_h / 2;
  for (const auto& e : entries_) {
    if (e.y + e.h < lo || e.y > hi) continue;
    if (!e.group) req.rows.push_back(e.id);
    else if (collapsed_[e.id])  // a collapsed group shows a summary of the rows inside it
      req.rows.insert(req.rows.end(), group_rows_[e.id].begin(), group_rows_[e.id].end());
  }
  // three view widths at the view's resolution: panning within it needs no new query
  const Ns span = t1_ - t0_;
  req.window = LodWindow{t0_ - span, t1_ + span, 3.0 * timelineWidth(), 3.0};
  if (lod_) {  // the current result already covers this view at this zoom with these rows
    const auto& w = lod_->window;
    const bool same_zoom = std::abs(w.ns_per_px() - req.window.ns_per_px()) <= 1e-9 * req.window.ns_per_px();
    bool rows_in = true;
    for (auto r : req.rows) rows_in = rows_in && lod_->find(r);
    if (same_zoom && rows_in && w.t0 <= t0_ && w.t1 >= t1_) return;
  }
  req.generation = ++generation_;
  if (synchronous_) {
    onLod(compute_lod(req));
  } else {
    worker_->submit(std::move(req));
  }
}

void TimelineView::onLod(std::shared_ptr<const LodResult> r) {
  if (!r || (lod_ && r->generation < lod_->generation)) return;
  if (!doc_ || r->doc != doc_.get()) return;  // for an older document
  lod_ = std::move(r);
  refresh();
  emit lodUpdated();
}

// ---- drawing ----

void TimelineView::buildFrame(Frame& f) {
  f.clear();
  f.background = 0xffffffffu;
  const int W = width(), H = height();
  const QFontMetrics fm(font());
  if (!doc_) {
    f.texts.push_back({QRectF(0, 0, W, H), tr("Open a trace: File > Open, or drop a file here."), kDimText, Qt::AlignCenter});
    return;
  }
  const int top_limit = kRulerHeight + pinnedHeight();
  // scrolled rows first, then the pinned strip and the ruler on top of them
  for (const auto& e : entries_) {
    const int top = entryTop(e, false);
    if (top + e.h <= top_limit || top >= H) continue;
    drawEntry(f, fm, e, top, false);
  }
  // texts of partially hidden top entries would bleed over the strip: drop them
  f.texts.erase(std::remove_if(f.texts.begin(), f.texts.end(), [&](const Frame::Text& t) { return t.r.top() < top_limit; }),
                f.texts.end());
  f.rects.push_back({QRectF(0, kRulerHeight, W, pinnedHeight()), 0xfffff8e1u});
  for (const auto& e : pinned_entries_) drawEntry(f, fm, e, entryTop(e, true), true);
  if (!pinned_entries_.empty()) f.lines.push_back({QLineF(0, top_limit - 1.5, W, top_limit - 1.5), 0xffffb300u, 2});

  drawRuler(f);
  requestPathPieces();
  addCriticalPath(f, kLabelWidth + timelineWidth());
  drawOverlays(f);
  drawHoverBox(f, fm);
  if (help_) drawHelp(f, fm);
}

// One entry of the track list: a group header, or a row's label and its events.
void TimelineView::drawEntry(Frame& f, const QFontMetrics& fm, const Entry& e, int top, bool pinned) const {
  if (e.group) {
    drawGroupEntry(f, fm, e, top);
    return;
  }
  const int h = e.h, indent = 6 + e.level * 12, tw = timelineWidth(), right = kLabelWidth + tw;
  const auto& row = doc_->index.rows[e.id];
  f.rects.push_back({QRectF(0, top, kLabelWidth, h), kLabelBg});
  f.rects.push_back({QRectF(kLabelWidth, top, tw, h), (e.id % 2) ? kStripe : 0xffffffffu});
  f.lines.push_back({QLineF(0, top + h - 0.5, right, top + h - 0.5), 0xffe0e0e0u});
  QString label = qs(row.label);
  if (pinned) label = QStringLiteral("● ") + label;
  f.texts.push_back({QRectF(indent, top, kLabelWidth - indent - 4, std::min(h, kLaneHeight + 2)),
                     fm.elidedText(label, Qt::ElideRight, kLabelWidth - indent - 4), kText, Qt::AlignLeft | Qt::AlignVCenter});
  const RowLod* rl = lod_ ? lod_->find(e.id) : nullptr;
  if (!rl) return;
  if (row.table == Table::Counters) drawCounterRow(f, fm, e, top, *rl);
  else drawLanes(f, fm, e, top, pinned, *rl);
}

// A group header; collapsed, a summary of the rows inside it.
void TimelineView::drawGroupEntry(Frame& f, const QFontMetrics& fm, const Entry& e, int top) const {
  const auto& idx = doc_->index;
  const int h = e.h, indent = 6 + e.level * 12, right = kLabelWidth + timelineWidth();
  const auto& g = idx.groups[e.id];
  f.rects.push_back({QRectF(0, top, width(), h), kGroupBg});
  const QString mark = collapsed_[e.id] ? QStringLiteral("▸ ") : QStringLiteral("▾ ");
  f.texts.push_back({QRectF(indent, top, kLabelWidth - indent - 4, h),
                     fm.elidedText(mark + qs(g.label), Qt::ElideRight, kLabelWidth - indent - 4), kText,
                     Qt::AlignLeft | Qt::AlignVCenter});
  if (!collapsed_[e.id] || !lod_) return;
  // summary: the top lane of every row inside, drawn over each other
  for (auto r : group_rows_[e.id]) {
    const RowLod* rl = lod_->find(r);
    if (!rl || rl->lanes.empty()) continue;
    const auto& lane = idx.rows[r].lanes[0];
    for (const auto& it : rl->lanes[0]) {
      double x0 = xAt(it.start), x1 = xAt(it.end);
      if (x1 < kLabelWidth || x0 > right) continue;
      x0 = std::max<double>(x0, kLabelWidth);
      x1 = std::max(x0 + 1, std::min<double>(x1, right));
      f.rects.push_back({QRectF(x0, top + 3, x1 - x0, h - 6), event_color(*doc_, {idx.rows[r].table, lane.row(it.first)}), 0,
                         it.merged()});
    }
  }
}

// A counter row: min-max bars per pixel bin, and its scale.
void TimelineView::drawCounterRow(Frame& f, const QFontMetrics& fm, const Entry& e, int top, const RowLod& rl) const {
  const int h = e.h, indent = 6 + e.level * 12, tw = timelineWidth(), right = kLabelWidth + tw;
  const auto& s = doc_->index.rows[e.id].counter;
  // derived counters are never negative: their band starts at 0, and a busy % spans 0-100
  const double lo = s.derived() ? 0.0 : s.lo;
  const double hi = s.derived() && std::string_view(s.unit) == "%" ? 100.0 : s.hi;
  const double range = hi > lo ? hi - lo : 1;
  const double npp = lod_->window.ns_per_px();
  for (const auto& c : rl.counter) {
    const double x0 = xAt(lod_->window.t0 + static_cast<Ns>(c.x0 * npp)), x1 = xAt(lod_->window.t0 + static_cast<Ns>(c.x1 * npp));
    if (x1 < kLabelWidth || x0 > right) continue;
    const double y1 = top + h - 2 - (c.min - lo) / range * (h - 4), y0 = top + h - 2 - (c.max - lo) / range * (h - 4);
    const double cx0 = std::max<double>(x0, kLabelWidth), cx1 = std::min<double>(std::max(x1, cx0 + 1), right);
    f.rects.push_back({QRectF(cx0, y0, cx1 - cx0, std::max(1.0, y1 - y0)), 0xff00897bu});
  }
  if (s.derived()) {  // its scale under the label: the peak with its unit, and the bin width
    const QString scale = tr("peak %1 · bin %2").arg(qs(format_counter_value(s.hi, s.unit)), qs(format_duration(s.bin)));
    f.texts.push_back({QRectF(indent, top + kLaneHeight - 4, kLabelWidth - indent - 4, h - kLaneHeight + 4),
                       fm.elidedText(scale, Qt::ElideRight, kLabelWidth - indent - 4), kDimText, Qt::AlignLeft | Qt::AlignVCenter});
  } else {
    f.texts.push_back({QRectF(kLabelWidth + 4, top, tw - 8, 12), qs(format_counter_value(s.hi, s.unit)), kDimText,
                       Qt::AlignRight | Qt::AlignTop});
  }
}

// An event row's lanes: one box per event (named when wide enough), hatched for merged runs.
void TimelineView::drawLanes(Frame& f, const QFontMetrics& fm, const Entry& e, int top, bool pinned, const RowLod& rl) const {
  const int right = kLabelWidth + timelineWidth(), top_limit = kRulerHeight + pinnedHeight();
  const auto& row = doc_->index.rows[e.id];
  for (std::size_t l = 0; l < rl.lanes.size(); ++l) {
    const double y = top + 1 + static_cast<double>(l) * kLaneHeight, lh = kLaneHeight - 2;
    if (y + lh <= top_limit && !pinned) continue;
    const auto& lane = row.lanes[l];
    for (const auto& it : rl.lanes[l]) {
      double x0 = xAt(it.start), x1 = xAt(it.end);
      if (x1 < kLabelWidth || x0 > right) continue;
      x0 = std::max<double>(x0, kLabelWidth);
      x1 = std::min<double>(x1, right);
      if (x1 - x0 < 1) x1 = x0 + 1;
      const EventRef ev{row.table, lane.row(it.first)};
      if (it.merged()) {
        // hatched in the colour of the run's first event: dense runs keep their hue
        f.rects.push_back({QRectF(x0, y, x1 - x0, lh), event_color(*doc_, ev), 0, true});
        if (x1 - x0 > 60)
          f.texts.push_back({QRectF(x0 + 2, y, x1 - x0 - 4, lh),
                             fm.elidedText(tr("%1 merged").arg(it.count), Qt::ElideRight, static_cast<int>(x1 - x0 - 4)), kText,
                             Qt::AlignLeft | Qt::AlignVCenter});
        continue;
      }
      f.rects.push_back({QRectF(x0, y, x1 - x0, lh), event_color(*doc_, ev)});
      if (x1 - x0 > 30) {
        const QString name = fm.elidedText(qs(event_name(*doc_, ev)), Qt::ElideRight, static_cast<int>(x1 - x0 - 4));
        if (!name.isEmpty()) f.texts.push_back({QRectF(x0 + 2, y, x1 - x0 - 4, lh), name, kText, Qt::AlignLeft | Qt::AlignVCenter});
      }
    }
  }
}

// The ruler: times from the trace's start, with a grid line under each tick.
void TimelineView::drawRuler(Frame& f) const {
  const int W = width(), H = height(), tw = timelineWidth(), right = kLabelWidth + tw;
  f.rects.push_back({QRectF(0, 0, W, kRulerHeight), kRulerBg});
  f.texts.push_back({QRectF(6, 0, kLabelWidth - 8, kRulerHeight),
                     tr("view %1").arg(qs(format_duration(t1_ - t0_))), kDimText, Qt::AlignLeft | Qt::AlignVCenter});
  const Ns step = tick_step(static_cast<double>(t1_ - t0_) / tw, 110);
  const Ns origin = doc_->index.start;
  Ns tick = origin + ((t0_ - origin) / step) * step;
  if (tick < t0_) tick += step;
  for (; tick <= t1_; tick += step) {
    const double x = xAt(tick);
    f.lines.push_back({QLineF(x, kRulerHeight - 8, x, kRulerHeight), 0xff90a4aeu});
    f.lines.push_back({QLineF(x, kRulerHeight, x, H), 0x18000000u});
    f.texts.push_back({QRectF(x + 3, 0, 100, kRulerHeight - 6), qs(format_duration(tick - origin)), kDimText,
                       Qt::AlignLeft | Qt::AlignVCenter});
  }
  f.rects.push_back({QRectF(right, 0, W - right, kRulerHeight), kRulerBg});
  f.lines.push_back({QLineF(kLabelWidth - 0.5, 0, kLabelWidth - 0.5, H), 0xffbdbdbdu});
}

// The overlays: the finding highlight, the area selection, the selected event, its flow arrow.
void TimelineView::drawOverlays(Frame& f) const {
  const int H = height(), right = kLabelWidth + timelineWidth();
  if (highlight_t1_ > highlight_t0_) {
    const double x0 = std::max<double>(kLabelWidth, xAt(highlight_t0_)), x1 = std::min<double>(right, xAt(highlight_t1_));
    if (x1 > x0) {
      f.overlays.push_back({QRectF(x0, kRulerHeight, std::max(2.0, x1 - x0), H - kRulerHeight), 0x33ffc107u, 0xffff8f00u});
      f.overlays.push_back({QRectF(x0, 0, std::max(2.0, x1 - x0), kRulerHeight), 0x99ffc107u});
    }
  }
  if (area_) {
    const double x0 = std::max<double>(kLabelWidth, xAt(area_->t0)), x1 = std::min<double>(right, xAt(area_->t1));
    for (auto r : area_->rows) {
      const QRect rr = rowRect(r);
      if (!rr.isEmpty() && x1 > x0) f.overlays.push_back({QRectF(x0, rr.top(), x1 - x0, rr.height()), 0x332962ffu, 0xff2962ffu});
    }
    if (x1 > x0)
      f.overlay_texts.push_back({QRectF(x0 + 2, 0, std::max(80.0, x1 - x0), kRulerHeight), qs(format_duration(area_->t1 - area_->t0)),
                                 0xff2962ffu, Qt::AlignLeft | Qt::AlignVCenter});
  }
  if (selected_.valid()) {
    const auto pos = locate(doc_->index, doc_->trace, selected_);
    const QRect rr = pos.row == trace::kNone ? QRect() : rowRect(pos.row);
    if (!rr.isEmpty()) {
      double x0 = xAt(event_start(*doc_, selected_)), x1 = xAt(event_end(*doc_, selected_));
      x0 = std::max<double>(x0, kLabelWidth);
      x1 = std::max(x0 + 3, std::min<double>(x1, right));
      f.overlays.push_back({QRectF(x0 - 1, rr.top() + pos.lane * kLaneHeight, x1 - x0 + 2, kLaneHeight + 1), 0, 0xff000000u});
    }
    const auto a = eventAnchor(selected_), b = eventAnchor(flow_);
    if (a && b) {
      const bool host_first = selected_.table == Table::ApiCalls;
      f.lines.push_back({host_first ? QLineF(*a, *b) : QLineF(*b, *a), 0xffd50000u, 1.5, true});
    }
  }
}

// The hover box: the fields of the event or counter under the mouse (none while the help shows).
void TimelineView::drawHoverBox(Frame& f, const QFontMetrics& fm) const {
  const int W = width(), H = height();
  const Fields fields = help_ ? Fields{}
                        : hover_.valid()                  ? describe_event(*doc_, hover_)
                        : hover_counter_ != trace::kNone  ? describe_counter(*doc_, hover_counter_, hover_t_)
                                                          : Fields{};
  if (fields.empty()) return;
  QStringList lines;
  for (std::size_t i = 0; i < fields.size() && i < 10; ++i)
    if (fields[i].first != "kind" && fields[i].first != "track")
      lines << fm.elidedText(qs(fields[i].first) + ": " + qs(fields[i].second), Qt::ElideRight, 460);
  int bw = 0;
  for (const auto& l : lines) bw = std::max(bw, fm.horizontalAdvance(l));
  const int lh = fm.height(), bh = lh * static_cast<int>(lines.size()) + 8;
  bw += 12;
  int bx = hover_pos_.x() + 14, by = hover_pos_.y() + 16;
  if (bx + bw > W) bx = std::max(0, hover_pos_.x() - bw - 8);
  if (by + bh > H) by = std::max(0, hover_pos_.y() - bh - 8);
  f.overlays.push_back({QRectF(bx, by, bw, bh), 0xf0fffde7u, 0xff9e9e9eu});
  for (int i = 0; i < lines.size(); ++i)
    f.overlay_texts.push_back({QRectF(bx + 6, by + 4 + i * lh, bw - 8, lh), lines[i], kText, Qt::AlignLeft | Qt::AlignVCenter});
}

// The keyboard and mouse help ('?').
void TimelineView::drawHelp(Frame& f, const QFontMetrics& fm) const {
  static const char* const kHelp[][2] = {
      {"wheel", "zoom about the cursor"},         {"Shift+wheel", "scroll the tracks"},
      {"drag", "pan (time and tracks)"},          {"Shift+drag", "area selection (aggregates)"},
      {"W / S", "zoom in / out"},                 {"A / D", "pan left / right"},
      {"click", "select an event (details)"},     {"F", "fit the selected event"},
      {"Z", "zoom to the area selection"},        {"0", "fit the whole trace"},
      {"P / double-click label", "pin or unpin a row"}, {"click a group", "collapse or expand"},
      {"Ctrl+F, F3, Shift+F3", "search names, next, previous"}, {"Esc", "clear selection and highlights"},
      {"C", "show or hide the critical path"},
      {"?", "this help"}};
  const int W = width(), H = height();
  const int n = static_cast<int>(std::size(kHelp)), lh = fm.height() + 2, bw = 440, bh = (n + 2) * lh;
  const double bx = (W - bw) / 2.0, by = std::max(0.0, (H - bh) / 2.0);
  f.overlays.push_back({QRectF(bx, by, bw, bh), 0xf0263238u, 0xff90a4aeu});
  f.overlay_texts.push_back({QRectF(bx, by + 4, bw, lh), tr("Keyboard and mouse"), 0xffffffffu, Qt::AlignHCenter | Qt::AlignVCenter});
  for (int i = 0; i < n; ++i) {
    f.overlay_texts.push_back({QRectF(bx + 16, by + (i + 1.5) * lh, 180, lh), QString::fromUtf8(kHelp[i][0]), 0xffffe082u, Qt::AlignLeft | Qt::AlignVCenter});
    f.overlay_texts.push_back({QRectF(bx + 200, by + (i + 1.5) * lh, bw - 210, lh), QString::fromUtf8(kHelp[i][1]), 0xffffffffu, Qt::AlignLeft | Qt::AlignVCenter});
  }
}

// Colours of the path's kinds (analyzer::PathKind order), as in the HTML report.
constexpr QRgb kPathColors[analyzer::kPathKinds] = {0xff9c755fu, 0xffff9da7u, 0xff4e79a7u, 0xff76b7b2u, 0xffe15759u,
                                                    0xffbab0acu, 0xfff28e2bu, 0xffedc948u, 0xffb07aa1u};
constexpr double kPathBar = 6;

void TimelineView::requestPathPieces() {
  if (!path_visible_ || !doc_ || !doc_->analysed() || doc_->path_pieces() || path_failed_for_ == doc_.get()) return;
  auto compute = [stop = &path_stop_](const Document& d) {
    try {
      compute_path_pieces(d, stop);
      return true;
    } catch (const std::exception&) {  // out of memory: no overlay, the rest of the view stays
      return false;
    }
  };
  if (synchronous_) {
    if (!compute(*doc_)) path_failed_for_ = doc_.get();
    return;
  }
  if (path_worker_busy_) return;
  if (path_worker_.joinable()) path_worker_.join();  // done with an earlier document
  path_worker_busy_ = true;
  path_worker_ = std::thread([this, doc = doc_, compute] {
    const bool ok = compute(*doc);
    QMetaObject::invokeMethod(this, [this, ok, d = doc.get()] {
      path_worker_busy_ = false;
      if (!ok && d == doc_.get()) path_failed_for_ = d;
      refresh();  // draws them (or asks for the next document's)
    }, Qt::QueuedConnection);
  });
}

// Every step's critical path (analyzer::StepPath::pieces) over the rows it ran on: a bar along
// the top of the row in its kind's colour, and a thin line where the path moves to another row.
void TimelineView::addCriticalPath(Frame& f, double right) const {
  const analyzer::StepPieces* pieces = path_visible_ && doc_ ? doc_->path_pieces() : nullptr;
  if (!pieces) return;
  for (const auto& rank : *pieces)
    for (const auto& path : rank) {
      // the path's pieces before and after the visible time range would be skipped (and reset
      // `prev`): only those in the range are visited
      std::optional<QPointF> prev;
      for (const auto& piece : pieces_in_window(std::span<const analyzer::PathPiece>(path), t0_, t1_)) {
        const auto row = track_row_.find(piece.track);
        const QRect rr = row == track_row_.end() ? QRect() : rowRect(row->second);
        const double x0 = std::max<double>(kLabelWidth, xAt(piece.start)), x1 = std::min<double>(right, xAt(piece.end));
        if (rr.isEmpty() || piece.end < t0_ || piece.start > t1_ || x1 < x0) {
          prev.reset();
          continue;
        }
        const double y = rr.top() + 1;
        f.overlays.push_back({QRectF(x0, y, std::max(1.5, x1 - x0), kPathBar), kPathColors[static_cast<int>(piece.kind)]});
        if (prev && std::abs(prev->y() - (y + kPathBar / 2)) > 1)
          f.lines.push_back({QLineF(*prev, QPointF(x0, y + kPathBar / 2)), 0xffd50000u, 1.2});
        prev = QPointF(x1, y + kPathBar / 2);
      }
    }
}

void TimelineView::renderTo(QPainter& p) {
  buildFrame(frame_);
  renderer_->render(frame_, p);
}

void TimelineView::paintEvent(QPaintEvent*) {
  if (canvas_) return;  // the OpenGL canvas covers the view and draws the frame
  QPainter p(this);
  renderTo(p);
}

void TimelineView::refresh() {
  update();
  if (canvas_) canvas_->update();
}

QWidget* TimelineView::canvas() const { return canvas_ ? canvas_ : const_cast<TimelineView*>(this); }

bool TimelineView::setOpenGL(bool on, QString* why) {
  if (on == (canvas_ != nullptr)) return true;
  if (!on) {
    delete canvas_;  // releases its GL names while its context lives
    canvas_ = nullptr;
    renderer_ = std::make_unique<PainterRenderer>();
    refresh();
    return true;
  }
#ifdef TT_HAVE_QT_OPENGL
  if (!opengl_available(why)) return false;
  auto gl = std::make_unique<GlRenderer>();
  canvas_ = new GlCanvas(this, gl.get());
  renderer_ = std::move(gl);
  canvas_->setGeometry(rect());
  canvas_->show();
  vscroll_->raise();
  refresh();
  return true;
#else
  if (why) *why = tr("this build has no OpenGL support (Qt's OpenGL modules were not found)");
  return false;
#endif
}

bool TimelineView::openGLPreferred(QString* why) {
#ifdef TT_HAVE_QT_OPENGL
  QString renderer;
  if (!opengl_available(why, &renderer)) return false;
  if (software_opengl(renderer)) {
    if (why) *why = tr("OpenGL here is a software rasteriser (%1), slower than QPainter").arg(renderer);
    return false;
  }
  return true;
#else
  if (why) *why = tr("this build has no OpenGL support (Qt's OpenGL modules were not found)");
  return false;
#endif
}

void TimelineView::resizeEvent(QResizeEvent*) {
  if (canvas_) canvas_->setGeometry(rect());
  vscroll_->setGeometry(width() - kScrollBarWidth, kRulerHeight, kScrollBarWidth, height() - kRulerHeight);
  relayout();
}

void TimelineView::setHelpVisible(bool on) {
  help_ = on;
  refresh();
}

// ---- input ----

void TimelineView::wheelEvent(QWheelEvent* ev) {
  const double steps = ev->angleDelta().y() / 120.0;
  if (ev->modifiers() & Qt::ShiftModifier) {
    vscroll_->setValue(vscroll_->value() - static_cast<int>(steps * kLaneHeight * 3));
  } else if (steps != 0) {
    zoomAbout(std::pow(0.8, steps), ev->position().x());
  }
  ev->accept();
}

void TimelineView::mousePressEvent(QMouseEvent* ev) {
  setFocus();
  const QPoint p = ev->position().toPoint();
  if (ev->button() != Qt::LeftButton) return;
  if (p.x() < kLabelWidth) {
    bool pin = false;
    if (const Entry* e = entryAt(p, &pin); e && e->group) toggleGroup(e->id);
    return;
  }
  drag_ = (ev->modifiers() & Qt::ShiftModifier) ? Drag::Area : Drag::Pan;
  press_pos_ = last_pos_ = p;
  moved_ = false;
}

void TimelineView::mouseMoveEvent(QMouseEvent* ev) {
  const QPoint p = ev->position().toPoint();
  if (drag_ != Drag::None) {
    if ((p - press_pos_).manhattanLength() >= 3) moved_ = true;
    if (drag_ == Drag::Pan && moved_) {
      panPixels(-(p.x() - last_pos_.x()));
      vscroll_->setValue(vscroll_->value() - (p.y() - last_pos_.y()));
    } else if (drag_ == Drag::Area && moved_) {
      AreaSelection a;
      a.t0 = timeAt(std::min(press_pos_.x(), p.x()));
      a.t1 = timeAt(std::max(press_pos_.x(), p.x()));
      const int y0 = std::min(press_pos_.y(), p.y()), y1 = std::max(press_pos_.y(), p.y());
      auto take = [&](const std::vector<Entry>& list, bool pinned) {
        for (const auto& e : list) {
          const int top = entryTop(e, pinned);
          if (!e.group && top + e.h > y0 && top <= y1) a.rows.push_back(e.id);
        }
      };
      take(pinned_entries_, true);
      take(entries_, false);
      area_ = std::move(a);
      refresh();
    }
    last_pos_ = p;
    return;
  }
  const EventRef h = eventAt(p);
  std::uint32_t hc = trace::kNone;  // else a counter row: its value at the cursor
  if (!h.valid() && doc_ && p.x() >= kLabelWidth && p.x() < kLabelWidth + timelineWidth()) {
    bool pin = false;
    if (const Entry* e = entryAt(p, &pin); e && !e->group && doc_->index.rows[e->id].table == Table::Counters) hc = e->id;
  }
  if (!(h == hover_) || hc != hover_counter_ || ((h.valid() || hc != trace::kNone) && p != hover_pos_)) {
    hover_ = h;
    hover_counter_ = hc;
    hover_t_ = timeAt(p.x());
    hover_pos_ = p;
    refresh();
  }
}

void TimelineView::mouseReleaseEvent(QMouseEvent* ev) {
  const QPoint p = ev->position().toPoint();
  if (drag_ == Drag::Pan && !moved_) select(eventAt(p));
  if (drag_ == Drag::Area && moved_) emit areaChanged();
  drag_ = Drag::None;
}

void TimelineView::mouseDoubleClickEvent(QMouseEvent* ev) {
  const QPoint p = ev->position().toPoint();
  bool pin = false;
  if (p.x() < kLabelWidth)
    if (const Entry* e = entryAt(p, &pin); e && !e->group) togglePin(e->id);
}

void TimelineView::leaveEvent(QEvent*) {
  if (hover_.valid() || hover_counter_ != trace::kNone) {
    hover_ = {};
    hover_counter_ = trace::kNone;
    refresh();
  }
}

void TimelineView::keyPressEvent(QKeyEvent* ev) {
  const QPoint cursor = mapFromGlobal(QCursor::pos());
  const double x = rect().contains(cursor) && cursor.x() > kLabelWidth ? cursor.x() : kLabelWidth + timelineWidth() / 2.0;
  switch (ev->key()) {
    case Qt::Key_W: zoomAbout(0.8, x); break;
    case Qt::Key_S: zoomAbout(1.25, x); break;
    case Qt::Key_A: panPixels(-timelineWidth() / 10.0); break;
    case Qt::Key_D: panPixels(timelineWidth() / 10.0); break;
    case Qt::Key_F: fitSelected(); break;
    case Qt::Key_Z: zoomToArea(); break;
    case Qt::Key_C: setCriticalPathVisible(!path_visible_); break;
    case Qt::Key_0:
    case Qt::Key_Home: fitAll(); break;
    case Qt::Key_P:
      if (doc_ && selected_.valid())
        if (const auto pos = locate(doc_->index, doc_->trace, selected_); pos.row != trace::kNone) togglePin(pos.row);
      break;
    case Qt::Key_Question:
    case Qt::Key_H: setHelpVisible(!help_); break;
    case Qt::Key_Escape:
      if (help_) setHelpVisible(false);
      else {
        setArea(std::nullopt);
        setHighlight(0, 0);
        select({});
      }
      break;
    default: QWidget::keyPressEvent(ev); return;
  }
  ev->accept();
}

}  // namespace tt::gui
