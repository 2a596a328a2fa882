// The compare view (`tracetune-gui --compare BASE NEW`): `tracetune diff` in the GUI. Two
// loaded and analysed documents, their analyzer::diff, and on screen: the plain-words summary,
// each side's step bars (the headline rank pair), the aligned steps and the kernel delta
// tables, and the two timelines one above the other. Clicking an aligned step shows both
// timelines at that step; clicking a kernel selects its next launch in both.
#pragma once

#include <memory>

#include <QAbstractTableModel>
#include <QWidget>

#include "document.h"
#include "tracetune/analyzer/diff.h"

class QLabel;
class QTableView;

namespace tt::gui {

class StepsChart;
class TimelineView;

// The aligned steps of one rank pair: index, step numbers, both step times and the change.
class AlignedStepsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setRank(const analyzer::RankDiff* r);  // points into the view's Diff
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  const analyzer::RankDiff* rank_ = nullptr;
};

// Kernels matched by name: status, count and time per step on each side, the change.
class KernelDeltaModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  using QAbstractTableModel::QAbstractTableModel;
  void setRank(const analyzer::RankDiff* r);
  const analyzer::KernelDelta* kernel(int row) const;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation o, int role) const override;

 private:
  const analyzer::RankDiff* rank_ = nullptr;
};

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  ~CompareView() override;
  // Both documents must be analysed (load_document's default).
  void setDocuments(std::shared_ptr<const Document> base, std::shared_ptr<const Document> next);
  // Loads both in the calling thread (screenshots, tests). False with `error` set on failure.
  bool loadNow(const QString& base, const QString& next, QString* error);
  // Both timelines at the aligned step of this row (as a click on it does).
  void showStep(int row);

  const analyzer::Diff& diff() const { return diff_; }
  QLabel* summary() const { return summary_; }
  StepsChart* baseChart() const { return base_chart_; }
  StepsChart* newChart() const { return new_chart_; }
  QTableView* stepsView() const { return steps_view_; }
  QTableView* kernelsView() const { return kernels_view_; }
  AlignedStepsModel* stepsModel() const { return steps_; }
  KernelDeltaModel* kernelsModel() const { return kernels_; }
  TimelineView* baseTimeline() const { return base_tl_; }
  TimelineView* newTimeline() const { return new_tl_; }

 private:
  void showKernel(int row);
  std::shared_ptr<const Document> base_, next_;
  analyzer::Diff diff_;
  QLabel* summary_;
  StepsChart *base_chart_, *new_chart_;
  QTableView *steps_view_, *kernels_view_;
  AlignedStepsModel* steps_;
  KernelDeltaModel* kernels_;
  TimelineView *base_tl_, *new_tl_;
};

}  // namespace tt::gui
