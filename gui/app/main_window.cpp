#include "text.h"
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStatusBar>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>

#include <fmt/format.h>

#include "event_info.h"
#include "models.h"

namespace tt::gui {

namespace {

constexpr int kMaxRecent = 8;

}  // namespace

MainWindow::MainWindow(LoadOptions opt, QWidget* parent) : QMainWindow(parent), opt_(opt) {
  setWindowTitle(tr("tracetune"));
  setAcceptDrops(true);
  timeline_ = new TimelineView(this);
  setCentralWidget(timeline_);

  // bottom: the selected event, the area selection
  details_ = new QPlainTextEdit;
  details_->setReadOnly(true);
  details_->setPlaceholderText(tr("Click an event to see its details."));
  auto* details_dock = new QDockWidget(tr("Details"), this);
  details_dock->setObjectName("details");
  details_dock->setWidget(details_);
  addDockWidget(Qt::BottomDockWidgetArea, details_dock);

  auto* sel = new QWidget;
  auto* sel_layout = new QVBoxLayout(sel);
  sel_layout->setContentsMargins(0, 0, 0, 0);
  aggregate_summary_ = new QLabel(tr("Shift+drag on the timeline to select an area."));
  aggregate_summary_->setTextFormat(Qt::PlainText);
  aggregate_summary_->setWordWrap(true);
  aggregates_ = new AggregatesModel(this);
  auto* proxy = new QSortFilterProxyModel(this);
  proxy->setSourceModel(aggregates_);
  proxy->setSortRole(Qt::UserRole);
  auto* agg_view = new QTableView;
  agg_view->setModel(proxy);
  agg_view->setSortingEnabled(true);
  agg_view->verticalHeader()->setVisible(false);
  agg_view->verticalHeader()->setDefaultSectionSize(20);
  agg_view->horizontalHeader()->setStretchLastSection(true);
  agg_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
  sel_layout->addWidget(aggregate_summary_);
  sel_layout->addWidget(agg_view, 1);
  auto* sel_dock = new QDockWidget(tr("Area selection"), this);
  sel_dock->setObjectName("area");
  sel_dock->setWidget(sel);
  addDockWidget(Qt::BottomDockWidgetArea, sel_dock);
  splitDockWidget(details_dock, sel_dock, Qt::Horizontal);

  // right: the analysis panels
  findings_ = new FindingsPanel(this);
  steps_ = new StepsPanel(this);
  auto* findings_dock = addPanel(findings_);
  addPanel(steps_);
  // a kernel: its first occurrence on the timeline (F3 for the next); a rank: its window
  auto* top = new TopKernelsModel;
  addPanel(new TablePanel(
      tr("Top kernels"), top, [top](auto d) { top->setDocument(std::move(d)); },
      [top](TablePanel& p, int row) {
        const auto [rank, name] = top->kernel(row);
        if (!name.empty()) emit p.findName(QString::fromStdString(name), rank);
      },
      this));
  auto* ranks = new RanksModel;
  addPanel(new TablePanel(
      tr("Ranks"), ranks, [ranks](auto d) { ranks->setDocument(std::move(d)); },
      [ranks](TablePanel& p, int row) {
        if (const auto* r = ranks->rank(row); r && r->window_end > r->window_start)
          emit p.navigate(r->window_start, r->window_end, false, r->rank);
      },
      this));
  // the Python stack samples of the finding or step last clicked (or picked in the panel)
  flame_ = new FlamePanel(this);
  addPanel(flame_);
  connect(findings_, &FindingsPanel::findingActivated, flame_, &FlamePanel::showFinding);
  connect(steps_, &StepsPanel::stepActivated, flame_, &FlamePanel::showStep);
  // the tuner's trials, when a trials file is opened (File > Open tuner trials..., --trials)
  trials_ = new TrialsModel(this);
  trials_dock_ = addPanel(new TablePanel(tr("Tuner trials"), trials_, [](auto) {}, {}, this));
  tuned_ = new TunedConfigPanel(this);
  tuned_dock_ = addPanel(tuned_);
  findings_dock->raise();

  // status bar: what is happening, and the load progress
  status_ = new QLabel(tr("No trace loaded."));
  status_->setTextFormat(Qt::PlainText);
  progress_ = new QProgressBar;
  progress_->setMaximumWidth(240);
  progress_->setVisible(false);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);

  buildMenus();
  connect(timeline_, &TimelineView::selectionChanged, this, &MainWindow::updateDetails);
  connect(timeline_, &TimelineView::areaChanged, this, &MainWindow::updateAggregates);
  resize(1500, 950);
  findings_dock_ = findings_dock;
  details_dock_ = details_dock;
}

