#include "text.h"
#include "models.h"

#include <algorithm>

#include <QFile>
#include <QFont>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <fmt/format.h>

#include "tracetune/trace/units.h"
#include "tracetune/tuner/tuned_config.h"

namespace tt::gui {

namespace {

QString pct(double v) { return QString::number(100.0 * v, 'f', 1) + "%"; }
QString ms(trace::Ns ns) { return QString::number(ns / 1e6, 'f', 3); }
using trace::share;

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
  if (doc_) rows_ = analyzer::group_findings(doc_->analysis().findings);
  endResetModel();
}
int FindingsModel::rowCount(const QModelIndex& p) const { return p.isValid() ? 0 : static_cast<int>(rows_.size()); }
int FindingsModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
const analyzer::FindingGroup* FindingsModel::group(int row) const {
  return row >= 0 && row < static_cast<int>(rows_.size()) ? &rows_[static_cast<std::size_t>(row)] : nullptr;
}
const analyzer::Finding* FindingsModel::finding(int row) const {
  const auto* g = group(row);
  return g ? &doc_->analysis().findings[g->worst] : nullptr;
}

std::pair<trace::Ns, trace::Ns> FindingsModel::evidenceRange(const analyzer::Finding& f) {
  for (const auto& e : f.evidence)
    if (e.end > e.start) return {e.start, e.end};
  return {0, 0};
}

QVariant FindingsModel::data(const QModelIndex& index, int role) const {
  const auto* g = index.isValid() ? group(index.row()) : nullptr;
  const auto* f = g ? finding(index.row()) : nullptr;
  if (!f) return {};
  if (role == Qt::ToolTipRole) return {};  // tooltips could be read as rich text: the pane below shows details
  switch (index.column()) {
    case Gain: return cell(role, ms(f->gain) + " ms", double(f->gain));
    case Share: return cell(role, pct(f->gain_share), f->gain_share);
    case Severity: return cell(role, qs(std::string(to_string(f->severity))), double(f->severity));
    case Rank:
      if (g->ranks.size() > 1) return cell(role, qs(analyzer::rank_list(g->ranks)), f->rank);
      return cell(role, f->rank >= 0 ? QString::number(f->rank) : QStringLiteral("all"), f->rank);
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
    case GpuIdle:
      return cell(role, r.has_gpu ? pct(share(span - r.gpu.busy, span)) : QStringLiteral("-"), share(span - r.gpu.busy, span));
    case Compute: return cell(role, r.has_gpu ? pct(share(r.gpu.compute, span)) : QStringLiteral("-"), share(r.gpu.compute, span));
    case ExposedComm:
      return cell(role, r.has_gpu ? pct(share(r.gpu.exposed_communication, span)) : QStringLiteral("-"),
                  share(r.gpu.exposed_communication, span));
    case DataWait: {
      const auto window = r.window_end - r.window_start;
      return cell(role, pct(share(r.data_wait, window)), share(r.data_wait, window));
    }
    case CollectiveWait: {  // waiting at collectives for the last rank, per step (or in the window)
      if (!r.collectives.matched) return cell(role, QStringLiteral("-"), -1.0);
      const auto per = r.steps.empty() ? r.collectives.arrival_wait
                                       : r.collectives.arrival_wait / static_cast<trace::Ns>(r.steps.size());
      return cell(role, ms(per) + (r.steps.empty() ? " ms" : " ms/step"), double(per));
    }
    case LastArrivals:
      if (!r.collectives.matched) return cell(role, QStringLiteral("-"), -1.0);
      return cell(role, QStringLiteral("%1 of %2").arg(r.collectives.last_arrivals).arg(r.collectives.matched),
                  share(static_cast<trace::Ns>(r.collectives.last_arrivals), static_cast<trace::Ns>(r.collectives.matched)));
  }
  return {};
}
QVariant RanksModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"rank",         "steps",     "step median",     "step p90",
                                       "GPU busy",     "GPU idle",  "compute",         "exposed comm",
                                       "data wait",    "collective wait", "last to arrive"};
  return section >= 0 && section < ColumnCount ? tr(kNames[section]) : QVariant();
}

// ---- tuner trials ----

