// tuned.toml and the trials file. tuned.toml must always parse with parse_tuned_config (a
// unit test round-trips it), so values are written with the catalogue's own spelling.
#include "tracetune/trace/json_text.h"
#include "tracetune/tuner/tuned_config.h"
#include "tracetune/tuner/tuned_writer.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace tt::tuner {

namespace {

std::string json_value(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return trace::json_quote(*s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&v)) {
    std::string out = "[";
    for (std::size_t i = 0; i < list->size(); ++i) out += (i ? ", " : "") + trace::json_quote((*list)[i]);
    return out + "]";
  }
  return display(v);  // bool, int, double spell the same
}

std::string json_number(double x) { return std::isfinite(x) ? fmt::format("{:.4f}", x) : "null"; }

}  // namespace

const Candidate& TuneSummary::written() const {
  static const Candidate kNothing;
  return refused() ? kNothing : result.best;
}

double predicted_speedup(const TuneSummary& s, const std::vector<std::string>& knob_ids) {
  std::vector<std::string> addressed;
  for (const auto& id : knob_ids)
    for (const auto& p : s.plan)
      if (p.knob->id == id)
        for (const auto& f : p.findings)
          if (std::find(addressed.begin(), addressed.end(), f) == addressed.end()) addressed.push_back(f);
  double share = 0;
  for (const auto& f : s.findings)
    if (std::find(addressed.begin(), addressed.end(), f.id) != addressed.end())
      share = knob_ids.size() == 1 ? std::max(share, f.gain_share) : share + f.gain_share;
  // One knob: its largest finding, as the analyzer's replay gave it (already bounded by the
  // step's remaining work), capped only short of 1: a 0.9 cap under-predicted every I/O-bound
  // loader whose wait was 92-96% of the step (bench/calibration.md). Several knobs: their
  // findings' shares overlap, so their sum stays capped at 0.9.
  const double analyzer = 1.0 / (1.0 - std::clamp(share, 0.0, knob_ids.size() == 1 ? 0.99 : 0.9));
  Candidate chosen;  // the chosen values of these knobs: what the machine lets them reach
  for (const auto& id : knob_ids)
    if (const Value* v = s.result.best.find(id)) chosen.set(id, *v);
  if (chosen.settings.empty()) return analyzer;
  return std::min(analyzer, predict_candidate(chosen, s.plan, s.findings, s.machine));
}

namespace {

std::vector<std::string> chosen_ids(const Candidate& c) {
  std::vector<std::string> ids;
  for (const auto& [id, v] : c.settings) ids.push_back(id);
  return ids;
}

// Whether trial `t` of the search varied knob `id` (alone, or in its group).
bool varied(const Trial& t, const std::string& id) {
  return t.knob == id || (t.knob.starts_with("group:") && t.knob.find(id) != std::string::npos && t.candidate.find(id) != nullptr);
}

std::vector<std::string> findings_of(const TuneSummary& s, const std::string& id) {
  for (const auto& p : s.plan)
    if (p.knob->id == id) return p.findings;
  return {};
}

// The header lines saying what the confirmation found.
std::string confirmation_comment(const TuneSummary& s) {
  if (!s.confirmation) return "";
  const Confirmation& c = *s.confirmation;
  const std::string interval = fmt::format("{:.3f}x ({:.1f}% interval {:.3f}x to {:.3f}x) over {} interleaved baseline/choice pairs",
                                           c.speedup, 100 * c.level, c.low, c.high, c.ratios.size());
  std::string why = fmt::format("# Pairs ran until {} (sequential: {} looks, each at {:.1f}%, so 95% over all).\n", c.ended,
                                c.looks_planned, 100 * c.level);
  if (c.e2e_ratios.size() >= 2)
    why += fmt::format("# End to end (launch to the job's end, start-up included, {} steps each run): {:.3f}x ({:.1f}% "
                       "interval {:.3f}x to {:.3f}x).\n", c.e2e_steps, c.e2e_speedup, 100 * c.level, c.e2e_low, c.e2e_high);
  if (c.confirmed) return "# Confirmed steady-state speedup " + interval + ".\n" + why;
  if (c.e2e_slower)
    return fmt::format("# No confirmed gain: the search's choice ({}) measured {} in the steady state but is slower end\n"
                       "# to end, so it is not applied and no speedup is claimed.\n", s.result.best.label(), interval) + why;
  return fmt::format("# No confirmed gain: the search's choice ({}) measured {}; the interval {} 1.0, so it is not\n"
                     "# applied and no speedup is claimed.\n",
                     s.result.best.label(), interval, c.ratios.size() < 2 ? "is undefined (too few pairs), not above" : "is not above") + why;
}

}  // namespace

