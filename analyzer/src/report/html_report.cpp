// `analyze --format html`: one self-contained page to share or attach to a ticket. No scripts and
// no network: the styles are inline and every chart is an SVG drawn here, so the file opens the
// same anywhere, offline, years later. Colours are fixed per series (the legend says which);
// tests/integration/html_report_test.py renders the page in headless Chromium and checks that
// each chart's colours reached the screen.
#include <algorithm>
#include <array>
#include <string_view>

#include <fmt/format.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/attribution.h"

#include "escape.h"
#include "format.h"

namespace tt::analyzer {
namespace {

// Names come from the traced job (kernel names of any length, anything in them): cut to a
// display length so that a 100 MB name cannot blow up the page, then escaped (escape.h).
constexpr std::size_t kNameChars = 120;
constexpr std::size_t kLabelChars = 36;  // chart labels: what fits left of the bars

std::string esc(std::string_view s, std::size_t max_bytes = kNameChars) {
  const std::string_view shown = utf8_prefix(s, max_bytes);
  return html_text(shown) + (shown.size() < s.size() ? "…" : "");
}

struct Series {
  const char* name;
  const char* color;  // #rrggbb, distinct per series: the screenshot test looks for them
};

// One palette for every chart.
constexpr Series kCompute{"compute", "#4e79a7"};
constexpr Series kCommOverlapped{"communication under compute", "#f28e2b"};
constexpr Series kCommExposed{"exposed communication", "#e15759"};
constexpr Series kMemoryOps{"copies and sets", "#76b7b2"};
constexpr Series kOtherBusy{"other GPU work", "#59a14f"};
constexpr Series kIdle{"GPU idle", "#bab0ac"};
constexpr Series kIdleData{"idle: data wait", "#edc948"};
constexpr Series kIdleSync{"idle: sync", "#b07aa1"};
constexpr Series kIdleLaunch{"idle: launch", "#ff9da7"};
constexpr Series kIdleOther{"idle: host late", "#d4a6c8"};
constexpr Series kDataWait{"data wait", "#edc948"};
constexpr Series kSyncWait{"sync", "#b07aa1"};
constexpr Series kIoMain{"main-thread I/O", "#86bcb6"};
constexpr Series kHostOther{"host compute", "#9c755f"};
constexpr Series kStepMedian{"median step", "#4e79a7"};
constexpr Series kSlowest{"slowest rank", "#e15759"};
constexpr Series kKernelBar{"kernel time", "#59a14f"};

constexpr std::array<Series, kPathKinds> kPathSeries{{
    {"host compute", "#9c755f"}, {"launch", "#ff9da7"}, {"GPU compute", "#4e79a7"}, {"copy", "#76b7b2"},
    {"communication", "#e15759"}, {"GPU wait", "#bab0ac"}, {"rank wait", "#f28e2b"}, {"data wait", "#edc948"},
    {"sync", "#b07aa1"},
}};

double nonneg(double v) { return v > 0 ? v : 0; }

// The largest sum of a bar's (non-negative) parts: the scale of a stacked chart.
double largest_total(const std::vector<std::vector<double>>& bars) {
  double top = 0;
  for (const auto& bar : bars) {
    double sum = 0;
    for (double v : bar) sum += nonneg(v);
    top = std::max(top, sum);
  }
  return top;
}

std::string legend(const std::vector<Series>& series) {
  std::string o = "<div class=legend>";
  for (const auto& s : series) o += fmt::format("<span><i style='background:{}'></i>{}</span>", s.color, s.name);
  return o + "</div>";
}

// Horizontal stacked bars, one row per label; values in ns, bars scaled to the largest total.
std::string hbars(const std::vector<std::string>& labels, const std::vector<std::vector<double>>& rows,
                  const std::vector<Series>& series) {
  constexpr int kLabelW = 260, kBarW = 640, kRowH = 22;
  const double top = largest_total(rows);
  const int h = static_cast<int>(rows.size()) * kRowH + 4;
  std::string o = fmt::format("<svg width={} height={} role=img>", kLabelW + kBarW + 90, h);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const int y = static_cast<int>(i) * kRowH + 2;
    o += fmt::format("<text x={} y={} text-anchor=end>{}</text>", kLabelW - 6, y + 15, esc(labels[i], kLabelChars));
    double x = kLabelW, sum = 0;
    for (std::size_t k = 0; k < rows[i].size() && k < series.size(); ++k) {
      const double w = top > 0 ? nonneg(rows[i][k]) / top * kBarW : 0;
      if (w >= 0.5) o += fmt::format("<rect x={:.1f} y={} width={:.1f} height={} fill='{}'/>", x, y, w, kRowH - 4,
                                     series[k].color);
      x += w;
      sum += nonneg(rows[i][k]);
    }
    o += fmt::format("<text x={:.1f} y={}>{}</text>", x + 4, y + 15, esc(dur(static_cast<Ns>(sum))));
  }
  return o + "</svg>" + legend(series);
}

// Vertical stacked bars, one column per step; at most kMaxSteps columns (evenly sampled).
std::string vbars(const std::vector<std::string>& labels, const std::vector<std::vector<double>>& cols,
                  const std::vector<Series>& series) {
  constexpr int kPlotW = 860, kPlotH = 220, kLeft = 70;
  const double top = largest_total(cols);
  constexpr double kMaxSlot = 48;  // a few steps: narrow bars, not one wall of colour
  const double slot =
      cols.empty() ? 0 : std::min(kMaxSlot, static_cast<double>(kPlotW) / static_cast<double>(cols.size()));
  std::string o = fmt::format("<svg width={} height={} role=img>", kLeft + kPlotW + 10, kPlotH + 40);
  o += fmt::format("<text x={} y=14 text-anchor=end>{}</text>", kLeft - 6, esc(dur(static_cast<Ns>(top))));
  o += fmt::format("<line x1={0} y1=4 x2={0} y2={1} stroke='#888'/>", kLeft, kPlotH + 4);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    const double x = kLeft + slot * static_cast<double>(i) + slot * 0.1;
    double y = kPlotH + 4;
    for (std::size_t k = 0; k < cols[i].size() && k < series.size(); ++k) {
      const double hgt = top > 0 ? nonneg(cols[i][k]) / top * kPlotH : 0;
      y -= hgt;
      if (hgt >= 0.5)
        o += fmt::format("<rect x={:.1f} y={:.1f} width={:.1f} height={:.1f} fill='{}'><title>{}: {}</title></rect>", x, y,
                         std::max(1.0, slot * 0.8), hgt, series[k].color, esc(labels[i], kLabelChars), series[k].name);
    }
  }
  if (!labels.empty()) {
    o += fmt::format("<text x={} y={}>{}</text>", kLeft, kPlotH + 22, esc(labels.front(), kLabelChars));
    const double right = kLeft + slot * static_cast<double>(cols.size());
    if (cols.size() > 1)
      o += fmt::format("<text x={:.1f} y={} text-anchor=end>{}</text>", right, kPlotH + 22, esc(labels.back(), kLabelChars));
  }
  return o + "</svg>" + legend(series);
}

