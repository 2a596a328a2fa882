// Coordinate descent over the knobs the findings name. See search.h for the contract.
#include "tracetune/tuner/search.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

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
      if (k->as_written) {  // applied as nothing: a trial of it measures only noise
        std::erase(p.values, *k->as_written);
        note(fmt::format("{} = {}: not tried: it leaves the job as written", id, display(*k->as_written)));
        if (p.values.empty()) continue;
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

namespace {

// The warm baseline runs that measured nearest a trial: the latest at or before it and the first
// after it (either null; `before` falls back to `after` when there is none before).
std::pair<const Trial*, const Trial*> neighbouring_baselines(const SearchResult& r, int index) {
  const Trial* before = nullptr;
  const Trial* after = nullptr;
  for (int b : r.baseline_runs) {
    const Trial& t = r.trials[static_cast<std::size_t>(b)];
    if (t.status != TrialStatus::Ok) continue;
    if (b <= index) before = &t;
    else if (after == nullptr) after = &t;
  }
  if (before == nullptr) before = after;
  return {before, after == before ? nullptr : after};
}

bool is_baseline_run(const SearchResult& r, int index) {
  return std::find(r.baseline_runs.begin(), r.baseline_runs.end(), index) != r.baseline_runs.end();
}

}  // namespace

double SearchResult::local_baseline_ms(int index) const {
  if (trials.empty()) return 0;
  if (is_baseline_run(*this, index)) return trials[static_cast<std::size_t>(index)].stats.median_ms;  // its own reference
  const auto [before, after] = neighbouring_baselines(*this, index);
  if (before == nullptr) return trials.front().status == TrialStatus::Ok ? trials.front().stats.median_ms : 0;
  if (after == nullptr) return before->stats.median_ms;
  return std::sqrt(before->stats.median_ms * after->stats.median_ms);
}

double SearchResult::local_drift(int index) const {
  if (trials.empty() || is_baseline_run(*this, index)) return 0;
  const auto [before, after] = neighbouring_baselines(*this, index);
  if (before == nullptr || after == nullptr || before->stats.median_ms <= 0 || after->stats.median_ms <= 0) return 0;
  return std::abs(std::log(after->stats.median_ms / before->stats.median_ms));
}

double SearchResult::speedup_of(int index) const {
  if (index < 0 || index >= static_cast<int>(trials.size())) return 1;
  const Trial& t = trials[static_cast<std::size_t>(index)];
  const double base = local_baseline_ms(index);
  return t.status == TrialStatus::Ok && base > 0 && t.stats.median_ms > 0 ? base / t.stats.median_ms : 1;
}

double SearchResult::speedup() const { return speedup_of(best_trial); }

namespace {

StepStats scaled(StepStats s, double k) {
  s.median_ms *= k;
  s.p10_ms *= k;
  s.p25_ms *= k;
  s.p75_ms *= k;
  s.p90_ms *= k;
  for (double& x : s.step_ms) x *= k;
  return s;
}

// The median the normalized statistics are expressed in: the first warm baseline run.
double reference_ms(const SearchResult& r) {
  for (int b : r.baseline_runs)
    if (r.trials[static_cast<std::size_t>(b)].status == TrialStatus::Ok) return r.trials[static_cast<std::size_t>(b)].stats.median_ms;
  return r.trials.empty() ? 0 : r.trials.front().stats.median_ms;
}

bool is_ordered_numeric(const Knob& k) { return k.type == KnobType::Int || k.type == KnobType::Float; }

}  // namespace

StepStats SearchResult::normalized(int index) const {
  const Trial& t = trials[static_cast<std::size_t>(index)];
  const double local = local_baseline_ms(index), ref = reference_ms(*this);
  return local > 0 && ref > 0 ? scaled(t.stats, ref / local) : t.stats;
}

// ---- the machine, groups and predictions ----

MachineLimits this_machine() {
  MachineLimits m;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) == 0) m.cores = std::max(1, CPU_COUNT(&set));
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib) {
    std::getline(in, unit);
    if (key == "MemAvailable:") m.memory_bytes = kib * 1024;
  }
  return m;
}

const Value* MachineLimits::job_value(std::string_view id) const {
  for (const auto& [knob, v] : job_values)
    if (knob == id) return &v;
  return nullptr;
}

namespace {

// Every value of `"key": ` in a json.dumps text (true, false or null), in order.
std::vector<std::string_view> json_values_of(std::string_view json, std::string_view key) {
  std::vector<std::string_view> out;
  const std::string quoted = "\"" + std::string(key) + "\": ";
  for (auto at = json.find(quoted); at != std::string_view::npos; at = json.find(quoted, at + 1)) {
    std::string_view rest = json.substr(at + quoted.size());
    out.push_back(rest.substr(0, rest.find_first_of(",}")));
  }
  return out;
}

}  // namespace

std::vector<std::pair<std::string, Value>> optimizer_job_values(std::string_view description, bool on_gpu) {
  std::vector<std::pair<std::string, Value>> out;
  for (const auto& [key, unset] : {std::pair{"foreach", on_gpu}, std::pair{"fused", false}}) {
    const auto values = json_values_of(description, key);
    if (values.empty() || std::adjacent_find(values.begin(), values.end(), std::not_equal_to<>()) != values.end()) continue;
    if (values.front() != "true" && values.front() != "false" && values.front() != "null") continue;
    out.emplace_back(std::string("optimizer.") + key, Value(values.front() == "null" ? unset : values.front() == "true"));
  }
  return out;
}

std::string SearchGroup::name() const {
  std::string s;
  for (const KnobPlan* k : knobs) s += (s.empty() ? "" : " x ") + k->knob->id;
  return s;
}