namespace {

// The comment at the top of tuned.toml: how to apply it, the baseline and the choice measured.
std::string tuned_header(const TuneSummary& s, bool measured) {
  const SearchResult& r = s.result;
  const Trial* base = r.trials.empty() ? nullptr : &r.trials.front();
  const Trial* best = r.trials.empty() ? nullptr : &r.trials[r.best_trial];
  std::string out;
  out += fmt::format("# tuned.toml written by tracetune {} (tracetune tune)\n", s.version);
  out += "# Apply with:  tracetune run --config tuned.toml -- " + s.command + "\n";
  if (measured) {
    out += fmt::format("# Baseline (the job as it is): median step {:.2f} ms, spread (p90-p10) {:.2f} ms, {} steps{}\n",
                       base->stats.median_ms, base->stats.spread_ms(), base->stats.steps,
                       r.baseline_runs.empty() ? "" : fmt::format(" (first run; run again {} times beside the candidates)",
                                                                  r.baseline_runs.size()));
    out += fmt::format("# Tuned (trial {}):             median step {:.2f} ms, spread (p90-p10) {:.2f} ms, {} steps\n",
                       best->index, best->stats.median_ms, best->stats.spread_ms(), best->stats.steps);
    out += fmt::format("# Search speedup {:.3f}x over {} trials of {} steps each ({} warm-up steps excluded, more for\n"
                       "# DataLoader workers: workers x prefetch_factor batches).\n",
                       r.speedup(), r.trials.size(), s.steps, s.warmup);
    out += confirmation_comment(s);
  } else {
    out += "# The baseline run gave no measurement: nothing could be compared, no setting is chosen.\n";
  }
  if (r.best.settings.empty() && r.best.nccl_table.empty() && measured)
    out += "# No candidate beat the baseline by more than the noise: the job's own settings are kept.\n";
  for (const auto& line : s.skipped) out += "# not searched: " + line + "\n";
  out += "# Every trial: the .trials.json file next to this one.\n\n";
  return out;
}

// [meta]'s lines on the confirmation runs.
std::string confirmation_toml(const Confirmation& c, const SearchResult& r) {
  std::string out;
  out += fmt::format("confirmed = {}\n", c.confirmed ? "true" : "false");
  if (!c.confirmed) out += "result = \"no confirmed gain\"\n";
  out += fmt::format("confirm_pairs = {}   # pairs used (sequential: until the interval excluded 1, or the most allowed)\n",
                     c.ratios.size());
  out += fmt::format("confirm_level = {:.4f}   # each look's confidence level ({} looks planned)\n", c.level, c.looks_planned);
  out += fmt::format("{}speedup_low = {:.4f}\n{}speedup_high = {:.4f}\n", c.confirmed ? "" : "choice_", c.low,
                     c.confirmed ? "" : "choice_", c.high);
  if (!c.confirmed) out += fmt::format("choice_speedup = {:.4f}\nchoice = {}\n", c.speedup, toml_string(r.best.label()));
  if (c.e2e_ratios.size() >= 2)
    out += fmt::format("e2e_speedup = {:.4f}   # end to end: launch to the job's end, start-up included\n"
                       "e2e_speedup_low = {:.4f}\ne2e_speedup_high = {:.4f}\ne2e_steps = {}\n",
                       c.e2e_speedup, c.e2e_low, c.e2e_high, c.e2e_steps);
  return out;
}

// [meta] and, per knob of the search's choice, what the analyzer predicted and what the search
// measured ([meta.knobs."<id>"]).
std::string meta_toml(const TuneSummary& s, const Catalogue& cat, bool measured) {
  const SearchResult& r = s.result;
  const Trial* best = r.trials.empty() ? nullptr : &r.trials[r.best_trial];
  const Candidate& written = s.written();
  bool numerics = false;
  for (const auto& [id, v] : written.settings) numerics |= changes_numerics(cat, id, v);
  std::vector<std::string> findings;
  for (const auto& f : s.findings) findings.push_back(toml_string(f.id));
  std::string out = "[meta]\n";
  out += fmt::format("tracetune = {}\n", toml_string(s.version));
  out += fmt::format("command = {}\n", toml_string(s.command));
  const bool claimed = measured && !written.settings.empty();
  const double speedup = !claimed ? 1.0 : s.confirmation ? s.confirmation->speedup : r.speedup();
  out += fmt::format("speedup = {:.4f}\n", speedup);
  if (s.confirmation) out += confirmation_toml(*s.confirmation, r);
  if (measured && !r.best.settings.empty()) {
    out += fmt::format("search_speedup = {:.4f}\n", r.speedup());
    out += fmt::format("predicted_speedup = {:.4f}   # the analyzer's what-if for the findings these knobs address{}\n",
                       predicted_speedup(s, chosen_ids(r.best)),
                       s.machine.cores > 0 ? fmt::format(", bounded by {} cores", s.machine.cores) : "");
  }
  if (measured) {
    out += fmt::format("baseline_ms = {:.4f}\n", r.local_baseline_ms(r.best_trial));
    out += fmt::format("tuned_ms = {:.4f}\n", best->stats.median_ms);
    out += fmt::format("tuned_spread_ms = {:.4f}\n", best->stats.spread_ms());
  }
  out += fmt::format("trials = {}\n", r.trials.size());
  out += fmt::format("trial_steps = {}   # steps run by every trial, warm-up included\n", r.trial_steps());
  out += fmt::format("trials_wall_s = {:.1f}\n", r.wall_s());
  out += fmt::format("findings = [{}]\n", fmt::join(findings, ", "));
  if (numerics) out += "numerics = true   # at least one setting below changes numerical results\n";
  for (const auto& k : r.kept) {
    out += fmt::format("\n[meta.knobs.{}]\n", toml_string(k.id));
    std::vector<std::string> fs;
    for (const auto& f : findings_of(s, k.id)) fs.push_back(toml_string(f));
    out += fmt::format("findings = [{}]\n", fmt::join(fs, ", "));
    out += fmt::format("predicted_speedup = {:.4f}\n", predicted_speedup(s, {k.id}));
    out += fmt::format("measured_speedup = {:.4f}   # trial {} vs trial {}\n", k.measured_speedup, k.trial, k.reference_trial);
    out += fmt::format("trial_steps = {}   # the cost of this choice: steps run by this knob's trials\n", k.trial_steps);
    if (s.refused()) out += "applied = false   # no confirmed gain\n";
  }
  return out;
}

// "# findings: ...; tried 4: 120.0 ms (1.10x), ...": the values the search tried for knob `id`.
std::string tried_comment(const TuneSummary& s, const KnobPlan& p, const std::string& id) {
  const SearchResult& r = s.result;
  std::string tried;
  for (const auto& t : r.trials)
    if (varied(t, id)) {
      const Value* tv = t.candidate.find(id);
      tried += fmt::format("{}{}: {}", tried.empty() ? "" : ", ", tv != nullptr ? display(*tv) : "unset",
                           t.status == TrialStatus::Ok ? fmt::format("{:.1f} ms ({:.2f}x)", t.stats.median_ms, r.speedup_of(t.index))
                                                       : std::string(to_string(t.status)));
    }
  return fmt::format("# findings: {}; tried {}\n", fmt::join(p.findings, ", "), tried);
}

// One setting of [settings], with the comments above it: what it changes, the findings behind
// it and the values tried, the trial that measured it, "CHANGES NUMERICS" where it does.
std::string setting_toml(const TuneSummary& s, const Catalogue& cat, const std::string& id, const Value& v,
                         bool measured) {
  const SearchResult& r = s.result;
  const Knob* k = cat.find(id);
  const KnobPlan* p = nullptr;
  for (const auto& kp : s.plan)
    if (kp.knob->id == id) p = &kp;
  // the trial that first kept this value: the first trial whose candidate had it
  const Trial* chosen = nullptr;
  for (const auto& t : r.trials)
    if (varied(t, id) && t.status == TrialStatus::Ok) {
      const Value* tv = t.candidate.find(id);
      if (tv != nullptr && *tv == v && (chosen == nullptr || t.stats.median_ms < chosen->stats.median_ms)) chosen = &t;
    }
  std::string out;
  if (k != nullptr) out += fmt::format("# {}\n", k->changes);
  if (p != nullptr) out += tried_comment(s, *p, id);
  if (chosen != nullptr && measured)
    out += fmt::format("# trial {}: median {:.2f} ms (spread {:.2f} ms), {:.3f}x the baseline\n", chosen->index,
                       chosen->stats.median_ms, chosen->stats.spread_ms(), r.speedup_of(chosen->index));
  if (changes_numerics(cat, id, v)) out += "# CHANGES NUMERICS: tried because --allow-numerics was given\n";
  out += fmt::format("{} = {}\n", toml_string(id), value_toml(v));
  return out;
}

}  // namespace

