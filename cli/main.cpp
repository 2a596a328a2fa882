// The `tracetune` command: thin verbs over the modules. Each verb parses its flags, calls one
// module function, prints a result or a one-line error, and returns 0 (ok), 1 (failed) or
// 2 (usage).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/shard.h"
#include "tracetune/analyzer/step_ranges.h"
#include "tracetune/analyzer/diff.h"
#include "tracetune/collector/launcher.h"
#include "tracetune/collector/merge.h"
#include "tracetune/trace/exporters.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/py_stacks.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/strings.h"
#include "tracetune/trace/summary.h"
#include "tracetune/tuner/apply.h"
#include "tracetune/tuner/knobs.h"
#include "tracetune/tuner/tune.h"
#include "verb.h"

namespace fs = std::filesystem;
using namespace tt;
using tt::cli::fail;
using tt::cli::usage_error;
using tt::cli::Verb;

namespace {

// `-o -`: the report or export goes to stdout (text, json, md and html reports; the chrome export).
constexpr std::string_view kStdout = "-";

// Before any work: an output that would destroy an input, or replace a device, FIFO, socket or
// directory with a file, is refused (AtomicOutput checks the target again before its rename).
Status check_output(std::span<const fs::path> inputs, const std::string& output) {
  if (auto st = trace::check_output_target(output); !st) return st;
  return trace::check_output_not_input(inputs, output);
}

// A verb whose output is a database, part file or config refuses `-o -` (a pipe cannot hold one).
int refuse_stdout(std::string_view verb, std::string_view what) {
  return usage_error(verb, fmt::format("-o -: {} cannot be written to stdout; name a file", what));
}

int cmd_import(const std::vector<std::string>& inputs, const std::string& output, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  if (output == kStdout) return refuse_stdout("import", "a trace database");
  std::vector<fs::path> paths(inputs.begin(), inputs.end());
  if (auto st = check_output(paths, output); !st) return fail(st.error());
  trace::Trace t;
  // a progress line for inputs large enough to be streamed, when stderr is a terminal
  int shown = -1;
  const bool tty = !quiet && isatty(STDERR_FILENO);
  auto progress = [&](const std::string& file, std::uint64_t read, std::uint64_t total) {
    const int pct = total ? static_cast<int>(100 * read / total) : 0;
    if (!tty || pct == shown) return;
    shown = pct;
    std::fprintf(stderr, "\rimporting %s: %.2f of %.2f GB read (%d%%)%s", file.c_str(), read / 1e9, total / 1e9, pct,
                 read >= total ? "\n" : "");
  };
  if (auto st = trace::import_any(paths, t, progress); !st) return fail(st.error());
  if (auto st = trace::write_trace(t, output, "tracetune import " TT_VERSION); !st) return fail(st.error());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!quiet) {
    std::printf("%s", trace::summary_text(trace::summarize(t)).c_str());
    std::printf("wrote %s (%zu events in %.2f s)\n", output.c_str(), t.event_count(), secs);
  }
  return 0;
}

int cmd_info(const std::string& input, bool json) {
  auto t = trace::load_any(input);
  if (!t) return fail(t.error());
  const auto s = trace::summarize(t.value());
  std::fputs(json ? trace::summary_json(s).c_str() : trace::summary_text(s).c_str(), stdout);
  return 0;
}

int cmd_export(const std::string& input, const std::string& format, const std::string& output) {
  if (format != "chrome" && format != "collapsed")
    return fail("unknown export format '" + format + "' (supported: chrome, collapsed)");
  const fs::path inputs[] = {input};
  if (output != kStdout)
    if (auto st = check_output(inputs, output); !st) return fail(st.error());
  auto t = trace::load_any(input);
  if (!t) return fail(t.error());
  const bool collapsed = format == "collapsed";
  if (collapsed && t->py_samples.size() == 0)
    return fail(input + ": no Python stack samples in this trace (record with --trace pystack, a Python job)");
  if (output == kStdout) {
    const std::string text = collapsed ? trace::to_collapsed_stacks(t.value()) : trace::to_chrome_json(t.value());
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0
               ? 0 : fail("stdout: cannot write the export");
  }
  if (collapsed) {
    if (auto st = trace::write_file_atomic(output, trace::to_collapsed_stacks(t.value())); !st) return fail(st.error());
    std::printf("wrote %s (%zu Python stack samples; open it in speedscope or feed it to flamegraph.pl)\n",
                output.c_str(), t->py_samples.size());
    return 0;
  }
  if (auto st = trace::export_chrome(t.value(), output); !st) return fail(st.error());
  std::printf("wrote %s (%zu events; open it in the Perfetto UI or chrome://tracing)\n", output.c_str(),
              t->event_count());
  return 0;
}

// "A:B", "A:", ":B" or "A" -> inclusive step-number range.
bool parse_steps(const std::string& spec, std::pair<std::int64_t, std::int64_t>& out) {
  auto num = [](std::string_view s, std::int64_t& v) {
    if (s.empty()) return false;
    std::size_t pos = 0;
    try { v = std::stoll(std::string(s), &pos); } catch (...) { return false; }
    return pos == s.size();
  };
  const auto colon = spec.find(':');
  if (colon == std::string::npos) {
    if (!num(spec, out.first)) return false;
    out.second = out.first;
    return true;
  }
  const std::string_view a = std::string_view(spec).substr(0, colon), b = std::string_view(spec).substr(colon + 1);
  out = {INT64_MIN, INT64_MAX};
  if (!a.empty() && !num(a, out.first)) return false;
  if (!b.empty() && !num(b, out.second)) return false;
  return out.first <= out.second;
}

