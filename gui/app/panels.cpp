#include "panels.h"

#include <QComboBox>
#include <QHeaderView>
#include <QLabel>
#include <QMouseEvent>
#include <QPainter>
#include <QPlainTextEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "event_info.h"
#include "text.h"

namespace tt::gui {

namespace {

QTableView* make_table(QWidget* parent) {
  auto* v = new QTableView(parent);
  v->setSelectionBehavior(QAbstractItemView::SelectRows);
  v->setSelectionMode(QAbstractItemView::SingleSelection);
  v->setEditTriggers(QAbstractItemView::NoEditTriggers);
  v->verticalHeader()->setVisible(false);
  v->verticalHeader()->setDefaultSectionSize(20);
  v->horizontalHeader()->setStretchLastSection(true);
  v->setWordWrap(false);
  return v;
}

}  // namespace

// ---- findings ----

FindingsPanel::FindingsPanel(QObject* parent) : AnalysisPanel(parent) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  model_ = new FindingsModel(this);
  view_ = make_table(widget_);
  view_->setModel(model_);
  detail_ = new QPlainTextEdit(widget_);  // plain text by construction
  detail_->setReadOnly(true);
  detail_->setMaximumHeight(120);
  layout->addWidget(view_, 3);
  layout->addWidget(detail_, 1);
  connect(view_, &QTableView::clicked, this, [this](const QModelIndex& i) { activate(i.row()); });
  connect(view_, &QTableView::activated, this, [this](const QModelIndex& i) { activate(i.row()); });
}

void FindingsPanel::setDocument(std::shared_ptr<const Document> doc) {
  std::string why;
  const bool failed = doc && !doc->analysed() && doc->details_failed(&why);
  const bool analysing = doc && !doc->analysed() && !failed;
  model_->setDocument(std::move(doc));
  detail_->setPlainText(failed               ? tr("Not analysed: %1").arg(QString::fromStdString(why))
                        : analysing          ? tr("Analysing...")
                        : model_->rowCount() ? tr("Click a finding to see its evidence on the timeline.")
                                             : tr("No findings: no rule's threshold was crossed."));
  view_->resizeColumnsToContents();
}

QString FindingsPanel::detailText() const { return detail_->toPlainText(); }

void FindingsPanel::activate(int row) {
  const auto* f = model_->finding(row);
  if (!f) return;
  QString text = qs(f->title) + "\n";
  if (const auto* g = model_->group(row); g && g->ranks.size() > 1)
    text += tr("%1 ranks (%2), worst rank %3: it costs %4 to %5 ms across them; the lines below are rank %3's\n")
                .arg(g->ranks.size())
                .arg(qs(analyzer::rank_list(g->ranks)))
                .arg(f->rank)
                .arg(double(g->cost_min) / 1e6, 0, 'f', 2)
                .arg(double(g->cost_max) / 1e6, 0, 'f', 2);
  text += qs(f->detail);
  for (const auto& e : f->evidence) text += "\n- " + qs(e.what);
  if (!f->gain_model.empty()) text += "\n" + tr("gain model: ") + qs(f->gain_model);
  detail_->setPlainText(text);
  emit findingActivated(f);
  const auto [t0, t1] = FindingsModel::evidenceRange(*f);
  if (t1 > t0) emit navigate(t0, t1, true, f->rank);
}

// ---- steps ----

StepsChart::StepsChart(QWidget* parent) : QWidget(parent) { setMinimumHeight(120); }

void StepsChart::setRank(const analyzer::RankMetrics* r) {
  rank_ = r;
  update();
}

StepsChart::Segments StepsChart::segments(const analyzer::StepMetrics& s, bool has_gpu) {
  Segments g{};
  if (has_gpu) {
    g.compute = s.compute;
    g.communication = s.exposed_communication;
    g.copies = std::max<trace::Ns>(0, s.gpu_busy - s.compute - s.exposed_communication);
    g.data_wait = std::min(s.idle_data, std::max<trace::Ns>(0, s.wall() - g.compute - g.communication - g.copies));
  } else {
    g.data_wait = std::min(s.data_wait, s.wall());
  }
  g.idle = std::max<trace::Ns>(0, s.wall() - g.compute - g.communication - g.copies - g.data_wait);
  return g;
}

namespace {
constexpr int kAxis = 18, kLegend = 18;
constexpr QRgb kSegColors[] = {0xff43a047u, 0xff8e24aau, 0xff1e88e5u, 0xffef6c00u, 0xffcfd8dcu};
const char* const kSegNames[] = {"compute", "communication", "copies", "data wait", "idle / host"};
}  // namespace

int StepsChart::stepAt(int x) const {
  if (!rank_ || rank_->steps.empty()) return -1;
  const int n = static_cast<int>(rank_->steps.size());
  const double bw = double(width() - 8) / n;
  const int i = static_cast<int>((x - 4) / bw);
  return i >= 0 && i < n ? i : -1;
}

