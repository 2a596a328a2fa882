#include "models.h"

#include <algorithm>

#include <fmt/format.h>

namespace tt::gui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }
QString pct(double v) { return QString::number(100.0 * v, 'f', 1) + "%"; }
QString ms(trace::Ns ns) { return QString::number(ns / 1e6, 'f', 3); }
double share(trace::Ns part, trace::Ns whole) { return whole > 0 ? double(part) / double(whole) : 0.0; }

// Numbers sort by value (Qt::UserRole) and show formatted (Qt::DisplayRole).
QVariant cell(int role, const QString& text, double sort_key) {
  if (role == Qt::DisplayRole) return text;
  if (role == Qt::UserRole) return sort_key;
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  return {};
}
QVariant text_cell(int role, const QString& text) {
  if (role == Qt::DisplayRole || role == Qt::UserRole) return text;
  return {};
}

}  // namespace

// ---- findings ----

void FindingsModel::setDocument(std::shared_ptr<const Document> doc) {
  beginResetModel();
  doc_ = std::move(doc);
  rows_.clear();
  if (doc_)
    for (const auto& f : doc_->analysis().findings) rows_.push_back(&f);
  std::stable_sort(rows_.begin(), rows_.end(), [](auto* a, auto* b) { return a->gain > b->gain; });
  endResetModel();
}
int FindingsModel::rowCount(const QModelIndex& p) const { return p.isValid() ? 0 : static_cast<int>(rows_.size()); }
int FindingsModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
const analyzer::Finding* FindingsModel::finding(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? rows_[static_cast<std::size_t>(row)] : nullptr;
}

std::pair<trace::Ns, trace::Ns> FindingsModel::evidenceRange(const analyzer::Finding& f) {
  for (const auto& e : f.evidence)
    if (e.end > e.start) return {e.start, e.end};
  return {0, 0};
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  const auto* f = index.isValid() ? finding(index.row()) : nullptr;
  if (!f) return {};
  if (role == Qt::ToolTipRole) return {};  // tooltips could be read as rich text: the pane below shows details
  switch (index.column()) {
    case Gain: return cell(role, ms(f->gain) + " ms", double(f->gain));
    case Share: return cell(role, pct(f->gain_share), f->gain_share);
    case Severity: return cell(role, qs(std::string(to_string(f->severity))), double(f->severity));
    case Rank: return cell(role, f->rank >= 0 ? QString::number(f->rank) : QStringLiteral("all"), f->rank);
    case Category: return text_cell(role, qs(std::string(to_string(f->category))));
    case Title: return text_cell(role, qs(f->title));
  }
  return {};
}

QVariant FindingsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"gain/step", "gain %", "severity", "rank", "category", "finding"};
  return section >= 0 && section < ColumnCount ? tr(kNames[section]) : QVariant();
}

// ---- top kernels ----

void TopKernelsModel::setDocument(std::shared_ptr<const Document> doc) {
  beginResetModel();
  doc_ = std::move(doc);
  rows_.clear();
  if (doc_)
    for (const auto& r : doc_->analysis().metrics.ranks)
      for (const auto& k : r.top_kernels) rows_.push_back({r.rank, &k});
  endResetModel();
}
std::pair<int, std::string> TopKernelsModel::kernel(int row) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return {-1, {}};
  const auto& r = rows_[static_cast<std::size_t>(row)];
  return {r.rank, r.k->name};
}
int TopKernelsModel::rowCount(const QModelIndex& p) const { return p.isValid() ? 0 : static_cast<int>(rows_.size()); }
int TopKernelsModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
QVariant TopKernelsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size())) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  const auto mean = r.k->count ? r.k->total / static_cast<trace::Ns>(r.k->count) : 0;
  switch (index.column()) {
    case Rank: return cell(role, QString::number(r.rank), r.rank);
    case Name: return text_cell(role, qs(r.k->name));
    case Class: return text_cell(role, qs(r.k->kernel_class));
    case Count: return cell(role, QString::number(r.k->count), double(r.k->count));
    case Total: return cell(role, ms(r.k->total) + " ms", double(r.k->total));
    case Mean: return cell(role, qs(format_duration(mean)), double(mean));
  }
  return {};
}
QVariant TopKernelsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"rank", "kernel", "class", "count", "total", "mean"};
  return section >= 0 && section < ColumnCount ? tr(kNames[section]) : QVariant();
}

// ---- ranks ----

void RanksModel::setDocument(std::shared_ptr<const Document> doc) {
  beginResetModel();
  doc_ = std::move(doc);
  endResetModel();
}
int RanksModel::rowCount(const QModelIndex& p) const {
  return p.isValid() || !doc_ ? 0 : static_cast<int>(doc_->analysis().metrics.ranks.size());
}
const analyzer::RankMetrics* RanksModel::rank(int row) const {
  return doc_ && row >= 0 && row < rowCount() ? &doc_->analysis().metrics.ranks[static_cast<std::size_t>(row)] : nullptr;
}
int RanksModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
QVariant RanksModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || !doc_ || index.row() >= rowCount()) return {};
  const auto& r = doc_->analysis().metrics.ranks[static_cast<std::size_t>(index.row())];
  const auto span = r.gpu.span;
  switch (index.column()) {
    case Rank: return text_cell(role, qs(r.label));
    case Steps: return cell(role, QString::number(r.steps.size()), double(r.steps.size()));
    case StepMedian: return cell(role, ms(r.step_median) + " ms", double(r.step_median));
    case StepP90: return cell(role, ms(r.step_p90) + " ms", double(r.step_p90));
    case GpuBusy: return cell(role, r.has_gpu ? pct(share(r.gpu.busy, span)) : QStringLiteral("-"), share(r.gpu.busy, span));
    case Compute: return cell(role, r.has_gpu ? pct(share(r.gpu.compute, span)) : QStringLiteral("-"), share(r.gpu.compute, span));
    case ExposedComm:
      return cell(role, r.has_gpu ? pct(share(r.gpu.exposed_communication, span)) : QStringLiteral("-"),
                  share(r.gpu.exposed_communication, span));
    case DataWait: {
      const auto window = r.window_end - r.window_start;
      return cell(role, pct(share(r.data_wait, window)), share(r.data_wait, window));
    }
  }
  return {};
}
QVariant RanksModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"rank", "steps", "step median", "step p90", "GPU busy", "compute", "exposed comm", "data wait"};
  return section >= 0 && section < ColumnCount ? tr(kNames[section]) : QVariant();
}

// ---- area aggregates ----

void AggregatesModel::setAggregate(AreaAggregate a) {
  beginResetModel();
  agg_ = std::move(a);
  endResetModel();
}
int AggregatesModel::rowCount(const QModelIndex& p) const { return p.isValid() ? 0 : static_cast<int>(agg_.by_name.size()); }
int AggregatesModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
QVariant AggregatesModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& a = agg_.by_name[static_cast<std::size_t>(index.row())];
  const auto mean = a.count ? a.total / static_cast<trace::Ns>(a.count) : 0;
  switch (index.column()) {
    case Name: return text_cell(role, qs(a.name));
    case Count: return cell(role, QString::number(a.count), double(a.count));
    case Total: return cell(role, qs(format_duration(a.total)), double(a.total));
    case Mean: return cell(role, qs(format_duration(mean)), double(mean));
  }
  return {};
}
QVariant AggregatesModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"name", "count", "total", "mean"};
  return section >= 0 && section < ColumnCount ? tr(kNames[section]) : QVariant();
}

}  // namespace tt::gui