// "FILE: no rank 9 in this trace (ranks present: 0, 1)" for --rank naming a rank the trace lacks.
std::string no_such_rank(const trace::Trace& t, analyzer::Options opt, const std::string& input) {
  const int wanted = opt.rank;
  opt.rank = -1;
  std::string present;
  for (const auto& r : analyzer::analyze(t, opt, input).metrics.ranks) present += (present.empty() ? "" : ", ") + std::to_string(r.rank);
  return fmt::format("{}: no rank {} in this trace (ranks present: {})", input, wanted, present.empty() ? "none" : present);
}

// "90", "90s", "10m", "1h", "1.5h" -> seconds (finite, > 0).
Result<double> parse_duration(const std::string& text) {
  std::string_view number(text);
  double scale = 1;
  if (number.ends_with('m') || number.ends_with('h') || number.ends_with('s')) {
    scale = number.back() == 'm' ? 60 : number.back() == 'h' ? 3600 : 1;
    number.remove_suffix(1);
  }
  auto v = trace::parse_finite(number, "");
  if (!v || !(v.value() > 0) || !std::isfinite(v.value() * scale))
    return make_error("'" + text + "' is not a duration (e.g. 90s, 10m, 1h)");
  return v.value() * scale;
}

bool to_stdout(const std::string& output) { return output.empty() || output == kStdout; }

bool color_for(const std::string& output) {
  return to_stdout(output) && isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
}

// A report to stdout (no -o, or -o -), or to FILE written atomically (0600).
int emit_report(const std::string& text, const std::string& output) {
  if (to_stdout(output)) {
    return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0
               ? 0 : fail("stdout: cannot write the report");
  }
  if (auto st = trace::write_file_atomic(output, text); !st) return fail(st.error());
  return 0;
}

// The JSON report to stdout or FILE (atomically) as it is written: a combine's report lists
// every step of every rank and is not held whole.
int emit_json_report(const analyzer::Analysis& a, const std::string& output) {
  if (to_stdout(output)) {
    bool ok = true;
    analyzer::render_json(a, [&](std::string_view s) { ok = ok && std::fwrite(s.data(), 1, s.size(), stdout) == s.size(); });
    return ok && std::fflush(stdout) == 0 ? 0 : fail("stdout: cannot write the report");
  }
  auto out = trace::AtomicOutput::create(output);
  if (!out) return fail(out.error());
  Status written;
  analyzer::render_json(a, [&](std::string_view s) {
    if (written) written = out->write(s);
  });
  if (!written) return fail(written.error());
  if (auto st = out->commit(); !st) return fail(st.error());
  return 0;
}

struct AnalyzeArgs {
  std::vector<std::string> inputs;  // one trace, or (--combine) the part files
  std::string format = "text", output, steps, step_range, shard;
  int rank = -1;
  unsigned threads = 0;
  bool hta_compat = false, combine = false;
};

std::string render_report(const analyzer::Analysis& a, const AnalyzeArgs& args) {
  if (args.format == "json") return analyzer::render_json(a);
  if (args.format == "md") return analyzer::render_markdown(a);
  if (args.format == "html") return analyzer::render_html(a);
  return analyzer::render_text(a, color_for(args.output));
}

int emit_analysis(const analyzer::Analysis& a, const AnalyzeArgs& args) {
  if (args.format == "json") return emit_json_report(a, args.output);
  return emit_report(render_report(a, args), args.output);
}

// Every `from` in `text` replaced by `to` (a part-file name may say {shard} more than once).
std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) text.replace(at, from.size(), to);
  return text;
}

// --shard K/N (or auto: the launcher's rank and size): this shard's part file.
int cmd_analyze_shard(const AnalyzeArgs& args, const std::string& input, const analyzer::Options& opt) {
  if (args.hta_compat) return usage_error("analyze", "--hta-compat compares one trace with HTA: not with --shard");
  if (args.format != "text") return usage_error("analyze", "--shard writes a part file: choose the report's --format with --combine");
  if (args.output == kStdout) return refuse_stdout("analyze", "--shard's part file");
  const bool from_launcher = args.shard == "auto";
  auto env = from_launcher ? analyzer::shard_from_environment() : Result<std::optional<analyzer::LauncherShard>>(std::nullopt);
  if (!env) return usage_error("analyze", "--shard auto: " + env.error());
  if (from_launcher && !env.value())
    return usage_error("analyze", "--shard auto: no launcher rank and size in the environment (SLURM_PROCID/SLURM_NTASKS, "
                                  "OMPI_COMM_WORLD_RANK/SIZE, PMI_RANK/PMI_SIZE, RANK/WORLD_SIZE)");
  const auto& launcher = env.value();
  auto shard = launcher ? Result<analyzer::Shard>(launcher->shard) : analyzer::parse_shard(args.shard);
  if (!shard) return usage_error("analyze", shard.error());
  const std::string from = launcher ? launcher->variables : "--shard";
  std::string out = args.output;
  std::error_code ec;
  if (out.empty()) return usage_error("analyze", "--shard needs -o PART (e.g. parts/part-{shard}.ttpart, or a directory)");
  if (fs::is_directory(out, ec)) out = (fs::path(out) / fmt::format("part-{}.ttpart", shard->index)).string();
  else if (out.find("{shard}") != std::string::npos) out = replace_all(std::move(out), "{shard}", std::to_string(shard->index));
  else if (shard->count > 1) return usage_error("analyze", "with several shards -o needs {shard} in its name or a directory");
  const fs::path inputs[] = {input};
  if (auto st = check_output(inputs, out); !st) return fail(st.error());
  auto run = analyzer::analyze_shard(input, shard.value(), opt, args.step_range, out);
  if (!run) return fail(run.error());
  std::fprintf(stderr, "tracetune analyze: shard %u/%u (from %s): %zu file(s), %zu rank(s), %zu events -> %s\n", shard->index,
               shard->count, from.c_str(), run->files, run->ranks, run->events, out.c_str());
  return 0;
}