void StepsChart::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.fillRect(rect(), Qt::white);
  // legend
  int lx = 4;
  for (int i = 0; i < 5; ++i) {
    p.fillRect(QRect(lx, 4, 10, 10), QColor::fromRgba(kSegColors[i]));
    const QString name = tr(kSegNames[i]);
    p.setPen(Qt::black);
    p.drawText(QRect(lx + 13, 0, 120, kLegend), Qt::AlignLeft | Qt::AlignVCenter, name);
    lx += 20 + p.fontMetrics().horizontalAdvance(name);
  }
  if (!rank_ || rank_->steps.empty()) {
    p.drawText(rect(), Qt::AlignCenter, tr("No steps in this rank (no ProfilerStep ranges or step markers)."));
    return;
  }
  trace::Ns longest = 1;
  for (const auto& s : rank_->steps) longest = std::max(longest, s.wall());
  const int n = static_cast<int>(rank_->steps.size());
  const double bw = double(width() - 8) / n, h = height() - kLegend - kAxis - 4;
  for (int i = 0; i < n; ++i) {
    const auto& s = rank_->steps[static_cast<std::size_t>(i)];
    const auto g = segments(s, rank_->has_gpu);
    const trace::Ns parts[] = {g.compute, g.communication, g.copies, g.data_wait, g.idle};
    double y = height() - kAxis;
    const double x = 4 + i * bw, w = std::max(1.0, bw - (bw > 4 ? 2 : 0));
    for (int k = 0; k < 5; ++k) {
      const double ph = h * double(parts[k]) / double(longest);
      p.fillRect(QRectF(x, y - ph, w, ph), QColor::fromRgba(kSegColors[k]));
      y -= ph;
    }
    if (bw > 28 || i == 0 || i == n - 1)
      p.drawText(QRectF(x, height() - kAxis, std::max(bw, 28.0), kAxis), Qt::AlignLeft | Qt::AlignVCenter, QString::number(s.number));
  }
  p.setPen(Qt::darkGray);
  p.drawText(QRect(0, kLegend, width() - 4, 14), Qt::AlignRight | Qt::AlignVCenter,
             tr("longest %1").arg(QString::fromStdString(format_duration(longest))));
}

void StepsChart::mousePressEvent(QMouseEvent* ev) {
  const int i = stepAt(static_cast<int>(ev->position().x()));
  if (i < 0) return;
  const auto& s = rank_->steps[static_cast<std::size_t>(i)];
  emit stepClicked(s.start, s.end);
  emit stepIndexClicked(i);
}

StepsPanel::StepsPanel(QObject* parent) : AnalysisPanel(parent) {
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  rank_ = new QComboBox(widget_);
  chart_ = new StepsChart(widget_);
  layout->addWidget(rank_);
  layout->addWidget(chart_, 1);
  connect(rank_, &QComboBox::currentIndexChanged, this, [this](int i) {
    // the chart keeps a pointer into the document's analysis, which outlives it
    const analyzer::RankMetrics* rank = nullptr;
    if (doc_ && i >= 0 && i < static_cast<int>(doc_->analysis().metrics.ranks.size()))
      rank = &doc_->analysis().metrics.ranks[static_cast<std::size_t>(i)];
    chart_->setRank(rank);
  });
  connect(chart_, &StepsChart::stepClicked, this, [this](qint64 a, qint64 b) {
    const int i = rank_->currentIndex();
    const auto& ranks = doc_->analysis().metrics.ranks;
    emit navigate(a, b, false, i >= 0 && i < static_cast<int>(ranks.size()) ? ranks[static_cast<std::size_t>(i)].rank : -1);
  });
  connect(chart_, &StepsChart::stepIndexClicked, this, [this](int step) { emit stepActivated(rank_->currentIndex(), step); });
}

void StepsPanel::setDocument(std::shared_ptr<const Document> doc) {
  doc_ = std::move(doc);
  chart_->setRank(nullptr);
  rank_->clear();
  if (!doc_) return;
  int with_steps = -1, i = 0;
  for (const auto& r : doc_->analysis().metrics.ranks) {
    rank_->addItem(qs(r.label) + (r.steps.empty() ? tr(" (no steps)") : QString()));
    if (with_steps < 0 && !r.steps.empty()) with_steps = i;
    ++i;
  }
  rank_->setCurrentIndex(std::max(0, with_steps));
}

// ---- tables ----

TablePanel::TablePanel(QString title, QAbstractTableModel* model, Setter set, Activate activate, QObject* parent)
    : AnalysisPanel(parent), title_(std::move(title)), model_(model), set_(std::move(set)) {
  model_->setParent(this);
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(model_);
  proxy->setSortRole(Qt::UserRole);
  view_ = make_table(widget_);
  view_->setModel(proxy);
  view_->setSortingEnabled(true);
  layout->addWidget(view_);
  if (activate) {
    auto on = [this, proxy, activate](const QModelIndex& i) { activate(*this, proxy->mapToSource(i).row()); };
    connect(view_, &QTableView::clicked, this, on);
    connect(view_, &QTableView::activated, this, on);
  }
}

void TablePanel::setDocument(std::shared_ptr<const Document> doc) { set_(std::move(doc)); }

// ---- tuned config ----

TunedConfigPanel::TunedConfigPanel(QObject* parent) : AnalysisPanel(parent) {
  model_ = new TunedConfigModel(this);
  widget_ = new QWidget;
  auto* layout = new QVBoxLayout(widget_);
  layout->setContentsMargins(0, 0, 0, 0);
  summary_ = new QLabel(model_->summary());
  summary_->setTextFormat(Qt::PlainText);  // paths, commands and refusals verbatim
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  view_ = make_table(widget_);
  view_->setModel(model_);
  comments_ = new QPlainTextEdit;
  comments_->setReadOnly(true);
  comments_->setPlaceholderText(tr("The tuner's notes (the comments at the top of tuned.toml) appear here."));
  comments_->setMaximumHeight(110);
  layout->addWidget(summary_);
  layout->addWidget(view_, 1);
  layout->addWidget(comments_);
}

bool TunedConfigPanel::load(const QString& path) {
  const bool ok = model_->load(path);
  summary_->setText(model_->summary());
  comments_->setPlainText(model_->headerComments());
  view_->resizeColumnsToContents();
  return ok;
}

QString TunedConfigPanel::summaryText() const { return summary_->text(); }
QString TunedConfigPanel::commentsText() const { return comments_->toPlainText(); }

}  // namespace tt::gui
