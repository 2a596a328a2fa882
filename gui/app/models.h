// Table models over a loaded Document: thin adapters from the analyzer's report (and area
// selections) to Qt's item views. Each holds its rows in a vector built once per document;
// data() is a lookup. Every text is plain (item views never interpret markup).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <QAbstractTableModel>

#include "document.h"
#include "event_info.h"

namespace tt::gui {

// Findings grouped across ranks as the CLI groups them (analyzer::group_findings: one row per
// category over the ranks it holds on), by estimated gain (largest first). A row shows the
// group's worst finding; its rank column lists the group's ranks ("0-7").
class FindingsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Gain, Share, Severity, Rank, Category, Title, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setDocument(std::shared_ptr<const Document> doc);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  // The worst finding of a row's group (the one with the largest gain).
  const analyzer::Finding* finding(int row) const;
  const analyzer::FindingGroup* group(int row) const;
  // The time range a finding points at: its first evidence with a range (t1 <= t0: none).
  static std::pair<trace::Ns, trace::Ns> evidenceRange(const analyzer::Finding& f);

 private:
  std::shared_ptr<const Document> doc_;
  std::vector<analyzer::FindingGroup> rows_;
};

// The ten kernels with the most GPU time of each rank.
class TopKernelsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Name, Class, Count, Total, Mean, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setDocument(std::shared_ptr<const Document> doc);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  // rank and kernel name of a row ({-1, ""} out of range)
  std::pair<int, std::string> kernel(int row) const;

 private:
  struct Row { int rank; const analyzer::KernelTotal* k; };
  std::shared_ptr<const Document> doc_;
  std::vector<Row> rows_;
};

// One row per rank: step times and where the GPU time went, side by side.
class RanksModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Rank, Steps, StepMedian, StepP90, GpuBusy, GpuIdle, Compute, ExposedComm, DataWait, CollectiveWait, LastArrivals, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setDocument(std::shared_ptr<const Document> doc);
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;
  const analyzer::RankMetrics* rank(int row) const;

 private:
  std::shared_ptr<const Document> doc_;
};

// The tuner's trials (`tracetune tune` writes them next to tuned.toml as *.trials.json,
// schema "tracetune.trials" version 1): one row per trial, the chosen one in bold. Independent
// of the open trace.
class TrialsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Trial, Status, Median, Spread, Speedup, Knob, Settings, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  // Reads a trials file. On failure the model keeps what it had and `error` says why (one line).
  bool load(const QString& path, QString* error);
  QString summary() const;  // "N trials of `command`: best trial K, 1.49x the baseline"
  int bestRow() const { return best_row_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    int index = 0, steps = 0;
    QString knob, settings, status, note;
    double median_ms = 0, spread_ms = 0;
  };
  std::vector<Row> rows_;
  QString command_, source_;
  double baseline_ms_ = 0, speedup_ = 1;
  int best_row_ = -1;
};

// A tuned config (`tracetune tune`'s tuned.toml, or one a person wrote) as `tracetune run
// --config` would apply it: read and checked by the tuner's own loader against the compiled-in
// knob catalogue, one row per setting and per [[nccl.table]] entry. A file the loader refuses
// leaves the model empty and refusal() says why (one line, as `run --config` would print it).
class TunedConfigModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Knob, Value, Applied, Numerics, Changes, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  // Loads `path`; false (and the model empty, refusal() set) when the loader refuses it.
  bool load(const QString& path);
  QString path() const { return path_; }
  QString refusal() const { return refusal_; }
  // What `run --config` would warn about (e.g. the file sits in a directory others can write).
  const QStringList& warnings() const { return warnings_; }
  // "N settings from PATH; measured speedup 1.49x over 12 trials" (or the refusal)
  QString summary() const;
  // The comment lines the tuner wrote above the tables (baseline and tuned step times, knobs
  // not searched), verbatim: shown as plain text, never parsed.
  QString headerComments() const { return header_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    QString knob, value, applied, changes, doc;
    bool numerics = false;  // this value changes numerical results
  };
  std::vector<Row> rows_;
  QString path_, refusal_, header_, command_;
  QStringList warnings_;
  std::optional<double> speedup_;
  std::optional<qint64> trials_;
};

// Per-name aggregates of an area selection.
class AggregatesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Name, Count, Total, Mean, ColumnCount };
  using QAbstractTableModel::QAbstractTableModel;
  void setAggregate(AreaAggregate a);
  const AreaAggregate& aggregate() const { return agg_; }
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation o, int role = Qt::DisplayRole) const override;

 private:
  AreaAggregate agg_;
};

}  // namespace tt::gui
