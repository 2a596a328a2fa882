// The Qt application, offscreen: models under QAbstractItemModelTester, timeline interactions
// driven by real input events, findings linked to the timeline, loading errors, plain-text
// names, and screenshots of real traces from tests/data/corpus checked for structure (every
// visible row has something drawn in its band).
#include <atomic>
#include <future>
#include <set>
#include <QAbstractItemModelTester>
#include <QComboBox>
#include <QDockWidget>
#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFont>
#include <QKeyEvent>
#include <QLabel>
#include <QMimeData>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QProcess>
#include <QRegularExpression>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QWheelEvent>
#include <QtTest>

#include <sqlite3.h>

#include "compare_view.h"
#include "event_info.h"
#include "main_window.h"
#include "models.h"
#include "text.h"
#include "tracetune/trace/estimate.h"
#include "tracetune/trace/importers.h"
#include "tracetune/tuner/search.h"
#include "tracetune/tuner/trial.h"
#include "tracetune/tuner/tuned_writer.h"

using namespace tt::gui;
using tt::trace::Ns;
using analyzer_rank_t = tt::analyzer::RankMetrics;

namespace {

const QString kData = QStringLiteral(TT_CORPUS_DIR);
const QString kGpuTrace = kData + "/kineto/hta/ns_resolution_rank_0.json.gz";
const QString kFindingsTrace = kData + "/kineto/param/resnet_rtx2080ti.json.gz";

// Drawn ink: a saturated or dark pixel. Backgrounds, stripes and grid lines are light greys.
bool ink(QRgb p) {
  const int r = qRed(p), g = qGreen(p), b = qBlue(p);
  return std::max({r, g, b}) - std::min({r, g, b}) > 40 || std::max({r, g, b}) < 200;
}

void send_mouse(QWidget* w, QEvent::Type type, QPoint p, Qt::MouseButton button, Qt::MouseButtons buttons,
                Qt::KeyboardModifiers mods = Qt::NoModifier) {
  QMouseEvent ev(type, QPointF(p), w->mapToGlobal(QPointF(p)), button, buttons, mods);
  QApplication::sendEvent(w, &ev);
}

void drag(QWidget* w, QPoint from, QPoint to, Qt::KeyboardModifiers mods = Qt::NoModifier) {
  send_mouse(w, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton, mods);
  const QPoint mid = (from + to) / 2;
  send_mouse(w, QEvent::MouseMove, mid, Qt::NoButton, Qt::LeftButton, mods);
  send_mouse(w, QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton, mods);
  send_mouse(w, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton, mods);
}

// The first row showing `table` and a point inside one of its blocks (from the LOD result).
std::optional<std::pair<std::uint32_t, QPoint>> block_point(TimelineView* tl, Table table) {
  const auto* doc = tl->document();
  const auto lod = tl->lodResult();
  if (!doc || !lod) return std::nullopt;
  for (std::uint32_t r = 0; r < doc->index.rows.size(); ++r) {
    if (doc->index.rows[r].table != table) continue;
    const QRect rr = tl->rowRect(r);
    const auto* rl = lod->find(r);
    if (rr.isEmpty() || !rl || rl->lanes.empty()) continue;
    for (const auto& it : rl->lanes[0]) {
      const double x0 = tl->xAt(it.start), x1 = tl->xAt(it.end);
      if (it.merged() || x1 - x0 < 4 || x0 < TimelineView::kLabelWidth || x1 > TimelineView::kLabelWidth + tl->timelineWidth())
        continue;
      return std::pair{r, QPoint(static_cast<int>((x0 + x1) / 2), rr.top() + TimelineView::kLaneHeight / 2)};
    }
  }
  return std::nullopt;
}

// A job whose step time is a known function of the settings, for the tuner's real search and
// writer: the GUI is shown exactly what `tracetune tune` would write.
class CostRunner : public tt::tuner::TrialRunner {
 public:
  explicit CostRunner(std::function<double(const tt::tuner::Candidate&)> cost) : cost_(std::move(cost)) {}
  tt::tuner::Trial run(const tt::tuner::Candidate& c) override {
    tt::tuner::Trial t;
    t.candidate = c;
    std::vector<double> steps;
    for (int i = 0; i < 20; ++i) steps.push_back(cost_(c) * (1 + 0.01 * std::sin(i * 1.7)));
    t.stats = tt::tuner::stats_of(steps);
    return t;
  }

 private:
  std::function<double(const tt::tuner::Candidate&)> cost_;
};

// Writes tuned.toml and tuned.trials.json as `tracetune tune -o DIR/tuned.toml` would, from the
// tuner's own search and writer; `numerics`: a job TF32 speeds up, searched with --allow-numerics.
bool write_tuner_output(const QString& dir, bool numerics) {
  using namespace tt::tuner;
  const Catalogue cat = builtin_catalogue().value();
  TuneSummary s;
  s.command = numerics ? "python3 train.py --amp" : "python3 train.py --num-workers 0";
  s.version = "test";
  s.steps = 15;
  s.warmup = 3;
  if (numerics) s.findings = {{"precision", 0.5, {"torch.tf32_matmul"}}};
  else s.findings = {{"data_loading", 0.6, {"dataloader.num_workers", "dataloader.prefetch_factor"}}};
  CostRunner runner([numerics](const Candidate& c) {
    if (numerics) {
      const Value* v = c.find("torch.tf32_matmul");
      return v && std::get<bool>(*v) ? 50.0 : 100.0;
    }
    const Value* v = c.find("dataloader.num_workers");
    const auto w = v ? std::get<std::int64_t>(*v) : 0;
    return 100.0 / std::max<std::int64_t>(1, std::min<std::int64_t>(w, 4)) + (w > 4 ? 5.0 * (w - 4) : 0);
  });
  s.plan = plan_search(s.findings, cat, numerics);
  SearchOptions opt;
  opt.max_trials = 12;
  s.result = search(s.plan, runner, opt);
  for (const auto& [name, text] : {std::pair{QString("tuned.toml"), tuned_toml(s, cat)},
                                   std::pair{QString("tuned.trials.json"), trials_json(s)}}) {
    QFile f(dir + "/" + name);
    if (!f.open(QIODevice::WriteOnly) || f.write(text.data(), qint64(text.size())) != qint64(text.size())) return false;
    f.setPermissions(QFile::ReadOwner | QFile::WriteOwner);  // as a umask of 022 would leave it, whatever ours is
  }
  return true;
}

// Two documents' analyses give the same findings (titles and gains), in the same order.
void expect_same_findings(const Document& l, const Document& w) {
  QCOMPARE(l.analysis().findings.size(), w.analysis().findings.size());
  QVERIFY(!w.analysis().findings.empty());
  for (std::size_t i = 0; i < w.analysis().findings.size(); ++i) {
    QCOMPARE(l.analysis().findings[i].title, w.analysis().findings[i].title);
    QCOMPARE(l.analysis().findings[i].gain, w.analysis().findings[i].gain);
  }
}

// A Kineto trace imported and written as a trace DB.
bool write_db_of(const QString& kineto_path, const std::string& db) {
  tt::trace::Trace src;
  const std::filesystem::path kineto[] = {kineto_path.toStdString()};
  if (!tt::trace::import_any(kineto, src).ok()) return false;
  src.finalize();
  return tt::trace::write_trace(src, db, "test").ok();
}

// A copy of a corpus DB whose first kernel's correlation (a detail, read after the first frame) is text.
bool write_db_with_a_bad_detail(const QString& db) {
  if (!QFile::copy(QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/two_ranks.tracetune.db"), db) ||
      !QFile::setPermissions(db, QFile::ReadOwner | QFile::WriteOwner))
    return false;
  sqlite3* h = nullptr;
  const bool opened = sqlite3_open(db.toUtf8().constData(), &h) == SQLITE_OK;
  const bool changed = opened && sqlite3_exec(h, "UPDATE kernels SET correlation = 'abc' WHERE id = (SELECT min(id) FROM kernels)",
                                              nullptr, nullptr, nullptr) == SQLITE_OK;
  sqlite3_close(h);
  return changed;
}

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT

  std::unique_ptr<MainWindow> open(const QString& path, QSize size = {1400, 900}) {
    auto w = std::make_unique<MainWindow>();
    w->setErrorDialogs(false);
    w->timeline()->setSynchronous(true);
    w->resize(size);
    w->show();
    if (!QTest::qWaitForWindowExposed(w.get())) return nullptr;
    QString err;
    if (!w->loadNow(path, &err)) {
      qWarning() << err;
      return nullptr;
    }
    return w;
  }

 private slots:
  // Qt warnings fail the test (like Orbit's AssertNoQtLogWarnings), except the offscreen
  // platform's note that it has no window manager to pass size hints to.
  void init() { QTest::failOnWarning(QRegularExpression("^(?!This plugin does not support propagateSizeHints)")); }

  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // recent files go to a test settings file
    QApplication::setOrganizationName("tracetune-tests");
    // The real traces are part of the suite (tests/data/corpus): without them the suite
    // fails, rather than passing with nothing tested.
    if (!QFile::exists(kGpuTrace)) QFAIL(qPrintable(kGpuTrace + " is missing from tests/data/corpus"));
  }