namespace {

std::int64_t int_setting(const Candidate& c, std::string_view id, std::int64_t unset) {
  const Value* v = c.find(id);
  const auto* i = v != nullptr ? std::get_if<std::int64_t>(v) : nullptr;
  return i != nullptr ? *i : unset;
}

// The summed gain share of the distinct findings these knobs address (capped at 0.9), as
// tuned_writer's predicted_speedup sums them.
double addressed_share(const Candidate& c, const std::vector<KnobPlan>& plan, const std::vector<FindingRef>& findings,
                       std::string_view only = {}) {
  std::vector<std::string> addressed;
  for (const auto& [id, v] : c.settings)
    for (const auto& p : plan)
      if (p.knob->id == id)
        for (const auto& f : p.findings)
          if ((only.empty() || f == only) && std::find(addressed.begin(), addressed.end(), f) == addressed.end())
            addressed.push_back(f);
  double share = 0;
  for (const auto& f : findings)
    if (std::find(addressed.begin(), addressed.end(), f.id) != addressed.end()) share += f.gain_share;
  return std::clamp(share, 0.0, 0.9);
}

// The job's own setting of an int knob (its trace's marks), `unknown` when the trace does not say.
std::int64_t job_int(const MachineLimits& m, std::string_view id, std::int64_t unknown) {
  const Value* own = m.job_value(id);
  const auto* i = own != nullptr ? std::get_if<std::int64_t>(own) : nullptr;
  return i != nullptr ? *i : unknown;
}

std::int64_t job_workers(const MachineLimits& m) { return job_int(m, "dataloader.num_workers", -1); }

// The job's own intra-op threads, 1 where its trace does not say (as before the marks had them).
std::int64_t job_threads(const MachineLimits& m) { return job_int(m, "torch.num_threads", 1); }

// persistent_workers = true, not beside num_workers = 0 (the job's own workers when unset).
bool sets_persistent_workers(const Candidate& c) {
  const Value* p = c.find("dataloader.persistent_workers");
  const bool on = p != nullptr && std::get_if<bool>(p) != nullptr && std::get<bool>(*p);
  return on && (c.find("dataloader.num_workers") == nullptr || int_setting(c, "dataloader.num_workers", 0) > 0);
}

}  // namespace

// The analyzer's gain shares as given, spread over the machine. Without DataLoader workers or
// threads in the candidate: 1 / (1 - the summed share of the findings its knobs address). With
// them, the data-loading share g of the step can move off the main thread only as far as the
// cores allow: with W workers and t intra-op threads (unset: 1) on N cores the step is at best
// max(1 - g, g / min(W, N)) of what it was, and W + t threads on N cores (one may wait for data)
// are slowed by (W + t) / (N + 1) when they exceed it. So 16 workers on 2 cores predict no more
// than 2 workers, and less: what a 2-core trace can support. prefetch_factor and persistent
// workers refine workers (without them they are predicted to change nothing), but for the
// saving at each epoch's start the trace shows when its loader forks workers every epoch
// (MachineLimits::persistent_workers_speedup), which keeping them alive predicts.
double predict_candidate(const Candidate& c, const std::vector<KnobPlan>& plan, const std::vector<FindingRef>& findings,
                         const MachineLimits& m) {
  const double all = addressed_share(c, plan, findings);
  const bool sets_cores = std::any_of(c.settings.begin(), c.settings.end(), [](const auto& kv) {
    return kv.first.starts_with("dataloader.") || kv.first == "torch.num_threads";
  });
  if (!sets_cores || m.cores <= 0) return 1.0 / (1.0 - all);
  const double g = addressed_share(c, plan, findings, "data_loading");
  const auto workers = int_setting(c, "dataloader.num_workers", 0);
  const auto threads = int_setting(c, "torch.num_threads", job_threads(m));
  const double n = std::max(1, m.cores);
  double f = 1;  // step time, share of the baseline's
  if (workers > 0) f = std::max(1 - g, g / std::min<double>(static_cast<double>(workers), n));
  f *= std::max(1.0, static_cast<double>(workers + threads) / (n + 1));
  const double other = std::max(0.0, all - g);  // findings the threads address beyond data loading
  if (c.find("torch.num_threads") != nullptr) f *= 1 - other * std::min(1.0, (static_cast<double>(threads) - 1) / n);
  const double bounded = std::min(1.0 / f, 1.0 / (1.0 - all));
  if (!sets_persistent_workers(c) || m.persistent_workers_speedup <= 1) return bounded;
  // the epoch starts' waits are measured, not estimated: their saving goes on top, and the whole
  // stays within the findings' share plus the saving's (at most 0.9 of the run)
  const double saving = 1 - 1 / m.persistent_workers_speedup;
  return std::min(bounded * m.persistent_workers_speedup, 1.0 / (1.0 - std::min(0.9, all + saving)));
}

std::string beyond_cores(const Candidate& c, int cores, std::int64_t unset_threads) {
  const auto workers = int_setting(c, "dataloader.num_workers", 0);
  const auto threads = std::max(int_setting(c, "torch.num_threads", unset_threads), int_setting(c, "cpu.omp_num_threads", 1));
  if (cores <= 0 || workers <= 0 || threads <= 1 || workers + threads <= cores) return "";
  return fmt::format("{} threads beside {} DataLoader workers are more than the {} cores", threads, workers, cores);
}

