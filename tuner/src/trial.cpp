// One trial of the real job: candidate -> checked config -> apply plan -> one recorded launch
// with a step limit and a wall-clock limit -> step times from its trace.
#include "tracetune/tuner/trial.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "tracetune/collector/launcher.h"
#include "tracetune/trace/store.h"
#include "tracetune/tuner/apply.h"
#include "tracetune/tuner/tuned_config.h"

namespace tt::tuner {
namespace fs = std::filesystem;

const Value* Candidate::find(std::string_view id) const {
  for (const auto& [k, v] : settings)
    if (k == id) return &v;
  return nullptr;
}

void Candidate::set(const std::string& id, Value v) {
  for (auto& [k, old] : settings)
    if (k == id) {
      old = std::move(v);
      return;
    }
  settings.emplace_back(id, std::move(v));
}

std::string Candidate::label() const {
  if (settings.empty() && nccl_table.empty()) return "baseline";
  std::string s;
  for (const auto& [k, v] : settings) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, display(v));
  if (!nccl_table.empty()) s += fmt::format("{}nccl.table=[{} entries]", s.empty() ? "" : " ", nccl_table.size());
  return s;
}

std::string_view to_string(TrialStatus s) {
  switch (s) {
    case TrialStatus::Ok: return "ok";
    case TrialStatus::Failed: return "failed";
    case TrialStatus::TimedOut: return "timed_out";
    case TrialStatus::NoSteps: return "no_steps";
    case TrialStatus::Interrupted: return "interrupted";
    case TrialStatus::Refused: return "refused";
  }
  return "?";
}

namespace {

// Linear interpolation between closest ranks (numpy's default percentile).
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

std::string last_line_of(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 160) last = last.substr(0, 157) + "...";
  return last;
}

}  // namespace

StepStats stats_of(std::vector<double> ms) {
  StepStats s;
  s.step_ms = ms;
  if (ms.size() >= 4) {
    const auto half = static_cast<std::ptrdiff_t>(ms.size() / 2);
    std::vector<double> first(ms.begin(), ms.begin() + half), second(ms.end() - half, ms.end());
    std::sort(first.begin(), first.end());
    std::sort(second.begin(), second.end());
    std::vector<double> all = ms;
    std::sort(all.begin(), all.end());
    const double median = percentile(all, 0.5);
    if (median > 0) s.trend = (percentile(second, 0.5) - percentile(first, 0.5)) / median;
  }
  std::sort(ms.begin(), ms.end());
  s.steps = ms.size();
  s.median_ms = percentile(ms, 0.5);
  s.p10_ms = percentile(ms, 0.1);
  s.p25_ms = percentile(ms, 0.25);
  s.p75_ms = percentile(ms, 0.75);
  s.p90_ms = percentile(ms, 0.9);
  return s;
}

Result<StepStats> measure_steps(const trace::Trace& t, int warmup) {
  std::map<std::int64_t, trace::Ns> by_number;  // step number -> longest duration over processes
  std::int64_t total = 0;
  for (std::size_t i = 0; i < t.steps.size(); ++i) {
    ++total;
    if (t.steps.number[i] < warmup) continue;
    auto& d = by_number[t.steps.number[i]];
    d = std::max(d, t.steps.dur[i]);
  }
  if (by_number.empty())
    return make_error(total == 0 ? "no steps recorded (does the job iterate a DataLoader, or call tracetune.step()?)"
                                 : fmt::format("only warm-up steps recorded ({} steps, {} excluded)", total, warmup));
  std::vector<double> ms;
  for (const auto& [n, d] : by_number) ms.push_back(static_cast<double>(d) / 1e6);
  return stats_of(std::move(ms));
}

double job_seconds(const trace::Trace& t) {
  trace::Ns start = 0, end = 0;
  for (const auto& p : t.processes) {
    if (p.start > 0 && (start == 0 || p.start < start)) start = p.start;
    end = std::max(end, p.end);
  }
  for (std::size_t i = 0; i < t.steps.size(); ++i) end = std::max(end, t.steps.end(i));
  return start > 0 && end > start ? static_cast<double>(end - start) / 1e9 : 0;
}

std::vector<double> recorded_losses(const trace::Trace& t) {
  const trace::StringId name = t.strings.find("tracetune.loss");
  std::vector<std::pair<trace::Ns, double>> v;
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (t.counters.name[i] == name) v.emplace_back(t.counters.ts[i], t.counters.value[i]);
  std::sort(v.begin(), v.end());
  std::vector<double> out;
  for (const auto& [ts, x] : v) out.push_back(x);
  return out;
}

std::string loss_mismatch(const std::vector<double>& want, const std::vector<double>& got, double rtol) {
  if (want.empty() || got.empty()) return "no loss recorded (the job calls backward() on no scalar tensor)";
  const std::size_t n = std::min(want.size(), got.size());
  for (std::size_t i = 0; i < n; ++i) {
    const double rel = std::abs(got[i] - want[i]) / std::max(std::abs(want[i]), 1e-12);
    if (!(rel <= rtol))
      return fmt::format("loss at step {} is {:.6g}, the baseline's {:.6g} (relative difference {:.2g} > {:.2g})", i,
                         got[i], want[i], rel, rtol);
  }
  return "";
}

int steady_warmup(const Candidate& c, int warmup) {
  const Value* w = c.find("dataloader.num_workers");
  const auto* workers = w != nullptr ? std::get_if<std::int64_t>(w) : nullptr;
  if (workers == nullptr || *workers <= 0) return warmup;
  const Value* p = c.find("dataloader.prefetch_factor");
  const auto* prefetch = p != nullptr ? std::get_if<std::int64_t>(p) : nullptr;
  const std::int64_t queued = *workers * (prefetch != nullptr ? *prefetch : 2);
  return static_cast<int>(std::min<std::int64_t>(std::max<std::int64_t>(warmup, queued), 100000));
}