void MainWindow::showEvent(QShowEvent* ev) {
  QMainWindow::showEvent(ev);
  if (sized_docks_) return;
  // once the window has its size: most of it for the timeline
  sized_docks_ = true;
  resizeDocks({findings_dock_}, {std::max(360, width() * 3 / 10)}, Qt::Horizontal);
  resizeDocks({details_dock_}, {std::max(120, height() / 6)}, Qt::Vertical);
}

MainWindow::~MainWindow() {
  // an import cannot be interrupted: wait for it (its result is then dropped)
  if (loader_.joinable()) loader_.join();
}

void MainWindow::buildMenus() {
  auto* file = menuBar()->addMenu(tr("&File"));
  auto* open = file->addAction(tr("&Open..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(
        this, tr("Open a trace"), QString(),
        tr("Traces (*.db *.sqlite *.json *.json.gz *.gz);;All files (*)"));
    if (!path.isEmpty()) openFile(path);
  });
  open->setShortcut(QKeySequence::Open);
  recent_menu_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("Open tuner &trials..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open tuner trials (tracetune tune)"), QString(),
                                                      tr("Trials (*.trials.json);;JSON (*.json);;All files (*)"));
    QString error;
    if (!path.isEmpty() && !loadTrials(path, &error)) showError(error);
  });
  file->addAction(tr("Open tuned &config..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Open a tuned config (tracetune tune)"), QString(),
                                                      tr("Tuned config (*.toml);;All files (*)"));
    if (!path.isEmpty()) loadTunedConfig(path);  // a refusal is shown in the panel
  });
  rebuildRecentMenu();
  file->addSeparator();
  auto* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  auto* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("Fit the whole trace (0)"), timeline_, &TimelineView::fitAll);
  view->addAction(tr("Fit the selected event (F)"), timeline_, &TimelineView::fitSelected);
  view->addAction(tr("Zoom to the area selection (Z)"), timeline_, &TimelineView::zoomToArea);
  view->addAction(tr("Keyboard help (?)"), this, [this] { timeline_->setHelpVisible(!timeline_->helpVisible()); });
  view->addAction(tr("Critical path (C)"), this,
                  [this] { timeline_->setCriticalPathVisible(!timeline_->criticalPathVisible()); });
  view->addSeparator();
  for (auto* dock : findChildren<QDockWidget*>()) view->addAction(dock->toggleViewAction());

  // search: Ctrl+F focuses it, Enter or F3 finds the next match, Shift+F3 the previous
  auto* bar = addToolBar(tr("Search"));
  bar->setObjectName("search");
  bar->setMovable(false);
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("Search event names (Ctrl+F)"));
  search_->setClearButtonEnabled(true);
  search_->setMaximumWidth(360);
  bar->addWidget(search_);
  auto* prev = bar->addAction(tr("Previous"), this, [this] { search(true); });
  auto* next = bar->addAction(tr("Next"), this, [this] { search(false); });
  prev->setShortcut(QKeySequence(Qt::SHIFT | Qt::Key_F3));
  next->setShortcut(QKeySequence(Qt::Key_F3));
  connect(search_, &QLineEdit::returnPressed, this, [this] { search(false); });
  auto* find = new QAction(this);
  find->setShortcut(QKeySequence::Find);
  connect(find, &QAction::triggered, this, [this] { search_->setFocus(); search_->selectAll(); });
  addAction(find);
}

QDockWidget* MainWindow::addPanel(AnalysisPanel* panel, Qt::DockWidgetArea area) {
  panel->setParent(this);
  panels_.push_back(panel);
  auto* dock = new QDockWidget(panel->title(), this);
  dock->setObjectName(panel->title());
  dock->setWidget(panel->widget());
  // the first panel in an area takes it, later ones become tabs beside it
  QDockWidget* first = nullptr;
  for (auto* d : findChildren<QDockWidget*>())
    if (d != dock && dockWidgetArea(d) == area && d->objectName() != "details" && d->objectName() != "area") { first = d; break; }
  addDockWidget(area, dock);
  if (first) tabifyDockWidget(first, dock);
  connect(panel, &AnalysisPanel::navigate, this, [this](qint64 t0, qint64 t1, bool highlight, int rank) {
    const qint64 pad = std::max<qint64>(1000, (t1 - t0) / 20);
    if (rank >= 0) timeline_->revealRank(rank);
    timeline_->setView(t0 - pad, t1 + pad);
    timeline_->setHighlight(highlight ? t0 : 0, highlight ? t1 : 0);
    timeline_->setFocus();
  });
  connect(panel, &AnalysisPanel::findName, this, [this](const QString& name, int rank) {
    if (rank >= 0) timeline_->revealRank(rank);
    timeline_->select({});
    search_->setText(name);
    search(false);
    timeline_->setFocus();
  });
  if (doc_) panel->setDocument(doc_);
  return dock;
}