namespace {

// Why the machine rules a value out ("" when it does not).
std::string out_of_machine(const Knob& k, const Value& v, const MachineLimits& m) {
  const auto* i = std::get_if<std::int64_t>(&v);
  if (k.id == "dataloader.num_workers" && i != nullptr) {
    if (m.cores > 0 && *i > 2 * m.cores) return fmt::format("more than 2 x the {} cores", m.cores);
    if (m.memory_bytes > 0 && m.job_rss_bytes > 0 && static_cast<double>(*i + 1) * m.job_rss_bytes > m.memory_bytes)
      return fmt::format("{} copies of the job's {:.0f} MiB do not fit in {:.0f} MiB available", *i + 1,
                         m.job_rss_bytes / 1048576, m.memory_bytes / 1048576);
  }
  if ((k.id == "torch.num_threads" || k.id == "cpu.omp_num_threads") && i != nullptr && m.cores > 0 && *i > m.cores)
    return fmt::format("more than the {} cores", m.cores);
  const auto* b = std::get_if<bool>(&v);
  const bool cuda_only = k.id == "optimizer.fused" || k.id == "torch.tf32_matmul" || k.id == "torch.cudnn_tf32" ||
                         k.id == "torch.cudnn_benchmark" || k.id == "dataloader.pin_memory";
  if (cuda_only && b != nullptr && *b && m.cores > 0 && m.gpus == 0) return "acts on CUDA only, and the trace shows no GPU";
  const auto* s = std::get_if<std::string>(&v);
  if (k.id == "sdpa.backend" && s != nullptr && (*s == "efficient" || *s == "cudnn") && m.cores > 0 && m.gpus == 0)
    return "has no CPU kernel (not applied on the CPU), and the trace shows no GPU";
  return "";
}

// Which group a knob joins: its partner knobs (searched together), or none.
const std::vector<std::vector<std::string>>& interacting() {
  static const std::vector<std::vector<std::string>> kGroups = {
      {"dataloader.num_workers", "dataloader.prefetch_factor", "dataloader.persistent_workers", "torch.num_threads"},
      {"ddp.bucket_cap_mb", "ddp.comm_hook"}};
  return kGroups;
}

// Every assignment of the group's knobs (each knob unset or one of its values), but the empty one.
std::vector<Candidate> grid(const std::vector<const KnobPlan*>& knobs) {
  std::vector<Candidate> out{Candidate{}};
  for (const KnobPlan* k : knobs) {
    std::vector<Candidate> next;
    for (const Candidate& c : out) {
      next.push_back(c);
      for (const auto& v : k->values) {
        Candidate with = c;
        with.set(k->knob->id, v);
        next.push_back(std::move(with));
      }
    }
    out = std::move(next);
  }
  out.erase(out.begin());
  return out;
}

// A candidate PyTorch would refuse or ignore: prefetch_factor / persistent_workers without
// workers, set by the candidate or the job's own (when its trace shows them; else unknown).
bool pointless(const Candidate& c, const MachineLimits& m) {
  const bool loader_extras = c.find("dataloader.prefetch_factor") != nullptr || c.find("dataloader.persistent_workers") != nullptr;
  if (!loader_extras) return false;
  if (c.find("dataloader.num_workers") != nullptr) return int_setting(c, "dataloader.num_workers", 0) <= 0;
  return job_workers(m) == 0;
}

bool keeps_workers_alive(const Candidate& c) {
  const Value* p = c.find("dataloader.persistent_workers");
  return p != nullptr && std::get_if<bool>(p) != nullptr && std::get<bool>(*p) && int_setting(c, "dataloader.num_workers", 0) > 0;
}

// The order of a group's candidates: best predicted first. Among equal predictions (the trace
// cannot tell them apart), workers kept alive between epochs first (persistent workers do the
// same work per step and save the re-fork at each epoch's start, which a trace of the job
// without workers cannot show), then more workers (within the cores the prediction already
// bounds), then fewer settings, then grid order.
bool tried_before(const std::pair<Candidate, double>& a, const std::pair<Candidate, double>& b) {
  if (std::abs(a.second - b.second) > 1e-9) return a.second > b.second;
  if (keeps_workers_alive(a.first) != keeps_workers_alive(b.first)) return keeps_workers_alive(a.first);
  const auto wa = int_setting(a.first, "dataloader.num_workers", 0), wb = int_setting(b.first, "dataloader.num_workers", 0);
  if (wa != wb) return wa > wb;
  return a.first.settings.size() < b.first.settings.size();
}

SearchGroup make_group(std::vector<const KnobPlan*> knobs, const std::vector<KnobPlan>& plan,
                       const std::vector<FindingRef>& findings, const MachineLimits& m, bool predicted_order,
                       std::vector<std::string>* skipped) {
  SearchGroup g;
  g.knobs = std::move(knobs);
  std::vector<std::pair<Candidate, double>> scored;
  int oversubscribed = 0;
  for (Candidate& c : grid(g.knobs)) {
    if (pointless(c, m)) continue;
    if (!beyond_cores(c, m.cores, job_threads(m)).empty()) {
      ++oversubscribed;
      continue;
    }
    scored.emplace_back(c, predict_candidate(c, plan, findings, m));
  }
  if (oversubscribed > 0 && skipped != nullptr)
    skipped->push_back(fmt::format("{}: {} combinations not tried: intra-op threads beside DataLoader workers beyond the {} cores",
                                   g.name(), oversubscribed, m.cores));
  if (predicted_order) std::stable_sort(scored.begin(), scored.end(), tried_before);
  for (auto& [c, p] : scored) {
    g.candidates.push_back(std::move(c));
    g.predicted.push_back(p);
  }
  return g;
}

double best_prediction(const SearchGroup& g) {
  return g.predicted.empty() ? 0 : *std::max_element(g.predicted.begin(), g.predicted.end());
}

bool slow_to_try(const SearchGroup& g) {
  return std::any_of(g.knobs.begin(), g.knobs.end(), [](const KnobPlan* k) { return k->knob->slow_trial; });
}

// A group whose trials pay a one-off cost (Knob::slow_trial) moves behind the groups after it
// that are predicted at least as much: on the transformer sample a compile.mode trial took 24-60 s
// against 3-5 s for the others, and a 3-minute budget ended before optimizer.foreach.
void try_slow_trials_last(std::vector<SearchGroup>& groups) {
  for (std::size_t i = groups.size(); i-- > 0;) {
    if (!slow_to_try(groups[i])) continue;
    std::size_t j = i;
    while (j + 1 < groups.size() && !slow_to_try(groups[j + 1]) && best_prediction(groups[j + 1]) >= best_prediction(groups[j]) - 1e-9) {
      std::swap(groups[j], groups[j + 1]);
      ++j;
    }
  }
}

// Adds to the plan the catalogue knobs `ids` it lacks, each with `findings`; the ids added.
std::vector<std::string> add_partner_knobs(std::vector<KnobPlan>& plan, const Catalogue& cat,
                                           const std::vector<std::string>& findings, std::initializer_list<const char*> ids) {
  std::vector<std::string> out;
  for (const char* id : ids) {
    const Knob* k = cat.find(id);
    const bool planned = std::any_of(plan.begin(), plan.end(), [&](const KnobPlan& p) { return p.knob->id == id; });
    if (k == nullptr || planned) continue;
    plan.push_back(KnobPlan{k, k->values, findings});
    out.push_back(id);
  }
  return out;
}

// The findings of the planned knob `id` (a copy: adding knobs moves the plan), none when unplanned.
std::optional<std::vector<std::string>> planned_findings(const std::vector<KnobPlan>& plan, std::string_view id) {
  for (const auto& p : plan)
    if (p.knob->id == id) return p.findings;
  return std::nullopt;
}

// Workers and intra-op threads share the cores, so each brings the other into its group:
// threads beside the workers the findings name, and, where threads are searched in a job that
// runs DataLoader workers, the workers, their prefetch and persistence even where no finding
// names data loading. loader1w (1 worker, 2 threads, on 2 cores with one taken by other work):
// 1 thread alone 3.1-3.3x, 1 thread beside 4 persistent workers 8.2x (bench/tune_noise_figures.md).
void add_core_sharing_knobs(std::vector<KnobPlan>& plan, const Catalogue& cat, const MachineLimits& m,
                            std::vector<std::string>* added) {
  if (const auto workers = planned_findings(plan, "dataloader.num_workers")) {
    if (!add_partner_knobs(plan, cat, *workers, {"torch.num_threads"}).empty() && added != nullptr)
      added->push_back("torch.num_threads: beside dataloader.num_workers (they share the cores)");
  }
  const auto threads = planned_findings(plan, "torch.num_threads");
  if (!threads || job_workers(m) <= 0) return;
  const auto ids = add_partner_knobs(plan, cat, *threads,
                                     {"dataloader.num_workers", "dataloader.prefetch_factor", "dataloader.persistent_workers"});
  if (added != nullptr && !ids.empty())
    added->push_back(fmt::format("{}: beside torch.num_threads (the job's {} DataLoader workers share the cores)",
                                 fmt::join(ids, ", "), job_workers(m)));
}

}  // namespace

