// The tuning loop behind `tracetune tune`. Trials run in a private directory (0700) under
// $TMPDIR; the job runs in our working directory as it would without us, and only
// tuned.toml and its trials file are written where the user asked.
#include "tracetune/tuner/tune.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/epochs.h"
#include "tracetune/collector/job_python.h"
#include "tracetune/collector/launcher.h"
#include "tracetune/analyzer/diff.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"
#include "tracetune/tuner/apply.h"
#include "tracetune/tuner/kernel_bench.h"
#include "tracetune/tuner/substitutions.h"
#include "tracetune/tuner/collective_model.h"
#include "tracetune/tuner/graph_ops.h"
#include "tracetune/tuner/search.h"
#include "tracetune/tuner/trial.h"
#include "tracetune/tuner/tuned_writer.h"

namespace tt::tuner {
namespace fs = std::filesystem;

namespace {

void say(const std::string& s) { std::fprintf(stderr, "tracetune: %s\n", s.c_str()); }


// One entry per finding id: the largest gain over ranks, the knobs in the analyzer's order.
std::vector<FindingRef> finding_refs(const analyzer::Analysis& a) {
  std::vector<FindingRef> out;
  for (const auto& f : a.findings) {
    const std::string id(analyzer::to_string(f.category));
    auto it = std::find_if(out.begin(), out.end(), [&](const FindingRef& r) { return r.id == id; });
    if (it == out.end()) {
      out.push_back({id, f.gain_share, f.knobs});
      continue;
    }
    it->gain_share = std::max(it->gain_share, f.gain_share);
    for (const auto& k : f.knobs)
      if (std::find(it->knobs.begin(), it->knobs.end(), k) == it->knobs.end()) it->knobs.push_back(k);
  }
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : " ") + x;
  return s;
}

// The live table's knob column: "-" for the first run, "group" for knobs searched together,
// else the knob's name after its prefix ("num_workers", "baseline", "choice").
std::string knob_column(const std::string& knob) {
  if (knob.empty()) return "-";
  if (knob.starts_with("group:")) return "group";
  return knob.substr(knob.find_first_of(".:") + 1);
}

// The live table: one line per trial on stderr; on a terminal, a progress bar while a trial runs.
class LiveTable {
 public:
  explicit LiveTable(bool quiet) : quiet_(quiet), tty_(!quiet && ::isatty(STDERR_FILENO) != 0) {}
  void header() {
    if (quiet_) return;
    std::fprintf(stderr, "%-5s %-9s %10s %10s %7s  %-11s %s\n", "trial", "status", "median ms", "spread ms", "speedup",
                 "knob", "settings");
  }
  void start(int done, int total, const std::string& label) {
    if (!tty_) return;
    constexpr int kWidth = 24;
    const int filled = total > 0 ? done * kWidth / total : 0;
    std::fprintf(stderr, "\r\033[K[%s%s] %d/%d running: %.60s", std::string(filled, '#').c_str(),
                 std::string(kWidth - filled, '.').c_str(), done, total, label.c_str());
    std::fflush(stderr);
  }
  void row(const Trial& t, double baseline_ms) {
    if (quiet_) return;
    if (tty_) std::fputs("\r\033[K", stderr);
    const bool ok = t.status == TrialStatus::Ok;
    std::string speed = ok && baseline_ms > 0 ? fmt::format("{:.2f}x", baseline_ms / t.stats.median_ms) : "-";
    std::fprintf(stderr, "%-5d %-9s %10s %10s %7s  %-11s %s%s\n", t.index, std::string(to_string(t.status)).c_str(),
                 ok ? fmt::format("{:.1f}", t.stats.median_ms).c_str() : "-",
                 ok ? fmt::format("{:.1f}", t.stats.spread_ms()).c_str() : "-", speed.c_str(),
                 knob_column(t.knob).c_str(), t.candidate.label().c_str(),
                 t.note.empty() ? "" : ("  (" + t.note + ")").c_str());
    if (ok && t.stats.trending())
      std::fprintf(stderr, "      step times trend %+.0f%% from the first half to the second: not steady (warm-up %d)\n",
                   100 * t.stats.trend, t.warmup);
    std::fflush(stderr);
  }

