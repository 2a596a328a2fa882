// The analysis panels docked around the timeline. Each is an AnalysisPanel: it gets the
// document when one is loaded and asks the timeline to show a time range through
// `navigate`. This is the extension point for new panels: implement AnalysisPanel and hand it
// to MainWindow::addPanel().
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include <QObject>
#include <QString>
#include <QWidget>

#include "document.h"
#include "models.h"

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QSortFilterProxyModel;
class QTableView;

namespace tt::gui {

class AnalysisPanel : public QObject {
  Q_OBJECT
 public:
  using QObject::QObject;
  virtual QString title() const = 0;
  virtual QWidget* widget() = 0;  // owned by the panel until docked (then by the dock)
  virtual void setDocument(std::shared_ptr<const Document> doc) = 0;

 signals:
  // Show [t0, t1) in the timeline; `highlight` marks it (a finding's evidence); `rank` >= 0
  // brings that rank's rows into view.
  void navigate(qint64 t0, qint64 t1, bool highlight, int rank);
  // Select the next event whose name contains `name` on the timeline (as the search box does).
  void findName(const QString& name, int rank);
};

// Findings by estimated gain; a click zooms the timeline to the evidence and highlights it.
class FindingsPanel : public AnalysisPanel {
  Q_OBJECT
 public:
  explicit FindingsPanel(QObject* parent = nullptr);
  QString title() const override { return tr("Findings"); }
  QWidget* widget() override { return widget_; }
  void setDocument(std::shared_ptr<const Document> doc) override;
  QTableView* view() const { return view_; }
  FindingsModel* model() const { return model_; }
  void activate(int row);  // as a click on that row does
  QString detailText() const;  // what the panel says below the findings

 signals:
  // A row was activated: its worst rank's finding (a pointer into the document's analysis).
  void findingActivated(const analyzer::Finding* f);

 private:
  QWidget* widget_;
  QTableView* view_;
  QPlainTextEdit* detail_;
  FindingsModel* model_;
};

// Stacked bars per step of one rank: compute, exposed communication, copies, data wait, idle.
class StepsChart : public QWidget {
  Q_OBJECT
 public:
  explicit StepsChart(QWidget* parent = nullptr);
  void setRank(const analyzer::RankMetrics* r);
  QSize sizeHint() const override { return {480, 180}; }
  // The bar under x (-1 none).
  int stepAt(int x) const;

  struct Segments {
    trace::Ns compute, communication, copies, data_wait, idle;
  };
  static Segments segments(const analyzer::StepMetrics& s, bool has_gpu);

 signals:
  void stepClicked(qint64 t0, qint64 t1);
  void stepIndexClicked(int step);  // with stepClicked: the step's index in RankMetrics::steps

 protected:
  void paintEvent(QPaintEvent*) override;
  void mousePressEvent(QMouseEvent*) override;

 private:
  const analyzer::RankMetrics* rank_ = nullptr;
};

class StepsPanel : public AnalysisPanel {
  Q_OBJECT
 public:
  explicit StepsPanel(QObject* parent = nullptr);
  QString title() const override { return tr("Steps"); }
  QWidget* widget() override { return widget_; }
  void setDocument(std::shared_ptr<const Document> doc) override;
  StepsChart* chart() const { return chart_; }

 signals:
  // A step bar was clicked: the rank's index in Metrics::ranks and the step's in its steps.
  void stepActivated(int rank, int step);

 private:
  QWidget* widget_;
  QComboBox* rank_;
  StepsChart* chart_;
  std::shared_ptr<const Document> doc_;
};

// A table panel over one of the models (top kernels, per-rank comparison).
class TablePanel : public AnalysisPanel {
  Q_OBJECT
 public:
  using Setter = std::function<void(std::shared_ptr<const Document>)>;
  // Called with the model row a user clicks (or activates with the keyboard).
  using Activate = std::function<void(TablePanel& panel, int row)>;
  TablePanel(QString title, QAbstractTableModel* model, Setter set, Activate activate = {}, QObject* parent = nullptr);
  QTableView* view() const { return view_; }
  QString title() const override { return title_; }
  QWidget* widget() override { return widget_; }
  void setDocument(std::shared_ptr<const Document> doc) override;

 private:
  QString title_;
  QAbstractTableModel* model_;
  Setter set_;
  QWidget* widget_;
  QTableView* view_;
};

// A tuned config (File > Open tuned config..., --tuned, or the tuned.toml beside an opened
// trials file) as `tracetune run --config` would apply it: a one-line summary (or the
// refusal), the settings, and the tuner's header comments verbatim. Independent of the trace.
class TunedConfigPanel : public AnalysisPanel {
  Q_OBJECT
 public:
  explicit TunedConfigPanel(QObject* parent = nullptr);
  QString title() const override { return tr("Tuned config"); }
  QWidget* widget() override { return widget_; }
  void setDocument(std::shared_ptr<const Document>) override {}
  // Shows `path`; false when the loader refuses it (the panel then says so, with the reason).
  bool load(const QString& path);
  TunedConfigModel* model() const { return model_; }
  QString summaryText() const;
  QString commentsText() const;

 private:
  QWidget* widget_;
  QLabel* summary_;
  QTableView* view_;
  QPlainTextEdit* comments_;
  TunedConfigModel* model_;
};

}  // namespace tt::gui