int cmd_analyze_combine(const AnalyzeArgs& args) {
  std::vector<fs::path> parts(args.inputs.begin(), args.inputs.end());
  if (!to_stdout(args.output))
    if (auto st = check_output(parts, args.output); !st) return fail(st.error());
  auto a = analyzer::combine_shards(parts, args.threads);
  if (!a) return fail(a.error());
  if (a->options.rank >= 0 && a->metrics.ranks.empty())
    return fail(fmt::format("{}: no rank {} in this trace", a->source, a->options.rank));
  return emit_analysis(a.value(), args);
}

int cmd_analyze(const AnalyzeArgs& args) {
  if (args.combine) {
    if (!args.shard.empty() || args.rank >= 0 || !args.steps.empty() || !args.step_range.empty() || args.hta_compat)
      return usage_error("analyze", "--combine takes the shards' options from their parts: give only part files, --format, -o, --threads");
    return cmd_analyze_combine(args);
  }
  if (args.inputs.size() != 1) return usage_error("analyze", "one trace (or --combine PART...)");
  const std::string& input = args.inputs.front();
  analyzer::Options opt;
  opt.hta_compat = args.hta_compat;
  opt.rank = args.rank;
  opt.threads = args.threads;
  opt.path_pieces = false;  // reports do not show them: memory kept for the events
  if (!args.steps.empty()) {
    std::pair<std::int64_t, std::int64_t> r;
    if (!parse_steps(args.steps, r)) {
      return usage_error("analyze", "--steps wants A:B, A:, :B or A (step numbers), got '" + args.steps + "'");
    }
    opt.steps = r;
  }
  if (!args.shard.empty()) return cmd_analyze_shard(args, input, opt);
  const fs::path inputs[] = {input};
  if (!to_stdout(args.output))
    if (auto st = check_output(inputs, args.output); !st) return fail(st.error());
  if (args.step_range.empty()) {  // a trace DB larger than memory: in blocks of ranks (docs/scale.md)
    auto budget = analyzer::analyze_memory_budget();
    if (!budget) return fail(budget.error());
    auto blocks = analyzer::analyze_in_blocks(input, opt, budget.value());
    if (!blocks) return fail(blocks.error());
    if (blocks.value()) return emit_analysis(*blocks.value(), args);
  }
  auto t = trace::load_any(input);
  if (!t) return fail(t.error());
  const auto step_note = analyzer::choose_step_source(t.value(), args.step_range);
  if (!step_note) return fail(input + ": " + step_note.error());
  opt.path_pieces = t->py_samples.size() > 0;  // the Python attribution of host segments reads them
  analyzer::Analysis a = analyzer::analyze(t.value(), opt, input);
  if (step_note.value()) a.metrics.notes.insert(a.metrics.notes.begin(), *step_note.value());
  if (opt.rank >= 0 && a.metrics.ranks.empty()) return fail(no_such_rank(t.value(), opt, input));
  return emit_analysis(a, args);
}

struct DiffArgs {
  std::string base, next, format = "text", output;
  int warmup = 1;
};

int cmd_diff(const DiffArgs& args) {
  const fs::path inputs[] = {args.base, args.next};
  if (!to_stdout(args.output))
    if (auto st = check_output(inputs, args.output); !st) return fail(st.error());
  auto base = trace::load_any(args.base);
  if (!base) return fail(base.error());
  auto next = trace::load_any(args.next);
  if (!next) return fail(next.error());
  // traces without step markers get steps from their named ranges, as `analyze` does
  if (auto st = analyzer::choose_step_source(base.value(), ""); !st) return fail(args.base + ": " + st.error());
  if (auto st = analyzer::choose_step_source(next.value(), ""); !st) return fail(args.next + ": " + st.error());
  const analyzer::Options opt;
  const analyzer::Analysis a = analyzer::analyze(base.value(), opt, args.base);
  const analyzer::Analysis b = analyzer::analyze(next.value(), opt, args.next);
  const analyzer::Diff d = analyzer::diff(base.value(), a, next.value(), b, {args.warmup});
  std::string text;
  if (args.format == "json") text = analyzer::render_diff_json(d);
  else if (args.format == "md") text = analyzer::render_diff_markdown(d);
  else text = analyzer::render_diff_text(d, color_for(args.output));
  return emit_report(text, args.output);
}

int cmd_merge(const std::vector<std::string>& dirs, const std::string& output) {
  if (output == kStdout) return refuse_stdout("merge", "a trace database");
  std::vector<fs::path> paths(dirs.begin(), dirs.end());
  if (auto st = check_output(paths, output); !st) return fail(st.error());
  collector::MergeReport report;
  collector::MergeOptions mopt;
  // streamed: memory holds one record file's events at a time, not every host's
  auto summary = collector::merge_raw_to_file(paths, mopt, report, {output, "tracetune merge " TT_VERSION, {}});
  if (!summary) return fail(summary.error());
  std::printf("%s", trace::summary_text(summary.value()).c_str());
  for (const auto& h : report.hosts) {
    const std::string alignment = h.clock_line();
    std::printf("host %-20s clock offset %lld ns (%zu files)%s%s\n", h.host.c_str(), static_cast<long long>(h.offset_ns),
                h.files, alignment.empty() ? "" : "; ", alignment.c_str());
  }
  if (report.truncated > 0) std::printf("%zu processes ended without an exit record (marked truncated)\n", report.truncated);
  for (const auto& w : report.warnings) std::printf("warning: %s\n", w.c_str());
  std::printf("wrote %s\n", output.c_str());
  return 0;
}

