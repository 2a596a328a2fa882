// The diff of two analyses: ranks paired, steps aligned by index after warm-up, the per-step
// breakdown, kernels and files matched by name, settings from the traces' metadata and the
// findings matched by (category, rank). Renderers are in diff_report.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "tracetune/analyzer/diff.h"


namespace tt::analyzer {

std::string_view to_string(KernelDelta::Status s) {
  switch (s) {
    case KernelDelta::Status::Matched: return "matched";
    case KernelDelta::Status::New: return "new";
    case KernelDelta::Status::Vanished: return "vanished";
  }
  return "?";
}

std::string_view to_string(FindingDelta::Status s) {
  switch (s) {
    case FindingDelta::Status::Resolved: return "resolved";
    case FindingDelta::Status::New: return "new";
    case FindingDelta::Status::Remaining: return "remaining";
  }
  return "?";
}

namespace {

double as_double(Ns v) { return static_cast<double>(v); }

// Rank pairs (base index, new index): by rank id when both traces have the same ids, else by
// position (e.g. rank 0 of one job against rank 1, or two single-rank recordings).
std::vector<std::pair<std::size_t, std::size_t>> pair_ranks(const Metrics& a, const Metrics& b,
                                                            std::vector<std::string>& notes) {
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  std::set<std::int32_t> ia, ib;
  for (const auto& r : a.ranks) ia.insert(r.rank);
  for (const auto& r : b.ranks) ib.insert(r.rank);
  if (ia == ib && ia.size() == a.ranks.size() && ib.size() == b.ranks.size()) {
    for (std::size_t i = 0; i < a.ranks.size(); ++i)
      for (std::size_t j = 0; j < b.ranks.size(); ++j)
        if (a.ranks[i].rank == b.ranks[j].rank) pairs.emplace_back(i, j);
    return pairs;
  }
  const std::size_t n = std::min(a.ranks.size(), b.ranks.size());
  for (std::size_t i = 0; i < n; ++i) pairs.emplace_back(i, i);
  if (n > 0)
    notes.push_back(fmt::format("ranks paired by position (the traces' rank ids differ): base rank {} with new rank {}{}",
                                a.ranks[0].rank, b.ranks[0].rank, n > 1 ? ", and so on" : ""));
  if (a.ranks.size() != b.ranks.size())
    notes.push_back(fmt::format("base has {} rank(s), new has {}: {} rank(s) not compared", a.ranks.size(),
                                b.ranks.size(), std::max(a.ranks.size(), b.ranks.size()) - n));
  return pairs;
}

std::size_t warmup_of(const RankMetrics& r, int warmup) {
  const auto w = static_cast<std::size_t>(std::max(warmup, 0));
  return r.has_steps && r.steps.size() > w ? w : 0;
}

// The per-step breakdown components, in report order, from one step's metrics.
struct ComponentDef {
  const char* name;
  bool gpu;
  Ns (*of)(const StepMetrics&);
};
constexpr ComponentDef kComponents[] = {
    {"compute", true, [](const StepMetrics& s) { return s.compute; }},
    {"communication exposed", true, [](const StepMetrics& s) { return s.exposed_communication; }},
    {"copies", true, [](const StepMetrics& s) { return s.memory; }},
    {"GPU idle: data wait", true, [](const StepMetrics& s) { return s.idle_data; }},
    {"GPU idle: sync", true, [](const StepMetrics& s) { return s.idle_sync; }},
    {"GPU idle: launch", true, [](const StepMetrics& s) { return s.idle_launch; }},
    {"GPU idle: other", true, [](const StepMetrics& s) { return s.idle_other; }},
    {"data wait", false, [](const StepMetrics& s) { return s.data_wait; }},
    {"syncs", false, [](const StepMetrics& s) { return s.sync_wait; }},
    {"host compute", false, [](const StepMetrics& s) { return std::max<Ns>(0, s.wall() - s.data_wait - s.sync_wait); }},
    {"main-thread I/O", false, [](const StepMetrics& s) { return s.io_main; }},
};

void align_steps(const RankMetrics& a, const RankMetrics& b, const DiffOptions& opt, RankDiff& d,
                 std::vector<std::string>& notes) {
  const int asked_b = opt.new_warmup >= 0 ? opt.new_warmup : opt.warmup;
  const std::size_t wa = warmup_of(a, opt.warmup), wb = warmup_of(b, asked_b);
  d.warmup = wa;
  d.new_warmup = wb;
  if (wa != wb && asked_b == opt.warmup)
    notes.push_back(fmt::format("{} vs {}: warm-up of {} step(s) left out of the base and {} of the new trace (too few "
                                "steps on one side)", a.label, b.label, wa, wb));
  const std::size_t n = std::min(a.steps.size() - wa, b.steps.size() - wb);
  if (a.steps.size() - wa != b.steps.size() - wb)
    notes.push_back(fmt::format("{} vs {}: {} and {} steps after warm-up; the first {} of each are aligned", a.label,
                                b.label, a.steps.size() - wa, b.steps.size() - wb, n));
  std::vector<Ns> wall_a, wall_b;
  std::vector<double> sum(std::size(kComponents) * 2, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const StepMetrics& sa = a.steps[wa + i];
    const StepMetrics& sb = b.steps[wb + i];
    d.steps.push_back({i, sa.number, sb.number, sa.start, sa.end, sb.start, sb.end});
    wall_a.push_back(sa.wall());
    wall_b.push_back(sb.wall());
    for (std::size_t c = 0; c < std::size(kComponents); ++c) {
      sum[2 * c] += as_double(kComponents[c].of(sa));
      sum[2 * c + 1] += as_double(kComponents[c].of(sb));
    }
  }
  if (n == 0) return;
  const double steps = static_cast<double>(n);
  d.step_median = {as_double(percentile(wall_a, 0.5)), as_double(percentile(wall_b, 0.5))};
  d.step_p90 = {as_double(percentile(wall_a, 0.9)), as_double(percentile(wall_b, 0.9))};
  double ta = 0, tb = 0;
  for (std::size_t i = 0; i < n; ++i) { ta += as_double(wall_a[i]); tb += as_double(wall_b[i]); }
  d.step_mean = {ta / steps, tb / steps};
  auto per_second = [](double ns) { return ns > 0 ? 1e9 / ns : 0.0; };
  d.throughput = {per_second(d.step_median.base), per_second(d.step_median.next)};
  for (std::size_t c = 0; c < std::size(kComponents); ++c) {
    if (kComponents[c].gpu && !d.has_gpu) continue;
    d.breakdown.push_back({kComponents[c].name, kComponents[c].gpu, {sum[2 * c] / steps, sum[2 * c + 1] / steps}});
  }
}

// Table order: the largest change first, then (unchanged rows) the largest time.
bool by_change_then_size(const Delta& x, const Delta& y) {
  const double cx = std::abs(x.change()), cy = std::abs(y.change());
  if (cx != cy) return cx > cy;
  return std::max(x.base, x.next) > std::max(y.base, y.next);
}

double per_step(const RankMetrics& r) { return static_cast<double>(std::max<std::size_t>(1, r.steps.size())); }

void match_kernels(const RankMetrics& a, const RankMetrics& b, RankDiff& d) {
  std::map<std::string, KernelDelta> by_name;
  const double na = per_step(a), nb = per_step(b);
  for (const auto& k : a.kernels) {
    auto& kd = by_name[k.name];
    kd.name = k.name;
    kd.kernel_class = k.kernel_class;
    kd.status = KernelDelta::Status::Vanished;
    kd.count.base = static_cast<double>(k.count) / na;
    kd.time.base = as_double(k.total) / na;
  }
  for (const auto& k : b.kernels) {
    auto [it, inserted] = by_name.try_emplace(k.name);
    auto& kd = it->second;
    kd.name = k.name;
    kd.kernel_class = k.kernel_class;
    kd.status = inserted ? KernelDelta::Status::New : KernelDelta::Status::Matched;
    kd.count.next = static_cast<double>(k.count) / nb;
    kd.time.next = as_double(k.total) / nb;
  }
  for (auto& [name, kd] : by_name) d.kernels.push_back(std::move(kd));
  std::stable_sort(d.kernels.begin(), d.kernels.end(), [](const KernelDelta& x, const KernelDelta& y) {
    return by_change_then_size(x.time, y.time);
  });
}

void match_files(const RankMetrics& a, const RankMetrics& b, RankDiff& d) {
  std::map<std::string, FileDelta> by_path;
  const double na = per_step(a), nb = per_step(b);
  auto add = [&](const RankMetrics& r, double n, bool next) {
    for (const auto& f : r.io.per_file) {
      auto& fd = by_path[f.path];
      fd.path = f.path;
      (next ? fd.calls.next : fd.calls.base) = static_cast<double>(f.calls) / n;
      (next ? fd.bytes_read.next : fd.bytes_read.base) = static_cast<double>(f.bytes_read) / n;
      (next ? fd.bytes_written.next : fd.bytes_written.base) = static_cast<double>(f.bytes_written) / n;
      (next ? fd.time.next : fd.time.base) = as_double(f.time) / n;
    }
  };
  add(a, na, false);
  add(b, nb, true);
  for (auto& [path, fd] : by_path) d.files.push_back(std::move(fd));
  std::stable_sort(d.files.begin(), d.files.end(), [](const FileDelta& x, const FileDelta& y) {
    return by_change_then_size(x.time, y.time);
  });
  d.io_time = {as_double(a.io.time) / na, as_double(b.io.time) / nb};
}

RankDiff diff_rank(const RankMetrics& a, const RankMetrics& b, const DiffOptions& opt, std::vector<std::string>& notes) {
  RankDiff d;
  d.base_rank = a.rank;
  d.new_rank = b.rank;
  d.base_label = a.label;
  d.new_label = b.label;
  d.has_gpu = a.has_gpu || b.has_gpu;
  d.base_steps = a.steps.size();
  d.new_steps = b.steps.size();
  if (a.has_steps != b.has_steps)
    notes.push_back(fmt::format("{} vs {}: only one side has step markers; its steps are compared with the other's "
                                "whole window", a.label, b.label));
  align_steps(a, b, opt, d, notes);
  match_kernels(a, b, d);
  match_files(a, b, d);
  return d;
}

// Settings from a trace's metadata: the rank's recorded environment (env.NAME), the command,
// the tuned settings a trial ran with (tuned.*), and importer keys ("<file>:<key>" -> <key>).
// Values that differ between any two recordings of the same job (paths of our own temporary
// files, the shell's bookkeeping, clock offsets) are left out.
std::map<std::string, std::string> settings_of(const trace::Trace& t, const RankMetrics* r) {
  static const std::set<std::string_view> kVolatileEnv = {"_", "OLDPWD", "SHLVL", "TRACETUNE_OUTPUT_DIR",
                                                          "TRACETUNE_APPLY", "TRACETUNE_NCCL_TABLE"};
  std::map<std::string, std::string> out;
  std::map<std::string, std::string> env_by_hash;
  std::string rank_env;
  const std::string rank_key = r != nullptr && r->process != trace::kNone
                                   ? fmt::format("process.{}.environment", r->process) : std::string();
  for (const auto& [k, v] : t.metadata) {
    if (k.starts_with("environment:")) env_by_hash.emplace(k.substr(12), v);
    else if (k == rank_key) rank_env = v;
  }
  const std::string* env = nullptr;
  if (auto it = env_by_hash.find(rank_env); it != env_by_hash.end()) env = &it->second;
  else if (!env_by_hash.empty()) env = &env_by_hash.begin()->second;
  if (env != nullptr)
    for (std::size_t pos = 0; pos < env->size();) {
      std::size_t nl = env->find('\n', pos);
      if (nl == std::string::npos) nl = env->size();
      const std::string_view line(env->data() + pos, nl - pos);
      pos = nl + 1;
      const auto eq = line.find('=');
      if (eq == std::string_view::npos || kVolatileEnv.contains(line.substr(0, eq))) continue;
      out["env." + std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
    }
  for (const auto& [k, v] : t.metadata) {
    if (k.starts_with("environment:") || k.starts_with("process.") || k.starts_with("clock_offset_ns:") ||
        k.starts_with("nccl_comm:"))
      continue;
    std::string key = k;
    if (const auto colon = k.rfind(':'); colon != std::string::npos) {
      const std::string_view file(k.data(), colon);
      if (file.find('/') != std::string_view::npos || file.find('.') != std::string_view::npos) key = k.substr(colon + 1);
    }
    if (key == "baseTimeNanoseconds" || key == "utcEpochNs") continue;  // when, not how
    auto [it, inserted] = out.try_emplace(key, v);
    if (!inserted && it->second != v && it->second.find(v) == std::string::npos) it->second += ", " + v;
  }
  return out;
}

std::vector<SettingDelta> diff_settings(const std::map<std::string, std::string>& a,
                                        const std::map<std::string, std::string>& b) {
  std::vector<SettingDelta> out;
  std::set<std::string> keys;
  for (const auto& [k, v] : a) keys.insert(k);
  for (const auto& [k, v] : b) keys.insert(k);
  for (const auto& k : keys) {
    const auto ia = a.find(k), ib = b.find(k);
    SettingDelta s{k, ia != a.end() ? ia->second : "", ib != b.end() ? ib->second : "", ia != a.end(), ib != b.end()};
    if (s.in_base != s.in_new || s.base != s.next) out.push_back(std::move(s));
  }
  return out;
}

std::vector<FindingDelta> diff_findings(const Analysis& a, const Analysis& b, const std::map<std::int32_t, std::int32_t>& rank_map) {
  std::vector<FindingDelta> out;
  std::vector<bool> used(b.findings.size(), false);
  for (const auto& f : a.findings) {
    const auto it = rank_map.find(f.rank);
    const std::int32_t rank = f.rank < 0 ? -1 : it != rank_map.end() ? it->second : INT32_MIN;
    bool found = false;
    for (std::size_t j = 0; j < b.findings.size() && !found; ++j)
      if (!used[j] && b.findings[j].category == f.category && b.findings[j].rank == rank) {
        used[j] = found = true;
        out.push_back({FindingDelta::Status::Remaining, f.category, rank, b.findings[j].title, f.gain, b.findings[j].gain});
      }
    if (!found) out.push_back({FindingDelta::Status::Resolved, f.category, f.rank, f.title, f.gain, 0});
  }
  for (std::size_t j = 0; j < b.findings.size(); ++j)
    if (!used[j]) {
      const auto& f = b.findings[j];
      out.push_back({FindingDelta::Status::New, f.category, f.rank, f.title, 0, f.gain});
    }
  return out;
}

std::string ms_text(double ns) { return fmt::format("{:.1f}", ns / 1e6); }

// "step time -38% (median 120.3 -> 74.6 ms, p90 ...), throughput +61%: data wait 70.8 -> 1.2 ms/step
// accounts for 92% of it"
std::string summarize(const RankDiff& d, bool has_steps) {
  if (d.steps.empty()) return "nothing to compare: no aligned steps";
  const char* what = has_steps ? "step time" : "time (one window: no step markers)";
  const double rel = d.step_median.relative();
  std::string s = std::abs(rel) < 0.005 ? fmt::format("{} unchanged", what) : fmt::format("{} {:+.0f}%", what, 100 * rel);
  s += fmt::format(" (median {} -> {} ms, p90 {} -> {} ms), throughput {:+.0f}%", ms_text(d.step_median.base),
                   ms_text(d.step_median.next), ms_text(d.step_p90.base), ms_text(d.step_p90.next),
                   100 * d.throughput.relative());
  const double total = d.step_mean.change();
  const ComponentDelta* top = nullptr;
  // A GPU rank's step is its GPU's busy and idle time (idle split by cause, data wait included);
  // a host-only rank's is data wait, syncs and host compute. Main-thread I/O overlaps both.
  for (const auto& c : d.breakdown)
    if (c.gpu == d.has_gpu && c.name != "main-thread I/O" && c.ns.change() * total > 0 &&
        (top == nullptr || std::abs(c.ns.change()) > std::abs(top->ns.change())))
      top = &c;
  if (top != nullptr && std::abs(rel) >= 0.005) {
    const double share = top->ns.change() / total;
    if (share <= 1.2)
      s += fmt::format(": {} {} -> {} ms/step accounts for {:.0f}% of it", top->name, ms_text(top->ns.base),
                       ms_text(top->ns.next), 100 * share);
    else  // components moved both ways; a share above 100% would read as nonsense
      s += fmt::format(": the largest change is {} {} -> {} ms/step, partly offset by others", top->name,
                       ms_text(top->ns.base), ms_text(top->ns.next));
  }
  return s;
}

}  // namespace

Diff diff(const trace::Trace& base_trace, const Analysis& base, const trace::Trace& new_trace, const Analysis& next,
          const DiffOptions& opt) {
  Diff d;
  d.base_source = base.source;
  d.new_source = next.source;
  d.options = opt;
  const auto pairs = pair_ranks(base.metrics, next.metrics, d.notes);
  std::map<std::int32_t, std::int32_t> rank_map;
  Ns slowest = -1;
  for (const auto& [i, j] : pairs) {
    const RankMetrics& a = base.metrics.ranks[i];
    const RankMetrics& b = next.metrics.ranks[j];
    rank_map[a.rank] = b.rank;
    if (a.step_median > slowest) {
      slowest = a.step_median;
      d.headline = d.ranks.size();
    }
    d.ranks.push_back(diff_rank(a, b, opt, d.notes));
  }
  const RankMetrics* ra = pairs.empty() ? nullptr : &base.metrics.ranks[pairs[d.headline].first];
  const RankMetrics* rb = pairs.empty() ? nullptr : &next.metrics.ranks[pairs[d.headline].second];
  d.settings = diff_settings(settings_of(base_trace, ra), settings_of(new_trace, rb));
  d.findings = diff_findings(base, next, rank_map);
  if (d.ranks.empty()) {
    d.summary = "nothing to compare: no rank in common";
  } else {
    d.summary = summarize(d.ranks[d.headline], ra->has_steps && rb->has_steps);
    if (d.ranks.size() > 1) d.summary += fmt::format(" ({} vs {}, the base's slowest)", ra->label, rb->label);
  }
  return d;
}

}  // namespace tt::analyzer