  // The compare view on two real A100 NCCL traces: the diff's summary, both step bars, the
  // aligned steps and kernel delta tables (under the model tester), a real click on a step row
  // showing both timelines at that step, a click on a kernel selecting it in both, and a
  // rendering with ink in both timelines.
  void compareViewShowsTwoTracesAndFollowsAClick() {
    const QString base = kData + "/kineto/hta/nccl_data.json.gz", next = kData + "/kineto/hta/a100_rank0_of16.json.gz";
    CompareView view;
    view.baseTimeline()->setSynchronous(true);
    view.newTimeline()->setSynchronous(true);
    view.resize(1400, 900);
    view.show();
    QString error;
    QVERIFY2(view.loadNow(base, next, &error), qPrintable(error));
    const auto& d = view.diff();
    QCOMPARE(view.summary()->text(), QString::fromStdString(d.summary));
    QVERIFY(view.summary()->text().startsWith("step time "));
    QAbstractItemModelTester steps_tester(view.stepsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester kernels_tester(view.kernelsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
    const auto& r = d.ranks[d.headline];
    QVERIFY(r.steps.size() >= 2);
    QCOMPARE(view.stepsModel()->rowCount(), static_cast<int>(r.steps.size()));
    QCOMPARE(view.kernelsModel()->rowCount(), static_cast<int>(r.kernels.size()));
    QCOMPARE(view.kernelsModel()->data(view.kernelsModel()->index(0, 0), Qt::DisplayRole).toString(),
             QString::fromStdString(r.kernels[0].name));
    QCOMPARE(view.kernelsModel()->data(view.kernelsModel()->index(0, 1), Qt::DisplayRole).toString(),
             QString::fromUtf8(tt::analyzer::to_string(r.kernels[0].status).data()));
    QVERIFY(view.baseChart()->stepAt(view.baseChart()->width() / 2) >= 0);  // bars on both sides
    QVERIFY(view.newChart()->stepAt(view.newChart()->width() / 2) >= 0);

    QApplication::processEvents();
    const QModelIndex second = view.stepsModel()->index(1, 0);
    QTest::mouseClick(view.stepsView()->viewport(), Qt::LeftButton, {}, view.stepsView()->visualRect(second).center());
    const auto& s = r.steps[1];
    QCOMPARE(view.baseTimeline()->viewStart(), s.base_start);
    QCOMPARE(view.baseTimeline()->viewEnd(), s.base_end);
    QCOMPARE(view.newTimeline()->viewStart(), s.new_start);
    QCOMPARE(view.newTimeline()->viewEnd(), s.new_end);

    // a matched kernel: its next launch is selected on both timelines
    int matched = -1;
    for (int i = 0; i < view.kernelsModel()->rowCount() && matched < 0; ++i)
      if (view.kernelsModel()->kernel(i)->status == tt::analyzer::KernelDelta::Status::Matched) matched = i;
    QVERIFY(matched >= 0);
    view.kernelsView()->scrollTo(view.kernelsModel()->index(matched, 0));
    QTest::mouseClick(view.kernelsView()->viewport(), Qt::LeftButton, {},
                      view.kernelsView()->visualRect(view.kernelsModel()->index(matched, 0)).center());
    QVERIFY(view.baseTimeline()->selected().valid());
    QVERIFY(view.newTimeline()->selected().valid());

    view.showStep(0);
    QApplication::processEvents();
    const QImage img = view.grab().toImage();
    for (TimelineView* tl : {view.baseTimeline(), view.newTimeline()}) {
      const QRect area(tl->mapTo(&view, QPoint(TimelineView::kLabelWidth, 0)), QSize(tl->timelineWidth(), tl->height()));
      int inked = 0;
      for (int y = area.top(); y < area.bottom(); y += 3)
        for (int x = area.left(); x < area.right(); x += 3) inked += ink(img.pixel(x, y)) ? 1 : 0;
      QVERIFY2(inked > 200, qPrintable(QString("only %1 inked samples in a timeline").arg(inked)));
    }
  }

  void modelsPassTheModelTester() {
    auto doc = load_document(kFindingsTrace.toStdString(), {});
    QVERIFY2(doc.ok(), doc.ok() ? "" : doc.error().c_str());
    FindingsModel findings;
    TopKernelsModel kernels;
    RanksModel ranks;
    AggregatesModel agg;
    QAbstractItemModelTester t1(&findings, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t2(&kernels, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t3(&ranks, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QAbstractItemModelTester t4(&agg, QAbstractItemModelTester::FailureReportingMode::QtTest);
    findings.setDocument(doc.value());
    kernels.setDocument(doc.value());
    ranks.setDocument(doc.value());
    const auto& d = *doc.value();
    std::vector<std::uint32_t> rows;
    for (std::uint32_t r = 0; r < d.index.rows.size(); ++r) rows.push_back(r);
    agg.setAggregate(aggregate_area(d, rows, d.index.start, d.index.end + 1));  // + 1: instants at the end
    // one row per group of findings, as the CLI prints them
    QCOMPARE(findings.rowCount(), static_cast<int>(tt::analyzer::group_findings(d.analysis().findings).size()));
    QVERIFY(findings.rowCount() >= 3);
    for (int i = 1; i < findings.rowCount(); ++i) QVERIFY(findings.finding(i - 1)->gain >= findings.finding(i)->gain);
    QVERIFY(kernels.rowCount() > 0);
    QCOMPARE(ranks.rowCount(), static_cast<int>(d.analysis().metrics.ranks.size()));
    // the aggregate over everything counts every span event once
    std::uint64_t total = 0;
    for (const auto& a : agg.aggregate().by_name) total += a.count;
    std::uint64_t span_events = 0;
    for (const auto& row : d.index.rows)
      if (row.table != Table::Counters) span_events += row.events;
    QCOMPARE(total, span_events);
    findings.setDocument(nullptr);  // resets are checked by the testers too
    QCOMPARE(findings.rowCount(), 0);
  }

  void kinetoPseudoProcessesStartCollapsed() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    const auto* tl = w->timeline();
    const auto& groups = tl->document()->index.groups;
    int folded = 0;
    for (std::uint32_t g = 0; g < groups.size(); ++g) {
      if (groups[g].start_collapsed) {
        ++folded;
        QVERIFY(tl->groupCollapsed(g));
      } else if (groups[g].level <= 1) {
        QVERIFY2(!tl->groupCollapsed(g), qPrintable(QString::fromStdString(groups[g].label)));  // a small trace: the job's rows open
      }
    }
    QCOMPARE(folded, 1);
  }

  void wheelZoomsAboutTheCursor() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    const Ns span0 = tl->viewEnd() - tl->viewStart();
    const QPoint at(TimelineView::kLabelWidth + tl->timelineWidth() / 3, 200);
    const Ns under = tl->timeAt(at.x());
    QWheelEvent in(QPointF(at), tl->mapToGlobal(QPointF(at)), QPoint(), QPoint(0, 240), Qt::NoButton, Qt::NoModifier,
                   Qt::NoScrollPhase, false);
    QApplication::sendEvent(tl, &in);
    const Ns span1 = tl->viewEnd() - tl->viewStart();
    QVERIFY(span1 < span0 * 0.7);
    QVERIFY(std::llabs(tl->timeAt(at.x()) - under) <= span1 / tl->timelineWidth() + 1);
    QWheelEvent out(QPointF(at), tl->mapToGlobal(QPointF(at)), QPoint(), QPoint(0, -240), Qt::NoButton, Qt::NoModifier,
                    Qt::NoScrollPhase, false);
    QApplication::sendEvent(tl, &out);
    QVERIFY(std::llabs((tl->viewEnd() - tl->viewStart()) - span0) <= span0 / 1000 + 2);
  }

  void dragPansAndKeysNavigate() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    const Ns t0 = tl->viewStart(), span = tl->viewEnd() - tl->viewStart();
    const int y = 300, x = TimelineView::kLabelWidth + 400;
    drag(tl, {x, y}, {x + 200, y});  // content follows the mouse: the view moves earlier
    const double expect = 200.0 * span / tl->timelineWidth();
    QVERIFY(std::abs(double(t0 - tl->viewStart()) - expect) < expect * 0.02 + 2);
    QCOMPARE(tl->viewEnd() - tl->viewStart(), span);
    QVERIFY(!tl->selected().valid());  // a drag is not a click

    tl->setFocus();
    QTest::keyClick(tl, Qt::Key_W);
    QVERIFY(tl->viewEnd() - tl->viewStart() < span);
    const Ns before = tl->viewStart();
    QTest::keyClick(tl, Qt::Key_D);
    QVERIFY(tl->viewStart() > before);
    QTest::keyClick(tl, Qt::Key_A);
    QTest::keyClick(tl, Qt::Key_A);
    QVERIFY(tl->viewStart() < before);
    QTest::keyClick(tl, Qt::Key_S);
    QTest::keyClick(tl, Qt::Key_0);
    QCOMPARE(tl->viewEnd() - tl->viewStart(), span);
    QTest::keyClick(tl, Qt::Key_Question);
    QVERIFY(tl->helpVisible());
    QTest::keyClick(tl, Qt::Key_Escape);
    QVERIFY(!tl->helpVisible());
  }

  void clickSelectsFitsAndFollowsTheFlow() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    // zoom in on a step so the launches are wide enough to click
    const auto& d = *tl->document();
    QVERIFY(d.trace.steps.size() > 1);
    tl->setView(d.trace.steps.start[1], d.trace.steps.start[1] + d.trace.steps.dur[1] / 40);
    auto hit = block_point(tl, Table::ApiCalls);
    QVERIFY(hit);
    QTest::mouseClick(tl, Qt::LeftButton, Qt::NoModifier, hit->second);
    const EventRef sel = tl->selected();
    QVERIFY(sel.valid());
    QCOMPARE(sel.table, Table::ApiCalls);
    QVERIFY(w->detailsPane()->toPlainText().contains("duration"));
    // F fits it
    tl->setFocus();
    QTest::keyClick(tl, Qt::Key_F);
    QVERIFY(tl->viewStart() <= event_start(d, sel) && tl->viewEnd() >= event_end(d, sel));
    QVERIFY(tl->viewEnd() - tl->viewStart() < 2 * (event_end(d, sel) - event_start(d, sel)) + 2000);
    // a launch with a correlation id points at its GPU op, and the other way round
    for (std::uint32_t i = 0; i < d.trace.api_calls.size(); ++i) {
      if (!d.trace.api_calls.correlation[i]) continue;
      const EventRef api{Table::ApiCalls, i};
      const EventRef gpu = correlated_event(d, api);
      if (!gpu.valid()) continue;
      tl->select(api);
      QCOMPARE(tl->flowTarget(), gpu);
      QCOMPARE(correlated_event(d, gpu), api);
      QVERIFY(w->detailsPane()->toPlainText().contains("launches"));
      return;
    }
    QFAIL("no correlated launch in the trace");
  }

  // Kineto imports: clicking a cudaLaunchKernel draws the arrow to the kernel Kineto's own ac2g
  // flow points at (start point inside the call, end point at the kernel's start on its stream);
  // an NCCL launch reaches its collective; a launch whose GPU is listed under another process
  // (torch.compile's trace) is joined through the flow table.
  void kinetoLaunchArrowsReachTheirKernels() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto& d = *tl->document();
    const auto& t = d.trace;
    // the kernel of the first cudaLaunchKernel in step 2, found from the file's flow events alone
    QVERIFY(t.steps.size() > 2);
    std::optional<std::uint32_t> launch;
    for (std::uint32_t i = 0; i < t.api_calls.size() && !launch; ++i)
      if (t.strings.get(t.api_calls.name[i]) == "cudaLaunchKernel" && t.api_calls.start[i] > t.steps.start[2]) launch = i;
    QVERIFY(launch);
    const Ns l0 = t.api_calls.start[*launch], l1 = t.api_calls.end(*launch);
    const std::uint32_t thread = t.api_calls.track[*launch];
    std::optional<EventRef> expected;
    for (std::size_t i = 0; i < t.flows.size() && !expected; ++i) {
      if (t.flows.phase[i] != 's' || t.flows.track[i] != thread || t.flows.ts[i] < l0 || t.flows.ts[i] > l1) continue;
      for (std::size_t j = 0; j < t.flows.size() && !expected; ++j) {
        if (t.flows.phase[j] != 'f' || t.flows.id[j] != t.flows.id[i]) continue;
        for (std::uint32_t k = 0; k < t.kernels.size(); ++k)
          if (t.kernels.track[k] == t.flows.track[j] && t.kernels.start[k] == t.flows.ts[j]) expected = EventRef{Table::Kernels, k};
      }
    }
    QVERIFY2(expected, "the trace's ac2g flow of the launch leads to no kernel");
    QCOMPARE(t.kernels.correlation[expected->row], t.api_calls.correlation[*launch]);

    // click it: the launch fills the middle third of the view, on its thread's CUDA API row
    std::optional<QPoint> at;
    for (std::uint32_t r = 0; r < d.index.rows.size() && !at; ++r) {
      const auto& row = d.index.rows[r];
      if (row.table != Table::ApiCalls || row.track != thread) continue;
      tl->revealRank(row.rank);
      tl->setView(l0 - (l1 - l0), l1 + (l1 - l0));
      const QRect rr = tl->rowRect(r);
      if (!rr.isEmpty()) at = QPoint(static_cast<int>((tl->xAt(l0) + tl->xAt(l1)) / 2), rr.top() + TimelineView::kLaneHeight / 2);
    }
    QVERIFY(at);
    QTest::mouseClick(tl, Qt::LeftButton, Qt::NoModifier, *at);
    QCOMPARE(tl->selected(), (EventRef{Table::ApiCalls, *launch}));
    QCOMPARE(tl->flowTarget(), *expected);
    const QString details = w->detailsPane()->toPlainText();
    QVERIFY2(details.contains("launches (arrow)") &&
                 details.contains(QString::fromStdString(std::string(t.strings.get(t.kernels.name[expected->row])))),
             qPrintable(details));
    // and from the kernel back to its launch
    tl->select(*expected);
    QCOMPARE(tl->flowTarget(), (EventRef{Table::ApiCalls, *launch}));

    // an NCCL kernel is imported twice, as a kernel and as a collective: clicking the collective
    // points at its launch too, whose own arrow goes to the kernel (the same GPU work)
    auto nccl = load_document((kData + "/kineto/hta/nccl_data.json.gz").toStdString(), {});
    QVERIFY(nccl.ok());
    const auto& n = nccl.value()->trace;
    int from_collectives = 0;
    for (std::uint32_t c = 0; c < n.collectives.size(); ++c) {
      if (!n.collectives.correlation[c]) continue;
      const EventRef api = correlated_event(*nccl.value(), {Table::Collectives, c});
      QCOMPARE(api.table, Table::ApiCalls);
      QCOMPARE(n.api_calls.correlation[api.row], n.collectives.correlation[c]);
      const EventRef kernel = correlated_event(*nccl.value(), api);
      QCOMPARE(kernel.table, Table::Kernels);
      QCOMPARE(n.kernels.start[kernel.row], n.collectives.start[c]);
      QCOMPARE(n.kernels.track[kernel.row], n.collectives.track[c]);
      ++from_collectives;
    }
    QVERIFY(from_collectives >= 20);

    // triton_example: the kernel's GPU is listed under another pid than the launching thread,
    // so only the flow table joins cuLaunchKernel to its kernel
    auto triton = load_document((kData + "/kineto/hta/triton_example.json.gz").toStdString(), {});
    QVERIFY(triton.ok());
    const auto& tt = triton.value()->trace;
    QCOMPARE(tt.kernels.size(), std::size_t(1));
    for (std::uint32_t i = 0; i < tt.api_calls.size(); ++i) {
      if (tt.strings.get(tt.api_calls.name[i]) != "cuLaunchKernel") continue;
      QVERIFY(tt.process_of_track(tt.api_calls.track[i]) != tt.process_of_track(tt.kernels.track[0]));
      QCOMPARE(correlated_event(*triton.value(), {Table::ApiCalls, i}), (EventRef{Table::Kernels, 0}));
      QCOMPARE(correlated_event(*triton.value(), {Table::Kernels, 0}), (EventRef{Table::ApiCalls, i}));
      return;
    }
    QFAIL("no cuLaunchKernel in triton_example");
  }

