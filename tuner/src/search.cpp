// Coordinate descent over the knobs the findings name. See search.h for the contract.
#include "tracetune/tuner/search.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tt::tuner {

std::vector<KnobPlan> plan_search(const std::vector<FindingRef>& findings, const Catalogue& catalogue,
                                  bool allow_numerics, std::vector<std::string>* skipped) {
  std::vector<const FindingRef*> order;
  for (const auto& f : findings) order.push_back(&f);
  std::stable_sort(order.begin(), order.end(), [](const FindingRef* a, const FindingRef* b) { return a->gain_share > b->gain_share; });
  std::vector<KnobPlan> plan;
  auto note = [&](std::string line) {
    if (skipped != nullptr && std::find(skipped->begin(), skipped->end(), line) == skipped->end()) skipped->push_back(std::move(line));
  };
  for (const FindingRef* f : order) {
    for (const auto& id : f->knobs) {
      auto existing = std::find_if(plan.begin(), plan.end(), [&](const KnobPlan& p) { return p.knob->id == id; });
      if (existing != plan.end()) {
        if (std::find(existing->findings.begin(), existing->findings.end(), f->id) == existing->findings.end())
          existing->findings.push_back(f->id);
        continue;
      }
      const Knob* k = catalogue.find(id);
      if (k == nullptr) {
        note(fmt::format("{}: not in the knob catalogue", id));
        continue;
      }
      if (k->type == KnobType::Table) {
        note(fmt::format("{}: a table (from `tracetune bench nccl`), not searched by trials", id));
        continue;
      }
      KnobPlan p{k, {}, {f->id}};
      bool numerics_left_out = false;
      for (const auto& v : k->values) {
        if (!allow_numerics && !numerics_safe(*k, v)) {
          numerics_left_out = true;
          continue;
        }
        p.values.push_back(v);
      }
      if (numerics_left_out) note(fmt::format("{}: values that change numerics not tried (use --allow-numerics)", id));
      // A knob whose only candidates are the numerics-safe defaults has nothing to offer.
      if (p.values.size() < (numerics_left_out ? 2u : 1u)) {
        note(fmt::format("{}: nothing to try", id));
        continue;
      }
      plan.push_back(std::move(p));
    }
  }
  return plan;
}

bool significantly_faster(const StepStats& b, const StepStats& a, double min_gain) {
  if (a.steps == 0 || b.steps == 0) return false;
  const double diff = a.median_ms - b.median_ms;
  const double notch_a = 1.58 * a.iqr_ms() / std::sqrt(static_cast<double>(a.steps));
  const double notch_b = 1.58 * b.iqr_ms() / std::sqrt(static_cast<double>(b.steps));
  const double noise = std::sqrt(notch_a * notch_a + notch_b * notch_b);
  return diff > min_gain * a.median_ms && diff > noise;
}

int SearchResult::trial_steps() const {
  int n = 0;
  for (const auto& t : trials) n += t.steps_run();
  return n;
}

double SearchResult::wall_s() const {
  double s = 0;
  for (const auto& t : trials) s += t.wall_s;
  return s;
}

double SearchResult::speedup() const {
  if (trials.empty() || best_trial < 0 || best_trial >= static_cast<int>(trials.size())) return 1;
  const double base = trials.front().stats.median_ms, best = trials[best_trial].stats.median_ms;
  return trials.front().status == TrialStatus::Ok && best > 0 ? base / best : 1;
}

namespace {

bool is_ordered_numeric(const Knob& k) { return k.type == KnobType::Int || k.type == KnobType::Float; }

}  // namespace