 private:
  bool quiet_, tty_;
};


// `tune --kernels`: `bench kernels` first (micro-benchmarks + parity, in the job's Python);
// each substitution it keeps is searched first, as a trial on the real job, and stays only if
// the job's steps are faster beyond noise, like any knob value.
// Which catalogue entries the trace shows (share of step time of their kernels or ops).
struct KernelMatch {
  bool has_op_data = false;
  std::vector<SubstitutionShare> shares;
  std::string shapes;            // "id=ROWSxCOLS,..." seen in the trace (bench kernels --shapes)
  std::string optimizer_config;  // the job's optimizer as the Python integration recorded it (JSON)
};

// The JSON of the first "tracetune.optimizer <JSON>" mark (the optimizer whose steps mark the
// job's steps, recorded at its first step); empty when the trace has none.
std::string recorded_optimizer(const trace::Trace& t) {
  constexpr std::string_view kPrefix = "tracetune.optimizer ";
  for (std::size_t i = 0; i < t.ranges.size(); ++i) {
    const std::string_view name = t.strings.get(t.ranges.name[i]);
    if (name.substr(0, kPrefix.size()) == kPrefix) return std::string(name.substr(kPrefix.size()));
  }
  return {};
}

KernelMatch match_kernels(const trace::Trace& t) {
  KernelMatch m;
  auto subs = builtin_substitutions();
  if (!subs) {
    say("tune: the built-in substitution catalogue is broken: " + subs.error());
    return m;
  }
  m.shares = substitution_shares(t, subs.value(), &m.has_op_data);
  for (const auto& [id, shape] : substitution_shapes(t, subs.value()))
    m.shapes += (m.shapes.empty() ? "" : ",") + id + "=" + shape;
  m.optimizer_config = recorded_optimizer(t);
  return m;
}

void add_kernel_candidates(const TuneOptions& opt, const Catalogue& cat, const fs::path& work, const KernelMatch& match,
                           std::vector<KnobPlan>& plan) {
  KernelBenchOptions kb;
  kb.python = opt.kernels_python.empty() ? collector::job_python(opt.command).string() : opt.kernels_python;
  if (kb.python.empty()) {
    say("tune: kernel substitutions not tried: the job's Python interpreter was not found from its command (give it "
        "with --kernels-python)");
    return;
  }
  if (!opt.quiet) say("tune: kernel micro-benchmarks run in the job's Python: " + kb.python);
  kb.args = opt.kernels_args;
  if (match.has_op_data) {
    std::string only;
    for (const auto& s : match.shares) {
      if (!opt.quiet) say(fmt::format("tune: substitution {}: its ops take {:.1f}% of the step time{}", s.id, 100 * s.share,
                                      s.matched ? "" : " (below its min_share: not measured)"));
      if (s.matched) only += (only.empty() ? "" : ",") + s.id;
    }
    if (only.empty()) return;
    kb.args.insert(kb.args.end(), {"--only", only});
  } else if (!opt.quiet) {
    say("tune: the trace has no per-op events (kernels or aten:: ops): every substitution is measured");
  }
  // the shapes the job ran its ops at, unless --kernel-shapes names them
  if (std::find(kb.args.begin(), kb.args.end(), "--shapes") != kb.args.end()) {
    if (!opt.quiet && !match.shapes.empty()) say("tune: micro-benchmarks at --kernel-shapes (the trace's: " + match.shapes + ")");
  } else if (!match.shapes.empty()) {
    if (!opt.quiet) say("tune: micro-benchmarks at the shapes the trace shows: " + match.shapes);
    kb.args.insert(kb.args.end(), {"--shapes", match.shapes});
  }
  if (!match.optimizer_config.empty() &&
      std::find(kb.args.begin(), kb.args.end(), "--optimizer-config") == kb.args.end()) {
    if (!opt.quiet) say("tune: the optimizer entry is measured and parity-checked on the job's optimizer: " +
                        match.optimizer_config);
    kb.args.insert(kb.args.end(), {"--optimizer-config", match.optimizer_config});
  }
  if (opt.allow_numerics) kb.args.push_back("--allow-numerics");
  const fs::path kept = work / "kernels-kept.txt";
  if (!opt.quiet) say("tune: kernel substitutions: micro-benchmarks and parity checks (tracetune bench kernels)");
  const int rc = run_kernel_bench(kb, kept);
  auto chosen = rc == 0 ? read_kept_kernels(kept, cat) : Result<std::vector<std::pair<std::string, Value>>>(
                                                                make_error(fmt::format("exit code {}", rc)));
  if (!chosen) {
    say("tune: kernel substitutions not tried: bench kernels failed (" + chosen.error() + ")");
    return;
  }
  std::vector<KnobPlan> front;
  for (const auto& kept : chosen.value()) {
    const std::string& id = kept.first;  // a plain reference: clang 14 cannot capture a structured binding
    plan.erase(std::remove_if(plan.begin(), plan.end(), [&](const KnobPlan& p) { return p.knob->id == id; }), plan.end());
    front.push_back(KnobPlan{cat.find(id), {kept.second}, {"kernels"}});
  }
  if (!opt.quiet && front.empty()) say("tune: no kernel substitution passed parity and beat stock");
  plan.insert(plan.begin(), front.begin(), front.end());
}

// The [[nccl.table]] candidate: the table a `bench nccl` sweep suggests, tried on top of the
// best settings when the job runs NCCL collectives and a trial is left; kept only when faster
// by more than the noise. Otherwise one line in tuned.toml says why it was not tried.
void try_nccl_table(const std::vector<NcclTableEntry>& table, bool job_uses_nccl, TrialRunner& runner,
                    const SearchOptions& sopt, TuneSummary& summary) {
  SearchResult& r = summary.result;
  std::string why_not;
  if (table.empty()) why_not = "the NCCL sweep has no point with a known collective, algorithm and protocol";
  else if (!job_uses_nccl) why_not = "the job ran no NCCL collectives (baseline trace), so NCCL would never consult the table";
  else if (static_cast<int>(r.trials.size()) >= sopt.max_trials) why_not = "the trial budget (--max-trials) was spent";
  if (!why_not.empty()) {
    summary.skipped.push_back("nccl.table: not tried: " + why_not);
    return;
  }
  Candidate c = r.best;
  c.nccl_table = table;
  if (sopt.on_start) sopt.on_start(static_cast<int>(r.trials.size()), sopt.max_trials, c.label());
  Trial t = runner.run(c);
  t.index = static_cast<int>(r.trials.size());
  t.knob = "nccl.table";
  if (sopt.on_trial) sopt.on_trial(t);
  const Trial& best = r.trials[static_cast<std::size_t>(r.best_trial)];
  if (t.status == TrialStatus::Ok && significantly_faster(t.stats, best.stats, sopt.min_gain)) {
    r.log.push_back(fmt::format("nccl.table: {} entries kept ({:.2f} ms, {:.3f}x)", table.size(), t.stats.median_ms,
                                r.trials.front().stats.median_ms / t.stats.median_ms));
    r.best = c;
    r.best_trial = t.index;
  } else {
    r.log.push_back(fmt::format("nccl.table: {} entries not kept ({})", table.size(),
                                t.status == TrialStatus::Ok ? fmt::format("{:.2f} ms, not faster than the noise", t.stats.median_ms)
                                                            : std::string(to_string(t.status))));
  }
  r.trials.push_back(std::move(t));
}

// The diff of the last baseline and choice runs of the confirmation, in plain words and tables.
std::string confirmation_diff(const SearchResult& r, const Confirmation& c) {
  if (c.last_baseline < 0 || c.last_choice < 0) return "";
  const Trial& b = r.trials[static_cast<std::size_t>(c.last_baseline)];
  const Trial& h = r.trials[static_cast<std::size_t>(c.last_choice)];
  auto tb = trace::read_trace(b.trace);
  auto th = trace::read_trace(h.trace);
  if (!tb || !th) return "";
  const analyzer::Analysis ab = analyzer::analyze(tb.value(), analyzer::Options{}, fmt::format("baseline (trial {})", b.index));
  const analyzer::Analysis ah = analyzer::analyze(th.value(), analyzer::Options{}, fmt::format("choice (trial {})", h.index));
  // the trials' own warm-up, so the diff aligns the steps the measurement used
  const analyzer::DiffOptions dopt{b.warmup, h.warmup};
  return analyzer::render_diff_text(analyzer::diff(tb.value(), ab, th.value(), ah, dopt), false);
}

// What the analysed trace tells the search: the findings, the kernel substitutions it shows and
// whether the job runs NCCL collectives.
struct JobFacts {
  std::vector<FindingRef> findings;
  GraphOps graph;               // the op families of the job's sampled autograd graphs
  KernelMatch kernel_match;
  bool job_uses_nccl = false;
  MachineLimits machine;
  analyzer::EpochFacts epochs;  // the DataLoader's epochs (tracetune.epoch ranges)
};

// The largest "host memory.rss" any process of the job reported (0: none).
double job_rss_bytes(const trace::Trace& t) {
  const trace::StringId name = t.strings.find("host memory.rss");
  double most = 0;
  for (std::size_t i = 0; i < t.counters.size(); ++i)
    if (t.counters.name[i] == name) most = std::max(most, t.counters.value[i]);
  return most;
}

// The job's own DataLoader and thread settings, from its epoch marks (none without them; the
// prefetch and threads fields only where this trace's integration wrote them). Its optimizer's
// come from the optimizer mark (optimizer_job_values).
std::vector<std::pair<std::string, Value>> job_values(const analyzer::EpochFacts& e) {
  std::vector<std::pair<std::string, Value>> out;
  if (e.epochs == 0) return out;
  out.emplace_back("dataloader.num_workers", Value(std::int64_t{e.workers}));
  out.emplace_back("dataloader.persistent_workers", Value(e.persistent));
  if (e.workers > 0 && e.prefetch > 0) out.emplace_back("dataloader.prefetch_factor", Value(std::int64_t{e.prefetch}));
  if (e.threads > 0) out.emplace_back("torch.num_threads", Value(std::int64_t{e.threads}));
  return out;
}

JobFacts job_facts(const trace::Trace& t, const TuneOptions& opt, const std::string& label) {
  JobFacts f;
  f.findings = finding_refs(analyzer::analyze(t, analyzer::Options{}, label));
  if (opt.kernels) f.kernel_match = match_kernels(t);
  f.job_uses_nccl = t.collectives.size() > 0;
  f.graph = graph_ops(t);
  f.machine = this_machine();
  f.machine.job_rss_bytes = job_rss_bytes(t);
  f.machine.gpus = static_cast<int>(t.devices.size());
  f.epochs = analyzer::epoch_facts(t);
  f.machine.persistent_workers_speedup = f.epochs.persistent_speedup();
  f.machine.job_values = job_values(f.epochs);
  for (auto& v : optimizer_job_values(recorded_optimizer(t), f.machine.gpus > 0)) f.machine.job_values.push_back(std::move(v));
  return f;
}

// tuned.toml -> tuned.trials.json: every trial, beside the config.
fs::path trials_path_of(fs::path output) { return output.replace_extension(".trials.json"); }

// The options checked against the catalogue and the file system: 2 (said) when refused, 1 (said)
// when an output names a FIFO, device or directory, else 0.
int check_options(const TuneOptions& opt, const Catalogue& cat) {
  if (!opt.exhaustive.empty() && cat.find(opt.exhaustive) == nullptr) {
    say(fmt::format("tune: --exhaustive: unknown knob \"{}\" (tracetune knobs lists them)", opt.exhaustive));
    return 2;
  }
  std::error_code ec;
  fs::path out_dir = opt.output.parent_path();
  if (out_dir.empty()) out_dir = ".";
  if (!fs::is_directory(out_dir, ec)) {
    say(fmt::format("tune: {}: directory does not exist", opt.output.string()));
    return 2;
  }
  // before the first trial, not after the last: a FIFO or device is never replaced by the config
  for (const fs::path& out : {opt.output, trials_path_of(opt.output)})
    if (auto st = trace::check_output_target(out); !st) {
      say("tune: " + st.error());
      return 1;
    }
  return 0;
}

// The [[nccl.table]] a `bench nccl --json` sweep suggests; false (said) when it cannot be read.
bool read_sweep_table(const fs::path& sweep, std::vector<NcclTableEntry>& table) {
  auto text = trace::read_maybe_gzip(sweep);
  if (!text) {
    say("tune: --nccl-sweep: " + text.error());
    return false;
  }
  auto points = parse_sweep_json(std::string_view(text->data(), text->size()));
  if (!points) {
    say(fmt::format("tune: --nccl-sweep {}: {}", sweep.string(), points.error()));
    return false;
  }
  table = nccl_table_from_sweep(points.value());
  return true;
}

JobTrialOptions trial_options(const TuneOptions& opt, const fs::path& work_dir) {
  JobTrialOptions jopt;
  jopt.command = opt.command;
  jopt.work_dir = work_dir;
  jopt.steps = opt.steps;
  jopt.warmup = opt.warmup;
  jopt.timeout_s = opt.timeout_s;
  jopt.allow_numerics = opt.allow_numerics;
  jopt.compare_loss = opt.kernels;  // loss_rtol: the fp32 numerics class of substitutions.toml
  jopt.trace = {"io", "nvtx", "python", "cuda", "nccl"};  // every trial is recorded alike
  return jopt;
}

// The trace's epochs and what persistent workers would save on them, in one line.
std::string epochs_line(const analyzer::EpochFacts& e) {
  std::string line = fmt::format("  epochs: {} of {:.0f} steps, DataLoader workers {}{}", e.epochs, e.steps_per_epoch, e.workers,
                                 e.persistent ? " (kept alive)" : "");
  if (e.workers > 0 && !e.persistent)
    line += fmt::format("; {} epoch starts waited {:.1f} ms beyond a {:.1f} ms step (largest {:.1f} ms): persistent workers "
                        "predicted {:.3f}x over the {:.0f} ms run",
                        e.restarts, e.restart_wait_ms, e.step_ms, e.largest_restart_ms, e.persistent_speedup(), e.run_ms);
  return line;
}

// Where the trace's epoch starts wait for re-forked workers beyond --min-gain of the run and no
// finding put the DataLoader's knobs in the plan, persistent workers are searched first: their
// saving is measured, not estimated (analyzer::EpochFacts).
void add_persistent_workers(const Catalogue& cat, const analyzer::EpochFacts& epochs, double min_gain, TuneSummary& summary) {
  const Knob* k = cat.find("dataloader.persistent_workers");
  if (k == nullptr || epochs.persistent_speedup() <= 1 + min_gain) return;
  auto& plan = summary.plan;
  if (std::any_of(plan.begin(), plan.end(), [&](const KnobPlan& p) { return p.knob == k; })) return;
  plan.insert(plan.begin(), KnobPlan{k, {Value(true)}, {"epoch_restarts"}});
  summary.added.push_back(fmt::format("dataloader.persistent_workers: first: the epoch starts waited {:.0f} ms for "
                                        "re-forked workers ({:.2f}x of the run)", epochs.restart_wait_ms,
                                        epochs.persistent_speedup()));
}

// The summary before the search: the job, the findings and the plan (said unless quiet).
TuneSummary plan_tune(const TuneOptions& opt, const Catalogue& cat, const fs::path& work_dir, const JobFacts& facts) {
  TuneSummary summary;
  summary.command = collector::redacted_command(opt.command);  // tuned.toml and trials JSON are shared
  summary.version = opt.version;
  summary.findings = facts.findings;
  summary.warmup = opt.warmup;
  summary.steps = opt.steps;
  summary.plan = plan_search(facts.findings, cat, opt.allow_numerics, &summary.skipped);
  drop_knobs_without_their_ops(facts.graph, summary);
  add_persistent_workers(cat, facts.epochs, opt.min_gain, summary);
  if (opt.kernels) add_kernel_candidates(opt, cat, work_dir, facts.kernel_match, summary.plan);
  summary.machine = facts.machine;
  if (opt.quiet) return summary;
  if (facts.findings.empty()) say("tune: the analysis found no bottleneck a knob addresses");
  for (const auto& f : facts.findings) say(fmt::format("  finding {} (estimated gain {:.0f}% of the step)", f.id, f.gain_share * 100));
  say(fmt::format("  machine: {} cores, {:.0f} MiB available, the job's largest RSS {:.0f} MiB, {} GPUs",
                  facts.machine.cores, facts.machine.memory_bytes / 1048576, facts.machine.job_rss_bytes / 1048576,
                  facts.machine.gpus));
  if (facts.epochs.epochs > 0) say(epochs_line(facts.epochs));
  return summary;
}

// The plan's groups (knobs that interact searched together), bounded by the machine and
// ordered by prediction; said unless quiet.
std::vector<SearchGroup> search_groups(const TuneOptions& opt, const Catalogue& cat, TuneSummary& summary) {
  std::vector<SearchGroup> groups = group_plan(summary.plan, cat, summary.findings, summary.machine, &summary.skipped,
                                                &summary.added);
  if (opt.quiet) return groups;
  for (const auto& g : groups) {
    std::string first;
    for (std::size_t i = 0; i < std::min<std::size_t>(3, g.candidates.size()); ++i)
      first += fmt::format("{}{} ({:.2f}x)", i ? ", " : "", g.candidates[i].label(), g.predicted[i]);
    say(fmt::format("  search {}: {} candidates, best predicted first: {}{}", g.name(), g.candidates.size(), first,
                    g.candidates.size() > 3 ? ", ..." : ""));
  }
  for (const auto& s : summary.added) say("  added to the search: " + s);
  for (const auto& s : summary.skipped) say("  not searched: " + s);
  return groups;
}

// The search's options; its callbacks draw the live table (both must outlive the search).
SearchOptions search_options(const TuneOptions& opt, LiveTable& table, const Trial& baseline) {
  SearchOptions sopt;
  sopt.max_trials = opt.max_trials;
  sopt.min_gain = opt.min_gain;
  sopt.budget_s = opt.budget_s;
  sopt.confirm_pairs = opt.confirm;
  sopt.early_stop_factor = opt.early_stop;
  sopt.baseline_every = opt.baseline_every;
  sopt.on_start = [&table](int done, int total, const std::string& label) { table.start(done, total, label); };
  sopt.on_trial = [&table, reference = std::make_shared<double>(baseline.stats.median_ms)](const Trial& t) {
    if (t.knob == "baseline" || t.knob == "confirm:baseline") *reference = t.stats.median_ms;  // the latest baseline beside it
    if (t.index > 0) table.row(t, *reference);
  };
  return sopt;
}

// The choice measured again, interleaved with the baseline, before anything is claimed; returns
// the diff of the last pair ("" when there was no confirmation).
std::string confirm_choice(const TuneOptions& opt, JobTrialRunner& runner, const SearchOptions& sopt, TuneSummary& summary) {
  SearchResult& r = summary.result;
  if (r.best.settings.empty() || opt.confirm <= 0 || runner.interrupted()) return "";
  // end to end: both runs of a pair run the same steps, at least the choice's trial length
  const int trial_length = opt.steps + steady_warmup(r.best, opt.warmup) - opt.warmup;
  const int run_steps = std::max(opt.run_steps, trial_length);
  if (!opt.quiet)
    say(fmt::format("tune: confirming {} with up to {} interleaved baseline/choice pairs of {} steps each (sequential)",
                    r.best.label(), opt.confirm, run_steps));
  summary.confirmation = confirm(r.best, opt.confirm, runner, r, sopt, [&] { return runner.interrupted(); }, run_steps);
  return confirmation_diff(r, *summary.confirmation);
}

// The exhaustive sweep (a benchmark helper): each value of one knob alone, measured in this
// same run, to compare the search's choice with the best a full sweep finds. Returns the
// report line, also logged.
std::string exhaustive_sweep(const TuneOptions& opt, const Knob& k, JobTrialRunner& runner, LiveTable& table,
                             const Trial& baseline, SearchResult& r) {
  if (!opt.quiet) say(fmt::format("tune: exhaustive sweep of {} ({} values)", k.id, k.values.size()));
  double best_ms = baseline.stats.median_ms;
  std::string best_label = "baseline";
  for (const auto& v : k.values) {
    if (!opt.allow_numerics && !numerics_safe(k, v)) continue;
    if (runner.interrupted()) break;
    Candidate c;
    c.set(k.id, v);
    table.start(0, static_cast<int>(k.values.size()), c.label());
    Trial t = runner.run(c);
    t.index = static_cast<int>(r.trials.size());
    t.knob = "exhaustive:" + k.id;
    table.row(t, baseline.stats.median_ms);
    if (t.status == TrialStatus::Ok && t.stats.median_ms < best_ms) {
      best_ms = t.stats.median_ms;
      best_label = c.label();
    }
    r.trials.push_back(std::move(t));
  }
  const double tuned = r.speedup(), best = baseline.stats.median_ms / best_ms;
  std::string report = fmt::format("exhaustive {}: best {} at {:.2f} ms ({:.3f}x); tuner's choice {:.3f}x = {:.1f}% of the "
                                   "exhaustive best", k.id, best_label, best_ms, best, tuned, 100 * tuned / best);
  r.log.push_back(report);
  return report;
}

// tuned.toml, then its trials file.
Status write_outputs(const TuneOptions& opt, const TuneSummary& summary, const Catalogue& cat, const fs::path& trials_path) {
  if (auto st = trace::write_file_atomic(opt.output, tuned_toml(summary, cat)); !st) return st;
  return trace::write_file_atomic(trials_path, trials_json(summary));
}

// The outcome on stdout: the choice, its measured and predicted speedup, each kept knob, the
// cost, where the files are and how to apply them (the search's log first, on stderr).
void print_outcome(const TuneOptions& opt, const TuneSummary& summary, const Trial& baseline, const fs::path& trials_path,
                   const std::string& exhaustive_report, const std::string& diff_report) {
  const SearchResult& r = summary.result;
  if (!opt.quiet) for (const auto& l : r.log) say("  " + l);
  std::string chosen = r.best.settings.empty() ? "nothing beat the baseline; no setting chosen"
                       : summary.refused()    ? "no confirmed gain; no setting applied (the search chose " + r.best.label() + ")"
                                              : r.best.label();
  std::printf("tuned: %s\n", chosen.c_str());
  const double predicted = predicted_speedup(summary, [&] {
    std::vector<std::string> ids;
    for (const auto& kv : r.best.settings) ids.push_back(kv.first);
    return ids;
  }());
  if (summary.confirmation) {
    const Confirmation& c = *summary.confirmation;
    std::printf("%s %.3fx steady state (%.1f%% interval %.3fx to %.3fx, %zu interleaved pairs: %s); predicted %.3fx%s; "
                "search %.3fx over %zu trials\n", c.confirmed ? "confirmed speedup" : "measured (not a gain)", c.speedup,
                100 * c.level, c.low, c.high, c.ratios.size(), c.ended.c_str(), predicted,
                summary.machine.cores > 0 ? fmt::format(" (bounded by {} cores)", summary.machine.cores).c_str() : "",
                r.speedup(), r.trials.size());
    if (c.e2e_ratios.size() >= 2)
      std::printf("end to end (start-up included, %d steps per run): %.3fx (%.1f%% interval %.3fx to %.3fx)\n", c.e2e_steps,
                  c.e2e_speedup, 100 * c.level, c.e2e_low, c.e2e_high);
  } else {
    std::printf("speedup %.3fx (median step %.2f ms -> %.2f ms) over %zu trials%s\n", r.speedup(), baseline.stats.median_ms,
                r.trials[r.best_trial].stats.median_ms, r.trials.size(), r.best.settings.empty() ? "" : ", not confirmed");
  }
  for (const auto& k : r.kept)
    std::printf("  %s: predicted %.3fx, measured %.3fx (trial %d vs %d); cost %d trial-steps, %.0f s\n", k.id.c_str(),
                predicted_speedup(summary, {k.id}), k.measured_speedup, k.trial, k.reference_trial, k.trial_steps, k.wall_s);
  int early = 0;
  for (const auto& t : r.trials) early += t.stopped_early ? 1 : 0;
  std::printf("cost: %d trial-steps in %zu trials (%d stopped early), %.0f s of trials\n", r.trial_steps(), r.trials.size(),
              early, r.wall_s());
  if (!exhaustive_report.empty()) std::printf("%s\n", exhaustive_report.c_str());
  std::printf("wrote %s and %s\napply: tracetune run --config %s -- %s\n", opt.output.c_str(), trials_path.c_str(),
              opt.output.c_str(), summary.command.c_str());
  if (!diff_report.empty()) std::printf("\nThe last confirmation pair, baseline vs choice:\n%s", diff_report.c_str());
}

}  // namespace