// ---- loading ----

void MainWindow::openFile(const QString& path) {
  if (loading_) {
    status_->setText(tr("Still loading the previous file; open %1 when it is done.").arg(path));
    return;
  }
  if (loader_.joinable()) loader_.join();
  loading_ = true;
  progress_->setVisible(true);
  progress_->setRange(0, 0);  // reading has no known length: a busy bar
  status_->setText(tr("Opening %1...").arg(path));
  QPointer<MainWindow> self(this);
  const auto file = std::filesystem::path(path.toStdString());
  const LoadOptions opt = opt_;
  loader_ = std::thread([self, file, opt] {
    auto progress = [self](int pct, const std::string& stage) {
      QMetaObject::invokeMethod(qApp, [self, pct, stage] {
        if (!self) return;
        if (pct > 0) self->progress_->setRange(0, 100);
        self->progress_->setValue(pct);
        self->status_->setText(QString::fromStdString(stage) + "...");
      }, Qt::QueuedConnection);
    };
    // the timeline first: the analysis runs after it is on screen
    LoadOptions timeline_only = opt;
    timeline_only.analyze = false;
    auto r = load_document(file, timeline_only, progress);
    std::shared_ptr<const Document> doc;
    QString error;
    if (r) doc = std::move(r).value();
    else error = QString::fromStdString(r.error());
    QMetaObject::invokeMethod(qApp, [self, doc, error, file] {
      if (!self) return;
      if (doc) {
        self->progress_->setRange(0, 0);  // the analysis has no known length either
        self->addRecent(QString::fromStdString(file.string()));
        self->onLoaded(doc);
      } else {
        self->loading_ = false;
        self->progress_->setVisible(false);
        self->showError(error);
      }
    }, Qt::QueuedConnection);
    if (!doc) return;
    // the details (the columns the timeline does not draw) come before the analysis
    if (const auto& details = doc->wait_details(); !details) {
      QMetaObject::invokeMethod(qApp, [self, doc, error = QString::fromStdString(details.error())] {
        if (!self) return;
        self->loading_ = false;
        self->progress_->setVisible(false);
        if (doc == self->doc_)  // the panels said "Analysing...": they say why not
          for (auto* p : self->panels_) p->setDocument(doc);
        self->showError(error);
      }, Qt::QueuedConnection);
      return;
    }
    analyze_document(*doc);
    QMetaObject::invokeMethod(qApp, [self, doc] {
      if (!self) return;
      self->loading_ = false;
      self->progress_->setVisible(false);
      self->onAnalysed(doc);
    }, Qt::QueuedConnection);
  });
}

bool MainWindow::loadNow(const QString& path, QString* error) {
  auto r = load_document(std::filesystem::path(path.toStdString()), opt_);
  if (!r) {
    if (error) *error = QString::fromStdString(r.error());
    return false;
  }
  onLoaded(std::move(r).value());
  emit analysisReady();  // loaded with its analysis
  return true;
}

void MainWindow::onLoaded(std::shared_ptr<const Document> doc) {
  setDocument(std::move(doc));
  updateStatus();
  emit documentLoaded();
}

void MainWindow::onAnalysed(const std::shared_ptr<const Document>& doc) {
  if (doc != doc_) return;  // another document replaced it meanwhile
  for (auto* p : panels_) p->setDocument(doc_);
  if (timeline_->criticalPathVisible()) timeline_->setCriticalPathVisible(true);  // --critical-path: now it can be drawn
  updateStatus();
  emit analysisReady();
}

void MainWindow::updateStatus() {
  if (!doc_) return;
  const auto& d = *doc_;
  // once analysed, the details' read (which the analysis waited for) has stopped changing the model
  const std::size_t bytes = d.analysed() ? d.trace.event_bytes() + d.index.index_bytes : d.resident_bytes;
  std::string text = fmt::format("{}: {} events on {} rows; read {:.2f} s, indexed {:.2f} s; {} MiB in memory; ",
                                 d.path.filename().string(), d.trace.event_count(), d.index.rows.size(), d.load_seconds,
                                 d.index_seconds, bytes >> 20);
  if (d.analysed())
    text += fmt::format("analysed in {:.2f} s: {} findings", d.analyze_seconds(), d.analysis().findings.size());
  else
    text += "analysing...";
  status_->setText(QString::fromStdString(text));
}

void MainWindow::setDocument(std::shared_ptr<const Document> doc) {
  doc_ = std::move(doc);
  setWindowTitle(doc_ ? tr("%1 - tracetune").arg(qs(doc_->path.filename().string())) : tr("tracetune"));
  timeline_->setDocument(doc_);
  for (auto* p : panels_) p->setDocument(doc_);
  aggregates_->setAggregate({});
  updateDetails();
}

