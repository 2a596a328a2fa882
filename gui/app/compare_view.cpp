// The compare view: see compare_view.h.
#include "compare_view.h"

#include <cmath>

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

#include "panels.h"
#include "timeline_view.h"
#include "text.h"

namespace tt::gui {

namespace {

QString ms_text(double ns) { return QString::number(ns / 1e6, 'f', 2); }

QString change_text(const analyzer::Delta& d) {
  if (d.base == 0) return d.next == 0 ? QStringLiteral("0%") : QStringLiteral("new");
  return QStringLiteral("%1%2%").arg(d.relative() >= 0 ? "+" : "").arg(100 * d.relative(), 0, 'f', 0);
}

const analyzer::RankMetrics* rank_of(const Document& doc, std::int32_t rank) {
  for (const auto& r : doc.analysis().metrics.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

QTableView* make_table(QAbstractTableModel* model, QWidget* parent) {
  auto* v = new QTableView(parent);
  v->setModel(model);
  v->setSelectionBehavior(QAbstractItemView::SelectRows);
  v->setSelectionMode(QAbstractItemView::SingleSelection);
  v->verticalHeader()->hide();
  v->horizontalHeader()->setStretchLastSection(true);
  return v;
}

}  // namespace

// ---- AlignedStepsModel ----

void AlignedStepsModel::setRank(const analyzer::RankDiff* r) {
  beginResetModel();
  rank_ = r;
  endResetModel();
}

int AlignedStepsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || rank_ == nullptr ? 0 : static_cast<int>(rank_->steps.size());
}

int AlignedStepsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 5; }

QVariant AlignedStepsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || rank_ == nullptr || index.row() >= rowCount()) return {};
  const auto& s = rank_->steps[static_cast<std::size_t>(index.row())];
  const double a = static_cast<double>(s.base_end - s.base_start), b = static_cast<double>(s.new_end - s.new_start);
  if (role == Qt::TextAlignmentRole) return index.column() == 0 ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case 0: return static_cast<qulonglong>(s.index);
    case 1: return QStringLiteral("%1 / %2").arg(s.base_number).arg(s.new_number);
    case 2: return ms_text(a);
    case 3: return ms_text(b);
    case 4: return change_text({a, b});
  }
  return {};
}

QVariant AlignedStepsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* kNames[] = {"aligned step", "step number (base / new)", "base ms", "new ms", "change"};
  return section >= 0 && section < 5 ? tr(kNames[section]) : QVariant();
}

// ---- KernelDeltaModel ----

void KernelDeltaModel::setRank(const analyzer::RankDiff* r) {
  beginResetModel();
  rank_ = r;
  endResetModel();
}

const analyzer::KernelDelta* KernelDeltaModel::kernel(int row) const {
  return rank_ != nullptr && row >= 0 && row < rowCount() ? &rank_->kernels[static_cast<std::size_t>(row)] : nullptr;
}

int KernelDeltaModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || rank_ == nullptr ? 0 : static_cast<int>(rank_->kernels.size());
}

int KernelDeltaModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : 7; }

QVariant KernelDeltaModel::data(const QModelIndex& index, int role) const {
  const analyzer::KernelDelta* k = kernel(index.row());
  if (!index.isValid() || k == nullptr) return {};
  if (role == Qt::ToolTipRole && index.column() == 0) return qs(k->name);
  if (role == Qt::TextAlignmentRole) return index.column() <= 1 ? QVariant() : QVariant(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case 0: return qs(k->name);
    case 1: return QString::fromUtf8(analyzer::to_string(k->status).data());
    case 2: return QString::number(k->count.base, 'f', 1);
    case 3: return QString::number(k->count.next, 'f', 1);
    case 4: return QString::number(k->time.base / 1e3, 'f', 1);
    case 5: return QString::number(k->time.next / 1e3, 'f', 1);
    case 6: return change_text(k->time);
  }
  return {};
}

QVariant KernelDeltaModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* kNames[] = {"kernel", "status", "base count/step", "new count/step", "base µs/step", "new µs/step",
                                 "time change"};
  return section >= 0 && section < 7 ? tr(kNames[section]) : QVariant();
}