JobTrialRunner::JobTrialRunner(JobTrialOptions options, const Catalogue& catalogue)
    : opt_(std::move(options)), catalogue_(catalogue) {}

Trial JobTrialRunner::run(const Candidate& candidate) {
  Trial t;
  t.candidate = candidate;
  const fs::path dir = opt_.work_dir / fmt::format("trial-{:03d}", count_++);
  const auto t0 = std::chrono::steady_clock::now();
  auto finish = [&](TrialStatus s, std::string note) {
    t.status = s;
    t.note = std::move(note);
    t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return t;
  };
  if (::mkdir(dir.c_str(), 0700) != 0) return finish(TrialStatus::Failed, fmt::format("{}: cannot create", dir.string()));

  // The candidate goes through the same checks and apply code as `tracetune run --config`.
  const std::string text = candidate_toml(candidate, catalogue_);
  {
    std::ofstream(dir / "candidate.toml") << text;
  }
  auto cfg = parse_tuned_config(text, (dir / "candidate.toml").string(), catalogue_);
  if (!cfg) return finish(TrialStatus::Refused, cfg.error());
  const ApplyPlan plan = make_plan(cfg.value(), (dir / "candidate.toml").string());
  auto vars = write_plan_files(plan, dir);
  if (!vars) return finish(TrialStatus::Refused, vars.error());

  collector::RecordOptions rec;
  rec.command = opt_.command;
  rec.output = dir / "trace.db";
  rec.trace = opt_.trace;
  rec.record_env = false;
  rec.progress = false;
  rec.summary = false;
  rec.extra_env = vars.value();
  t.warmup = steady_warmup(candidate, opt_.warmup);
  const int total_steps = run_steps_ > 0 ? std::max(run_steps_, t.warmup + 1) : opt_.steps + t.warmup - opt_.warmup;
  rec.extra_env.emplace_back("TRACETUNE_MAX_STEPS", std::to_string(total_steps));
  if (opt_.compare_loss) rec.extra_env.emplace_back("TRACETUNE_RECORD_LOSS", "1");
  for (const auto& [id, v] : candidate.settings) rec.metadata.emplace_back("tuned." + id, display(v));
  if (early_stop_ms_ > 0 && early_stop_steps_ > 0)
    rec.extra_env.emplace_back("TRACETUNE_EARLY_STOP", fmt::format("{}:{}:{}", t.warmup, early_stop_steps_,
                                                                   static_cast<std::int64_t>(early_stop_ms_ * 1e6)));
  rec.timeout_s = opt_.timeout_s;
  rec.job_log = dir / "job.log";
  const auto launched = std::chrono::steady_clock::now();
  auto outcome = collector::record(rec);
  const double launch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - launched).count();
  if (!outcome) return finish(TrialStatus::Failed, outcome.error());
  t.exit_code = outcome->exit_code;
  if (outcome->interrupted) {
    interrupted_ = true;
    return finish(TrialStatus::Interrupted, "interrupted");
  }
  if (outcome->timed_out)
    return finish(TrialStatus::TimedOut, fmt::format("killed after {:.0f} s (per-trial limit)", opt_.timeout_s));
  if (outcome->exit_code != 0) {
    const std::string last = last_line_of(rec.job_log);
    return finish(TrialStatus::Failed, fmt::format("exit status {}{}", outcome->exit_code, last.empty() ? "" : ": " + last));
  }
  if (!outcome->trace_written) return finish(TrialStatus::Failed, "no trace: " + outcome->error);
  t.trace = rec.output;
  auto tr = trace::read_trace(rec.output);
  if (!tr) return finish(TrialStatus::Failed, tr.error());
  auto stats = measure_steps(tr.value(), t.warmup);
  if (!stats) return finish(TrialStatus::NoSteps, stats.error());
  t.stats = stats.value();
  t.e2e_s = job_seconds(tr.value());
  if (t.e2e_s <= 0) t.e2e_s = launch_s;
  t.job_steps = total_steps;
  if (opt_.compare_loss) {
    std::vector<double> losses = recorded_losses(tr.value());
    const bool substitutes = std::any_of(candidate.settings.begin(), candidate.settings.end(),
                                         [](const auto& s) { return s.first.starts_with("kernels."); });
    if (candidate.settings.empty() && baseline_losses_.empty()) baseline_losses_ = std::move(losses);
    else if (substitutes)
      if (auto why = loss_mismatch(baseline_losses_, losses, opt_.loss_rtol); !why.empty())
        return finish(TrialStatus::Refused, "loss parity: " + why);
  }
  const auto asked = static_cast<std::size_t>(opt_.steps - opt_.warmup);
  if (early_stop_ms_ > 0 && t.stats.steps < asked) {
    t.stopped_early = true;
    return finish(TrialStatus::Ok, fmt::format("stopped early after {} measured steps: median {:.1f} ms > {:.1f} ms",
                                               t.stats.steps, t.stats.median_ms, early_stop_ms_));
  }
  return finish(TrialStatus::Ok, "");
}

std::string candidate_toml(const Candidate& c, const Catalogue& cat) {
  std::string out = "# a tracetune tune trial candidate\n";
  bool numerics = false;
  for (const auto& [id, v] : c.settings) numerics |= changes_numerics(cat, id, v);
  if (numerics) out += "[meta]\nnumerics = true\n";
  out += "[settings]\n";
  for (const auto& [id, v] : c.settings) out += fmt::format("{} = {}\n", toml_string(id), value_toml(v));
  return out + nccl_table_toml(c.nccl_table);
}

}  // namespace tt::tuner