void MainWindow::showError(const QString& message) {
  status_->setText(message);
  emit loadFailed(message);
  if (!error_dialogs_) return;
  QMessageBox box(QMessageBox::Warning, tr("Cannot open the trace"), message, QMessageBox::Ok, this);
  box.setTextFormat(Qt::PlainText);  // file names and parser messages are shown verbatim
  box.exec();
}

QString MainWindow::statusText() const { return status_->text(); }

// ---- recent files ----

QStringList MainWindow::recentFiles() const { return QSettings().value("recentFiles").toStringList(); }

void MainWindow::addRecent(const QString& path) {
  QStringList list = recentFiles();
  const QString abs = QFileInfo(path).absoluteFilePath();
  list.removeAll(abs);
  list.prepend(abs);
  while (list.size() > kMaxRecent) list.removeLast();
  QSettings().setValue("recentFiles", list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_menu_->clear();
  const QStringList list = recentFiles();
  for (const QString& p : list) {
    QString text = p;
    text.replace('&', "&&");  // an action's '&' marks a shortcut key: show the path as it is
    recent_menu_->addAction(text, this, [this, p] { openFile(p); });
  }
  recent_menu_->setEnabled(!list.isEmpty());
}

// ---- drag and drop ----

void MainWindow::dragEnterEvent(QDragEnterEvent* ev) {
  if (ev->mimeData()->hasUrls() && ev->mimeData()->urls().size() == 1 && ev->mimeData()->urls().front().isLocalFile())
    ev->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* ev) {
  const auto urls = ev->mimeData()->urls();
  if (urls.size() == 1 && urls.front().isLocalFile()) {
    openFile(urls.front().toLocalFile());
    ev->acceptProposedAction();
  }
}

// ---- selection panes ----

void MainWindow::updateDetails() {
  const EventRef e = timeline_->selected();
  if (!doc_ || !e.valid()) {
    details_->clear();
    return;
  }
  QString text;
  for (const auto& [k, v] : describe_event(*doc_, e)) text += qs(k) + ": " + qs(v) + "\n";
  if (const EventRef f = timeline_->flowTarget(); f.valid()) {
    text += "\n" + (e.table == Table::ApiCalls ? tr("launches (arrow)") : tr("launched by (arrow)")) + ":\n";
    for (const auto& [k, v] : describe_event(*doc_, f))
      if (k == "name" || k == "kind" || k == "track" || k == "start" || k == "duration") text += "  " + qs(k) + ": " + qs(v) + "\n";
  }
  details_->setPlainText(text);
}

void MainWindow::updateAggregates() {
  const auto& a = timeline_->area();
  if (!doc_ || !a) {
    aggregates_->setAggregate({});
    aggregate_summary_->setText(tr("Shift+drag on the timeline to select an area."));
    return;
  }
  auto agg = aggregate_area(*doc_, a->rows, a->t0, a->t1);
  QString summary = QString::fromStdString(fmt::format("{} events on {} rows over {}.", agg.events, a->rows.size(),
                                                       format_duration(a->t1 - a->t0)));
  int shown = 0;
  for (const auto& [row, busy] : agg.busy) {
    if (shown++ == 6) { summary += " ..."; break; }
    summary += QString::fromStdString(fmt::format(" {}: {:.1f}% busy.", row, 100 * busy));
  }
  aggregate_summary_->setText(summary);
  aggregates_->setAggregate(std::move(agg));
}

void MainWindow::search(bool backwards) {
  const QString text = search_->text();
  if (text.isEmpty() || !doc_) return;
  if (!timeline_->findNext(text, backwards)) status_->setText(tr("No more events named like \"%1\".").arg(text));
  else status_->setText(tr("Found \"%1\".").arg(qs(event_name(*doc_, timeline_->selected()))));
}

bool MainWindow::loadTrials(const QString& path, QString* error) {
  if (!trials_->load(path, error)) return false;
  const QString beside = tunedConfigBeside(path);
  if (QFileInfo::exists(beside)) loadTunedConfig(beside);
  status_->setText(trials_->summary());
  trials_dock_->show();
  trials_dock_->raise();
  return true;
}

QString MainWindow::tunedConfigBeside(const QString& trials_path) {
  // tune writes OUTPUT and OUTPUT with its extension replaced by .trials.json (tuner/src/tune.cpp)
  const QString suffix = QStringLiteral(".trials.json");
  if (!trials_path.endsWith(suffix)) return {};
  return trials_path.left(trials_path.size() - suffix.size()) + ".toml";
}

bool MainWindow::loadTunedConfig(const QString& path) {
  const bool ok = tuned_->load(path);
  status_->setText(tuned_->summaryText());
  tuned_dock_->show();
  tuned_dock_->raise();
  return ok;
}

}  // namespace tt::gui