// ---- CompareView ----

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  QFont bold = summary_->font();
  bold.setBold(true);
  summary_->setFont(bold);
  layout->addWidget(summary_);

  auto* top = new QSplitter(Qt::Horizontal, this);
  auto* charts = new QWidget(top);
  auto* charts_layout = new QVBoxLayout(charts);
  charts_layout->setContentsMargins(0, 0, 0, 0);
  base_chart_ = new StepsChart(charts);
  new_chart_ = new StepsChart(charts);
  charts_layout->addWidget(new QLabel(tr("base: steps"), charts));
  charts_layout->addWidget(base_chart_, 1);
  charts_layout->addWidget(new QLabel(tr("new: steps"), charts));
  charts_layout->addWidget(new_chart_, 1);
  steps_ = new AlignedStepsModel(this);
  kernels_ = new KernelDeltaModel(this);
  steps_view_ = make_table(steps_, top);
  kernels_view_ = make_table(kernels_, top);
  top->addWidget(charts);
  top->addWidget(steps_view_);
  top->addWidget(kernels_view_);
  top->setStretchFactor(2, 2);

  auto* timelines = new QSplitter(Qt::Vertical, this);
  base_tl_ = new TimelineView(timelines);
  new_tl_ = new TimelineView(timelines);
  timelines->addWidget(base_tl_);
  timelines->addWidget(new_tl_);

  auto* main = new QSplitter(Qt::Vertical, this);
  main->addWidget(top);
  main->addWidget(timelines);
  main->setStretchFactor(1, 2);
  layout->addWidget(main, 1);

  connect(steps_view_, &QTableView::clicked, this, [this](const QModelIndex& i) { showStep(i.row()); });
  connect(steps_view_, &QTableView::activated, this, [this](const QModelIndex& i) { showStep(i.row()); });
  connect(kernels_view_, &QTableView::clicked, this, [this](const QModelIndex& i) { showKernel(i.row()); });
  // a step bar clicked on either side shows that step on both
  auto by_bar = [this](bool base_side, qint64 t0) {
    if (diff_.ranks.empty()) return;
    const auto& steps = diff_.ranks[diff_.headline].steps;
    for (std::size_t i = 0; i < steps.size(); ++i)
      if ((base_side ? steps[i].base_start : steps[i].new_start) == t0) {
        steps_view_->selectRow(static_cast<int>(i));
        showStep(static_cast<int>(i));
      }
  };
  connect(base_chart_, &StepsChart::stepClicked, this, [by_bar](qint64 t0, qint64) { by_bar(true, t0); });
  connect(new_chart_, &StepsChart::stepClicked, this, [by_bar](qint64 t0, qint64) { by_bar(false, t0); });
}

CompareView::~CompareView() {
  // the models and charts point into diff_ and the documents: detach them first
  steps_->setRank(nullptr);
  kernels_->setRank(nullptr);
  base_chart_->setRank(nullptr);
  new_chart_->setRank(nullptr);
}

void CompareView::setDocuments(std::shared_ptr<const Document> base, std::shared_ptr<const Document> next) {
  steps_->setRank(nullptr);
  kernels_->setRank(nullptr);
  base_chart_->setRank(nullptr);
  new_chart_->setRank(nullptr);
  base_ = std::move(base);
  next_ = std::move(next);
  diff_ = analyzer::diff(base_->trace, base_->analysis(), next_->trace, next_->analysis());
  summary_->setText(qs(diff_.summary));
  base_tl_->setDocument(base_);
  new_tl_->setDocument(next_);
  if (diff_.ranks.empty()) return;
  const analyzer::RankDiff& r = diff_.ranks[diff_.headline];
  steps_->setRank(&r);
  kernels_->setRank(&r);
  base_chart_->setRank(rank_of(*base_, r.base_rank));
  new_chart_->setRank(rank_of(*next_, r.new_rank));
  base_tl_->revealRank(r.base_rank);
  new_tl_->revealRank(r.new_rank);
}

bool CompareView::loadNow(const QString& base, const QString& next, QString* error) {
  auto a = load_document(base.toStdString(), {});
  if (!a) {
    if (error) *error = QString::fromStdString(a.error());
    return false;
  }
  auto b = load_document(next.toStdString(), {});
  if (!b) {
    if (error) *error = QString::fromStdString(b.error());
    return false;
  }
  setDocuments(a.value(), b.value());
  return true;
}

void CompareView::showStep(int row) {
  if (diff_.ranks.empty()) return;
  const auto& steps = diff_.ranks[diff_.headline].steps;
  if (row < 0 || row >= static_cast<int>(steps.size())) return;
  const auto& s = steps[static_cast<std::size_t>(row)];
  base_tl_->setView(s.base_start, s.base_end);
  new_tl_->setView(s.new_start, s.new_end);
}

void CompareView::showKernel(int row) {
  const analyzer::KernelDelta* k = kernels_->kernel(row);
  if (k == nullptr) return;
  const QString name = QString::fromStdString(k->name);
  base_tl_->findNext(name, false);
  new_tl_->findNext(name, false);
}

}  // namespace tt::gui