std::string tuned_toml(const TuneSummary& s, const Catalogue& cat) {
  const SearchResult& r = s.result;
  const Trial* base = r.trials.empty() ? nullptr : &r.trials.front();
  const bool measured = base != nullptr && base->status == TrialStatus::Ok;
  std::string out = tuned_header(s, measured) + meta_toml(s, cat, measured);
  out += "\n[settings]\n";
  for (const auto& [id, v] : s.written().settings) out += setting_toml(s, cat, id, v, measured);
  if (!r.best.nccl_table.empty()) {
    out += "\n# NCCL tuner table derived from the `bench nccl` sweep (fastest algorithm/protocol per size)\n";
    for (const auto& t : r.trials)
      if (t.knob == "nccl.table" && t.status == TrialStatus::Ok && measured)
        out += fmt::format("# trial {}: median {:.2f} ms, {:.3f}x the baseline\n", t.index, t.stats.median_ms,
                           r.speedup_of(t.index));
    out += nccl_table_toml(r.best.nccl_table);
  }
  return out;
}

std::string trials_json(const TuneSummary& s) {
  const SearchResult& r = s.result;
  std::string out = "{\n  \"schema\": \"tracetune.trials\",\n  \"version\": 1,\n";
  out += fmt::format("  \"command\": {},\n", trace::json_quote(s.command));
  out += fmt::format("  \"steps_per_trial\": {},\n  \"warmup_steps\": {},\n", s.steps, s.warmup);
  const bool measured = !r.trials.empty() && r.trials.front().status == TrialStatus::Ok;
  out += fmt::format("  \"baseline_ms\": {},\n", measured ? json_number(r.trials.front().stats.median_ms) : "null");
  out += fmt::format("  \"best_trial\": {},\n  \"speedup\": {},\n", r.best_trial, json_number(r.speedup()));
  out += fmt::format("  \"trial_steps\": {},\n  \"trials_wall_s\": {},\n", r.trial_steps(), json_number(r.wall_s()));
  std::vector<std::string> baselines;
  for (int b : r.baseline_runs) baselines.push_back(std::to_string(b));
  out += fmt::format("  \"baseline_runs\": [{}],\n", fmt::join(baselines, ", "));
  out += fmt::format("  \"predicted_speedup\": {},\n",
                     r.best.settings.empty() ? "null" : json_number(predicted_speedup(s, chosen_ids(r.best))));
  if (s.confirmation) {
    const Confirmation& c = *s.confirmation;
    std::vector<std::string> ratios;
    for (double x : c.ratios) ratios.push_back(json_number(x));
    std::vector<std::string> e2e;
    for (double x : c.e2e_ratios) e2e.push_back(json_number(x));
    out += fmt::format("  \"confirmation\": {{\"pairs\": {}, \"ratios\": [{}], \"speedup\": {}, \"low\": {}, \"high\": {}, "
                       "\"confirmed\": {}, \"level\": {}, \"looks_planned\": {}, \"ended\": {}, \"e2e_ratios\": [{}], "
                       "\"e2e_speedup\": {}, \"e2e_low\": {}, \"e2e_high\": {}, \"e2e_steps\": {}}},\n",
                       c.ratios.size(), fmt::join(ratios, ", "), json_number(c.speedup), json_number(c.low),
                       json_number(c.high), c.confirmed ? "true" : "false", json_number(c.level), c.looks_planned,
                       trace::json_quote(c.ended), fmt::join(e2e, ", "), json_number(c.e2e_speedup), json_number(c.e2e_low),
                       json_number(c.e2e_high), c.e2e_steps);
  } else {
    out += "  \"confirmation\": null,\n";
  }
  out += "  \"knobs\": [";
  for (std::size_t i = 0; i < r.kept.size(); ++i) {
    const auto& k = r.kept[i];
    std::vector<std::string> fs;
    for (const auto& f : findings_of(s, k.id)) fs.push_back(trace::json_quote(f));
    out += fmt::format("{}\n    {{\"id\": {}, \"findings\": [{}], \"predicted_speedup\": {}, \"measured_speedup\": {}, "
                       "\"trial\": {}, \"reference_trial\": {}, \"applied\": {}, \"trial_steps\": {}, \"wall_s\": {}}}",
                       i ? "," : "", trace::json_quote(k.id), fmt::join(fs, ", "), json_number(predicted_speedup(s, {k.id})),
                       json_number(k.measured_speedup), k.trial, k.reference_trial, s.refused() ? "false" : "true",
                       k.trial_steps, json_number(k.wall_s));
  }
  out += r.kept.empty() ? "],\n" : "\n  ],\n";
  std::vector<std::string> fs;
  for (const auto& f : s.findings) fs.push_back(trace::json_quote(f.id));
  out += fmt::format("  \"findings\": [{}],\n", fmt::join(fs, ", "));
  out += "  \"trials\": [";
  for (std::size_t i = 0; i < r.trials.size(); ++i) {
    const Trial& t = r.trials[i];
    std::string settings;
    for (const auto& [id, v] : t.candidate.settings)
      settings += fmt::format("{}{}: {}", settings.empty() ? "" : ", ", trace::json_quote(id), json_value(v));
    const bool ok = t.status == TrialStatus::Ok;
    auto num = [&](double x) { return ok ? json_number(x) : std::string("null"); };
    out += fmt::format(
        "{}\n    {{\"index\": {}, \"knob\": {}, \"settings\": {{{}}}, \"status\": \"{}\", \"median_ms\": {}, "
        "\"p10_ms\": {}, \"p25_ms\": {}, \"p75_ms\": {}, \"p90_ms\": {}, \"spread_ms\": {}, \"steps\": {}, "
        "\"warmup\": {}, \"steps_run\": {}, \"stopped_early\": {}, \"trend\": {}, \"trending\": {}, \"exit_code\": {}, "
        "\"wall_s\": {}, \"e2e_s\": {}, \"job_steps\": {}, \"vs_baseline\": {}, \"note\": {}}}",
        i ? "," : "", t.index, trace::json_quote(t.knob), settings, to_string(t.status), num(t.stats.median_ms),
        num(t.stats.p10_ms), num(t.stats.p25_ms), num(t.stats.p75_ms), num(t.stats.p90_ms), num(t.stats.spread_ms()),
        t.stats.steps, t.warmup, t.steps_run(), t.stopped_early ? "true" : "false", num(t.stats.trend), ok && t.stats.trending() ? "true" : "false", t.exit_code,
        json_number(t.wall_s), json_number(t.e2e_s), t.job_steps, ok ? json_number(r.speedup_of(t.index)) : "null",
        trace::json_quote(t.note));
  }
  out += "\n  ],\n  \"log\": [";
  for (std::size_t i = 0; i < r.log.size(); ++i) out += fmt::format("{}\n    {}", i ? "," : "", trace::json_quote(r.log[i]));
  out += "\n  ]\n}\n";
  return out;
}

}  // namespace tt::tuner
