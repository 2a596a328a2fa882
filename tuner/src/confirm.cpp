// The confirmation: the search's choice against the baseline in interleaved pairs, sequential
// (pairs go on until the interval decides), steady state and end to end. See search.h.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tracetune/tuner/search.h"

namespace tt::tuner {

namespace {

// Regularized incomplete beta I_x(a, b) by its continued fraction (Lentz's method).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(b, a, 1 - x);
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) / a;
  constexpr double kTiny = 1e-300;
  double f = 1, c = 1, d = 0;
  for (int i = 0; i <= 400; ++i) {
    const int m = i / 2;
    double num;
    if (i == 0) num = 1;
    else if (i % 2 == 0) num = (m * (b - m) * x) / ((a + 2.0 * m - 1) * (a + 2.0 * m));
    else num = -((a + m) * (a + b + m) * x) / ((a + 2.0 * m) * (a + 2.0 * m + 1));
    d = 1 + num * d;
    d = 1 / (std::abs(d) < kTiny ? kTiny : d);
    c = 1 + num / (std::abs(c) < kTiny ? kTiny : c);
    const double cd = c * d;
    f *= cd;
    if (std::abs(1 - cd) < 1e-12) break;
  }
  return front * (f - 1);
}

// P(|T| <= t) for Student's t with df degrees of freedom.
double t_two_sided(double t, double df) { return 1 - incomplete_beta(df / 2, 0.5, df / (df + t * t)); }

}  // namespace

