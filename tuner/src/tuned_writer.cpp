// tuned.toml and the trials file. tuned.toml must always parse with parse_tuned_config (a
// unit test round-trips it), so values are written with the catalogue's own spelling.
#include "tracetune/trace/json_fields.h"
#include "tracetune/tuner/tuned_config.h"
#include "tracetune/tuner/tuned_writer.h"

#include <algorithm>

#include <fmt/format.h>

namespace tt::tuner {

namespace {

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
  if (c.from_steps) why += "# The steady-state interval is from the steps within the pairs (see docs/tuning.md).\n";
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
    // the speedup is against the baseline runs beside the best trial, not the first run above
    out += fmt::format("# Search speedup {:.3f}x (against the baseline beside trial {}: median {:.2f} ms) over {} trials\n"
                       "# of {} steps each ({} warm-up steps excluded, more for DataLoader workers: workers x\n"
                       "# prefetch_factor batches).\n",
                       r.speedup(), best->index, r.local_baseline_ms(best->index), r.trials.size(), s.steps, s.warmup);
    out += confirmation_comment(s);
  } else {
    out += "# The baseline run gave no measurement: nothing could be compared, no setting is chosen.\n";
  }
  if (r.best.settings.empty() && r.best.nccl_table.empty() && measured)
    out += "# No candidate beat the baseline by more than the noise: the job's own settings are kept.\n";
  for (const auto& line : s.added) out += "# added to the search: " + line + "\n";
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

namespace {

using trace::json::field;
using trace::json::Fixed;
using trace::json::Lines;

// Every number of the trials file: four decimals (null when not finite).
Fixed four(double x) { return {x, 4}; }
std::vector<Fixed> four_each(const std::vector<double>& xs) {
  std::vector<Fixed> out;
  for (double x : xs) out.push_back(four(x));
  return out;
}

constexpr auto kConfirmationFields = std::tuple(
    field("pairs", [](const Confirmation& c) { return c.ratios.size(); }),
    field("ratios", [](const Confirmation& c) { return four_each(c.ratios); }),
    field("speedup", [](const Confirmation& c) { return four(c.speedup); }),
    field("low", [](const Confirmation& c) { return four(c.low); }),
    field("high", [](const Confirmation& c) { return four(c.high); }), field("confirmed", &Confirmation::confirmed),
    field("level", [](const Confirmation& c) { return four(c.level); }),
    field("looks_planned", &Confirmation::looks_planned), field("ended", &Confirmation::ended),
    field("e2e_ratios", [](const Confirmation& c) { return four_each(c.e2e_ratios); }),
    field("e2e_speedup", [](const Confirmation& c) { return four(c.e2e_speedup); }),
    field("e2e_low", [](const Confirmation& c) { return four(c.e2e_low); }),
    field("e2e_high", [](const Confirmation& c) { return four(c.e2e_high); }),
    field("e2e_steps", &Confirmation::e2e_steps));

// A kept knob with the summary it is read against (its findings, its prediction, whether the
// confirmation refused the choice).
struct KeptRow {
  const TuneSummary& s;
  const KnobOutcome& k;
};
constexpr auto kKnobFields = std::tuple(
    field("id", [](const KeptRow& r) { return r.k.id; }),
    field("findings", [](const KeptRow& r) { return findings_of(r.s, r.k.id); }),
    field("predicted_speedup", [](const KeptRow& r) { return four(predicted_speedup(r.s, {r.k.id})); }),
    field("measured_speedup", [](const KeptRow& r) { return four(r.k.measured_speedup); }),
    field("trial", [](const KeptRow& r) { return r.k.trial; }),
    field("reference_trial", [](const KeptRow& r) { return r.k.reference_trial; }),
    field("applied", [](const KeptRow& r) { return !r.s.refused(); }),
    field("trial_steps", [](const KeptRow& r) { return r.k.trial_steps; }),
    field("wall_s", [](const KeptRow& r) { return four(r.k.wall_s); }));

// A trial with the search it belongs to (its speedup over the baselines beside it).
struct TrialRow {
  const SearchResult& r;
  const Trial& t;
  bool ok() const { return t.status == TrialStatus::Ok; }
  // a step statistic: null when the trial measured nothing
  std::optional<Fixed> measured(double x) const { return ok() ? std::optional(four(x)) : std::nullopt; }
};
std::vector<std::pair<std::string, trace::json::Raw>> settings_json(const TrialRow& row) {
  std::vector<std::pair<std::string, trace::json::Raw>> out;
  for (const auto& [id, v] : row.t.candidate.settings) out.emplace_back(id, trace::json::Raw{json_value(v)});
  return out;
}
constexpr auto kTrialFields = std::tuple(
    field("index", [](const TrialRow& r) { return r.t.index; }), field("knob", [](const TrialRow& r) { return r.t.knob; }),
    field("settings", settings_json), field("status", [](const TrialRow& r) { return to_string(r.t.status); }),
    field("median_ms", [](const TrialRow& r) { return r.measured(r.t.stats.median_ms); }),
    field("p10_ms", [](const TrialRow& r) { return r.measured(r.t.stats.p10_ms); }),
    field("p25_ms", [](const TrialRow& r) { return r.measured(r.t.stats.p25_ms); }),
    field("p75_ms", [](const TrialRow& r) { return r.measured(r.t.stats.p75_ms); }),
    field("p90_ms", [](const TrialRow& r) { return r.measured(r.t.stats.p90_ms); }),
    field("spread_ms", [](const TrialRow& r) { return r.measured(r.t.stats.spread_ms()); }),
    field("steps", [](const TrialRow& r) { return r.t.stats.steps; }),
    field("warmup", [](const TrialRow& r) { return r.t.warmup; }),
    field("steps_run", [](const TrialRow& r) { return r.t.steps_run(); }),
    field("stopped_early", [](const TrialRow& r) { return r.t.stopped_early; }),
    field("trend", [](const TrialRow& r) { return r.measured(r.t.stats.trend); }),
    field("trending", [](const TrialRow& r) { return r.ok() && r.t.stats.trending(); }),
    field("exit_code", [](const TrialRow& r) { return r.t.exit_code; }),
    field("wall_s", [](const TrialRow& r) { return four(r.t.wall_s); }),
    field("e2e_s", [](const TrialRow& r) { return four(r.t.e2e_s); }),
    field("job_steps", [](const TrialRow& r) { return r.t.job_steps; }),
    field("vs_baseline", [](const TrialRow& r) { return r.measured(r.r.speedup_of(r.t.index)); }),
    field("note", [](const TrialRow& r) { return r.t.note; }));

std::optional<Fixed> baseline_ms(const TuneSummary& s) {
  const auto& trials = s.result.trials;
  if (trials.empty() || trials.front().status != TrialStatus::Ok) return std::nullopt;
  return four(trials.front().stats.median_ms);
}
std::optional<Fixed> chosen_prediction(const TuneSummary& s) {
  if (s.result.best.settings.empty()) return std::nullopt;
  return four(predicted_speedup(s, chosen_ids(s.result.best)));
}
std::vector<KeptRow> kept_rows(const TuneSummary& s) {
  std::vector<KeptRow> rows;
  for (const auto& k : s.result.kept) rows.push_back({s, k});
  return rows;
}
std::vector<TrialRow> trial_rows(const TuneSummary& s) {
  std::vector<TrialRow> rows;
  for (const auto& t : s.result.trials) rows.push_back({s.result, t});
  return rows;
}
std::vector<std::string> finding_ids(const TuneSummary& s) {
  std::vector<std::string> ids;
  for (const auto& f : s.findings) ids.push_back(f.id);
  return ids;
}

// The trials file, tracetune.trials (docs/tuning.md)
constexpr auto kTrialsFields = std::tuple(
    field("schema", [](const TuneSummary&) { return std::string_view("tracetune.trials"); }),
    field("version", [](const TuneSummary&) { return 1; }), field("command", &TuneSummary::command),
    field("steps_per_trial", &TuneSummary::steps), field("warmup_steps", &TuneSummary::warmup),
    field("baseline_ms", baseline_ms), field("best_trial", [](const TuneSummary& s) { return s.result.best_trial; }),
    field("speedup", [](const TuneSummary& s) { return four(s.result.speedup()); }),
    field("trial_steps", [](const TuneSummary& s) { return s.result.trial_steps(); }),
    field("trials_wall_s", [](const TuneSummary& s) { return four(s.result.wall_s()); }),
    field("baseline_runs", [](const TuneSummary& s) -> const auto& { return s.result.baseline_runs; }),
    field("predicted_speedup", chosen_prediction),
    trace::json::object_or_null(
        "confirmation", [](const TuneSummary& s) { return s.confirmation ? &*s.confirmation : nullptr; },
        kConfirmationFields),
    trace::json::array("knobs", kept_rows, kKnobFields).one_per_line(), field("findings", finding_ids),
    trace::json::array("trials", trial_rows, kTrialFields).one_per_line(Lines::each_even_empty),
    field("log", [](const TuneSummary& s) -> const auto& { return s.result.log; }).one_per_line(Lines::each_even_empty));

}  // namespace

std::string trials_json(const TuneSummary& s) {
  return trace::json::document_json(s, kTrialsFields, trace::json::Style::indented);
}

std::vector<std::string> trials_json_fields() { return trace::json::document_paths(kTrialsFields); }

}  // namespace tt::tuner