SearchResult search(const std::vector<KnobPlan>& plan, TrialRunner& runner, const SearchOptions& opt,
                    const Trial* baseline, const std::function<bool()>& stop) {
  SearchResult r;
  int total = 1;
  for (const auto& p : plan) total += static_cast<int>(p.values.size());
  total = std::min(total, opt.max_trials);

  auto run_one = [&](const Candidate& c, const std::string& knob) {
    if (opt.on_start) opt.on_start(static_cast<int>(r.trials.size()), total, c.label());
    Trial t = runner.run(c);
    t.index = static_cast<int>(r.trials.size());
    t.knob = knob;
    r.trials.push_back(t);
    if (opt.on_trial) opt.on_trial(r.trials.back());
    return r.trials.back();
  };

  if (baseline != nullptr) {
    Trial b = *baseline;
    b.index = 0;
    b.knob.clear();
    b.candidate = {};
    r.trials.push_back(b);
    if (opt.on_trial) opt.on_trial(r.trials.back());
  } else {
    run_one(Candidate{}, "");
  }
  if (r.trials.front().status != TrialStatus::Ok) {
    r.log.push_back(fmt::format("the baseline run did not give a measurement ({}: {}); nothing to compare with",
                                to_string(r.trials.front().status), r.trials.front().note));
    r.stopped_early = true;
    return r;
  }

  // the wall time the confirmation is expected to take, kept free of the budget
  const double reserve = 2.0 * opt.confirm_pairs * r.trials.front().wall_s;
  auto out_of_time = [&] { return opt.budget_s > 0 && r.wall_s() + reserve >= opt.budget_s; };
  for (const auto& p : plan) {
    const Knob& k = *p.knob;
    int best_here = -1;  // trial index of this knob's best value, when it beat the best before it
    int misses = 0;
    const std::size_t first_trial = r.trials.size();
    for (const auto& v : p.values) {
      if (static_cast<int>(r.trials.size()) >= opt.max_trials || (stop && stop()) || out_of_time()) {
        r.stopped_early = true;
        r.log.push_back(fmt::format("stopped before {} = {}: {}", k.id, display(v),
                                    stop && stop() ? "interrupted"
                                    : out_of_time() ? fmt::format("wall-time budget ({:.0f} s, {:.0f} s of it kept for the "
                                                                  "confirmation) used", opt.budget_s, reserve)
                                                    : fmt::format("trial budget ({}) used", opt.max_trials)));
        break;
      }
      Candidate c = r.best;
      c.set(k.id, v);
      const Trial& best_so_far = r.trials[best_here >= 0 ? best_here : r.best_trial];
      runner.set_early_stop(opt.early_stop_factor > 0 ? opt.early_stop_factor * best_so_far.stats.median_ms : 0,
                            opt.early_stop_steps);
      const Trial& t = run_one(c, k.id);
      runner.set_early_stop(0, 0);
      const Trial& reference = r.trials[best_here >= 0 ? best_here : r.best_trial];
      if (t.status == TrialStatus::Ok && significantly_faster(t.stats, reference.stats, opt.min_gain)) {
        best_here = t.index;
        misses = 0;
      } else if (best_here >= 0 && t.status == TrialStatus::Ok &&
                 significantly_faster(reference.stats, t.stats, opt.min_gain)) {
        // Ordered knobs get worse past their best (oversubscription); stop walking up once
        // values are clearly slower than the best. A value within the noise of the best is
        // not a miss: on a noisy machine 1 and 2 workers can tie with 0 while 4 wins. Misses
        // before any value helped (failed or hung trials included) do not count either: a
        // crash at one value says nothing about the next.
        if (is_ordered_numeric(k) && ++misses >= opt.patience) {
          r.log.push_back(fmt::format("{}: stopped after {} values that did not improve", k.id, misses));
          break;
        }
      }
    }
    if (best_here >= 0) {
      const Trial& t = r.trials[best_here];
      KnobOutcome outcome{k.id, best_here, r.best_trial, r.trials[r.best_trial].stats.median_ms / t.stats.median_ms, 0, 0};
      for (std::size_t i = first_trial; i < r.trials.size(); ++i) {
        outcome.trial_steps += r.trials[i].steps_run();
        outcome.wall_s += r.trials[i].wall_s;
      }
      r.kept.push_back(outcome);
      r.best = t.candidate;
      r.best_trial = best_here;
      r.log.push_back(fmt::format("{} = {} kept: median {:.1f} ms, {:.2f}x the baseline", k.id,
                                  display(*t.candidate.find(k.id)), t.stats.median_ms, r.speedup()));
    } else {
      r.log.push_back(fmt::format("{}: no value beat the current best by more than the noise; left as the job sets it", k.id));
    }
    if (r.stopped_early) break;
  }
  return r;
}

namespace {

// Student's t, two-sided 95%, by degrees of freedom (1..30); 1.96 beyond.
double t975(std::size_t df) {
  static constexpr double kT[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                  2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  return df >= 1 && df <= 30 ? kT[df - 1] : 1.96;
}

}  // namespace

SpeedupInterval speedup_interval(const std::vector<double>& ratios) {
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
  const double half = t975(ratios.size() - 1) * std::sqrt(ss / (n - 1)) / std::sqrt(n);
  s.low = std::exp(mean - half);
  s.high = std::exp(mean + half);
  s.defined = true;
  return s;
}

Confirmation confirm(const Candidate& choice, int pairs, TrialRunner& runner, SearchResult& r, const SearchOptions& opt,
                     const std::function<bool()>& stop) {
  Confirmation c;
  auto run_one = [&](const Candidate& cand, const char* role) {
    if (opt.on_start) opt.on_start(c.pairs_run * 2 + (role[0] == 'c' ? 1 : 0), 2 * pairs, std::string(role) + ": " + cand.label());
    Trial t = runner.run(cand);
    t.index = static_cast<int>(r.trials.size());
    t.knob = std::string("confirm:") + role;
    r.trials.push_back(t);
    if (opt.on_trial) opt.on_trial(r.trials.back());
    return t.index;
  };
  for (int i = 0; i < pairs && !(stop && stop()); ++i) {
    if (opt.budget_s > 0 && r.wall_s() >= opt.budget_s) {
      r.log.push_back(fmt::format("confirmation stopped after {} pairs: wall-time budget ({:.0f} s) used", i, opt.budget_s));
      break;
    }
    int b = -1, h = -1;
    if (i % 2 == 0) {
      b = run_one(Candidate{}, "baseline");
      h = run_one(choice, "choice");
    } else {
      h = run_one(choice, "choice");
      b = run_one(Candidate{}, "baseline");
    }
    ++c.pairs_run;
    const Trial& tb = r.trials[b];
    const Trial& th = r.trials[h];
    if (tb.status != TrialStatus::Ok || th.status != TrialStatus::Ok || th.stats.median_ms <= 0) continue;
    c.ratios.push_back(tb.stats.median_ms / th.stats.median_ms);
    c.last_baseline = b;
    c.last_choice = h;
  }
  const SpeedupInterval s = speedup_interval(c.ratios);
  c.speedup = s.mean;
  c.low = s.low;
  c.high = s.high;
  c.confirmed = s.defined && s.low > 1.0;
  r.log.push_back(c.confirmed ? fmt::format("confirmed over {} interleaved pairs: {:.3f}x (95% interval {:.3f}x to {:.3f}x)",
                                            c.ratios.size(), c.speedup, c.low, c.high)
                              : fmt::format("no confirmed gain: {} measured {:.3f}x over {} interleaved pairs (95% interval "
                                            "{:.3f}x to {:.3f}x{}); the job's own settings are kept",
                                            choice.label(), c.speedup, c.ratios.size(), c.low, c.high,
                                            !s.defined ? ", too few pairs for an interval"
                                            : s.high < 1.0 ? ", below 1.0: slower" : " includes 1.0"));
  return c;
}

}  // namespace tt::tuner