std::vector<Series> step_series(bool gpu) {
  if (gpu) return {kCompute, kCommExposed, kOtherBusy, kIdleData, kIdleSync, kIdleLaunch, kIdleOther};
  return {kDataWait, kSyncWait, kIoMain, kHostOther};
}

std::vector<double> step_parts(const RankMetrics& r, const StepMetrics& s) {
  const auto d = [](Ns v) { return static_cast<double>(v); };
  if (r.has_gpu)
    return {d(s.compute), d(s.exposed_communication), nonneg(d(s.gpu_busy) - d(s.compute) - d(s.exposed_communication)),
            d(s.idle_data), d(s.idle_sync), d(s.idle_launch), d(s.idle_other)};
  return {d(s.data_wait), d(s.sync_wait), d(s.io_main),
          nonneg(d(s.wall()) - d(s.data_wait) - d(s.sync_wait) - d(s.io_main))};
}

std::string steps_chart(const RankMetrics& r) {
  constexpr std::size_t kMaxSteps = 200;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> cols;
  const std::size_t n = r.steps.size(), stride = n > kMaxSteps ? (n + kMaxSteps - 1) / kMaxSteps : 1;
  for (std::size_t i = 0; i < n; i += stride) {
    const auto& s = r.steps[i];
    labels.push_back(r.has_steps ? fmt::format("step {}", s.number) : std::string("whole trace"));
    cols.push_back(step_parts(r, s));
  }
  std::string note = stride > 1 ? fmt::format(" (every {}th of {} steps)", stride, n) : std::string();
  return fmt::format("<h3>{}{}</h3>", esc(r.label), note) + vbars(labels, cols, step_series(r.has_gpu));
}

// One chart per rank: the first rank and the slowest one shown, the others folded (a 64-rank job
// stays readable).
template <class Chart>
std::string per_rank_folded(const Analysis& a, Chart chart) {
  const Metrics& m = a.metrics;
  std::string shown, folded;
  for (std::size_t i = 0; i < m.ranks.size(); ++i) {
    const auto& r = whole_rank(a, i);
    const bool show = i == 0 || (m.ranks.size() > 1 && r.rank == m.cross.slowest_rank);
    (show ? shown : folded) += chart(r);
  }
  if (!folded.empty()) shown += "<details><summary>The other ranks</summary>" + folded + "</details>";
  return shown.empty() ? "<p>Nothing to chart.</p>" : shown;
}