int run_tune(const TuneOptions& opt) {
  if (opt.command.empty()) {
    say(std::string("tune: no command given (usage: ") + kTuneUsage + ")");
    return 2;
  }
  auto cat = builtin_catalogue();
  if (!cat) {
    say("tune: the built-in knob catalogue is broken: " + cat.error());
    return 2;
  }
  if (const int rc = check_options(opt, cat.value()); rc != 0) return rc;
  const fs::path trials_path = trials_path_of(opt.output);

  // The NCCL sweep and the findings of a given trace first: bad input is refused before any trial runs.
  std::vector<NcclTableEntry> sweep_table;
  if (!opt.nccl_sweep.empty() && !read_sweep_table(opt.nccl_sweep, sweep_table)) return 2;
  JobFacts facts;
  if (!opt.trace.empty()) {
    auto t = trace::load_any(opt.trace);
    if (!t) {
      say("tune: " + t.error());
      return 1;
    }
    facts = job_facts(t.value(), opt, opt.trace.string());
  }

  auto work = make_private_tempdir("tracetune-tune");
  if (!work) {
    say("tune: " + work.error());
    return 1;
  }
  JobTrialRunner runner(trial_options(opt, work.value()), cat.value());
  LiveTable table(opt.quiet);
  std::error_code ec;
  auto cleanup = [&] {
    if (opt.keep_traces) say("trial configs, logs and traces kept in " + work->string());
    else fs::remove_all(work.value(), ec);
  };

  // The baseline: the job as it is. Its recording is what gets analysed when no trace was given.
  if (!opt.quiet) say(fmt::format("tune: baseline run ({} steps, {} warm-up): {}", opt.steps, opt.warmup, join(opt.command)));
  table.header();
  table.start(0, 1, "baseline");
  Trial baseline = runner.run(Candidate{});
  baseline.index = 0;
  table.row(baseline, baseline.stats.median_ms);
  if (baseline.status != TrialStatus::Ok) {
    say(fmt::format("tune: the baseline run failed ({}: {}); nothing to tune", to_string(baseline.status), baseline.note));
    cleanup();
    return runner.interrupted() ? 130 : 1;
  }
  if (opt.trace.empty()) {
    auto t = trace::read_trace(baseline.trace);
    if (!t) {
      say("tune: " + t.error());
      cleanup();
      return 1;
    }
    facts = job_facts(t.value(), opt, baseline.trace.string());
  }

  TuneSummary summary = plan_tune(opt, cat.value(), work.value(), facts);
  SearchOptions sopt = search_options(opt, table, baseline);
  const std::vector<SearchGroup> groups = search_groups(opt, cat.value(), summary);
  // the trace's prediction (after search_groups: it completes the plan) and the cores, for the search
  sopt.predict = [&summary](const Candidate& c) { return predict_candidate(c, summary.plan, summary.findings, summary.machine); };
  sopt.cores = summary.machine.cores;
  summary.result = search(groups, runner, sopt, &baseline, [&] { return runner.interrupted(); });
  if (!opt.nccl_sweep.empty() && !runner.interrupted())
    try_nccl_table(sweep_table, facts.job_uses_nccl, runner, sopt, summary);
  const std::string diff_report = confirm_choice(opt, runner, sopt, summary);
  std::string exhaustive_report;
  if (!opt.exhaustive.empty() && !runner.interrupted())
    exhaustive_report = exhaustive_sweep(opt, *cat->find(opt.exhaustive), runner, table, baseline, summary.result);

  const int rc = runner.interrupted() ? 130 : 0;
  if (auto st = write_outputs(opt, summary, cat.value(), trials_path); !st) {
    say("tune: " + st.error());
    cleanup();
    return 1;
  }
  print_outcome(opt, summary, baseline, trials_path, exhaustive_report, diff_report);
  cleanup();
  return rc;
}

}  // namespace tt::tuner