double t_quantile(double level, std::size_t df) {
  if (df == 0) return INFINITY;
  double lo = 0, hi = 1e6;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (t_two_sided(mid, static_cast<double>(df)) < level ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

SpeedupInterval speedup_interval(const std::vector<double>& ratios, double level) {
  SpeedupInterval s;
  if (ratios.empty()) return s;
  double sum = 0;
  for (double r : ratios) sum += std::log(r);
  const double n = static_cast<double>(ratios.size());
  const double mean = sum / n;
  s.mean = s.low = s.high = std::exp(mean);
  if (ratios.size() < 2) return s;
  double ss = 0;
  for (double r : ratios) ss += (std::log(r) - mean) * (std::log(r) - mean);
  const double half = t_quantile(level, ratios.size() - 1) * std::sqrt(ss / (n - 1)) / std::sqrt(n);
  s.low = std::exp(mean - half);
  s.high = std::exp(mean + half);
  s.defined = true;
  return s;
}

namespace {

// The mean of steps [from, from + n): the run's time per step over them, what its throughput is.
double mean_of(const std::vector<double>& ms, std::size_t from, std::size_t n) {
  double sum = 0;
  for (std::size_t i = from; i < from + n; ++i) sum += ms[i];
  return n > 0 ? sum / static_cast<double>(n) : 0;
}

// One pair's block differences: the runs' steps cut into blocks of max(4, ceil(sqrt(steps)))
// consecutive steps, at the same places in both runs; each block's log mean step time of the
// baseline less the choice's (batch means). Empty when a run has fewer than 3 blocks of steps
// (or a block of no time).
std::vector<double> block_differences(const StepStats& b, const StepStats& c) {
  const std::size_t n = std::min(b.step_ms.size(), c.step_ms.size());
  const auto len = static_cast<std::size_t>(std::max(4.0, std::ceil(std::sqrt(static_cast<double>(n)))));
  const std::size_t blocks = n / len;
  std::vector<double> d;
  if (blocks < 3 || n < kMinStepsPerRun) return d;
  for (std::size_t j = 0; j < blocks; ++j) {
    const double base = mean_of(b.step_ms, j * len, len), choice = mean_of(c.step_ms, j * len, len);
    if (base <= 0 || choice <= 0) return {};
    d.push_back(std::log(base / choice));
  }
  return d;
}

}  // namespace

double pair_ratio(const StepStats& b, const StepStats& c) {
  if (b.step_ms.empty() || c.step_ms.empty()) return c.median_ms > 0 ? b.median_ms / c.median_ms : 1;
  const double choice = mean_of(c.step_ms, 0, c.step_ms.size());
  return choice > 0 ? mean_of(b.step_ms, 0, b.step_ms.size()) / choice : 1;
}

StepInterval step_interval(const std::vector<std::pair<StepStats, StepStats>>& pairs, double level) {
  StepInterval out;
  std::vector<std::vector<double>> d;
  std::size_t total = 0;
  double sum = 0;
  for (const auto& [b, c] : pairs) {
    d.push_back(block_differences(b, c));
    if (d.back().empty()) return out;
    total += d.back().size();
    for (double x : d.back()) sum += x;
  }
  if (d.size() < 2) return out;
  const double grand = sum / static_cast<double>(total);
  double ss_within = 0, ss_between = 0, df_within = 0;
  for (const auto& blocks : d) {
    double mean = 0;
    for (double x : blocks) mean += x / static_cast<double>(blocks.size());
    for (double x : blocks) ss_within += (x - mean) * (x - mean);
    ss_between += static_cast<double>(blocks.size()) * (mean - grand) * (mean - grand);
    df_within += static_cast<double>(blocks.size() - 1);
  }
  if (ss_within <= 0) return out;  // identical blocks: nothing to say how the steps vary
  out.df = static_cast<double>(d.size() - 1);
  out.heterogeneity = (ss_between / out.df) / (ss_within / df_within);
  // the pairs differ more than their blocks do: the machine changed between runs, and only the
  // pairs' own spread (the t interval over pairs) says how much
  if (out.heterogeneity > 1) return out;
  const double sd = std::sqrt((ss_within + ss_between) / static_cast<double>(total - 1));
  const double half = t_quantile(level, total - 1) * sd / std::sqrt(static_cast<double>(total));
  out.interval = SpeedupInterval{std::exp(grand), std::exp(grand - half), std::exp(grand + half), true};
  return out;
}

std::vector<int> planned_looks(int min_pairs, int max_pairs) {
  std::vector<int> looks;
  min_pairs = std::max(2, min_pairs);
  for (int n : {min_pairs, 5, 8, 12, 20, 30, 50, 80, 120, 200, 300, 500, 800})
    if (n >= min_pairs && n < max_pairs && (looks.empty() || n > looks.back())) looks.push_back(n);
  if (max_pairs >= 1 && (looks.empty() || looks.back() != max_pairs)) looks.push_back(max_pairs);
  return looks;
}

namespace {

void set_intervals(Confirmation& c) {
  const StepInterval steps = step_interval(c.pair_steps, c.level);
  c.heterogeneity = steps.heterogeneity;
  c.from_steps = steps.interval.defined;
  const SpeedupInterval s = c.from_steps ? steps.interval : speedup_interval(c.ratios, c.level);
  c.speedup = s.mean;
  c.low = s.low;
  c.high = s.high;
  c.confirmed = s.defined && s.low > 1.0;
  const SpeedupInterval e = speedup_interval(c.e2e_ratios, c.level);
  c.e2e_speedup = e.mean;
  c.e2e_low = e.low;
  c.e2e_high = e.high;
  // what the user gets decides too: a choice that is slower end to end is not applied
  c.e2e_slower = e.defined && e.high < 1.0;
  if (c.e2e_slower) c.confirmed = false;
}

// One interleaved pair: baseline then choice on even pairs, choice then baseline on odd ones.
void run_pair(const Candidate& choice, TrialRunner& runner, SearchResult& r, const SearchOptions& opt, Confirmation& c,
              int total) {
  auto run_one = [&](const Candidate& cand, const char* role) {
    if (opt.on_start) opt.on_start(c.pairs_run * 2 + (role[0] == 'c' ? 1 : 0), 2 * total, std::string(role) + ": " + cand.label());
    Trial t = runner.run(cand);
    t.index = static_cast<int>(r.trials.size());
    t.knob = std::string("confirm:") + role;
    r.trials.push_back(t);
    if (opt.on_trial) opt.on_trial(r.trials.back());
    return t.index;
  };
  int b = -1, h = -1;
  if (c.pairs_run % 2 == 0) {
    b = run_one(Candidate{}, "baseline");
    h = run_one(choice, "choice");
  } else {
    h = run_one(choice, "choice");
    b = run_one(Candidate{}, "baseline");
  }
  ++c.pairs_run;
  const Trial& tb = r.trials[static_cast<std::size_t>(b)];
  const Trial& th = r.trials[static_cast<std::size_t>(h)];
  if (tb.status != TrialStatus::Ok || th.status != TrialStatus::Ok || th.stats.median_ms <= 0) return;
  c.ratios.push_back(pair_ratio(tb.stats, th.stats));
  c.pair_steps.emplace_back(tb.stats, th.stats);
  if (tb.e2e_s > 0 && th.e2e_s > 0 && tb.job_steps == th.job_steps) {
    c.e2e_ratios.push_back(tb.e2e_s / th.e2e_s);
    c.e2e_steps = tb.job_steps;
  }
  c.last_baseline = b;
  c.last_choice = h;
}

// The pairs the budget left can pay for, estimated before the first pair from the latest
// baseline run: its start-up (wall time less its steps at its median) plus `run_steps` steps
// (0: as many as it ran), twice per pair. Planning the looks on the pairs that can run keeps
// each look's level from being spent on looks that never happen (Bonferroni over looks at 3,
// 5, 8 and 10 pairs is 98.75% each, over looks at 3 and 4 pairs 97.5%); at least min_pairs.
int affordable_pairs(const SearchResult& r, int run_steps, const SearchOptions& opt, int max_pairs) {
  if (opt.budget_s <= 0 || r.trials.empty()) return max_pairs;
  const Trial* b = &r.trials.front();
  for (int i : r.baseline_runs)
    if (r.trials[static_cast<std::size_t>(i)].status == TrialStatus::Ok) b = &r.trials[static_cast<std::size_t>(i)];
  if (b->status != TrialStatus::Ok || b->wall_s <= 0 || b->stats.median_ms <= 0) return max_pairs;
  const double step_s = b->stats.median_ms / 1000;
  const double startup = std::max(0.0, b->wall_s - b->steps_run() * step_s);
  const double run = startup + (run_steps > 0 ? run_steps : b->steps_run()) * step_s;
  const int n = static_cast<int>((opt.budget_s - r.wall_s()) / (2 * run));
  return std::clamp(n, std::min(max_pairs, opt.confirm_min_pairs), max_pairs);
}

}  // namespace

std::string interval_source(const Confirmation& c) {
  if (c.ratios.size() < 2) return "confirmation: too few pairs for an interval";
  if (c.from_steps)
    return fmt::format("confirmation: steady-state interval from the blocks of steps within the {} pairs (the pairs differ no "
                       "more than their blocks: F {:.2f} <= 1)", c.ratios.size(), c.heterogeneity);
  return fmt::format("confirmation: steady-state interval over the {} pairs' ratios (t, {} degrees of freedom){}", c.ratios.size(),
                     c.ratios.size() - 1,
                     c.heterogeneity > 0 ? fmt::format(": the pairs differ more than their blocks of steps (F {:.2f} > 1)",
                                                       c.heterogeneity)
                                         : "");
}

Confirmation confirm(const Candidate& choice, int max_pairs, TrialRunner& runner, SearchResult& r, const SearchOptions& opt,
                     const std::function<bool()>& stop, int run_steps) {
  Confirmation c;
  c.pairs_planned = affordable_pairs(r, run_steps, opt, max_pairs);
  if (c.pairs_planned < max_pairs)
    r.log.push_back(fmt::format("confirmation: {} pairs planned, what the budget left ({:.0f} s) pays for (of --confirm {})",
                                c.pairs_planned, std::max(0.0, opt.budget_s - r.wall_s()), max_pairs));
  max_pairs = c.pairs_planned;
  const std::vector<int> looks = planned_looks(opt.confirm_min_pairs, max_pairs);
  c.looks_planned = static_cast<int>(looks.size());
  c.level = 1 - 0.05 / c.looks_planned;
  runner.set_run_steps(run_steps);
  std::size_t look = 0;
  while (c.pairs_run < max_pairs) {
    if (stop && stop()) {
      c.ended = "interrupted";
      break;
    }
    if (opt.budget_s > 0 && r.wall_s() >= opt.budget_s) {
      c.ended = fmt::format("the wall-time budget ({:.0f} s) was used", opt.budget_s);
      break;
    }
    run_pair(choice, runner, r, opt, c, max_pairs);
    if (look < looks.size() && c.pairs_run >= looks[look]) {
      ++look;
      set_intervals(c);
      if (c.ratios.size() >= 2 && (c.low > 1.0 || c.high < 1.0)) {
        c.ended = fmt::format("the interval excludes 1 after {} pairs", c.pairs_run);
        break;
      }
    }
  }
  runner.set_run_steps(0);
  if (c.ended.empty()) c.ended = fmt::format("the most pairs ({}) were run", max_pairs);
  set_intervals(c);
  const std::string level = fmt::format("{:.1f}%", 100 * c.level);
  const std::string e2e = c.e2e_ratios.size() >= 2
                              ? fmt::format("; end to end over {} steps {:.3f}x ({} interval {:.3f}x to {:.3f}x)", c.e2e_steps,
                                            c.e2e_speedup, level, c.e2e_low, c.e2e_high)
                              : "";
  if (c.heterogeneity > 0) r.log.push_back(interval_source(c));  // the blocks of steps were compared
  r.log.push_back(c.confirmed ? fmt::format("confirmed over {} interleaved pairs ({}): steady state {:.3f}x ({} interval {:.3f}x "
                                            "to {:.3f}x){}", c.ratios.size(), c.ended, c.speedup, level, c.low, c.high, e2e)
                              : fmt::format("no confirmed gain: {} measured {:.3f}x over {} interleaved pairs ({}; {} interval "
                                            "{:.3f}x to {:.3f}x{}){}; the job's own settings are kept",
                                            choice.label(), c.speedup, c.ratios.size(), c.ended, level, c.low, c.high,
                                            c.ratios.size() < 2 ? ", too few pairs for an interval"
                                            : c.high < 1.0 ? ", below 1.0: slower"
                                            : c.e2e_slower ? ", but slower end to end" : " includes 1.0", e2e));
  return c;
}

}  // namespace tt::tuner