bool TrialsModel::load(const QString& path, QString* error) {
  auto fail = [&](const QString& why) {
    if (error) *error = path + ": " + why;
    return false;
  };
  QFile f(path);
  if (!f.open(QIODevice::ReadOnly)) return fail(tr("cannot open it (%1)").arg(f.errorString()));
  if (f.size() > (64 << 20)) return fail(tr("too large for a trials file"));
  QJsonParseError perr{};
  const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &perr);
  if (perr.error != QJsonParseError::NoError) return fail(tr("not JSON (%1)").arg(perr.errorString()));
  const QJsonObject o = doc.object();
  if (o.value("schema").toString() != QLatin1String("tracetune.trials"))
    return fail(tr("not a tracetune trials file (written by `tracetune tune`)"));
  if (o.value("version").toInt() != 1) return fail(tr("trials file version %1 is not supported").arg(o.value("version").toInt()));
  const QJsonArray trials = o.value("trials").toArray();
  std::vector<Row> rows;
  for (const QJsonValue& v : trials) {
    const QJsonObject t = v.toObject();
    Row r;
    r.index = t.value("index").toInt(-1);
    r.knob = t.value("knob").toString();
    r.status = t.value("status").toString();
    r.note = t.value("note").toString();
    r.median_ms = t.value("median_ms").toDouble();
    r.spread_ms = t.value("spread_ms").toDouble();
    r.steps = t.value("steps").toInt();
    const QJsonObject settings = t.value("settings").toObject();
    QStringList parts;
    for (auto it = settings.begin(); it != settings.end(); ++it) {
      const QJsonValue val = it.value();
      QString text;
      if (val.isBool()) text = val.toBool() ? "true" : "false";
      else if (val.isDouble()) text = QString::number(val.toDouble(), 'g', 12);
      else if (val.isString()) text = val.toString();
      else if (val.isArray()) text = QString::fromUtf8(QJsonDocument(val.toArray()).toJson(QJsonDocument::Compact));
      else text = QString::fromUtf8(QJsonDocument(val.toObject()).toJson(QJsonDocument::Compact));
      parts << it.key() + "=" + text;
    }
    r.settings = parts.isEmpty() ? tr("baseline (the job as it is)") : parts.join(' ');
    if (r.index < 0 || r.status.isEmpty()) return fail(tr("trial %1 lacks its index or status").arg(rows.size()));
    rows.push_back(std::move(r));
  }
  if (rows.empty()) return fail(tr("it holds no trials"));
  beginResetModel();
  rows_ = std::move(rows);
  command_ = o.value("command").toString();
  source_ = path;
  baseline_ms_ = o.value("baseline_ms").toDouble();
  speedup_ = o.value("speedup").toDouble(1);
  best_row_ = -1;
  const int best = o.value("best_trial").toInt(-1);
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i].index == best) best_row_ = static_cast<int>(i);
  endResetModel();
  return true;
}

QString TrialsModel::summary() const {
  if (rows_.empty()) return tr("No tuner trials loaded (File > Open tuner trials...).");
  return tr("%1 trials of %2: best trial %3, %4x the baseline (%5)")
      .arg(static_cast<qulonglong>(rows_.size()))
      .arg(command_)
      .arg(best_row_ >= 0 ? rows_[static_cast<std::size_t>(best_row_)].index : 0)
      .arg(speedup_, 0, 'f', 2)
      .arg(source_);
}

int TrialsModel::rowCount(const QModelIndex& p) const { return p.isValid() ? 0 : static_cast<int>(rows_.size()); }
int TrialsModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
QVariant TrialsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::FontRole && index.row() == best_row_) {
    QFont bold;
    bold.setBold(true);
    return bold;
  }
  if (role == Qt::ToolTipRole) return r.note.isEmpty() ? r.settings : r.settings + "\n" + r.note;
  const bool ok = r.status == QLatin1String("ok");
  switch (index.column()) {
    case Trial: return cell(role, QString::number(r.index), r.index);
    case Status: return text_cell(role, r.status);
    case Median: return ok ? cell(role, QString::number(r.median_ms, 'f', 2) + " ms", r.median_ms) : text_cell(role, "-");
    case Spread: return ok ? cell(role, QString::number(r.spread_ms, 'f', 2) + " ms", r.spread_ms) : text_cell(role, "-");
    case Speedup: {
      const double x = ok && r.median_ms > 0 ? baseline_ms_ / r.median_ms : 0;
      return ok ? cell(role, QString::number(x, 'f', 2) + "x", x) : text_cell(role, "-");
    }
    case Knob: return text_cell(role, r.knob.isEmpty() ? QStringLiteral("-") : r.knob);
    case Settings: return text_cell(role, r.settings);
  }
  return {};
}
QVariant TrialsModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"trial", "status", "median step", "spread", "speedup", "knob", "settings"};
  return section >= 0 && section < ColumnCount ? tr(kNames[section]) : QVariant();
}