std::vector<SearchGroup> group_plan(std::vector<KnobPlan>& plan, const Catalogue& cat, const std::vector<FindingRef>& findings,
                                    const MachineLimits& m, std::vector<std::string>* skipped,
                                    std::vector<std::string>* added) {
  add_core_sharing_knobs(plan, cat, m, added);
  for (auto& p : plan) {  // values beyond the machine, or the job's own
    std::vector<Value> kept;
    for (const auto& v : p.values) {
      const Value* own = m.job_value(p.knob->id);
      const std::string why = own != nullptr && *own == v ? "the job's own value (its trace shows it)" : out_of_machine(*p.knob, v, m);
      if (why.empty()) kept.push_back(v);
      else if (skipped != nullptr) skipped->push_back(fmt::format("{} = {}: not tried: {}", p.knob->id, display(v), why));
    }
    p.values = std::move(kept);
  }
  std::vector<SearchGroup> groups;
  std::vector<bool> placed(plan.size(), false);
  for (std::size_t i = 0; i < plan.size(); ++i) {
    if (placed[i] || plan[i].values.empty()) continue;
    std::vector<const KnobPlan*> members;
    for (const auto& ids : interacting()) {
      if (std::find(ids.begin(), ids.end(), plan[i].knob->id) == ids.end()) continue;
      for (const auto& id : ids)
        for (std::size_t j = i; j < plan.size(); ++j)
          if (!placed[j] && plan[j].knob->id == id && !plan[j].values.empty()) {
            members.push_back(&plan[j]);
            placed[j] = true;
          }
    }
    if (members.empty()) {
      members.push_back(&plan[i]);
      placed[i] = true;
    }
    // a knob alone keeps its catalogue order (ordered numeric knobs are walked up); groups are ordered by prediction
    groups.push_back(make_group(members, plan, findings, m, members.size() > 1, skipped));
  }
  try_slow_trials_last(groups);
  return groups;
}

