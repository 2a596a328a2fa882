// The main window: the timeline in the middle, analysis panels (findings, steps, top kernels,
// ranks, flame graph, tuner trials, tuned config) on the right, the selected event's details and the area selection's aggregates at
// the bottom. Files open in a worker thread with a progress bar in the status bar; the window
// keeps responding meanwhile, and shows the timeline while the analysis still runs. A file that
// cannot be opened gives a plain-text dialog.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include <QMainWindow>
#include <QPointer>

#include "document.h"
#include "flame_view.h"
#include "panels.h"
#include "timeline_view.h"

class QDockWidget;
class QLabel;
class QLineEdit;
class QMenu;
class QPlainTextEdit;
class QProgressBar;

namespace tt::gui {

class AggregatesModel;
class TrialsModel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(LoadOptions opt = {}, QWidget* parent = nullptr);
  ~MainWindow() override;

  // Starts loading `path` in a worker thread (refused while another load runs).
  void openFile(const QString& path);
  // Loads `path` in the calling thread (screenshots, tests). False with `error` set on failure.
  bool loadNow(const QString& path, QString* error);
  void setDocument(std::shared_ptr<const Document> doc);
  bool loading() const { return loading_; }
  // Errors go to a dialog (default) or only to the status bar and loadFailed (tests).
  void setErrorDialogs(bool on) { error_dialogs_ = on; }

  QDockWidget* addPanel(AnalysisPanel* panel, Qt::DockWidgetArea area = Qt::RightDockWidgetArea);

  TimelineView* timeline() const { return timeline_; }
  FindingsPanel* findingsPanel() const { return findings_; }
  StepsPanel* stepsPanel() const { return steps_; }
  FlamePanel* flamePanel() const { return flame_; }
  std::shared_ptr<const Document> document() const { return doc_; }
  QPlainTextEdit* detailsPane() const { return details_; }
  AggregatesModel* aggregatesModel() const { return aggregates_; }
  QLineEdit* searchBox() const { return search_; }
  // Shows `tracetune tune`'s trials file in the Tuner trials panel. False with `error` set on failure.
  bool loadTrials(const QString& path, QString* error);
  TrialsModel* trialsModel() const { return trials_; }
  // Shows a tuned config in the Tuned config panel; false when the tuner's loader refuses it
  // (the panel then shows the refusal). Opening a trials file also opens the tuned.toml the
  // tuner wrote beside it, when there is one.
  bool loadTunedConfig(const QString& path);
  TunedConfigPanel* tunedConfigPanel() const { return tuned_; }
  // The config `tracetune tune` writes beside a trials file: X.trials.json -> X.toml.
  static QString tunedConfigBeside(const QString& trials_path);
  QStringList recentFiles() const;
  QString statusText() const;

 signals:
  void documentLoaded();  // the timeline shows it (its analysis may still run)
  void analysisReady();   // the panels show its analysis
  void loadFailed(const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent*) override;
  void dropEvent(QDropEvent*) override;
  void showEvent(QShowEvent*) override;

 private:
  void buildMenus();
  void addRecent(const QString& path);
  void rebuildRecentMenu();
  void showError(const QString& message);
  void updateDetails();
  void updateAggregates();
  void search(bool backwards);
  void onLoaded(std::shared_ptr<const Document> doc);
  void onAnalysed(const std::shared_ptr<const Document>& doc);
  void updateStatus();

  LoadOptions opt_;
  TimelineView* timeline_;
  std::vector<AnalysisPanel*> panels_;
  FindingsPanel* findings_;
  StepsPanel* steps_;
  FlamePanel* flame_;
  QPlainTextEdit* details_;
  AggregatesModel* aggregates_;
  TrialsModel* trials_ = nullptr;
  QDockWidget* trials_dock_ = nullptr;
  TunedConfigPanel* tuned_ = nullptr;
  QDockWidget* tuned_dock_ = nullptr;
  QLabel* aggregate_summary_;
  QLineEdit* search_;
  QLabel* status_;
  QProgressBar* progress_;
  QMenu* recent_menu_ = nullptr;
  std::shared_ptr<const Document> doc_;
  std::thread loader_;
  bool loading_ = false;
  bool error_dialogs_ = true;
  bool sized_docks_ = false;
  QDockWidget* findings_dock_ = nullptr;
  QDockWidget* details_dock_ = nullptr;
};

}  // namespace tt::gui