// ---- tuned config ----

bool TunedConfigModel::load(const QString& path) {
  const auto cat = tuner::builtin_catalogue();
  const auto cfg = cat ? tuner::load_tuned_config(path.toStdString(), cat.value())
                       : Result<tuner::TunedConfig>(make_error(cat.error()));
  beginResetModel();
  rows_.clear();
  path_ = path;
  refusal_.clear();
  warnings_.clear();
  header_.clear();
  command_.clear();
  speedup_.reset();
  trials_.reset();
  if (!cfg) {
    // one line, as `tracetune run --config` prints it (it names the file and the line)
    refusal_ = QString::fromStdString(cfg.error()).simplified();
    endResetModel();
    return false;
  }
  const tuner::TunedConfig& c = cfg.value();
  for (const auto& w : c.warnings) warnings_ << qs(w);
  auto row = [](const tuner::Knob& k, std::string value, bool numerics) {
    return Row{qs(k.id), qs(value),
               k.apply == tuner::Apply::Env ? "env " + qs(k.env) : qs(std::string(tuner::to_string(k.apply))),
               qs(k.changes), qs(k.doc), numerics};
  };
  for (const auto& s : c.settings) rows_.push_back(row(s.knob, tuner::display(s.value), !tuner::numerics_safe(s.knob, s.value)));
  // [[nccl.table]] entries: one row per entry, in file order, under the catalogue's table knob
  tuner::Knob table{.id = "nccl.table", .apply = tuner::Apply::NcclTuner};
  for (const auto& k : cat.value().knobs)
    if (k.type == tuner::KnobType::Table) table = k;
  for (const auto& e : c.nccl_table) {
    rows_.push_back(row(table,
                        fmt::format("{} {}..{} B: {}/{}{}{}{}", tuner::kNcclCollectives[e.collective], e.min_bytes,
                                    e.max_bytes, tuner::kNcclAlgorithms[e.algorithm], tuner::kNcclProtocols[e.protocol],
                                    e.channels > 0 ? fmt::format(", {} channels", e.channels) : "",
                                    e.nodes > 0 ? fmt::format(", {} nodes", e.nodes) : "",
                                    e.ranks > 0 ? fmt::format(", {} ranks", e.ranks) : ""),
                        false));
  }
  QStringList header;
  for (const auto& line : c.header_comments) header << qs(line);
  header_ = header.join('\n');
  command_ = qs(c.command);
  speedup_ = c.speedup;
  if (c.trials) trials_ = *c.trials;
  endResetModel();
  return true;
}

QString TunedConfigModel::summary() const {
  if (path_.isEmpty()) return tr("No tuned config loaded (File > Open tuned config...).");
  if (!refusal_.isEmpty()) return tr("Refused: %1").arg(refusal_);
  QString s = (rows_.size() == 1 ? tr("1 setting from %1") : tr("%1 settings from %2").arg(rows_.size())).arg(path_);
  if (rows_.empty()) s += tr(" (nothing to apply)");
  if (speedup_) s += tr("; measured speedup %1x").arg(*speedup_, 0, 'f', 2);
  if (trials_) s += tr(" over %1 trials").arg(*trials_);
  if (!command_.isEmpty()) s += tr("; job: %1").arg(command_);
  for (const auto& w : warnings_) s += tr(". Warning: %1").arg(w);
  return s;
}

int TunedConfigModel::rowCount(const QModelIndex& p) const { return p.isValid() ? 0 : static_cast<int>(rows_.size()); }
int TunedConfigModel::columnCount(const QModelIndex& p) const { return p.isValid() ? 0 : ColumnCount; }
QVariant TunedConfigModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const Row& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::ToolTipRole) return r.doc.isEmpty() ? r.changes : r.changes + "\n" + r.doc;
  switch (index.column()) {
    case Knob: return text_cell(role, r.knob);
    case Value: return text_cell(role, r.value);
    case Applied: return text_cell(role, r.applied);
    case Numerics:
      if (role == Qt::UserRole) return r.numerics;
      return text_cell(role, r.numerics ? tr("changes numerics") : QStringLiteral("-"));
    case Changes: return text_cell(role, r.changes);
  }
  return {};
}
QVariant TunedConfigModel::headerData(int section, Qt::Orientation o, int role) const {
  if (o != Qt::Horizontal || role != Qt::DisplayRole) return {};
  static const char* const kNames[] = {"knob", "value", "applied by", "numerics", "what it changes"};
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