// GPU time over the analysed window, by which classes ran at once (GpuBreakdown::exclusive).
std::string gpu_chart(const Metrics& m) {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> rows;
  for (const auto& r : m.ranks) {
    if (!r.has_gpu) continue;
    const auto e = [&](int i) { return static_cast<double>(r.gpu.exclusive[i]); };
    labels.push_back(r.label);
    rows.push_back({e(1) + e(5), e(3) + e(7), e(2) + e(6), e(4), e(0)});
  }
  if (rows.empty()) return "<p>No GPU activity in this trace.</p>";
  return hbars(labels, rows, {kCompute, kCommOverlapped, kCommExposed, kMemoryOps, kIdle});
}

std::string ranks_chart(const Metrics& m) {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> rows;
  for (const auto& r : m.ranks) {
    labels.push_back(r.label);
    const bool slowest = m.ranks.size() > 1 && r.rank == m.cross.slowest_rank;
    const double median = static_cast<double>(r.step_median);
    rows.push_back(slowest ? std::vector<double>{0, median} : std::vector<double>{median, 0});
  }
  std::string o = hbars(labels, rows, {kStepMedian, kSlowest});
  if (m.ranks.size() > 1)
    o += fmt::format("<p>Median step: fastest rank {}, median rank {}, slowest rank {} ({:+.1f}%).</p>",
                     esc(dur(m.cross.step_median_min)), esc(dur(m.cross.step_median_median)),
                     esc(dur(m.cross.step_median_max)), 100 * m.cross.step_spread);
  return o;
}

std::string kernels_chart(const RankMetrics& r) {
  std::vector<std::string> labels;
  std::vector<std::vector<double>> rows;
  for (const auto& k : r.top_kernels) {
    labels.push_back(k.name);
    rows.push_back({static_cast<double>(k.total)});
  }
  if (rows.empty()) return "";
  std::string o = fmt::format("<h3>{}: top kernels by total time</h3>", esc(r.label));
  o += hbars(labels, rows, {kKernelBar});
  o += "<table><tr><th>kernel</th><th>class</th><th>calls</th><th>total</th></tr>";
  for (const auto& k : r.top_kernels)
    o += fmt::format("<tr><td class=name>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", esc(k.name), esc(k.kernel_class),
                     k.count, esc(dur(k.total)));
  return o + "</table>";
}

// Time on the critical path by kind, summed over each rank's steps (or the job's, cross-rank).
std::string path_chart(const Analysis& a) {
  const Metrics& m = a.metrics;
  std::vector<std::string> labels;
  std::vector<std::vector<double>> rows;
  const auto add = [&](std::string label, const std::vector<StepPath>& paths) {
    if (paths.empty()) return;
    std::vector<double> row(kPathKinds, 0.0);
    for (const auto& p : paths)
      for (std::size_t k = 0; k < kPathKinds; ++k) row[k] += static_cast<double>(p.by_kind[k]);
    labels.push_back(std::move(label));
    rows.push_back(std::move(row));
  };
  if (!m.job_paths.empty()) add("job (cross-rank)", m.job_paths);
  for (std::size_t i = 0; i < m.ranks.size(); ++i) {
    const RankMetrics& r = whole_rank(a, i);
    add(r.label, r.paths);
  }
  if (rows.empty()) return "<p>No critical path: the trace has no steps or no events.</p>";
  return hbars(labels, rows, std::vector<Series>(kPathSeries.begin(), kPathSeries.end()));
}