int cmd_knobs() {
  auto cat = tuner::builtin_catalogue();
  if (!cat) return fail(cat.error());
  for (const auto& k : cat->knobs) {
    std::string how(tuner::to_string(k.apply));
    if (k.apply == tuner::Apply::Env) how += " " + k.env;
    std::string allowed;
    if (k.min) allowed = fmt::format("{} to {}", *k.min, *k.max);
    for (const auto& c : k.choices) allowed += (allowed.empty() ? "" : "|") + c;
    if (k.type == tuner::KnobType::Bool) allowed = "true|false";
    if (k.type == tuner::KnobType::Table) allowed = "[[nccl.table]] entries";
    std::string addresses;
    for (const auto& a : k.addresses) addresses += (addresses.empty() ? "" : ",") + a;
    std::printf("%-30s %-9s %-28s %-26s %s%s\n", k.id.c_str(), std::string(tuner::to_string(k.type)).c_str(),
                how.c_str(), allowed.c_str(), addresses.c_str(), k.risk == tuner::Risk::Numerics ? "  [numerics]" : "");
  }
  return 0;
}

Verb add_import(CLI::App& app) {
  struct Args {
    std::vector<std::string> inputs;
    std::string output;
    bool quiet = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("import", "Convert PyTorch-profiler (Kineto) JSON or Nsight Systems SQLite exports into a tracetune trace");
  cmd->add_option("inputs", a->inputs, "Kineto .json/.json.gz files, directories of per-rank files, or nsys .sqlite exports")->required();
  cmd->add_option("-o,--output", a->output, "Output trace database (written atomically, mode 0600)")->required();
  cmd->add_flag("-q,--quiet", a->quiet, "Print nothing on success");
  return {cmd, [a] { return cmd_import(a->inputs, a->output, a->quiet); }};
}

Verb add_info(CLI::App& app) {
  struct Args {
    std::string input;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("info", "Summarize a trace: duration, ranks, devices, event counts per kind, steps, diagnostics");
  cmd->add_option("trace", a->input, "A tracetune trace, or any importable input")->required();
  cmd->add_flag("--json", a->json, "Machine-readable JSON output");
  return {cmd, [a] { return cmd_info(a->input, a->json); }};
}

Verb add_export(CLI::App& app) {
  struct Args {
    std::string input, format = "chrome", output;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("export", "Write a trace in another format (Chrome trace JSON for Perfetto / chrome://tracing)");
  cmd->add_option("trace", a->input, "A tracetune trace, or any importable input")->required();
  cmd->add_option("--format", a->format, "Output format")->check(CLI::IsMember({"chrome", "collapsed"}));
  cmd->add_option("-o,--output", a->output, "Output file (written atomically, mode 0600; '-': stdout)")->required();
  return {cmd, [a] { return cmd_export(a->input, a->format, a->output); }};
}

struct RecordArgs {
  collector::RecordOptions opt;
  std::string trace = collector::trace_source_ids(), output = "trace.db", raw_dir;
  bool no_env = false;
  int max_steps = 0;
  int pystack_hz = 0;
  std::string steps, delay, duration, ring, hang, dump_signal;
};

// "5", "5s", "1.5s", "2m", "1h" -> seconds; -1 when it is none of those.
double parse_seconds(const std::string& text) {
  if (text.empty()) return -1;
  double unit = 1;
  std::string number = text;
  switch (text.back()) {
    case 's': number.pop_back(); break;
    case 'm': unit = 60, number.pop_back(); break;
    case 'h': unit = 3600, number.pop_back(); break;
    default: break;
  }
  char* end = nullptr;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || end != number.c_str() + number.size() || !(v >= 0)) return -1;
  return v * unit;
}

// --ring (120s, 10m, 50steps) and --dump-signal (default SIGUSR2 with --ring) into opt.window.
Status ring_options(RecordArgs& a) {
  constexpr std::string_view steps = "steps";
  if (a.ring.size() > steps.size() && a.ring.ends_with(steps)) {
    const std::string n = a.ring.substr(0, a.ring.size() - steps.size());
    char* end = nullptr;
    const long long v = std::strtoll(n.c_str(), &end, 10);
    if (end != n.c_str() + n.size() || v < 1 || v > 1'000'000)
      return make_error(fmt::format("--ring {}: expected a number of steps from 1 to 1000000 (50steps)", a.ring));
    a.opt.window.ring_steps = v;
  } else if (!a.ring.empty()) {
    a.opt.window.ring_s = parse_seconds(a.ring);
    if (a.opt.window.ring_s <= 0)
      return make_error(fmt::format("--ring {}: expected seconds (120s, 10m) or steps (50steps)", a.ring));
  }
  const std::string signal = a.dump_signal.empty() ? (a.opt.window.ring() ? "USR2" : "none") : a.dump_signal;
  auto signo = collector::parse_dump_signal(signal);
  if (!signo) return make_error(signo.error());
  a.opt.window.dump_signal = signo.value();
  return {};
}

// --steps/--delay/--duration (--start-on and --armed are set directly) into opt.window.
Status window_options(RecordArgs& a) {
  if (!a.steps.empty()) {
    auto range = collector::parse_step_range(a.steps);
    if (!range) return make_error(range.error());
    std::tie(a.opt.window.steps_first, a.opt.window.steps_last) = range.value();
  }
  for (auto [text, flag, to] : {std::tuple{&a.delay, "--delay", &a.opt.window.delay_s},
                                std::tuple{&a.duration, "--duration", &a.opt.window.duration_s},
                                std::tuple{&a.hang, "--dump-on-hang", &a.opt.window.hang_s}}) {
    if (text->empty()) continue;
    *to = parse_seconds(*text);
    if (*to < 0) return make_error(fmt::format("{} {}: expected seconds (5, 5s, 2m, 1h)", flag, *text));
  }
  if (auto st = ring_options(a); !st) return st;
  if (auto st = collector::check_window(a.opt.window); !st) return make_error(st.error());
  return {};
}

int cmd_record(RecordArgs a) {
  if (a.output == kStdout) return refuse_stdout("record", "a trace database");
  // before the job runs, not after: its trace would have nowhere to go
  if (auto st = trace::check_output_target(a.output); !st) return fail(st.error());
  a.opt.output = a.output;
  a.opt.raw_dir = a.raw_dir;
  a.opt.record_env = !a.no_env;
  if (a.max_steps > 0) a.opt.extra_env.emplace_back("TRACETUNE_MAX_STEPS", std::to_string(a.max_steps));
  if (a.pystack_hz > 0) a.opt.extra_env.emplace_back("TRACETUNE_PYSTACK_HZ", std::to_string(a.pystack_hz));
  if (auto st = window_options(a); !st) return usage_error("record", st.error());
  auto sources = collector::parse_trace_sources(a.trace);
  if (!sources) return fail("record: " + sources.error());
  a.opt.trace = std::move(sources.value());
  auto r = collector::record(a.opt);
  if (!r) return fail(r.error());
  return r->exit_code;  // the job's, unchanged, even when the trace could not be written
}

Verb add_record(CLI::App& app) {
  auto a = std::make_shared<RecordArgs>();
  auto* cmd = app.add_subcommand("record", "Run a job with the collector injected and record it into a trace:\n"
                                           "  tracetune record [-o OUT.db] [--trace " + collector::trace_source_ids() +
                                               "] -- CMD...");
  cmd->add_option("-o,--output", a->output, "Trace database to write (default trace.db)");
  std::string trace_help = "What to record, comma-separated (default: all):";
  for (const auto& source : collector::kTraceSources)
    trace_help += fmt::format(" {} ({}),", source.id, source.what);
  trace_help.pop_back();
  cmd->add_option("--trace", a->trace, trace_help);
  cmd->add_flag("--no-env", a->no_env, "Do not record the job's environment (secrets are always redacted)");
  cmd->add_option("--raw-dir", a->raw_dir, "Directory for the per-process record files (default OUT.db.raw; must not exist or be empty)");
  cmd->add_flag("--keep-raw", a->opt.keep_raw, "Keep the per-process record files (OUT.db.raw/) after merging");
  cmd->add_option("--max-steps", a->max_steps, "Python jobs: end the job (exit 0) after this many recorded steps "
                                                "(TRACETUNE_MAX_STEPS)")->check(CLI::Range(1, 1000000000));
  cmd->add_option("--pystack-hz", a->pystack_hz, "Python stack samples per second and thread (--trace pystack; "
                                                  "default 100)")->check(CLI::Range(1, 1000));
  cmd->add_option("--steps", a->steps, "Record only steps A to B (A:B, both included, numbered as analyze numbers them); "
                                       "outside them the collector stays armed but writes no events");
  cmd->add_option("--delay", a->delay, "Record from this long after the job starts (5, 5s, 2m)");
  cmd->add_option("--duration", a->duration, "Record for this long (from the start, from --delay, or from --start-on's range)");
  cmd->add_option("--start-on", a->opt.window.start_on, "Record from the first NVTX or Python range whose name matches "
                                                        "this regular expression (POSIX extended)");
  cmd->add_flag("--armed", a->opt.window.armed, "Record nothing until `tracetune capture` asks for a window");
  cmd->add_option("--ring", a->ring, "Flight recorder: keep only the last N seconds (120s, 10m) or steps (50steps) of "
                                     "each process, in a fixed disk budget; dump them on a trigger and at the end");
  cmd->add_option("--ring-budget", a->opt.window.ring_budget_mib, "Flight recorder: MiB of events kept per process "
                                                                  "(default 64)");
  cmd->add_option("--dump-on-hang", a->hang, "Flight recorder: dump when no step ended for this long (60s)");
  cmd->add_option("--dump-signal", a->dump_signal, "Flight recorder: the signal that, sent to any process of the job "
                                                   "(or to record), dumps it: USR1, USR2 (default), RTMIN+N, or none. "
                                                   "A handler the job installs for it still runs");
  cmd->add_option("--dump-on-slow-step", a->opt.window.slow_step_factor, "Flight recorder: dump when a step takes "
                                                                         "over K times the running median");
  cmd->add_option("command", a->opt.command, "The job to run, after --")->required();
  cmd->positionals_at_end();
  return {cmd, [a] { return cmd_record(*a); }};
}

Verb add_analyze(CLI::App& app) {
  auto a = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand("analyze", "Name each step's bottleneck with evidence, estimated gain and the knobs that fix it "
                                            "(docs/analysis.md)");
  cmd->add_option("trace", a->inputs, "A tracetune trace, a Kineto JSON file or directory of ranks, or an nsys export "
                                      "(with --combine: the part files)")->required();
  cmd->add_option("--format", a->format,
                  "Report format: text (terminal), json (versioned schema), md (Markdown), html (one self-contained page "
                  "with charts)")
      ->check(CLI::IsMember({"text", "json", "md", "html"}));
  cmd->add_option("-o,--output", a->output, "Write the report to this file instead of stdout (mode 0600; '-': stdout). "
                                            "A FIFO, device or directory is refused");
  cmd->add_option("--rank", a->rank, "Analyse only this rank");
  cmd->add_option("--steps", a->steps, "Analyse only these step numbers: A:B, A:, :B or A");
  cmd->add_option("--step-range", a->step_range,
                  "Steps are the ranges (NVTX, annotations) whose names match this regex, e.g. '^train_step'; "
                  "without it, a trace with no steps gets them from ProfilerStep#N, step N or iteration N ranges");
  cmd->add_option("--threads", a->threads, "Ranks analysed in parallel (default: one per core)");
  cmd->add_flag("--hta-compat", a->hta_compat,
                "HTA 0.6's definitions (µs rounding, last step dropped, its kernel-name classes) for side-by-side numbers");
  cmd->add_option("--shard", a->shard,
                  "K/N: analyse the K-th of N shares of the ranks, one input file at a time, into the part file -o "
                  "(a {shard} in its name is replaced by K); auto: K and N from the launcher (srun, mpirun, torchrun). "
                  "docs/scale.md");
  cmd->add_flag("--combine", a->combine, "The report from the part files of every shard (same as one process's)");
  return {cmd, [a] { return cmd_analyze(*a); }};
}

Verb add_diff(CLI::App& app) {
  auto a = std::make_shared<DiffArgs>();
  auto* cmd = app.add_subcommand("diff", "Compare two traces: step time and throughput, per-step breakdown, kernels, I/O per\n"
                                         "file, settings and findings (plain words first, then tables; docs/analysis.md):\n"
                                         "  tracetune diff BASE NEW [--format text|json|md] [-o FILE]");
  cmd->add_option("base", a->base, "The trace before (any format analyze reads)")->required();
  cmd->add_option("new", a->next, "The trace after")->required();
  cmd->add_option("--format", a->format, "Report format: text (terminal), json (versioned schema), md (Markdown)")
      ->check(CLI::IsMember({"text", "json", "md"}));
  cmd->add_option("-o,--output", a->output, "Write the report to this file instead of stdout (mode 0600; '-': stdout). "
                                            "A FIFO, device or directory is refused");
  cmd->add_option("--warmup", a->warmup, "First steps of each rank left out before aligning steps by index (default 1)")
      ->check(CLI::Range(0, 1000000));
  return {cmd, [a] { return cmd_diff(*a); }};
}

Verb add_merge(CLI::App& app) {
  struct Args {
    std::vector<std::string> dirs;
    std::string output;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("merge", "Join raw record directories (e.g. one per host, from record --keep-raw) into one trace, aligning clocks");
  cmd->add_option("dirs", a->dirs, "Raw record directories")->required();
  cmd->add_option("-o,--output", a->output, "Output trace database")->required();
  return {cmd, [a] { return cmd_merge(a->dirs, a->output); }};
}

// `tracetune capture PID|--job DIR [--steps N] [--dump]` (docs/collector.md §9.2).
int cmd_capture(const std::string& pid, const std::string& job, std::int64_t steps, bool dump) {
  if (pid.empty() == job.empty()) return usage_error("capture", "name the job: a PID of one of its processes, or --job RAW_DIR");
  std::filesystem::path raw = job;
  if (!pid.empty()) {
    char* end = nullptr;
    const long n = std::strtol(pid.c_str(), &end, 10);
    if (end == pid.c_str() || *end != '\0' || n <= 0) return usage_error("capture", pid + ": not a process id");
    auto found = collector::raw_dir_of_process(n);
    if (!found) return fail("capture: " + found.error());
    raw = found.value();
  }
  const Status st = dump ? collector::request_dump(raw) : collector::request_capture(raw, steps);
  if (!st) return fail("capture: " + st.error());
  std::fprintf(stderr, dump ? "tracetune: capture: flight recorder dump requested from %s\n"
                            : "tracetune: capture: window requested from %s; its trace is written beside the job's "
                              "(OUT.capture-N.db) when it closes\n",
               raw.c_str());
  return 0;
}

Verb add_capture(CLI::App& app) {
  struct Args {
    std::string pid, job;
    std::int64_t steps = 10;
    bool dump = false;
  };
  auto a = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("capture", "Record a window of a running job started with `tracetune record --armed` "
                                            "(every process, from its next step), or dump a --ring job's flight recorder:\n"
                                            "  tracetune capture PID|--job RAW_DIR [--steps N] [--dump]");
  cmd->add_option("pid", a->pid, "A process of the job");
  cmd->add_option("--job", a->job, "The job's raw record directory (record's --raw-dir, default OUT.db.raw)");
  cmd->add_option("--steps", a->steps, "Steps to record (default 10)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1} << 40));
  cmd->add_flag("--dump", a->dump, "Dump the flight recorder (record --ring) instead");
  return {cmd, [a] { return cmd_capture(a->pid, a->job, a->steps, a->dump); }};
}

Verb add_run(CLI::App& app) {
  auto opt = std::make_shared<tuner::RunOptions>();
  auto* cmd = app.add_subcommand("run", "Run a job with a tuned config applied (no recording unless --armed):\n"
                                        "  tracetune run --config tuned.toml [--armed [-o OUT.db]] -- CMD...\n"
                                        "Every setting is checked against the knob catalogue first (tracetune knobs);\n"
                                        "a refused config exits 2 without starting CMD. Format: docs/tuning.md");
  cmd->add_option("-c,--config", opt->config, "The tuned config (TOML; must be yours and not group/other-writable)")->required();
  cmd->add_flag("--check", opt->check_only, "Check the config and print what would be set; run nothing");
  cmd->add_flag("-q,--quiet", opt->quiet, "Do not print the settings applied");
  cmd->add_flag("--armed", opt->armed, "Inject the collector armed: nothing is recorded until `tracetune capture` asks "
                                       "for a window (captures land beside -o as OUT.capture-N.db)");
  auto* output = cmd->add_option("-o,--output", opt->output, "With --armed: the job's trace (default trace.db)");
  cmd->add_option("command", opt->command, "The job to run, after --");
  cmd->positionals_at_end();
  return {cmd, [opt, output] {
            if (output->count() > 0 && !opt->armed) return usage_error("run", "-o is for --armed (run records nothing without it)");
            if (opt->armed && opt->output == kStdout) return refuse_stdout("run", "a trace database");
            return tuner::run_with_config(*opt);
          }};
}

struct TuneArgs {
  tuner::TuneOptions opt;
  std::vector<std::string> args;  // [TRACE] -- CMD...
  std::string output = "tuned.toml", kernel_shapes, budget;
  int kernel_threads = 0;
  int max_trials = 0;  // 0: not given (12, or 200 with --budget: the budget bounds the trials)
};

// CLI11 puts everything after -- into the positional list; a trace, if any, comes before.
// `after_dashdash` counts the arguments that followed --. When a positional came before --,
// CLI11 (2.1) also keeps that -- itself in the list: it is not a second argument.
int cmd_tune(TuneArgs a, std::size_t after_dashdash) {
  if (!a.kernel_shapes.empty()) a.opt.kernels_args.insert(a.opt.kernels_args.end(), {"--shapes", a.kernel_shapes});
  if (a.kernel_threads > 0) a.opt.kernels_args.insert(a.opt.kernels_args.end(), {"--threads", std::to_string(a.kernel_threads)});
  if (after_dashdash == 0 || a.args.size() < after_dashdash)
    return usage_error("tune", std::string("no command given (usage: ") + tuner::kTuneUsage + ")");
  const auto command_begin = a.args.end() - static_cast<std::ptrdiff_t>(after_dashdash);
  std::vector<std::string> lead(a.args.begin(), command_begin);
  if (!lead.empty() && lead.back() == "--") lead.pop_back();
  if (lead.size() > 1) return usage_error("tune", fmt::format("at most one trace before -- (got {} arguments)", lead.size()));
  if (lead.size() == 1) a.opt.trace = lead.front();
  a.opt.command.assign(command_begin, a.args.end());
  if (a.output == kStdout) return refuse_stdout("tune", "the tuned config");
  a.opt.output = a.output;
  if (!a.budget.empty()) {
    auto b = parse_duration(a.budget);
    if (!b) return usage_error("tune", "--budget: " + b.error());
    a.opt.budget_s = b.value();
  }
  // With a wall-time budget the trial count follows from it: a 3-minute budget of 3-second trials
  // ended at 12 trials (half of them the baselines beside the candidates) after 35 s.
  a.opt.max_trials = a.max_trials > 0 ? a.max_trials : a.opt.budget_s > 0 ? 200 : 12;
  a.opt.version = TT_VERSION;
  return tuner::run_tune(a.opt);
}

// tune's search flags (how many trials, how long, what counts as a gain).
void add_tune_search_options(CLI::App& cmd, TuneArgs& a) {
  cmd.add_option("-o,--output", a.output, "Config to write (default tuned.toml; trials go to <name>.trials.json)");
  cmd.add_option("--max-trials", a.max_trials, "Trial budget, the baseline included (default 12; with --budget 200, so that\n"
                                               "the wall time bounds the search)")->check(CLI::Range(1, 1000));
  cmd.add_option("--steps", a.opt.steps, "Steps per trial, warm-up included (default 15)")->check(CLI::Range(2, 1000000));
  cmd.add_option("--warmup", a.opt.warmup, "First steps of each trial not measured (default 3)")->check(CLI::Range(0, 1000000));
  cmd.add_option("--trial-timeout", a.opt.timeout_s, "Seconds per trial before it is killed (SIGTERM, then SIGKILL; default 120)")
      ->check(cli::positive_number());
  cmd.add_option("--min-gain", a.opt.min_gain, "Smallest speedup share a setting must bring to be kept (default 0.03)")
      ->check(cli::finite_number(0.0, 1.0));
  cmd.add_option("--confirm", a.opt.confirm,
                 "Most interleaved baseline/choice pairs after the search (default 10; 0: no confirmation). Sequential:\n"
                 "pairs stop once the interval excludes 1; the choice is applied only when it is above 1")
      ->check(CLI::Range(0, 1000));
  cmd.add_option("--baseline-every", a.opt.baseline_every,
                 "Run the baseline again after every N candidates, each judged against the baselines beside it\n"
                 "(default 2; 0: one baseline, the first run)")
      ->check(CLI::Range(0, 1000));
  cmd.add_option("--run-steps", a.opt.run_steps,
                 "Steps of each confirmation run, measured end to end with start-up (default: the trial length)")
      ->check(CLI::Range(0, 100000000));
  cmd.add_option("--budget", a.budget, "Wall-time cap over the search and the confirmation, e.g. 10m, 90s, 1h "
                                       "(default: none); half of it is kept for the confirmation. --max-trials still applies\n"
                                       "when given");
  cmd.add_option("--early-stop", a.opt.early_stop,
                 "A search trial ends after its warm-up and 3 steps when their median is this many times the best\n"
                 "median so far (default 1.5; 0: off)")
      ->check(cli::finite_number(0.0, 100.0));
}

// tune's flags for what is tried beyond the settings the findings name.
void add_tune_candidate_options(CLI::App& cmd, TuneArgs& a) {
  cmd.add_flag("--kernels", a.opt.kernels, "Also try kernel substitutions (kernels.*): micro-benchmarked and parity-\n"
                                           "checked by `bench kernels` first, then trialled on the job");
  cmd.add_option("--kernels-python", a.opt.kernels_python, "Python with the job's PyTorch, for --kernels (default: the job's own interpreter)");
  cmd.add_option("--kernel-shapes", a.kernel_shapes, "Shapes for --kernels' micro-benchmarks (as bench kernels --shapes)");
  cmd.add_option("--kernel-threads", a.kernel_threads, "torch threads for --kernels' micro-benchmarks (the job's)")
      ->check(CLI::Range(0, 1024));
  cmd.add_flag("--allow-numerics", a.opt.allow_numerics, "Also try settings that change numerical results (TF32, AMP, compression)");
  cmd.add_option("--nccl-sweep", a.opt.nccl_sweep,
                 "A `bench nccl --json` sweep: after the search, try the per-size [[nccl.table]] it suggests (NCCL jobs only)");
  cmd.add_option("--exhaustive", a.opt.exhaustive,
                 "Benchmark helper: afterwards try every value of this knob alone and report the tuner's choice vs the best");
}

Verb add_tune(CLI::App& app, int argc, char** argv) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "Find faster settings for a job with short trial runs and write tuned.toml:\n"
              "  tracetune tune [TRACE] [--max-trials 12] [--steps 15] -- CMD...\n"
              "Records the job (or analyses TRACE), searches only the knobs its findings name (knobs that\n"
              "interact as combinations, bounded by the machine, best predicted first; kept only when faster\n"
              "by more than the noise against the baseline runs beside them: --baseline-every), runs each trial\n"
              "for --steps steps under the collector (TRACETUNE_MAX_STEPS; DataLoader workers get a longer\n"
              "warm-up: workers x prefetch_factor batches), confirms the choice with interleaved baseline/choice\n"
              "pairs until the interval excludes 1 (at most --confirm; steady state and end to end, applied only\n"
              "when the steady-state interval is above 1 and the run is not slower end to end), prints\n"
              "the diff of the last pair and writes tuned.toml plus tuned.trials.json (every trial). TF32, AMP and gradient compression are tried only with\n"
              "--allow-numerics. Apply with `tracetune run --config tuned.toml -- CMD`. docs/tuning.md");
  add_tune_search_options(*cmd, *a);
  add_tune_candidate_options(*cmd, *a);
  cmd->add_flag("--keep-traces", a->opt.keep_traces, "Keep every trial's config, log and trace (in a private temporary directory)");
  cmd->add_flag("-q,--quiet", a->opt.quiet, "No live table");
  cmd->add_option("args", a->args, "[TRACE] -- CMD...: a trace to analyse instead of the baseline recording, then the job");
  cmd->positionals_at_end();
  return {cmd, [a, argc, argv] {
            const auto dashdash = std::find(argv, argv + argc, std::string_view("--"));
            return cmd_tune(*a, dashdash == argv + argc ? 0 : static_cast<std::size_t>(argv + argc - dashdash - 1));
          }};
}

Verb add_knobs(CLI::App& app) {
  return {app.add_subcommand("knobs", "List the knob catalogue: id, type, how applied, allowed values, findings addressed"),
          cmd_knobs};
}

}  // namespace

static int run_cli(int argc, char** argv) {
#if defined(TT_X86_64_LEVEL) && defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("bmi2")) {
    std::fprintf(stderr, "tracetune: this build needs an %s CPU (AVX2, BMI2); rebuild with -DTT_X86_64_LEVEL= for older CPUs\n",
                 TT_X86_64_LEVEL);
    return 1;
  }
#endif
  // A write over the file-size limit (ulimit -f) is an error we report (EFBIG), not a death
  // by SIGXFSZ that loses the job's exit code and leaves temporaries; jobs get the default back.
  std::signal(SIGXFSZ, SIG_IGN);
  // No umask change here: `record` passes it on to the job, which must behave as without us.
  // Every file we create is made private explicitly (0600 files, 0700 directories).
  CLI::App app{"tracetune: a profiler and tuning advisor for training jobs. Record a job (file I/O, processes,\n"
               "NVTX ranges, steps, GPU kernels, copies, syncs and NCCL collectives), or import PyTorch-profiler\n"
               "(Kineto) JSON and Nsight Systems SQLite exports; `analyze` names each step's bottleneck with evidence\n"
               "and the knobs that fix it (docs/analysis.md). Traces are SQLite files (docs/trace-format.md); imports\n"
               "are accepted wherever a trace is. Find faster settings with `tune` and apply them with `run --config`\n"
               "(docs/tuning.md)."};
  app.set_version_flag("--version", std::string("tracetune ") + TT_VERSION);
  app.require_subcommand(1);
  cli::Verbs verbs;
  for (auto* add : {add_import, add_info, add_export, add_record, add_analyze, add_diff, add_merge, add_capture, add_run})
    verbs.push_back(add(app));
  verbs.push_back(add_tune(app, argc, argv));
  cli::add_bench_verbs(app, verbs);
  verbs.push_back(add_knobs(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  // sizes set in the environment are checked before any verb reads them: a bad one is named
  if (auto st = trace::check_environment(); !st) return fail(st.error());
  for (const auto& verb : verbs)
    if (*verb.cmd) return verb.run();
  return 2;
}

// The boundary: whatever escapes a verb (a filesystem error on a path we did not foresee,
// memory exhausted) is one line and exit 1, never an abort.
int main(int argc, char** argv) {
  try {
    return run_cli(argc, argv);
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