std::vector<SearchGroup> single_knob_groups(const std::vector<KnobPlan>& plan) {
  std::vector<SearchGroup> groups;
  for (const auto& p : plan) {
    SearchGroup g;
    g.knobs = {&p};
    for (const auto& v : p.values) {
      Candidate c;
      c.set(p.knob->id, v);
      g.candidates.push_back(std::move(c));
      g.predicted.push_back(0);  // no prediction: never stopped by one
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

// ---- the search ----

namespace {

// The search's state while it runs: trials, the best so far, the budget.
class Searcher {
 public:
  Searcher(TrialRunner& runner, const SearchOptions& opt, const std::function<bool()>& stop, int total)
      : runner_(runner), opt_(opt), stop_(stop), total_(total) {}
  SearchResult r;

  int run_one(const Candidate& c, const std::string& knob) {
    if (opt_.on_start) opt_.on_start(static_cast<int>(r.trials.size()), total_, c.label());
    Trial t = runner_.run(c);
    t.index = static_cast<int>(r.trials.size());
    t.knob = knob;
    r.trials.push_back(std::move(t));
    if (knob == "baseline") r.baseline_runs.push_back(r.trials.back().index);
    if (opt_.on_trial) opt_.on_trial(r.trials.back());
    return r.trials.back().index;
  }
  int run_baseline() { return run_one(Candidate{}, "baseline"); }
  bool interleaved() const { return opt_.baseline_every > 0; }

  // Why no further candidate may start ("" when one may); `extra` trials must follow it.
  std::string no_room(int extra) const {
    if (stop_ && stop_()) return "interrupted";
    if (static_cast<int>(r.trials.size()) + 1 + extra > opt_.max_trials) return fmt::format("trial budget ({}) used", opt_.max_trials);
    double reserve = 2.0 * std::min(opt_.confirm_pairs, opt_.confirm_min_pairs) * baseline_wall_s();
    if (opt_.confirm_pairs > 0) reserve = std::max(reserve, opt_.confirm_share * opt_.budget_s);
    if (opt_.budget_s > 0 && r.wall_s() + reserve >= opt_.budget_s)
      return fmt::format("wall-time budget ({:.0f} s, {:.0f} s of it kept for the confirmation) used", opt_.budget_s, reserve);
    return "";
  }

  // What a run of the job as written takes now: the latest warm baseline run's wall time (the
  // first run, cold, can take several times longer: a transformer's took 22 s and then 3-5 s,
  // and the confirmation's reserve planned on it left the search 4 trials of a 3-minute budget).
  double baseline_wall_s() const {
    for (auto it = r.baseline_runs.rbegin(); it != r.baseline_runs.rend(); ++it)
      if (r.trials[static_cast<std::size_t>(*it)].status == TrialStatus::Ok) return r.trials[static_cast<std::size_t>(*it)].wall_s;
    return r.trials.front().wall_s;
  }

  // The early-stop limit for the next trial: factor x the best's median in today's units.
  void arm_early_stop(int best_index) {
    const double best = r.normalized(best_index).median_ms;
    const double ref = reference_ms(r);
    const double now = interleaved() && !r.baseline_runs.empty()
                           ? r.trials[static_cast<std::size_t>(r.baseline_runs.back())].stats.median_ms : ref;
    runner_.set_early_stop(opt_.early_stop_factor > 0 && ref > 0 ? opt_.early_stop_factor * best * now / ref : 0,
                           opt_.early_stop_steps);
  }

  void search_group(const SearchGroup& g);
  int runoff(const SearchGroup& g, int best_here, std::size_t first_trial);
  std::vector<int> runoff_contenders(int best_here, std::size_t first_trial) const;
  double baseline_drift() const;
  double drift_across(int best_here, double run_to_run) const;
  bool gain_within_drift(int best_here, double drift) const;
  std::vector<std::vector<int>> run_again(const std::vector<int>& contenders);
  StepStats pooled(const std::vector<int>& runs) const;
  StepStats latest_run(const std::vector<int>& runs) const;
  bool nothing_predicted_on_top(const SearchGroup& g);
  void keep_group_best(const SearchGroup& g, int best_here, std::size_t first_trial);
  bool prediction_stops(const SearchGroup& g, std::size_t next, int best_here, double best_predicted);

 private:
  TrialRunner& runner_;
  const SearchOptions& opt_;
  const std::function<bool()>& stop_;
  int total_;
};

// The settings of `c` that belong to group `g`.
Candidate group_part(const Candidate& c, const SearchGroup& g) {
  Candidate part;
  for (const KnobPlan* k : g.knobs)
    if (const Value* v = c.find(k->knob->id)) part.set(k->knob->id, *v);
  return part;
}

// Whether `c` holds every setting of a candidate that failed: a crash or hang with 2 workers
// says nothing good about 2 workers and 1 thread, so such candidates are not tried.
bool includes_a_failure(const Candidate& c, const std::vector<Candidate>& failed) {
  return std::any_of(failed.begin(), failed.end(), [&](const Candidate& f) {
    return std::all_of(f.settings.begin(), f.settings.end(), [&](const auto& kv) {
      const Value* v = c.find(kv.first);
      return v != nullptr && *v == kv.second;
    });
  });
}

// What a failed trial rules out: its settings in this group, less the DataLoader refinements
// (prefetch_factor, persistent_workers) when it sets workers. Workers kept alive are tried
// first (tried_before), so a job whose workers crash or hang would otherwise crash again with
// every other prefetch and persistence; the budget cannot tell those apart, so the worker
// count is what failed.
Candidate failure_of(Candidate part) {
  if (part.find("dataloader.num_workers") == nullptr) return part;
  Candidate out;
  for (const auto& [id, v] : part.settings)
    if (id != "dataloader.prefetch_factor" && id != "dataloader.persistent_workers") out.set(id, v);
  return out;
}

// The prediction stops the group (logged): no candidate left (from `next` on) can beat the best
// by more than min_gain.
bool Searcher::prediction_stops(const SearchGroup& g, std::size_t next, int best_here, double best_predicted) {
  const double best_speedup = r.speedup_of(best_here >= 0 ? best_here : r.best_trial);
  const double best_left = *std::max_element(g.predicted.begin() + static_cast<std::ptrdiff_t>(next), g.predicted.end());
  // A best measured above its own prediction (by more than min_gain) says the prediction
  // is not credible for this job (or the best's figure is noise's winner): it stops nothing.
  const bool credible = best_predicted > 0 && best_speedup <= best_predicted * (1 + opt_.min_gain);
  if (best_here >= 0 && credible && best_left > 0 && best_left < best_speedup * (1 + opt_.min_gain)) {
    r.log.push_back(fmt::format("{}: stopped: the best predicted of the {} candidates left ({:.2f}x) cannot beat {:.2f}x "
                                "by {:.0f}%", g.name(), g.candidates.size() - next, best_left, best_speedup,
                                100 * opt_.min_gain));
    return true;
  }
  return false;
}

// The group is not tried (logged) when the trace predicts it a gain alone, but none on top of
// the best so far: every candidate set on top of the best is predicted below the best's own
// prediction x (1 + min_gain), e.g. OpenMP threads for a data-loading share the workers kept
// already take. A group predicted no gain even alone (the trace estimates none for its
// findings) is searched: its prediction rules nothing out.
bool Searcher::nothing_predicted_on_top(const SearchGroup& g) {
  if (!opt_.predict || g.candidates.empty()) return false;
  const double best = opt_.predict(r.best);
  double alone = 0, on_top = 0;
  for (const Candidate& c : g.candidates) {
    Candidate merged = r.best;
    for (const auto& [id, v] : c.settings) merged.set(id, v);
    alone = std::max(alone, opt_.predict(c));
    on_top = std::max(on_top, best > 0 ? opt_.predict(merged) / best : 0);
  }
  if (alone <= 1 + opt_.min_gain || on_top >= 1 + opt_.min_gain) return false;
  r.log.push_back(fmt::format("{}: not tried: predicted {:.2f}x alone, at most {:.2f}x on top of the best so far ({}), "
                              "below the {:.0f}% a candidate must beat it by", g.name(), alone, on_top,
                              r.best.settings.empty() ? "the job as written" : r.best.label(), 100 * opt_.min_gain));
  return true;
}

void Searcher::search_group(const SearchGroup& g) {
  if (nothing_predicted_on_top(g)) return;
  int best_here = -1;  // trial index of this group's best candidate, when it beat the best before it
  int misses = 0;
  bool done = false;
  const std::size_t first_trial = r.trials.size();
  const bool walk = g.knobs.size() == 1 && is_ordered_numeric(*g.knobs.front()->knob);
  std::size_t next = 0;
  std::vector<Candidate> failed;  // this group's settings of the trials that failed, hung or were refused
  std::map<int, double> predicted_of;  // trial index -> its candidate's prediction
  double best_predicted = 0;           // the prediction of best_here's candidate
  while (!done && next < g.candidates.size()) {
    if (prediction_stops(g, next, best_here, best_predicted)) break;
    // a block of candidates, then the baseline beside them
    std::vector<int> block;
    const int per_block = interleaved() ? opt_.baseline_every : 1;
    while (static_cast<int>(block.size()) < per_block && next < g.candidates.size()) {
      if (const std::string why = no_room(interleaved() ? 1 : 0); !why.empty()) {
        r.stopped_early = true;
        r.log.push_back(fmt::format("stopped before {}: {}", g.candidates[next].label(), why));
        done = true;
        break;
      }
      if (includes_a_failure(g.candidates[next], failed)) {
        ++next;
        continue;
      }
      Candidate c = r.best;
      for (const auto& [id, v] : g.candidates[next].settings) c.set(id, v);
      ++next;
      if (const std::string why = beyond_cores(c, opt_.cores); !why.empty()) {
        r.log.push_back(fmt::format("{}: not tried: {}", c.label(), why));
        continue;
      }
      arm_early_stop(best_here >= 0 ? best_here : r.best_trial);
      block.push_back(run_one(c, g.knobs.size() == 1 ? g.knobs.front()->knob->id : "group:" + g.name()));
      predicted_of[block.back()] = g.predicted[next - 1];
      runner_.set_early_stop(0, 0);
      const Trial& t = r.trials.back();
      if (t.status != TrialStatus::Ok) failed.push_back(failure_of(group_part(t.candidate, g)));
    }
    if (interleaved() && !block.empty()) run_baseline();
    for (int i : block) {
      const Trial& t = r.trials[static_cast<std::size_t>(i)];
      const int ref = best_here >= 0 ? best_here : r.best_trial;
      if (t.status == TrialStatus::Ok && significantly_faster(r.normalized(i), r.normalized(ref), opt_.min_gain)) {
        best_here = i;
        best_predicted = predicted_of[i];
        misses = 0;
      } else if (best_here >= 0 && t.status == TrialStatus::Ok &&
                 significantly_faster(r.normalized(ref), r.normalized(i), opt_.min_gain)) {
        // Past the best, values get clearly slower (oversubscription); a tie is not a miss, and
        // misses before anything helped (failed or hung trials included) do not count.
        if ((walk || g.knobs.size() > 1) && ++misses >= opt_.patience) {
          r.log.push_back(fmt::format("{}: stopped after {} candidates that did not improve", g.name(), misses));
          done = true;
          break;
        }
      }
    }
  }
  if (best_here >= 0) best_here = runoff(g, best_here, first_trial);
  keep_group_best(g, best_here, first_trial);
}

// The contenders of a group's runoff: when some trial of the group (from first_trial on) other
// than its best (best_here) beat the best before the group and is not significantly slower than
// best_here (a near-tie), the group's fastest trials that beat the best before it, one per
// candidate, by scaled median, at most opt_.runoff; otherwise best_here alone. The ranking, not
// the test of significance, picks them: that test weighs each trial's own step noise, but what
// misleads here is the machine's run-to-run drift (9-step trials of one job 20-40% apart), which
// it does not see; in the tenth bench a lucky first trial of 1 thread without workers (1.43x when
// remeasured) left 2 workers with prefetch and persistent workers (2.09x) out of the runoff as
// "significantly slower".
std::vector<int> Searcher::runoff_contenders(int best_here, std::size_t first_trial) const {
  std::vector<int> beat;
  std::set<std::string> seen;
  bool tie = false;
  for (std::size_t i = first_trial; i < r.trials.size(); ++i) {
    const Trial& t = r.trials[i];
    const int index = static_cast<int>(i);
    if (t.status != TrialStatus::Ok || t.knob == "baseline" || !seen.insert(t.candidate.label()).second) continue;
    if (index != best_here && !significantly_faster(r.normalized(index), r.normalized(r.best_trial), opt_.min_gain)) continue;
    beat.push_back(index);
    tie = tie || (index != best_here && !significantly_faster(r.normalized(best_here), r.normalized(index), opt_.min_gain));
  }
  if (!tie) return {best_here};
  std::map<int, double> median;  // each one's scaled median, computed once for the sort
  for (int i : beat) median[i] = r.normalized(i).median_ms;
  std::sort(beat.begin(), beat.end(), [&](int a, int b) { return median[a] < median[b]; });
  if (beat.size() > static_cast<std::size_t>(opt_.runoff)) beat.resize(static_cast<std::size_t>(opt_.runoff));
  return beat;
}

// The contenders run again, the baseline after every baseline_every of them as in the search;
// per contender, its trial indices (the first run, then the new one).
std::vector<std::vector<int>> Searcher::run_again(const std::vector<int>& contenders) {
  const std::size_t per_block = interleaved() ? static_cast<std::size_t>(opt_.baseline_every) : contenders.size();
  std::vector<std::vector<int>> runs;
  for (std::size_t k = 0; k < contenders.size(); ++k) {
    runs.push_back({contenders[k], run_one(r.trials[static_cast<std::size_t>(contenders[k])].candidate, "runoff")});
    if (interleaved() && ((k + 1) % per_block == 0 || k + 1 == contenders.size())) run_baseline();
  }
  return runs;
}

// The step times of a contender's runs that measured, each run scaled by the baselines beside it.
StepStats Searcher::pooled(const std::vector<int>& runs) const {
  std::vector<double> steps;
  for (int i : runs)
    if (r.trials[static_cast<std::size_t>(i)].status == TrialStatus::Ok)
      for (double ms : r.normalized(i).step_ms) steps.push_back(ms);
  return steps.empty() ? StepStats{} : stats_of(steps);
}

// The scaled step times of a contender's latest run that measured (its first when the new one did not).
StepStats Searcher::latest_run(const std::vector<int>& runs) const {
  for (auto it = runs.rbegin(); it != runs.rend(); ++it)
    if (r.trials[static_cast<std::size_t>(*it)].status == TrialStatus::Ok) return r.normalized(*it);
  return StepStats{};
}

// How much the job as written moves between its baseline runs on this machine: the median
// |log ratio| of consecutive warm baseline runs' medians (0 with fewer than 3 of them).
double Searcher::baseline_drift() const {
  std::vector<double> medians, steps;
  for (int b : r.baseline_runs)
    if (const Trial& t = r.trials[static_cast<std::size_t>(b)]; t.status == TrialStatus::Ok && t.stats.median_ms > 0)
      medians.push_back(t.stats.median_ms);
  if (medians.size() < 3) return 0;
  for (std::size_t i = 1; i < medians.size(); ++i) steps.push_back(std::abs(std::log(medians[i] / medians[i - 1])));
  std::nth_element(steps.begin(), steps.begin() + static_cast<std::ptrdiff_t>(steps.size() / 2), steps.end());
  return steps[steps.size() / 2];
}

// How far the baselines move across the comparison of trial `best_here` with the incumbent (the
// best before its group), in log terms: the larger of the run-to-run median (`run_to_run`, from
// baseline_drift) and
// the move across either trial (local_drift). One disturbed baseline run beside a trial shifts
// its scaled figure by half its jump, which the median over the whole search does not see.
double Searcher::drift_across(int best_here, double run_to_run) const {
  return std::max({run_to_run, r.local_drift(best_here), r.local_drift(r.best_trial)});
}

// Whether the group's best beat the incumbent by no more than the baselines' drift can make
// alone: each trial is scaled by its own neighbouring baselines, so two trials compared carry
// that drift on top of their own noise (2 x drift, in log terms).
bool Searcher::gain_within_drift(int best_here, double drift) const {
  const double before = r.normalized(r.best_trial).median_ms, now = r.normalized(best_here).median_ms;
  return drift > 0 && now > 0 && std::log(before / now) < 2 * drift;
}

// A group's best runs again before it is kept: beside its near-ties (the lowest median over
// each one's runs wins), and beside the incumbent (the best before the group) when its gain is
// within the baselines' drift (a challenge). In a challenge the winner is kept only if its new run
// is faster than the incumbent over both of the incumbent's runs, by the search's rule: the
// winner's first run is the one in doubt, and pooled with it a gain made by a disturbed baseline
// would still show at half its size. When the move across the trials compared is larger than the
// run-to-run drift (a baseline run beside them was disturbed), a baseline runs first, so the new
// runs are not scaled by that one. Returns the trial to keep (the winner's latest run that
// measured), -1 when the incumbent held, or best_here when nothing needs running again or the
// budget has no room for it.
int Searcher::runoff(const SearchGroup& g, int best_here, std::size_t first_trial) {
  if (opt_.runoff < 2) return best_here;
  std::vector<int> contenders = runoff_contenders(best_here, first_trial);
  const double run_to_run = baseline_drift();
  const double drift = drift_across(best_here, run_to_run);
  const bool challenge = gain_within_drift(best_here, drift);
  if (contenders.size() < 2 && !challenge) return best_here;
  if (challenge) contenders.push_back(r.best_trial);  // the incumbent, last
  const bool fresh_baseline = challenge && interleaved() && drift > run_to_run;
  const int blocks = interleaved() ? (static_cast<int>(contenders.size()) + opt_.baseline_every - 1) / opt_.baseline_every : 0;
  if (const std::string why = no_room(static_cast<int>(contenders.size()) - 1 + blocks + (fresh_baseline ? 1 : 0)); !why.empty()) {
    r.log.push_back(fmt::format("{}: {} candidates not re-measured: {}", g.name(), contenders.size(), why));
    return best_here;
  }
  if (fresh_baseline) run_baseline();
  const auto runs = run_again(contenders);
  const std::size_t challengers = contenders.size() - (challenge ? 1 : 0);
  std::vector<StepStats> stats;
  std::vector<std::string> said;
  std::size_t winner = 0;
  for (std::size_t k = 0; k < runs.size(); ++k) {
    stats.push_back(pooled(runs[k]));
    said.push_back(fmt::format("{} {:.1f} ms", r.trials[static_cast<std::size_t>(runs[k].front())].candidate.label(),
                               stats.back().median_ms));
    if (k < challengers && stats[k].steps > 0 && (stats[winner].steps == 0 || stats[k].median_ms < stats[winner].median_ms))
      winner = k;
  }
  const std::string label = r.trials[static_cast<std::size_t>(runs[winner].front())].candidate.label();
  r.log.push_back(fmt::format("{}: run again (median over both runs, in the first warm baseline's units{}): {}", g.name(),
                              challenge ? fmt::format("; the baselines drift {:.0f}% across it", 100 * drift) : "",
                              fmt::join(said, ", ")));
  if (challenge && !significantly_faster(latest_run(runs[winner]), stats.back(), opt_.min_gain)) {
    r.log.push_back(fmt::format("{}: {} did not beat the best before it again: nothing kept", g.name(), label));
    return -1;
  }
  r.log.push_back(fmt::format("{}: kept {} after running again", g.name(), label));
  const int again = runs[winner].back();
  return r.trials[static_cast<std::size_t>(again)].status == TrialStatus::Ok ? again : runs[winner].front();
}

// After a group's search: its best candidate (trial best_here, -1: none beat the best before it)
// becomes the search's best, with an outcome per knob it changes (the group's trials' cost
// from first_trial on); or the log says nothing was kept.
void Searcher::keep_group_best(const SearchGroup& g, int best_here, std::size_t first_trial) {
  if (best_here >= 0) {
    const Trial& t = r.trials[static_cast<std::size_t>(best_here)];
    KnobOutcome outcome{g.name(), best_here, r.best_trial, r.speedup_of(best_here) / r.speedup_of(r.best_trial), 0, 0};
    for (std::size_t i = first_trial; i < r.trials.size(); ++i) {
      outcome.trial_steps += r.trials[i].steps_run();
      outcome.wall_s += r.trials[i].wall_s;
    }
    for (const KnobPlan* k : g.knobs) {  // one outcome per knob the best candidate changes
      const Value* now = t.candidate.find(k->knob->id);
      const Value* before = r.best.find(k->knob->id);
      if (now != nullptr && (before == nullptr || !(*before == *now))) {
        outcome.id = k->knob->id;
        r.kept.push_back(outcome);
      }
    }
    r.best = t.candidate;
    r.best_trial = best_here;
    std::vector<std::string> set;
    for (const KnobPlan* k : g.knobs)
      if (const Value* v = t.candidate.find(k->knob->id)) set.push_back(fmt::format("{} = {}", k->knob->id, display(*v)));
    r.log.push_back(fmt::format("{} kept: median {:.1f} ms, {:.2f}x the baseline beside it", fmt::join(set, ", "),
                                t.stats.median_ms, r.speedup()));
  } else {
    r.log.push_back(fmt::format("{}: no candidate beat the current best by more than the noise; left as the job sets it", g.name()));
  }
}

}  // namespace

SearchResult search(const std::vector<SearchGroup>& groups, TrialRunner& runner, const SearchOptions& opt,
                    const Trial* baseline, const std::function<bool()>& stop) {
  int total = 1 + (opt.baseline_every > 0 ? 1 : 0);
  for (const auto& g : groups) total += static_cast<int>(g.candidates.size()) * (opt.baseline_every > 0 ? 2 : 1);
  Searcher s(runner, opt, stop, std::min(total, opt.max_trials));
  SearchResult& r = s.r;
  if (baseline != nullptr) {
    Trial b = *baseline;
    b.index = 0;
    b.knob.clear();
    b.candidate = {};
    r.trials.push_back(b);
    if (opt.on_trial) opt.on_trial(r.trials.back());
  } else {
    s.run_one(Candidate{}, "");
  }
  if (r.trials.front().status != TrialStatus::Ok) {
    r.log.push_back(fmt::format("the baseline run did not give a measurement ({}: {}); nothing to compare with",
                                to_string(r.trials.front().status), r.trials.front().note));
    r.stopped_early = true;
    return std::move(r);
  }
  if (s.interleaved() && !groups.empty()) {
    // the first run was cold (caches, imports, the machine's state): a warm one is the reference
    if (const std::string why = s.no_room(0); why.empty()) {
      if (r.trials[static_cast<std::size_t>(s.run_baseline())].status == TrialStatus::Ok) r.best_trial = r.baseline_runs.front();
      r.log.push_back(fmt::format("baseline: first run {:.1f} ms (cold, analysed only), warm run {:.1f} ms (the reference)",
                                  r.trials.front().stats.median_ms, r.trials[static_cast<std::size_t>(r.best_trial)].stats.median_ms));
    }
  }
  for (const auto& g : groups) {
    s.search_group(g);
    if (r.stopped_early) break;
  }
  return std::move(r);
}

SearchResult search(const std::vector<KnobPlan>& plan, TrialRunner& runner, const SearchOptions& opt, const Trial* baseline,
                    const std::function<bool()>& stop) {
  return search(single_knob_groups(plan), runner, opt, baseline, stop);
}

}  // namespace tt::tuner