std::string findings_section(const Analysis& a) {
  if (a.findings.empty()) return "<p>No rule passed its threshold.</p>";
  std::string o;
  for (const auto& g : group_findings(a.findings)) {
    const Finding& f = a.findings[g.worst];
    const std::string where = g.ranks.empty()      ? std::string("all ranks")
                              : g.ranks.size() > 1 ? "ranks " + rank_list(g.ranks)
                                                   : fmt::format("rank {}", f.rank);
    o += fmt::format("<div class='finding {}'><h3>{} <small>{} · {}</small></h3><p>{}</p><ul>", to_string(f.severity),
                     esc(to_string(f.category)), esc(to_string(f.severity)), esc(where), esc(f.title, 400));
    if (g.ranks.size() > 1)
      o += fmt::format("<li>Costs {} to {}{} across these ranks; details are rank {}'s.</li>",
                       esc(dur(g.cost_min)), esc(dur(g.cost_max)), gain_unit(a, f), f.rank);
    if (f.gain_estimated)
      o += fmt::format("<li>Estimated gain: {}{} ({:.0f}%), {}</li>", esc(dur(f.gain)), gain_unit(a, f), 100 * f.gain_share,
                       esc(f.gain_model, 400));
    else
      o += fmt::format("<li>Estimated gain: {}</li>", esc(f.gain_model, 400));
    for (const auto& e : f.evidence) o += fmt::format("<li>Evidence: {}</li>", esc(e.what, 400));
    if (f.hot.samples > 0)
      o += fmt::format("<li>Python: {} <small>({} samples of {})</small></li>", esc(hot_spots_line(f.hot, kTopHotFunctions), 600),
                       f.hot.samples, esc(f.hot.scope));
    o += fmt::format("<li>Fix: {}</li>", esc(f.detail, 600));
    if (!f.knobs.empty()) {
      std::string knobs;
      for (const auto& k : f.knobs) knobs += (knobs.empty() ? "" : ", ") + fmt::format("<code>{}</code>", esc(k));
      o += "<li>Knobs: " + knobs + "</li>";
    }
    o += "</ul></div>";
  }
  return o;
}

// The hang diagnosis (hang.h), as the text and JSON reports give it: the sentence, then each rank.
std::string hang_section(const Analysis& a) {
  if (!a.hang) return {};
  std::string o = fmt::format("<h2>Hang</h2><p>{}</p><table><tr><th>rank</th><th>state</th><th>communicator</th>"
                              "<th>collective</th><th>seq</th><th>bytes</th><th>last entered</th><th>last event</th></tr>",
                              esc(a.hang->summary, 1000));
  for (const auto& r : a.hang->ranks)
    o += fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td>#{}</td><td>{}</td><td>#{}</td>"
                     "<td class=name>{}</td></tr>",
                     r.rank >= 0 ? fmt::format("rank {}", r.rank) : fmt::format("pid {}", r.pid), esc(r.state),
                     esc(r.communicator), esc(r.op), r.seq, r.bytes >= 0 ? std::to_string(r.bytes) : std::string("unknown"),
                     r.last_seq, esc(r.last_event.empty() ? std::string("none") : r.last_event));
  return o + "</table>";
}

std::string notes_section(const Metrics& m) {
  std::string o;
  for (const auto& n : m.notes) o += fmt::format("<li>{}</li>", esc(n, 400));
  for (const auto& r : m.ranks)
    for (const auto& n : r.notes) o += fmt::format("<li>{}: {}</li>", esc(r.label), esc(n, 400));
  return o.empty() ? o : "<h2>Notes</h2><ul>" + o + "</ul>";
}

constexpr const char* kStyle =
    "body{font:14px/1.4 'DejaVu Sans',sans-serif;margin:24px;color:#222;max-width:1100px}"
    "h1{font-size:20px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:14px;margin:12px 0 4px}"
    "svg text{font-size:11px;fill:#333}.legend span{margin-right:14px;font-size:12px}"
    ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px}"
    ".finding{border-left:4px solid #bab0ac;padding:2px 12px;margin:10px 0;background:#fafafa}"
    ".finding.high{border-color:#e15759}.finding.medium{border-color:#f28e2b}"
    "table{border-collapse:collapse;font-size:12px}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}"
    "td.name{max-width:600px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}";

}  // namespace

std::string render_html(const Analysis& a) {
  const auto& m = a.metrics;
  std::size_t steps = 0;
  for (std::size_t i = 0; i < m.ranks.size(); ++i) steps += m.ranks[i].has_steps ? steps_of(a, i) : 0;
  std::string o = "<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>tracetune: " + esc(a.source) +
                  "</title><style>" + kStyle + "</style></head><body>";
  o += fmt::format("<h1>tracetune analysis: <code>{}</code></h1><p>{} rank(s), {} steps analysed, {} events, clock "
                   "<code>{}</code>{}.</p>",
                   esc(a.source), m.ranks.size(), steps, a.events, esc(a.clock_domain),
                   a.options.hta_compat ? ", HTA-compatible definitions" : "");
  o += hang_section(a);
  o += "<h2>Findings</h2>" + findings_section(a);
  o += "<h2>Step time, step by step</h2>" + per_rank_folded(a, steps_chart);
  o += "<h2>GPU time by what ran</h2>" + gpu_chart(m);
  o += "<h2>Critical path by kind</h2>" + path_chart(a);
  o += "<h2>Ranks compared</h2>" + ranks_chart(m);
  o += "<h2>Top kernels</h2>" + per_rank_folded(a, kernels_chart);
  o += notes_section(m);
  return o + "</body></html>\n";
}

}  // namespace tt::analyzer