  void areaSelectionAggregates() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto hit = block_point(tl, Table::Steps);
    QVERIFY(hit);
    const QRect rr = tl->rowRect(hit->first);
    drag(tl, {TimelineView::kLabelWidth + 10, rr.top() + 2}, {TimelineView::kLabelWidth + tl->timelineWidth() - 10, rr.bottom() - 2},
         Qt::ShiftModifier);
    QVERIFY(tl->area().has_value());
    QCOMPARE(tl->area()->rows.size(), std::size_t(1));
    QVERIFY(w->aggregatesModel()->rowCount() > 0);
    const auto& agg = w->aggregatesModel()->aggregate();
    QCOMPARE(agg.busy.size(), std::size_t(1));
    QVERIFY(agg.busy[0].second > 0 && agg.busy[0].second <= 1.0);
    tl->setFocus();
    QTest::keyClick(tl, Qt::Key_Z);
    QCOMPARE(tl->viewStart(), tl->area()->t0);
  }

  void searchFindsNextAndPrevious() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    w->searchBox()->setText("ProfilerStep");
    QTest::keyClick(w->searchBox(), Qt::Key_Return);
    const EventRef a = tl->selected();
    QVERIFY(a.valid());
    QVERIFY(QString::fromStdString(event_name(*tl->document(), a)).contains("ProfilerStep"));
    QVERIFY(tl->findNext("profilerstep", false));  // case-insensitive
    const EventRef b = tl->selected();
    QVERIFY(event_start(*tl->document(), b) >= event_start(*tl->document(), a));
    QVERIFY(!(a == b));
    QVERIFY(tl->findNext("ProfilerStep", true));
    QCOMPARE(tl->selected(), a);
    QVERIFY(!tl->findNext("no event is called this", false));
    // past the last one, the search wraps around to the first
    EventRef first = a, last = a;
    while (tl->findNext("ProfilerStep", false) && !(tl->selected() == a)) last = tl->selected();
    QCOMPARE(tl->selected(), first);
    QVERIFY(!(last == first));
  }

  void ranksCompareCollectiveWaitsSideBySide() {
    auto doc = load_document((kData + "/kineto/param/dlrm_8rank").toStdString(), {});
    QVERIFY2(doc.ok(), doc.ok() ? "" : doc.error().c_str());
    RanksModel ranks;
    QAbstractItemModelTester tester(&ranks, QAbstractItemModelTester::FailureReportingMode::QtTest);
    ranks.setDocument(doc.value());
    const auto& m = doc.value()->analysis().metrics;
    QCOMPARE(ranks.rowCount(), 8);
    QVERIFY(m.cross.matched_collectives > 0);
    std::uint64_t last = 0;
    for (int r = 0; r < ranks.rowCount(); ++r) {
      const auto& rm = *ranks.rank(r);
      QCOMPARE(rm.collectives.matched, m.cross.matched_collectives);
      last += rm.collectives.last_arrivals;
      const QString wait = ranks.index(r, RanksModel::CollectiveWait).data().toString();
      QVERIFY2(wait.endsWith(" ms/step"), qPrintable(wait));
      QCOMPARE(ranks.index(r, RanksModel::CollectiveWait).data(Qt::UserRole).toDouble(),
               double(rm.collectives.arrival_wait / static_cast<Ns>(rm.steps.size())));
      QCOMPARE(ranks.index(r, RanksModel::LastArrivals).data().toString(),
               QString("%1 of %2").arg(rm.collectives.last_arrivals).arg(rm.collectives.matched));
      const double busy = ranks.index(r, RanksModel::GpuBusy).data(Qt::UserRole).toDouble(),
                   idle = ranks.index(r, RanksModel::GpuIdle).data(Qt::UserRole).toDouble();
      QVERIFY(std::abs(busy + idle - 1.0) < 1e-9);
    }
    QCOMPARE(last, m.cross.matched_collectives);  // every collective has one last arriver
  }

  void topKernelAndRankClicksReachTheTimeline() {
    auto w = open(kFindingsTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    TablePanel* kernels = nullptr;
    TablePanel* ranks = nullptr;
    for (auto* p : w->findChildren<TablePanel*>()) {
      if (p->title() == "Top kernels") kernels = p;
      if (p->title() == "Ranks") ranks = p;
    }
    QVERIFY(kernels && ranks);
    // a kernel: its first occurrence is selected
    const QModelIndex k0 = kernels->view()->model()->index(0, 1);
    const QString name = k0.data().toString();
    QVERIFY(!name.isEmpty());
    emit kernels->view()->activated(k0);
    QVERIFY(tl->selected().valid());
    QCOMPARE(tl->selected().table, Table::Kernels);
    QCOMPARE(QString::fromStdString(event_name(*tl->document(), tl->selected())), name);
    // a rank: its analysis window
    tl->setView(tl->viewStart(), tl->viewStart() + 1000);
    emit ranks->view()->activated(ranks->view()->model()->index(0, 0));
    const auto& r = tl->document()->analysis().metrics.ranks.front();
    QVERIFY(tl->viewStart() <= r.window_start && tl->viewEnd() >= r.window_end);
  }

  void collapseAndPin() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto& idx = tl->document()->index;
    // the last row is near the bottom; pinning it brings it right under the ruler
    const std::uint32_t last = static_cast<std::uint32_t>(idx.rows.size() - 1);
    tl->togglePin(last);
    QVERIFY(tl->pinned(last));
    QCOMPARE(tl->rowRect(last).top(), TimelineView::kRulerHeight);
    tl->togglePin(last);
    // collapsing a row's group hides it
    const auto hit = block_point(tl, Table::Ranges);
    QVERIFY(hit);
    const auto g = idx.rows[hit->first].group;
    tl->toggleGroup(g);
    QVERIFY(tl->groupCollapsed(g));
    QVERIFY(tl->rowRect(hit->first).isEmpty());
    tl->toggleGroup(g);
    QVERIFY(!tl->rowRect(hit->first).isEmpty());
  }

  void findingClickMovesTheViewToItsEvidence() {
    auto w = open(kFindingsTrace);
    QVERIFY(w);
    auto* panel = w->findingsPanel();
    int row = -1;
    for (int i = 0; i < panel->model()->rowCount(); ++i) {
      const auto [a, b] = FindingsModel::evidenceRange(*panel->model()->finding(i));
      if (b > a) { row = i; break; }
    }
    QVERIFY(row >= 0);
    const auto [a, b] = FindingsModel::evidenceRange(*panel->model()->finding(row));
    auto* view = panel->view();
    view->parentWidget()->parentWidget()->show();
    const QRect cell = view->visualRect(panel->model()->index(row, FindingsModel::Title));
    QVERIFY(!cell.isEmpty());
    QTest::mouseClick(view->viewport(), Qt::LeftButton, Qt::NoModifier, cell.center());
    auto* tl = w->timeline();
    QVERIFY(tl->viewStart() <= a && tl->viewEnd() >= b);
    QVERIFY(tl->viewEnd() - tl->viewStart() < (b - a) * 2);
    // and the highlight is drawn: the ruler over the range is tinted
    const QImage img = tl->grab().toImage();
    const int x = static_cast<int>(tl->xAt(a + (b - a) / 2));
    QVERIFY(qRed(img.pixel(x, 3)) > qBlue(img.pixel(x, 3)) + 40);
  }

  void stepBarClickMovesTheView() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* chart = w->stepsPanel()->chart();
    chart->parentWidget()->parentWidget()->show();
    chart->parentWidget()->parentWidget()->raise();
    chart->resize(500, 200);
    const auto& ranks = w->timeline()->document()->analysis().metrics.ranks;
    const analyzer_rank_t* rank = nullptr;
    for (const auto& r : ranks)
      if (!r.steps.empty()) { rank = &r; break; }
    QVERIFY(rank);
    // the segments of every bar add up to the step's wall time
    for (const auto& s : rank->steps) {
      const auto g = StepsChart::segments(s, rank->has_gpu);
      QCOMPARE(g.compute + g.communication + g.copies + g.data_wait + g.idle, std::max<Ns>(s.wall(), g.compute + g.communication + g.copies + g.data_wait));
    }
    const int n = static_cast<int>(rank->steps.size());
    const int last_x = static_cast<int>(4 + (n - 0.5) * (chart->width() - 8.0) / n);
    QCOMPARE(chart->stepAt(last_x), n - 1);
    QTest::mouseClick(chart, Qt::LeftButton, Qt::NoModifier, QPoint(last_x, chart->height() - 30));
    const auto& s = rank->steps.back();
    auto* tl = w->timeline();
    QVERIFY(tl->viewStart() <= s.start && tl->viewEnd() >= s.end);
    QVERIFY(tl->viewEnd() - tl->viewStart() < s.wall() * 2);
  }

  void manyRowsOpenRanksWithTheirGpuStreams() {
    auto w = open(kData + "/kineto/param/dlrm_8rank", {1600, 1000});
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto& idx = tl->document()->index;
    QVERIFY(idx.rows.size() > TimelineView::kCollapseAbove);
    // the ranks open with every GPU stream that has events; host threads fold into summaries
    int processes = 0, folded = 0;
    for (std::uint32_t g = 0; g < idx.groups.size(); ++g) {
      if (idx.groups[g].level != 1) continue;
      ++processes;
      folded += tl->groupCollapsed(g);
    }
    QCOMPARE(processes, 9);  // 8 ranks, and one group folding the 24 Kineto pseudo-processes of their files
    QCOMPARE(folded, 1);     // the pseudo-processes
    std::set<int> ranks_with_streams;
    int host_rows_open = 0;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
      const bool gpu = idx.rows[r].table == Table::Kernels || idx.rows[r].table == Table::Memcpys ||
                       idx.rows[r].table == Table::Memsets || idx.rows[r].table == Table::Collectives;
      if (gpu && idx.rows[r].events > 0) {
        QVERIFY2(tl->rowOpen(r), qPrintable(QString::fromStdString(idx.rows[r].label)));
        ranks_with_streams.insert(idx.rows[r].rank);
      } else if (idx.rows[r].table != Table::Counters && idx.rows[r].table != Table::Steps) {
        host_rows_open += tl->rowOpen(r);  // the process's own step row stays in view
      }
    }
    QCOMPARE(ranks_with_streams.size(), std::size_t{8});
    QCOMPARE(host_rows_open, 0);
    for (std::uint32_t g = 0; g < idx.groups.size(); ++g)  // fold the ranks: summary lines
      if (idx.groups[g].level == 1 && !tl->groupCollapsed(g)) tl->toggleGroup(g);
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) QVERIFY(tl->rowRect(r).isEmpty());
    const QImage img = tl->grab().toImage();
    int summary_rows = 0;
    for (int y = TimelineView::kRulerHeight + 2; y + TimelineView::kGroupHeight / 2 < img.height(); y += TimelineView::kGroupHeight) {
      int n = 0;
      for (int x = TimelineView::kLabelWidth; x < TimelineView::kLabelWidth + tl->timelineWidth(); ++x) n += ink(img.pixel(x, y + TimelineView::kGroupHeight / 2));
      summary_rows += n > 0;
    }
    QVERIFY2(summary_rows >= 8, qPrintable(QString::number(summary_rows)));
    // expanding shows the rows
    for (std::uint32_t g = 0; g < idx.groups.size(); ++g)
      if (tl->groupCollapsed(g)) tl->toggleGroup(g);
    int shown = 0;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) shown += !tl->rowRect(r).isEmpty();
    QVERIFY(shown > 0);
  }

  void findingClickRevealsItsRank() {
    auto w = open(kData + "/kineto/param/dlrm_8rank", {1600, 1000});
    QVERIFY(w);
    auto* panel = w->findingsPanel();
    // the panel groups the 8 ranks' findings as the CLI does: one row per category's group
    const auto& all = w->timeline()->document()->analysis().findings;
    QCOMPARE(panel->model()->rowCount(), static_cast<int>(tt::analyzer::group_findings(all).size()));
    QVERIFY2(panel->model()->rowCount() * 2 < static_cast<int>(all.size()), qPrintable(QString::number(all.size())));
    const auto* f = panel->model()->finding(0);
    QVERIFY(f && f->rank >= 0);
    panel->activate(0);
    const auto& idx = w->timeline()->document()->index;
    int rank_rows = 0;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
      if (w->timeline()->rowRect(r).isEmpty()) continue;
      rank_rows += idx.rows[r].rank == f->rank;
    }
    QVERIFY(rank_rows >= 3);
    int host_rows_of_rank = 0;  // the click opens the rank's host threads, folded at first
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r)
      host_rows_of_rank += idx.rows[r].rank == f->rank && idx.rows[r].table == Table::Ranges && w->timeline()->rowOpen(r);
    QVERIFY(host_rows_of_rank > 0);
    const auto [a, b] = FindingsModel::evidenceRange(*f);
    QVERIFY(w->timeline()->viewStart() <= a && w->timeline()->viewEnd() >= b);
  }

  void loadsInAWorkerThreadAndReportsErrors() {
    QTemporaryDir tmp;
    MainWindow w;
    w.setErrorDialogs(false);
    w.show();
    QSignalSpy ok(&w, &MainWindow::documentLoaded), failed(&w, &MainWindow::loadFailed),
        analysed(&w, &MainWindow::analysisReady);
    w.openFile(kGpuTrace);
    QVERIFY(w.loading());
    QVERIFY(ok.wait(30000));
    QVERIFY(w.timeline()->document());
    // the timeline is up; the findings follow when the analysis is done
    QVERIFY(analysed.count() == 1 || analysed.wait(30000));
    QVERIFY(w.timeline()->document()->analysed());
    QCOMPARE(w.findingsPanel()->model()->rowCount(),
             static_cast<int>(tt::analyzer::group_findings(w.timeline()->document()->analysis().findings).size()));
    QVERIFY(w.findingsPanel()->model()->rowCount() > 0);
    QVERIFY(!w.loading());
    QVERIFY(w.statusText().contains("findings"));
    QCOMPARE(w.recentFiles().value(0), QFileInfo(kGpuTrace).absoluteFilePath());
    // garbage, a truncated JSON, a SQLite file of someone else's, a missing file: messages, no crash
    const QString garbage = tmp.filePath("garbage.json"), trunc = tmp.filePath("trunc.json"), other = tmp.filePath("other.db");
    QFile f1(garbage);
    QVERIFY(f1.open(QIODevice::WriteOnly));
    for (int i = 0; i < 4096; ++i) f1.putChar(static_cast<char>((i * 7919) & 0xff));
    f1.close();
    QFile f2(trunc);
    QVERIFY(f2.open(QIODevice::WriteOnly));
    f2.write("{\"traceEvents\": [{\"name\": \"x\", \"ph\": \"X\", \"ts\": 1");
    f2.close();
    QFile f3(other);
    QVERIFY(f3.open(QIODevice::WriteOnly));
    f3.write(QByteArray("SQLite format 3\0", 16) + QByteArray(4000, '\x01'));
    f3.close();
    for (const QString& bad : {garbage, trunc, other, tmp.filePath("missing.json")}) {
      failed.clear();
      w.openFile(bad);
      QVERIFY(failed.wait(30000));
      const QString msg = failed.first().first().toString();
      QVERIFY2(msg.contains(QFileInfo(bad).fileName()), qPrintable(msg));
      QVERIFY(w.timeline()->document());  // the previous trace stays open
    }
  }

  void droppingAFileOpensIt() {
    MainWindow w;
    w.setErrorDialogs(false);
    w.show();
    QSignalSpy ok(&w, &MainWindow::documentLoaded);
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(kGpuTrace)});
    QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
    QApplication::sendEvent(&w, &drop);
    QVERIFY(ok.wait(30000));
    QCOMPARE(QString::fromStdString(w.timeline()->document()->path.string()), kGpuTrace);
  }

  // Truncated and corrupted copies of real inputs of each format: an error or a trace, never a crash.
  void damagedFilesNeverCrash() {
    QTemporaryDir tmp;
    const QString sources[] = {kGpuTrace, QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/two_ranks.tracetune.db"),
                               QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/nsys_small.sqlite")};
    int errors = 0, loaded = 0;
    for (const QString& src : sources) {
      QFile in(src);
      QVERIFY(in.open(QIODevice::ReadOnly));
      const QByteArray bytes = in.readAll();
      const QString suffix = src.endsWith(".gz") ? ".json.gz" : QString(".") + QFileInfo(src).suffix();
      std::vector<QByteArray> damaged;
      for (double cut : {0.1, 0.5, 0.9, 0.999}) damaged.push_back(bytes.left(static_cast<int>(bytes.size() * cut)));
      for (int k = 1; k <= 6; ++k) {  // a run of bytes overwritten at six places
        QByteArray b = bytes;
        const int at = static_cast<int>(static_cast<double>(b.size()) * k / 7.0);
        for (int j = 0; j < 64 && at + j < b.size(); ++j) b[at + j] = static_cast<char>(b[at + j] ^ (0x5a + j));
        damaged.push_back(b);
      }
      for (std::size_t i = 0; i < damaged.size(); ++i) {
        const QString path = tmp.filePath(QString("damaged%1%2").arg(i).arg(suffix));
        QFile out(path);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(damaged[i]);
        out.close();
        auto r = load_document(path.toStdString(), {});
        const bool truncated = i < 3;  // the 99.9% cut may only drop a page's unused tail
        QVERIFY2(!truncated || !r.ok(), qPrintable(path + " was cut short but loaded"));
        if (r) {
          ++loaded;  // damage in unused space: the trace must still be whole enough to index
          QVERIFY(r.value()->index.rows.size() <= r.value()->trace.tracks.size() * 10 + 10);
        } else {
          ++errors;
          QVERIFY2(QString::fromStdString(r.error()).contains(QFileInfo(path).fileName()), r.error().c_str());
        }
      }
    }
    QVERIFY(errors >= 12);
    qDebug() << errors << "refused," << loaded << "loaded";
  }

  void memoryCapRefusesWithAClearMessage() {
    LoadOptions opt;
    opt.memory_cap_bytes = 1 << 20;  // 1 MiB: far less than this trace needs
    auto r = load_document(kGpuTrace.toStdString(), opt);
    QVERIFY(!r.ok());
    QVERIFY2(QString::fromStdString(r.error()).contains("memory cap"), r.error().c_str());
  }

  // The estimate made before reading (event-table row counts, the gzip size field) refuses a
  // trace clearly over the cap without reading it; the exact checks after reading stay.
  void memoryCapIsCheckedBeforeReading() {
    QTemporaryDir tmp;
    // A DB whose last kernel row has id 50,000,000: the estimate counts 50M kernels (~1.9 GiB);
    // the file holds a few thousand events, so only the estimate can trip a 256 MiB cap.
    const QString db = tmp.filePath("sparse.db");
    QVERIFY(QFile::copy(QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/two_ranks.tracetune.db"), db));
    QVERIFY(QFile::setPermissions(db, QFile::ReadOwner | QFile::WriteOwner));
    sqlite3* h = nullptr;
    QCOMPARE(sqlite3_open(db.toUtf8().constData(), &h), SQLITE_OK);
    QCOMPARE(sqlite3_exec(h, "UPDATE kernels SET id = 50000000 WHERE id = (SELECT max(id) FROM kernels)", nullptr, nullptr, nullptr),
             SQLITE_OK);
    sqlite3_close(h);
    LoadOptions opt;
    opt.memory_cap_bytes = std::uint64_t{256} << 20;
    auto r = load_document(db.toStdString(), opt);
    QVERIFY(!r.ok());
    QString msg = QString::fromStdString(r.error());
    QVERIFY2(msg.startsWith(db) && msg.contains("estimated before reading") && msg.contains("about 500") &&
                 msg.contains("over the memory cap of 256 MiB") && msg.contains("--memory-cap MiB"),
             qPrintable(msg));
    auto uncapped = load_document(db.toStdString(), {});  // what reading it really takes
    QVERIFY2(uncapped.ok(), uncapped.ok() ? "" : uncapped.error().c_str());
    QVERIFY(uncapped.value()->resident_bytes < opt.memory_cap_bytes);

    // A Kineto .json.gz whose size field says 3 GiB of JSON: refused before inflating anything
    // (reading it would fail on the size mismatch instead, with another message).
    const QString gz = tmp.filePath("claims_3gib.json.gz");
    QVERIFY(QFile::copy(kGpuTrace, gz));
    QVERIFY(QFile::setPermissions(gz, QFile::ReadOwner | QFile::WriteOwner));
    {
      QFile f(gz);
      QVERIFY(f.open(QIODevice::ReadWrite));
      QVERIFY(f.seek(f.size() - 4));
      f.write(QByteArray("\x00\x00\x00\xc0", 4));  // ISIZE = 0xc0000000, little-endian
    }
    opt.memory_cap_bytes = std::uint64_t{1024} << 20;
    QElapsedTimer clock;
    clock.start();
    r = load_document(gz.toStdString(), opt);
    QVERIFY(!r.ok());
    msg = QString::fromStdString(r.error());
    QVERIFY2(msg.contains("needs about 3") && msg.contains("estimated before reading") &&
                 msg.contains("memory cap of 1024 MiB"),
             qPrintable(msg));
    QVERIFY2(clock.elapsed() < 2000, qPrintable(QString::number(clock.elapsed())));
    uncapped = load_document(gz.toStdString(), {});
    QVERIFY(!uncapped.ok());
    QVERIFY2(!QString::fromStdString(uncapped.error()).contains("memory cap"), uncapped.error().c_str());

    // The real file under a cap it fits opens, through both checks.
    opt.memory_cap_bytes = std::uint64_t{64} << 20;
    QVERIFY(tt::trace::estimate_load(kGpuTrace.toStdString()).value().total() < opt.memory_cap_bytes);
    r = load_document(kGpuTrace.toStdString(), opt);
    QVERIFY2(r.ok(), r.ok() ? "" : r.error().c_str());
    QCOMPARE(r.value()->trace.event_count(), std::size_t(68706));

    // What the estimate leaves out (strings, vector slack) is still caught after reading, with
    // the exact event count: a cap just above the estimate of a DB whose strings it does not count.
    const QString two = QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/two_ranks.tracetune.db");
    auto est = tt::trace::estimate_load(two.toStdString());
    QVERIFY(est.ok());
    auto full = load_document(two.toStdString(), {});
    QVERIFY(full.ok());
    QVERIFY2(full.value()->trace.event_bytes() > est->total(),
             qPrintable(QString("%1 <= %2").arg(full.value()->trace.event_bytes()).arg(est->total())));
    opt.memory_cap_bytes = est->total();
    r = load_document(two.toStdString(), opt);
    QVERIFY(!r.ok());
    msg = QString::fromStdString(r.error());
    QVERIFY2(msg.contains(QString("for %1 events").arg(full.value()->trace.event_count())) &&
                 !msg.contains("estimated"),
             qPrintable(msg));
  }

  void lodRunsOffTheGuiThread() {
    MainWindow w;
    w.setErrorDialogs(false);
    w.resize(1400, 900);
    w.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w));
    QString err;
    QSignalSpy spy(w.timeline(), &TimelineView::lodUpdated);
    QVERIFY(w.loadNow(kGpuTrace, &err));  // the timeline stays asynchronous here
    QVERIFY(spy.wait(10000));
    auto* tl = w.timeline();
    // zoom: the result arrives later, from the worker, and covers the new view
    tl->setView(tl->viewStart(), tl->viewStart() + (tl->viewEnd() - tl->viewStart()) / 8);
    QTRY_VERIFY_WITH_TIMEOUT(tl->lodResult() && tl->lodResult()->window.t0 <= tl->viewStart() &&
                                 tl->lodResult()->window.t1 >= tl->viewEnd(), 10000);
    // let any layout-triggered queries land too: no result for 300 ms (a fixed wait raced a
    // late result on a loaded machine, which then looked like a query caused by the pan)
    for (int quiet = 0; quiet < 100 && spy.wait(300); ++quiet) {
    }
    const auto gen = tl->lodResult()->generation;
    // panning inside the queried window (three view widths) needs no new query
    tl->panPixels(tl->timelineWidth() / 4.0);
    QTest::qWait(50);
    QCOMPARE(tl->lodResult()->generation, gen);
    // many quick changes: only the newest matters, and it arrives
    for (int i = 0; i < 50; ++i) tl->zoomAbout(0.9, TimelineView::kLabelWidth + 100 + i);
    QTRY_VERIFY_WITH_TIMEOUT(tl->lodResult()->window.t0 <= tl->viewStart() && tl->lodResult()->window.t1 >= tl->viewEnd() &&
                                 std::abs(tl->lodResult()->window.ns_per_px() * 3 * tl->timelineWidth() -
                                          3.0 * double(tl->viewEnd() - tl->viewStart())) < 1e-6 * double(tl->viewEnd() - tl->viewStart()) * 3,
                             10000);
  }

  void hoverShowsTheEventUnderTheCursor() {
    auto w = open(kGpuTrace);
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto hit = block_point(tl, Table::Steps);
    QVERIFY(hit);
    const QImage before = tl->grab().toImage();
    send_mouse(tl, QEvent::MouseMove, hit->second, Qt::NoButton, Qt::NoButton);
    QVERIFY(tl->hovered().valid());
    QCOMPARE(tl->hovered().table, Table::Steps);
    QVERIFY(tl->grab().toImage() != before);  // the hover box is drawn
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(tl, &leave);
    QVERIFY(!tl->hovered().valid());
  }

  // The derived counters of a GPU trace: a busy % row in the GPU's group, drawn, and a
  // hover readout with the value in its unit and the bin width.
  void derivedCountersReadOutWithUnits() {
    auto w = open(kGpuTrace, {1600, 1000});
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto& doc = *tl->document();
    const auto& idx = doc.index;
    std::uint32_t busy = tt::trace::kNone;
    for (std::uint32_t r = 0; r < idx.rows.size() && busy == tt::trace::kNone; ++r)
      if (idx.rows[r].table == Table::Counters && idx.rows[r].label == "GPU busy %") busy = r;
    QVERIFY(busy != tt::trace::kNone);
    QVERIFY(QString::fromStdString(idx.groups[idx.rows[busy].group].label).startsWith("GPU"));
    // where the row is busiest, so the readout is not a trivial 0
    const auto& s = idx.rows[busy].counter;
    const auto peak = std::max_element(s.bins.begin(), s.bins.end()) - s.bins.begin();
    const Ns at = s.t0 + static_cast<Ns>(peak) * s.bin + s.bin / 2;
    tl->setView(at - 50 * s.bin, at + 50 * s.bin);
    const QRect rr = tl->rowRect(busy);
    QVERIFY(!rr.isEmpty());
    const QImage before = tl->grab().toImage();
    const QPoint p(static_cast<int>(tl->xAt(at)), rr.center().y());
    send_mouse(tl, QEvent::MouseMove, p, Qt::NoButton, Qt::NoButton);
    QCOMPARE(tl->hoveredCounter(), busy);
    QVERIFY(!tl->hovered().valid());
    QVERIFY(tl->grab().toImage() != before);  // the readout box is drawn
    const auto fields = describe_counter(doc, busy, tl->timeAt(p.x()));
    auto field = [&](const char* k) {
      for (const auto& [key, v] : fields)
        if (key == k) return QString::fromStdString(v);
      return QString();
    };
    QVERIFY2(field("value").endsWith(" %"), qPrintable(field("value")));
    QVERIFY(field("value").left(field("value").size() - 2).toDouble() > 0);
    QVERIFY2(field("bin").startsWith(QString::fromStdString(format_duration(s.bin)) + " wide"), qPrintable(field("bin")));
    QCOMPARE(format_counter_value(12.346, "GB/s"), std::string("12.35 GB/s"));
    QCOMPARE(format_counter_value(310.26, "MB/s"), std::string("310.3 MB/s"));
    QVERIFY(describe_counter(doc, busy, s.end() + 1).empty());  // past the last bin: no value
    QEvent leave(QEvent::Leave);
    QApplication::sendEvent(tl, &leave);
    QCOMPARE(tl->hoveredCounter(), tt::trace::kNone);
  }

  void countersAreDrawn() {
    QTemporaryDir tmp;
    const QString path = tmp.filePath("counters.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QByteArray json = R"({"traceEvents": [{"name": "step", "ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 0, "dur": 5000})";
    for (int i = 0; i < 500; ++i)
      json += QByteArray(R"(, {"name": "memory", "ph": "C", "pid": 1, "tid": 1, "ts": )") + QByteArray::number(i * 10) +
              R"(, "args": {"allocated": )" + QByteArray::number((i * 37) % 1000) + "}}";
    json += "]}";
    f.write(json);
    f.close();
    auto w = open(path);
    QVERIFY(w);
    auto* tl = w->timeline();
    const auto& idx = tl->document()->index;
    const QImage img = tl->grab().toImage();
    int counters = 0;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
      if (idx.rows[r].table != Table::Counters) continue;
      ++counters;
      const QRect rr = tl->rowRect(r);
      QVERIFY(!rr.isEmpty());
      int n = 0;
      for (int y = rr.top(); y < rr.bottom(); ++y)
        for (int x = rr.left(); x < rr.right(); ++x) n += ink(img.pixel(x, y));
      QVERIFY(n > 100);
    }
    QCOMPARE(counters, 1);
  }

  void namesArePlainText() {
    // a Kineto trace whose event names look like markup
    QTemporaryDir tmp;
    const QString path = tmp.filePath("markup.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"traceEvents": [
      {"name": "<b>bold</b> &amp; <img src=x>", "ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
      {"name": "plain", "ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 200, "dur": 50}]})");
    f.close();
    auto w = open(path);
    QVERIFY(w);
    auto* tl = w->timeline();
    QVERIFY(tl->findNext("<b>", false));
    QVERIFY(w->detailsPane()->toPlainText().contains("<b>bold</b> &amp; <img src=x>"));
  }

  // The critical path (key C): drawn over the rows it runs on in its kinds' colours, gone again
  // when toggled off. ResNet: one window; its path runs through the data wait and GPU compute.
  void criticalPathIsDrawnWhenToggled() {
    auto w = open(kFindingsTrace);
    QVERIFY(w);
    QTRY_VERIFY_WITH_TIMEOUT(w->timeline()->document()->analysed(), 120000);  // a loaded machine's analysis
    auto* tl = w->timeline();
    // the analysis does not hold the pieces (no Python samples to attribute): the overlay
    // computes them when first shown
    const auto& paths = tl->document()->analysis().metrics.ranks.at(0).paths;
    QVERIFY(!paths.empty() && paths[0].pieces.empty());
    QVERIFY(!tl->pathPiecesReady());
    auto path_pixels = [&] {
      const QImage img = tl->grab().toImage();
      int n = 0;
      for (int y = 0; y < img.height(); ++y)
        for (int x = TimelineView::kLabelWidth; x < img.width(); ++x) {
          const QRgb p = img.pixel(x, y) | 0xff000000u;
          n += p == 0xffedc948u || p == 0xff4e79a7u || p == 0xff9c755fu;  // data wait, GPU compute, host compute
        }
      return n;
    };
    const int off = path_pixels();
    QTest::keyClick(tl, Qt::Key_C);
    QVERIFY(tl->criticalPathVisible());
    QTRY_VERIFY_WITH_TIMEOUT(tl->pathPiecesReady(), 120000);  // a bound on a hang, not a timing
    const auto& pieces = *tl->document()->path_pieces();
    QCOMPARE(pieces.size(), tl->document()->analysis().metrics.ranks.size());
    QVERIFY(pieces.at(0).size() == paths.size() && !pieces[0][0].empty());
    const int on = path_pixels();
    QVERIFY2(on > off + 200, qPrintable(QString("%1 path-coloured pixels with the path, %2 without").arg(on).arg(off)));
    QTest::keyClick(tl, Qt::Key_C);
    QVERIFY(!tl->criticalPathVisible());
    QCOMPARE(path_pixels(), off);
  }

  // Closing the view while the overlay's pieces are computed gives the computation up
  // (compute_path_pieces with its stop flag set): nothing incomplete is attached, and the
  // document computes them in full when asked again without it.
  void pathPiecesGivenUpAttachNothing() {
    auto loaded = load_document(kFindingsTrace.toStdString(), {});
    QVERIFY2(loaded.ok(), loaded.ok() ? "" : loaded.error().c_str());
    const Document& doc = *loaded.value();
    QVERIFY(doc.analysed() && !doc.path_pieces());
    std::atomic<bool> stop{true};
    compute_path_pieces(doc, &stop);
    QVERIFY(!doc.path_pieces());
    compute_path_pieces(doc);
    QVERIFY(doc.path_pieces() && !doc.path_pieces()->empty() && !doc.path_pieces()->at(0).empty());
  }

  // A trace DB opened as the window opens it (the timeline first, LoadOptions::analyze off)
  // comes without the columns the timeline does not draw; a thread reads them meanwhile. Asked
  // at once (the first question most likely while that read still runs: it waits for it), the
  // event details, the launch <-> GPU op links and the analysis are those of the DB read whole.
  void detailsReadAfterTheFirstFrameGiveTheWholeReadsAnswers() {
    QTemporaryDir tmp;
    const std::string db = tmp.filePath("t.db").toStdString();
    QVERIFY(write_db_of(kFindingsTrace, db));
    LoadOptions timeline_only;
    timeline_only.analyze = false;
    auto lazy = load_document(db, timeline_only);
    QVERIFY2(lazy.ok(), lazy.ok() ? "" : lazy.error().c_str());
    const Document& l = *lazy.value();
    const Fields first = describe_event(l, {Table::Kernels, 0});
    const EventRef first_link = correlated_event(l, {Table::ApiCalls, 0});
    auto whole = load_document(db, {});
    QVERIFY2(whole.ok(), whole.ok() ? "" : whole.error().c_str());
    const Document& w = *whole.value();
    QVERIFY(first == describe_event(w, {Table::Kernels, 0}));
    QVERIFY(std::find_if(first.begin(), first.end(), [](const auto& f) { return f.first == "correlation"; }) != first.end());
    QCOMPARE(first_link, correlated_event(w, {Table::ApiCalls, 0}));
    int links = 0;
    for (Table table : {Table::Kernels, Table::ApiCalls, Table::Ranges}) {
      const auto* c = span_columns(w.trace, table);
      QVERIFY(c->size() > 0);
      for (std::uint32_t i = 0; i < c->size(); i += std::max<std::uint32_t>(1, c->size() / 300)) {
        QVERIFY(describe_event(l, {table, i}) == describe_event(w, {table, i}));
        if (table == Table::Ranges) continue;
        QCOMPARE(correlated_event(l, {table, i}), correlated_event(w, {table, i}));
        links += correlated_event(w, {table, i}).valid();
      }
    }
    QVERIFY(links > 10);
    analyze_document(l);
    QVERIFY(l.analysed());
    expect_same_findings(l, w);
    if (QTest::currentTestFailed()) return;
    QCOMPARE(l.trace.event_bytes(), w.trace.event_bytes());  // the details narrowed as a whole read's
  }

  // The same, with the details' read held until every consumer has asked (each in a thread of
  // its own, as the window's loader and GUI threads ask): none answers before the read, each
  // then answers as the whole read does.
  void consumersAskingBeforeTheDetailsAreReadWaitForThem() {
    QTemporaryDir tmp;
    const std::string db = tmp.filePath("t.db").toStdString();
    QVERIFY(write_db_of(kFindingsTrace, db));
    auto whole = load_document(db, {});
    QVERIFY2(whole.ok(), whole.ok() ? "" : whole.error().c_str());
    const Document& w = *whole.value();

    auto doc = std::make_shared<Document>();  // as load_document makes it, the read held
    std::optional<tt::trace::PendingDetails> later;
    auto first = tt::trace::read_trace(db, {}, &later);
    QVERIFY2(first.ok(), first.ok() ? "" : first.error().c_str());
    QVERIFY(later.has_value());
    doc->path = db;
    doc->trace = std::move(first).value();
    doc->index = build_timeline_index(doc->trace);
    std::promise<void> go;
    doc->read_details_later(*later, 0, go.get_future().share());
    const Document& l = *doc;
    const EventRef kernel{Table::Kernels, 0}, range{Table::Ranges, 0};
    EventRef launch{Table::ApiCalls, 0};  // the first launch of a GPU op
    while (launch.row < w.trace.api_calls.size() && !correlated_event(w, launch).valid()) ++launch.row;
    QVERIFY(launch.row < w.trace.api_calls.size());
    auto info = std::async(std::launch::async, [&] { return describe_event(l, kernel); });
    auto range_info = std::async(std::launch::async, [&] { return describe_event(l, range); });
    auto link = std::async(std::launch::async, [&] { return correlated_event(l, launch); });
    auto analysed = std::async(std::launch::async, [&] { analyze_document(l); });
    // a failed check returns early: the read must still begin, or the askers (and the document)
    // would wait for it forever (destroyed before them, this lets it begin)
    const std::shared_ptr<void> let_go(nullptr, [&go](void*) {
      try { go.set_value(); } catch (const std::future_error&) {}  // already let go
    });
    // none may answer before the read has begun (a wrong answer would come at once)
    QCOMPARE(info.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout);
    QCOMPARE(range_info.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
    QCOMPARE(link.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
    QCOMPARE(analysed.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
    QVERIFY(!l.analysed());
    go.set_value();
    QVERIFY(info.get() == describe_event(w, kernel));
    QVERIFY(range_info.get() == describe_event(w, range));
    QCOMPARE(link.get(), correlated_event(w, launch));
    analysed.get();
    QVERIFY(l.analysed());
    expect_same_findings(l, w);
  }

  // A bad cell among the details: the first frame is shown, then the details' read gives the
  // whole read's error; the event details say it, and the analysis does not run on a half-read
  // trace.
  void aBadDetailIsTheDetailsErrorAndNotAnalysed() {
    QTemporaryDir tmp;
    const QString db = tmp.filePath("bad.db");
    QVERIFY(write_db_with_a_bad_detail(db));
    auto whole = load_document(db.toStdString(), {});
    QVERIFY(!whole.ok());
    QVERIFY2(QString::fromStdString(whole.error()).contains("corrupt trace"), whole.error().c_str());
    LoadOptions timeline_only;
    timeline_only.analyze = false;
    auto lazy = load_document(db.toStdString(), timeline_only);
    QVERIFY2(lazy.ok(), lazy.ok() ? "" : lazy.error().c_str());
    const Document& l = *lazy.value();
    QCOMPARE(l.wait_details().ok(), false);
    QCOMPARE(l.wait_details().error(), whole.error());
    const Fields f = describe_event(l, {Table::Kernels, 0});
    QVERIFY(std::find(f.begin(), f.end(), std::pair<std::string, std::string>("details", whole.error())) != f.end());
    analyze_document(l);
    QVERIFY(!l.analysed());
  }

  // The window opening that file: the timeline comes, then the error; the findings panel says
  // why there are no findings instead of "Analysing..." forever.
  void aWindowWhoseDetailsFailSaysNotAnalysed() {
    QTemporaryDir tmp;
    const QString db = tmp.filePath("bad.db");
    QVERIFY(write_db_with_a_bad_detail(db));
    MainWindow w;
    w.setErrorDialogs(false);
    w.show();
    QSignalSpy loaded(&w, &MainWindow::documentLoaded), failed(&w, &MainWindow::loadFailed);
    w.openFile(db);
    QVERIFY(loaded.count() == 1 || loaded.wait(30000));
    QVERIFY(failed.count() == 1 || failed.wait(30000));
    QVERIFY(!w.loading());
    QVERIFY(w.timeline()->document());  // the timeline stays
    const QString text = w.findingsPanel()->detailText();
    QVERIFY2(text.startsWith("Not analysed: ") && text.contains("corrupt trace"), qPrintable(text));
  }

  // Memory samples are bytes: their rows and readouts say MiB/GiB, not 2.4e+08.
  void memoryCountersReadInBytes() {
    QTemporaryDir tmp;
    const QString path = tmp.filePath("memory.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 20,
       "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1048576, "Total Allocated": 268435456, "Total Reserved": 536870912}},
      {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 60,
       "args": {"Device Type": 1, "Device Id": 0, "Bytes": -1048576, "Total Allocated": 267386880, "Total Reserved": 536870912}}]})");
    f.close();
    auto w = open(path);
    QVERIFY(w);
    const auto& d = *w->timeline()->document();
    std::uint32_t row = tt::trace::kNone;
    for (std::uint32_t r = 0; r < d.index.rows.size(); ++r)
      if (d.index.rows[r].label == "cuda:0 memory.allocated") row = r;
    QVERIFY(row != tt::trace::kNone);
    const auto fields = describe_counter(d, row, d.index.start + 30'000);
    bool bytes = false;
    for (const auto& [k, v] : fields) bytes = bytes || (k == "value" && v == "256.0 MiB");
    QVERIFY2(bytes, fields.empty() ? "no fields" : fields.back().second.c_str());
  }

  // A name of a million characters: drawn, shown in the details pane and found, but cut to a
  // display length everywhere (it once took 50 s and 2.2 GB to draw a 100 MB name).
  void hugeNamesAreElidedForDisplay() {
    QTemporaryDir tmp;
    const QString path = tmp.filePath("huge-name.json");
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    const QByteArray huge = "huge_" + QByteArray(1'000'000, 'x');
    f.write(R"({"traceEvents": [{"name": ")" + huge + R"(", "ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10,
      "dur": 100}, {"name": "plain", "ph": "X", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 200, "dur": 50}]})");
    f.close();
    auto w = open(path);
    QVERIFY(w);
    QVERIFY(w->timeline()->findNext("huge_", false));  // search sees the full name
    const QString details = w->detailsPane()->toPlainText();
    QVERIFY2(details.contains("huge_xxx") && details.contains(QChar(0x2026)), qPrintable(details.left(200)));
    QVERIFY2(details.size() < 10'000, qPrintable(QString::number(details.size())));
    QVERIFY(!w->grab().toImage().isNull());
    QCOMPARE(tt::gui::display_text(std::string(3000, 'a')).size(), qsizetype(tt::gui::kDisplayBytes + 1));
    QCOMPARE(tt::gui::display_text("\xc3\xa9\xc3\xa9", 3), QString::fromUtf8("\xc3\xa9\xe2\x80\xa6"));  // "é…": never half a character
  }

  // Screenshots of real traces: every row (and collapsed group) in view has ink in its band.
  void screenshotsHaveEveryVisibleRowDrawn_data() {
    QTest::addColumn<QString>("path");
    QTest::newRow("gpu kineto") << kGpuTrace;
    QTest::newRow("cpu only") << kData + "/kineto/hta/cpu_only_gloo.json.gz";
    QTest::newRow("8 ranks") << kData + "/kineto/param/dlrm_8rank";
    QTest::newRow("nsys export") << QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/nsys_small.sqlite");
    QTest::newRow("tracetune db") << QStringLiteral(TT_TEST_CORPUS_DIR "/sqlite/two_ranks.tracetune.db");
  }
  void screenshotsHaveEveryVisibleRowDrawn() {
    QFETCH(QString, path);
    auto w = open(path, {1600, 1000});
    QVERIFY(w);
    auto* tl = w->timeline();
    const QImage img = tl->grab().toImage();
    const auto& idx = tl->document()->index;
    int rows_seen = 0;
    for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
      const QRect rr = tl->rowRect(r);
      if (rr.isEmpty() || rr.bottom() >= img.height()) continue;
      int n = 0;
      for (int y = rr.top() + 1; y < rr.bottom(); ++y)
        for (int x = rr.left(); x < rr.right(); ++x) n += ink(img.pixel(x, y));
      QVERIFY2(n > 0, qPrintable(QString("row %1 (%2) is blank").arg(r).arg(QString::fromStdString(idx.rows[r].label))));
      ++rows_seen;
    }
    for (std::uint32_t g = 0; g < idx.groups.size(); ++g) {  // collapsed groups show a summary
      const QRect gr = tl->groupRect(g);
      if (!tl->groupCollapsed(g) || gr.isEmpty() || gr.bottom() >= img.height()) continue;
      int n = 0;
      for (int x = gr.left(); x < gr.right(); ++x) n += ink(img.pixel(x, gr.center().y()));
      QVERIFY2(n > 0, qPrintable(QString("group %1 (%2) is blank").arg(g).arg(QString::fromStdString(idx.groups[g].label))));
      ++rows_seen;
    }
    QVERIFY(rows_seen >= 3);
    // and the label column names them
    int label_ink = 0;
    for (int y = TimelineView::kRulerHeight; y < img.height(); y += 2)
      for (int x = 0; x < TimelineView::kLabelWidth; ++x) label_ink += qGray(img.pixel(x, y)) < 100;
    QVERIFY(label_ink > 100);
  }

  // The tuner's trials file (a real `tracetune tune` output on the DataLoader sample) in its
  // panel; bad files are refused with the reason and leave the panel as it was.
  void trialsPanelShowsTheTuner() {
    const QString good = QStringLiteral(TT_TEST_DATA_DIR) + "/tuner/dataloader.trials.json";
    TrialsModel m;
    QAbstractItemModelTester tester(&m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QString err;
    QVERIFY(m.load(good, &err));
    QCOMPARE(m.rowCount(), 8);
    QCOMPARE(m.columnCount(), int(TrialsModel::ColumnCount));
    QVERIFY(m.bestRow() >= 0);
    QCOMPARE(m.data(m.index(m.bestRow(), TrialsModel::Trial), Qt::UserRole).toDouble(), 5.0);
    QVERIFY(m.data(m.index(m.bestRow(), 0), Qt::FontRole).value<QFont>().bold());
    QCOMPARE(m.data(m.index(m.bestRow(), TrialsModel::Speedup)).toString(), QStringLiteral("4.30x"));
    QCOMPARE(m.data(m.index(0, TrialsModel::Settings)).toString(), QStringLiteral("baseline (the job as it is)"));
    QVERIFY(m.data(m.index(m.bestRow(), TrialsModel::Settings)).toString().contains("dataloader.num_workers=8"));
    QVERIFY(m.summary().contains("4.30x"));

    QTemporaryDir tmp;
    auto write = [&](const QString& name, const QByteArray& bytes) {
      QFile f(tmp.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) return QString();
      f.write(bytes);
      return f.fileName();
    };
    const struct { QString path; const char* why; } bad[] = {
        {tmp.filePath("missing.json"), "cannot open"},
        {write("garbage.json", "{not json"), "not JSON"},
        {write("other.json", R"({"schema": "tracetune.analysis", "version": 1})"), "not a tracetune trials file"},
        {write("v9.json", R"({"schema": "tracetune.trials", "version": 9, "trials": []})"), "version 9"},
        {write("empty.json", R"({"schema": "tracetune.trials", "version": 1, "trials": []})"), "no trials"},
    };
    for (const auto& b : bad) {
      QVERIFY(!m.load(b.path, &err));
      QVERIFY2(err.startsWith(b.path) && err.contains(b.why), qPrintable(err));
      QCOMPARE(m.rowCount(), 8);  // what was loaded stays
    }

    MainWindow w;
    w.setErrorDialogs(false);
    QVERIFY(w.loadTrials(good, &err));
    QCOMPARE(w.trialsModel()->rowCount(), 8);
    QVERIFY(w.statusText().contains("8 trials"));
  }

  // tuned.toml as `tracetune run --config` would apply it, read by the tuner's own loader: the
  // one `tracetune tune` wrote beside the trials file opens with it; refused files say why.
  void tunedConfigPanelShowsWhatRunWouldApply() {
    QTemporaryDir tmp;
    QVERIFY(write_tuner_output(tmp.path(), false));
    QCOMPARE(MainWindow::tunedConfigBeside(tmp.filePath("tuned.trials.json")), tmp.filePath("tuned.toml"));
    MainWindow w;
    w.setErrorDialogs(false);
    QString err;
    QVERIFY2(w.loadTrials(tmp.filePath("tuned.trials.json"), &err), qPrintable(err));
    TunedConfigModel* m = w.tunedConfigPanel()->model();
    QAbstractItemModelTester tester(m, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(m->path(), tmp.filePath("tuned.toml"));
    QVERIFY2(m->refusal().isEmpty(), qPrintable(m->refusal()));
    // the search kept 4 workers (the cost function's optimum): one python setting, numerics unchanged
    QCOMPARE(m->rowCount(), 1);
    QCOMPARE(m->columnCount(), int(TunedConfigModel::ColumnCount));
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Knob)).toString(), QStringLiteral("dataloader.num_workers"));
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Value)).toString(), QStringLiteral("4"));
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Applied)).toString(), QStringLiteral("python"));
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Numerics), Qt::UserRole).toBool(), false);
    QVERIFY(m->data(m->index(0, TunedConfigModel::Changes)).toString().contains("DataLoader worker processes"));
    QVERIFY(m->data(m->index(0, 0), Qt::ToolTipRole).toString().contains("0 loads batches in the training process"));
    // [meta] speedup and trials, parsed; the header's prose shown verbatim
    const QString summary = w.tunedConfigPanel()->summaryText();
    QVERIFY2(summary.contains("1 setting from") && summary.contains("speedup 4.00x") && summary.contains("trials"),
             qPrintable(summary));
    QVERIFY2(w.tunedConfigPanel()->commentsText().contains("Search speedup 4.000x (against the baseline beside trial"),
             qPrintable(w.tunedConfigPanel()->commentsText()));

    // a config with a numerics-changing value (written with --allow-numerics) is flagged
    QTemporaryDir tmp2;
    QVERIFY(write_tuner_output(tmp2.path(), true));
    QVERIFY(w.loadTunedConfig(tmp2.filePath("tuned.toml")));
    QCOMPARE(m->rowCount(), 1);
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Knob)).toString(), QStringLiteral("torch.tf32_matmul"));
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Numerics), Qt::UserRole).toBool(), true);
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Numerics)).toString(), QStringLiteral("changes numerics"));

    // environment knobs say which variable; [[nccl.table]] entries are rows of the tuner plugin's knob
    auto write = [&](const QString& name, const QByteArray& text, QFile::Permissions perms = QFile::ReadOwner | QFile::WriteOwner) {
      QFile f(tmp.filePath(name));
      if (!f.open(QIODevice::WriteOnly)) return QString();
      f.write(text);
      f.setPermissions(perms);
      return f.fileName();
    };
    const QString hand = write("hand.toml", "[settings]\n\"nccl.algo\" = [\"Ring\"]\n\n[[nccl.table]]\n"
                                            "collective = \"allreduce\"\nmin_bytes = 0\nmax_bytes = 65536\n"
                                            "algorithm = \"tree\"\nprotocol = \"ll\"\n");
    QVERIFY2(w.loadTunedConfig(hand), qPrintable(m->refusal()));
    QCOMPARE(m->rowCount(), 2);
    QCOMPARE(m->data(m->index(0, TunedConfigModel::Applied)).toString(), QStringLiteral("env NCCL_ALGO"));
    QCOMPARE(m->data(m->index(1, TunedConfigModel::Knob)).toString(), QStringLiteral("nccl.tuner_table"));
    QCOMPARE(m->data(m->index(1, TunedConfigModel::Value)).toString(), QStringLiteral("allreduce 0..65536 B: tree/ll"));
    QCOMPARE(m->data(m->index(1, TunedConfigModel::Applied)).toString(), QStringLiteral("nccl_tuner"));
    QVERIFY(w.tunedConfigPanel()->commentsText().isEmpty());  // no header: nothing made up

    // refused as `run --config` refuses them: one line naming the file, the panel empty
    const struct { QString path; const char* why; } bad[] = {
        {tmp.filePath("missing.toml"), "cannot open"},
        {write("env.toml", "[env]\nLD_PRELOAD = \"/tmp/x.so\"\n"), "raw environment variables are not accepted"},
        {write("unknown.toml", "[settings]\n\"dataloader.num_wrkers\" = 4\n"), "unknown knob"},
        {write("numerics.toml", "[settings]\n\"torch.tf32_matmul\" = true\n"), "changes numerics"},
        {write("garbage.toml", "[settings\n<b>x</b>"), "not valid TOML"},
        {write("shared.toml", "[settings]\n", QFile::ReadOwner | QFile::WriteOwner | QFile::WriteOther), "writable by others"},
    };
    // a private config in a directory anyone can write: applied, with the warning `run --config` prints
    QTemporaryDir open_dir;
    QVERIFY(QFile::setPermissions(open_dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner |
                                                       QFile::ReadOther | QFile::WriteOther | QFile::ExeOther));
    const QString in_open_dir = open_dir.filePath("tuned.toml");
    {
      QFile f(in_open_dir);
      QVERIFY(f.open(QIODevice::WriteOnly));
      f.write("[settings]\n\"dataloader.num_workers\" = 2\n");
      f.setPermissions(QFile::ReadOwner | QFile::WriteOwner);
    }
    QVERIFY2(w.loadTunedConfig(in_open_dir), qPrintable(m->refusal()));
    QCOMPARE(m->warnings().size(), 1);
    QVERIFY2(w.tunedConfigPanel()->summaryText().contains("Warning: " + in_open_dir) &&
                 w.tunedConfigPanel()->summaryText().contains("writable by others"),
             qPrintable(w.tunedConfigPanel()->summaryText()));

    for (const auto& b : bad) {
      QVERIFY(!w.loadTunedConfig(b.path));
      QCOMPARE(m->rowCount(), 0);
      QVERIFY2(m->refusal().startsWith(b.path) && m->refusal().contains(b.why) && !m->refusal().contains('\n'),
               qPrintable(m->refusal()));
      QVERIFY(w.tunedConfigPanel()->summaryText().startsWith("Refused: " + b.path));
    }
  }

  // The flame graph of a real recorded job: samples/cpu_bound under `tracetune record` (whose
  // default --trace samples Python stacks). Clicking the CPU-bound finding shows the samples its
  // attribution counted, whose hottest path ends in the planted hash_features(); hovering a
  // frame names it, clicking it zooms in and clicking the root zooms back out; clicking a step
  // bar shows that step's samples. A trace without samples says so.
  void flameGraphOfARecordedCpuBoundJob() {
    QTemporaryDir tmp;
    const QString db = tmp.filePath("cpu_bound.db");
    const QString python = qEnvironmentVariable("TT_TORCH_PYTHON", "/usr/bin/python3");
    QProcess rec;
    rec.setProcessChannelMode(QProcess::MergedChannels);
    rec.start(QStringLiteral(TT_CLI_EXE), {"record", "-o", db, "--", python,
                                           QStringLiteral(TT_SOURCE_DIR "/samples/cpu_bound/train.py"), "--steps", "12"});
    QVERIFY(rec.waitForFinished(300000));
    QVERIFY2(rec.exitCode() == 0, rec.readAll().right(3000).constData());
    auto w = open(db);
    QVERIFY(w);
    // with Python samples the analysis keeps the path pieces (its attribution reads them): the
    // C overlay has them at once, nothing is computed again
    QTRY_VERIFY_WITH_TIMEOUT(w->timeline()->document()->analysed(), 120000);
    QVERIFY(w->timeline()->pathPiecesReady());
    QDockWidget* dock = nullptr;
    for (auto* d : w->findChildren<QDockWidget*>())
      if (d->windowTitle() == "Flame graph") dock = d;
    QVERIFY(dock);
    dock->raise();
    QCoreApplication::processEvents();
    FlamePanel* flame = w->flamePanel();
    FlameView* view = flame->view();
    QVERIFY(view->isVisible() && view->width() > 100);

    // the CPU-bound finding: the same samples as its attribution
    FindingsModel* findings = w->findingsPanel()->model();
    int row = -1;
    for (int r = 0; r < findings->rowCount(); ++r)
      if (findings->finding(r)->category == tt::analyzer::Category::CpuBound) row = r;
    QVERIFY2(row >= 0, "no CPU-bound finding");
    const tt::analyzer::Finding* f = findings->finding(row);
    QVERIFY(f->hot.samples > 0);
    flame->choices()->setCurrentIndex(flame->choices()->count() - 1);
    QCOMPARE(flame->choices()->currentText(), QString("Whole trace"));
    const std::uint64_t all = view->graph().total();
    QVERIFY(all > f->hot.samples);
    w->findingsPanel()->activate(row);
    QVERIFY(flame->choices()->currentText().startsWith("Finding"));
    const FlameGraph& g = view->graph();
    QCOMPARE(g.total(), f->hot.samples);
    const auto hottest = g.hottest_path();
    const std::uint32_t top = hottest.back();
    QVERIFY2(view->label(top).startsWith("hash_features (cpu_bound/train.py:"), qPrintable(view->label(top)));
    // a frame is a (function, file, line): the function's lines together hold the samples the
    // finding's attribution gives the function. Not a share of the total: a sampler that takes the
    // GIL (sys._current_frames) lands at the first GIL release after its tick, so torch calls
    // right after the pure-Python loop take 25-50% of this job's samples (a bias of the method).
    std::uint64_t in_hash = 0;
    for (std::uint32_t c : g.nodes[hottest[hottest.size() - 2]].children)
      if (view->label(c).startsWith("hash_features (")) in_hash += g.nodes[c].samples;
    const auto hot = std::find_if(f->hot.top.begin(), f->hot.top.end(),
                                  [](const auto& h) { return h.function == "hash_features"; });
    QVERIFY2(hot != f->hot.top.end(), "hash_features is not among the finding's hot functions");
    QVERIFY2(in_hash == hot->samples, qPrintable(QString("%1 in the graph, %2 attributed").arg(in_hash).arg(hot->samples)));
    QVERIFY(view->label(hottest[1]).startsWith("<module> (cpu_bound/train.py:"));

    // hover and zoom, with real mouse events
    const QRectF r = view->nodeRect(top);
    QVERIFY(r.width() >= 1);
    QTest::mouseMove(view, r.center().toPoint());
    QCOMPARE(view->hovered(), top);
    const QString hover = view->hoverText(top);
    QVERIFY2(hover.startsWith("hash_features\n") && hover.contains("cpu_bound/train.py:") &&
                 hover.contains(QString("%1 samples, ").arg(g.nodes[top].samples)) && hover.contains("% of the selection"),
             qPrintable(hover));
    QTest::mouseClick(view, Qt::LeftButton, {}, r.center().toPoint());
    QCOMPARE(view->zoom(), top);
    QCOMPARE(view->nodeRect(top).width(), double(view->width()));
    QVERIFY(view->hoverText(top).contains("% of the selection"));
    QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(5, FlameView::kRowHeight / 2));
    QCOMPARE(view->zoom(), 0u);
    const QImage img = view->grab().toImage();
    QVERIFY(ink(img.pixel(view->nodeRect(top).center().toPoint())));

    // a step bar's click: that step's samples, on the rank's threads
    StepsChart* chart = w->stepsPanel()->chart();
    const auto& rank = w->document()->analysis().metrics.ranks.at(0);
    QVERIFY(rank.steps.size() >= 4);
    const int x = static_cast<int>(4 + 3.5 * double(chart->width() - 8) / double(rank.steps.size()));
    QCOMPARE(chart->stepAt(x), 3);
    QTest::mouseClick(chart, Qt::LeftButton, {}, QPoint(x, chart->height() / 2));
    QVERIFY2(flame->choices()->currentText().endsWith(QString(", step %1").arg(rank.steps[3].number)),
             qPrintable(flame->choices()->currentText()));
    QVERIFY(view->graph().total() > 0);
    QVERIFY(view->label(view->graph().hottest_path().back()).startsWith("hash_features "));

    // a trace without samples
    auto plain = open(kGpuTrace);
    QVERIFY(plain);
    QVERIFY(plain->flamePanel()->summaryText().contains("no Python stack samples"));
    QCOMPARE(plain->flamePanel()->view()->graph().total(), 0u);
  }

  void screenshotCommandLine() {
    QTemporaryDir tmp;
    const QString out = tmp.filePath("shot.png");
    QProcess p;
    p.start(QStringLiteral(TT_GUI_EXE), {"--screenshot", out, "--size", "900x600", "--range", "100:200", kGpuTrace});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QImage img(out);
    QCOMPARE(img.size(), QSize(900, 600));
    // a bad file: exit status 1 and one line on stderr
    p.start(QStringLiteral(TT_GUI_EXE), {"--screenshot", out, tmp.filePath("missing.json")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(p.readAllStandardError().contains("missing.json"));
    p.start(QStringLiteral(TT_GUI_EXE), {"--screenshot", out, "--range", "5:1", kGpuTrace});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    // --panel: that panel's tab, widened (so the picture changes); an unknown title lists the known ones
    const QString ranks = tmp.filePath("ranks.png");
    p.start(QStringLiteral(TT_GUI_EXE), {"--screenshot", ranks, "--size", "900x600", "--range", "100:200", "--panel", "ranks", kGpuTrace});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QCOMPARE(QImage(ranks).size(), img.size());
    QVERIFY(QImage(ranks) != img);
    p.start(QStringLiteral(TT_GUI_EXE), {"--screenshot", ranks, "--panel", "Nope", kGpuTrace});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    const QString err = QString::fromLocal8Bit(p.readAllStandardError());
    QVERIFY2(err.contains("--panel wants one of:") && err.contains("Ranks") && err.contains("Tuned config"), qPrintable(err));
  }
};

QTEST_MAIN(GuiTest)
#include "gui_test.moc"
