// The `tracetune` command: thin verbs over the modules. Each verb parses its flags, calls one
// module function, prints a result or a one-line error, and returns 0 (ok), 1 (failed) or
// 2 (usage).
#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/step_ranges.h"
#include "tracetune/analyzer/diff.h"
#include "tracetune/collector/launcher.h"
#include "tracetune/collector/merge.h"
#include "tracetune/trace/exporters.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/strings.h"
#include "tracetune/trace/summary.h"
#include "tracetune/tuner/apply.h"
#include "tracetune/tuner/knobs.h"
#include "tracetune/tuner/storage_bench.h"
#include "tracetune/tuner/tune.h"
#include "tracetune/tuner/collective_model.h"
#include "tracetune/tuner/gpu_bench.h"
#include "tracetune/tuner/kernel_bench.h"

namespace fs = std::filesystem;
using namespace tt;

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "tracetune: %s\n", msg.c_str());
  return 1;
}

// A usage error of a verb: "tracetune: VERB: message" on stderr, exit code 2.
int usage_error(std::string_view verb, const std::string& msg) {
  std::fprintf(stderr, "tracetune: %.*s: %s\n", static_cast<int>(verb.size()), verb.data(), msg.c_str());
  return 2;
}


int cmd_import(const std::vector<std::string>& inputs, const std::string& output, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<fs::path> paths(inputs.begin(), inputs.end());
  if (auto st = trace::check_output_not_input(paths, output); !st) return fail(st.error());
  trace::Trace t;
  if (auto st = trace::import_any(paths, t); !st) return fail(st.error());
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
  if (format != "chrome") return fail("unknown export format '" + format + "' (supported: chrome)");
  const fs::path inputs[] = {input};
  if (auto st = trace::check_output_not_input(inputs, output); !st) return fail(st.error());
  auto t = trace::load_any(input);
  if (!t) return fail(t.error());
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

// "90", "90s", "10m", "1h", "1.5h" -> seconds (> 0).
Result<double> parse_duration(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string_view unit(end);
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
  if (end == text.c_str() || scale < 0 || !(v > 0))
    return make_error("'" + text + "' is not a duration (e.g. 90s, 10m, 1h)");
  return v * scale;
}

bool color_for(const std::string& output) {
  return output.empty() && isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
}

// A report to stdout, or to FILE written atomically (0600).
int emit_report(const std::string& text, const std::string& output) {
  if (output.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  if (auto st = trace::write_file_atomic(output, text); !st) return fail(st.error());
  return 0;
}

struct AnalyzeArgs {
  std::string input, format = "text", output, steps, step_range;
  int rank = -1;
  unsigned threads = 0;
  bool hta_compat = false;
};

int cmd_analyze(const AnalyzeArgs& args) {
  analyzer::Options opt;
  opt.hta_compat = args.hta_compat;
  opt.rank = args.rank;
  opt.threads = args.threads;
  if (!args.steps.empty()) {
    std::pair<std::int64_t, std::int64_t> r;
    if (!parse_steps(args.steps, r)) {
      return usage_error("analyze", "--steps wants A:B, A:, :B or A (step numbers), got '" + args.steps + "'");
    }
    opt.steps = r;
  }
  const fs::path inputs[] = {args.input};
  if (!args.output.empty())
    if (auto st = trace::check_output_not_input(inputs, args.output); !st) return fail(st.error());
  auto t = trace::load_any(args.input);
  if (!t) return fail(t.error());
  const auto step_note = analyzer::choose_step_source(t.value(), args.step_range);
  if (!step_note) return fail(args.input + ": " + step_note.error());
  analyzer::Analysis a = analyzer::analyze(t.value(), opt, args.input);
  if (step_note.value()) a.metrics.notes.insert(a.metrics.notes.begin(), *step_note.value());
  if (opt.rank >= 0 && a.metrics.ranks.empty()) return fail(no_such_rank(t.value(), opt, args.input));
  std::string text;
  if (args.format == "json") text = analyzer::render_json(a);
  else if (args.format == "md") text = analyzer::render_markdown(a);
  else if (args.format == "html") text = analyzer::render_html(a);
  else text = analyzer::render_text(a, color_for(args.output));
  return emit_report(text, args.output);
}

struct DiffArgs {
  std::string base, next, format = "text", output;
  int warmup = 1;
};

int cmd_diff(const DiffArgs& args) {
  const fs::path inputs[] = {args.base, args.next};
  if (!args.output.empty())
    if (auto st = trace::check_output_not_input(inputs, args.output); !st) return fail(st.error());
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

int cmd_record(collector::RecordOptions opt) {
  auto r = collector::record(opt);
  if (!r) return fail(r.error());
  return r->exit_code;  // the job's, unchanged, even when the trace could not be written
}

int cmd_merge(const std::vector<std::string>& dirs, const std::string& output) {
  std::vector<fs::path> paths(dirs.begin(), dirs.end());
  if (auto st = trace::check_output_not_input(paths, output); !st) return fail(st.error());
  collector::MergeReport report;
  collector::MergeOptions mopt;
  auto t = collector::merge_raw(paths, mopt, report);
  if (!t) return fail(t.error());
  if (auto st = trace::write_trace(t.value(), output, "tracetune merge " TT_VERSION); !st) return fail(st.error());
  std::printf("%s", trace::summary_text(trace::summarize(t.value())).c_str());
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

int cmd_bench_storage(tuner::StorageBenchOptions opt, const std::string& threads, const std::string& blocks,
                      const std::string& max_bytes, bool json) {
  opt.threads.clear();
  for (const std::string_view item : trace::split_list(threads)) {
    const std::string t(item);
    char* end = nullptr;
    const long n = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || n < 1 || n > 256) return usage_error("bench storage", "--threads: '" + t + "' is not a count from 1 to 256");
    opt.threads.push_back(static_cast<int>(n));
  }
  opt.blocks.clear();
  for (const std::string_view b : trace::split_list(blocks)) {
    auto v = tuner::parse_size(b);
    if (!v) return usage_error("bench storage", "--block: " + v.error());
    opt.blocks.push_back(v.value());
  }
  auto mb = tuner::parse_size(max_bytes);
  if (!mb) return usage_error("bench storage", "--max-bytes: " + mb.error());
  opt.max_bytes = mb.value();
  auto r = tuner::run_storage_bench(opt);
  if (!r) return fail(r.error());
  std::fputs(json ? tuner::storage_bench_json(opt, r.value()).c_str() : tuner::storage_bench_text(opt, r.value()).c_str(), stdout);
  return 0;
}

// "no GPU" (exit 3, one line) before any GPU bench runs.
int no_gpu(const char* bench) {
  if (const std::string why = tuner::gpu_unavailable_reason(); !why.empty()) {
    std::fprintf(stderr, "tracetune: bench %s: no GPU (%s)\n", bench, why.c_str());
    return tuner::kNoGpuExit;
  }
  return 0;
}

int cmd_bench_h2d(tuner::CopyBenchOptions opt, const std::string& sizes, bool json) {
  auto list = tuner::parse_size_list(sizes);
  if (!list) return usage_error("bench h2d", "--sizes: " + list.error());
  opt.sizes = std::move(list.value());
  if (int rc = no_gpu("h2d")) return rc;
  auto r = tuner::run_copy_bench(opt);
  if (!r) return fail("bench h2d: " + r.error());
  std::fputs(json ? tuner::copy_bench_json(r.value()).c_str() : tuner::copy_bench_text(r.value()).c_str(), stdout);
  return 0;
}

int cmd_bench_gemm(tuner::GemmBenchOptions opt, const std::string& sizes, bool json) {
  auto v = tuner::parse_gemm_sizes(sizes);
  if (!v) return usage_error("bench gemm", "--sizes: " + v.error());
  opt.sizes = v.value();
  if (int rc = no_gpu("gemm")) return rc;
  auto r = tuner::run_gemm_bench(opt);
  if (!r) return fail("bench gemm: " + r.error());
  std::fputs(json ? tuner::gemm_bench_json(r.value()).c_str() : tuner::gemm_bench_text(r.value()).c_str(), stdout);
  return 0;
}

int cmd_bench_launch(const tuner::LaunchBenchOptions& opt, bool json) {
  if (int rc = no_gpu("launch")) return rc;
  auto r = tuner::run_launch_bench(opt);
  if (!r) return fail("bench launch: " + r.error());
  std::fputs(json ? tuner::launch_bench_json(r.value()).c_str() : tuner::launch_bench_text(r.value()).c_str(), stdout);
  return 0;
}

struct NcclArgs {
  tuner::NcclBenchOptions opt;
  std::string sizes, algos = "Ring,Tree", protos = "LL,LL128,Simple", collectives = "allreduce,allgather,reducescatter";
  bool json = false;
};

int cmd_bench_nccl(NcclArgs a) {
  if (a.sizes.empty()) {
    a.opt.sizes = tuner::default_nccl_sizes();
  } else {
    auto v = tuner::parse_size_list(a.sizes);
    if (!v) return usage_error("bench nccl", "--sizes: " + v.error());
    a.opt.sizes = v.value();
  }
  auto algos = tuner::parse_nccl_algos(a.algos);
  if (!algos) return usage_error("bench nccl", "--algos: " + algos.error());
  auto protos = tuner::parse_nccl_protos(a.protos);
  if (!protos) return usage_error("bench nccl", "--protos: " + protos.error());
  auto colls = tuner::parse_nccl_collectives(a.collectives);
  if (!colls) return usage_error("bench nccl", "--collectives: " + colls.error());
  a.opt.algos = algos.value();
  a.opt.protos = protos.value();
  a.opt.collectives = colls.value();
  if (int rc = no_gpu("nccl")) return rc;
  auto r = tuner::run_nccl_bench(a.opt);
  if (!r) return fail("bench nccl: " + r.error());
  std::fputs(a.json ? tuner::nccl_bench_json(r.value()).c_str() : tuner::nccl_bench_text(r.value()).c_str(), stdout);
  return 0;
}

struct ModelArgs {
  std::string sweep;
  int nodes = 2, gpus = 0;
  double inter_alpha_us = 20, inter_gbps = 12.5, gradient_mb = 100, backward_ms = 50;
  std::string buckets = "1,5,10,25,50,100,200";
};

// Fits the α–β model to a sweep and predicts, for N nodes, the all-reduce choice by size and
// the DDP bucket size that exposes the least communication.
int cmd_bench_model(const ModelArgs& a) {
  auto text = trace::read_maybe_gzip(a.sweep);
  if (!text) return fail("bench model: " + text.error());
  auto pts = tuner::parse_sweep_json(std::string_view(text->data(), text->size()));
  if (!pts) return fail("bench model: " + a.sweep + ": " + pts.error());
  std::vector<tuner::SweepPoint> ring;
  int ranks = 0;
  for (const auto& p : pts.value())
    if (p.collective == "allreduce" && p.algorithm == "ring") {
      if (ranks != 0 && p.ranks != ranks) return fail("bench model: ring all-reduce points of different rank counts");
      ranks = p.ranks;
      ring.push_back(p);
    }
  if (ring.empty()) return fail("bench model: the sweep has no ring all-reduce points");
  auto ab = tuner::fit_alpha_beta(ring);
  if (!ab) return fail("bench model: " + ab.error());
  auto link = tuner::intra_link_from_ring(ab.value(), ranks);
  if (!link) return fail("bench model: " + link.error());
  tuner::Cluster c{a.nodes, a.gpus > 0 ? a.gpus : ranks, link.value(), {a.inter_alpha_us, 1e-3 / a.inter_gbps}};
  std::printf("fit (ring all-reduce, %d GPUs, %zu points): T(n) = %.2f us + n / %.2f GB/s  (max error %.1f%%)\n", ranks,
              ab->points, ab->alpha_us, 1e-3 / ab->beta_us_per_byte, 100 * ab->max_rel_error);
  std::printf("intra-node hop: %.3f us, %.2f GB/s; inter-node (given): %.2f us, %.2f GB/s\n", link->alpha_us,
              1e-3 / link->beta_us_per_byte, a.inter_alpha_us, a.inter_gbps);
  std::printf("\n%d nodes x %d GPUs: predicted all-reduce time by size\n%12s %12s %12s %14s  best\n", c.nodes,
              c.gpus_per_node, "bytes", "ring us", "tree us", "hierarch. us");
  for (double n = 1024; n <= 1024.0 * 1024 * 1024; n *= 8) {
    const auto best = tuner::best_allreduce(c, n);
    std::printf("%12.0f %12.1f %12.1f %14.1f  %s\n", n, tuner::allreduce_time_us(tuner::AllReduceAlgo::Ring, c, n),
                tuner::allreduce_time_us(tuner::AllReduceAlgo::Tree, c, n),
                tuner::allreduce_time_us(tuner::AllReduceAlgo::Hierarchical, c, n), std::string(tuner::to_string(best.algo)).c_str());
  }
  std::vector<double> mbs;
  for (const std::string_view item : trace::split_list(a.buckets)) {
    mbs.push_back(std::atof(std::string(item).c_str()));
    if (!(mbs.back() > 0)) return usage_error("bench model", "--buckets wants positive MiB values");
  }
  std::printf("\nDDP, %.0f MiB of gradients, %.1f ms backward:\n%10s %8s %12s %12s\n", a.gradient_mb, a.backward_ms,
              "bucket MiB", "buckets", "comm ms", "exposed ms");
  for (double mb : mbs) {
    const auto p = tuner::simulate_buckets(c, a.gradient_mb * 1024 * 1024, a.backward_ms * 1000, mb);
    std::printf("%10.1f %8d %12.3f %12.3f\n", mb, p.buckets, p.comm_us / 1000, p.exposed_us / 1000);
  }
  const auto best = tuner::best_bucket(c, a.gradient_mb * 1024 * 1024, a.backward_ms * 1000, mbs);
  std::printf("predicted best: ddp.bucket_cap_mb = %g (%s for the last bucket), %.3f ms exposed\n", best.bucket_mb,
              std::string(tuner::to_string(best.algo)).c_str(), best.exposed_us / 1000);
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

  std::vector<std::string> imp_inputs;
  std::string imp_out;
  bool imp_quiet = false;
  auto* imp = app.add_subcommand("import", "Convert PyTorch-profiler (Kineto) JSON or Nsight Systems SQLite exports into a tracetune trace");
  imp->add_option("inputs", imp_inputs, "Kineto .json/.json.gz files, directories of per-rank files, or nsys .sqlite exports")->required();
  imp->add_option("-o,--output", imp_out, "Output trace database (written atomically, mode 0600)")->required();
  imp->add_flag("-q,--quiet", imp_quiet, "Print nothing on success");

  std::string info_in;
  bool info_json = false;
  auto* info = app.add_subcommand("info", "Summarize a trace: duration, ranks, devices, event counts per kind, steps, diagnostics");
  info->add_option("trace", info_in, "A tracetune trace, or any importable input")->required();
  info->add_flag("--json", info_json, "Machine-readable JSON output");

  std::string exp_in, exp_format = "chrome", exp_out;
  auto* exp = app.add_subcommand("export", "Write a trace in another format (Chrome trace JSON for Perfetto / chrome://tracing)");
  exp->add_option("trace", exp_in, "A tracetune trace, or any importable input")->required();
  exp->add_option("--format", exp_format, "Output format")->check(CLI::IsMember({"chrome"}));
  exp->add_option("-o,--output", exp_out, "Output file")->required();

  collector::RecordOptions rec_opt;
  std::string rec_trace = collector::trace_source_ids();
  std::string rec_out = "trace.db";
  bool rec_no_env = false;
  auto* rec = app.add_subcommand("record", "Run a job with the collector injected and record it into a trace:\n"
                                           "  tracetune record [-o OUT.db] [--trace " + collector::trace_source_ids() +
                                               "] -- CMD...");
  rec->add_option("-o,--output", rec_out, "Trace database to write (default trace.db)");
  std::string trace_help = "What to record, comma-separated (default: all):";
  for (const auto& source : collector::kTraceSources)
    trace_help += fmt::format(" {} ({}),", source.id, source.what);
  trace_help.pop_back();
  rec->add_option("--trace", rec_trace, trace_help);
  rec->add_flag("--no-env", rec_no_env, "Do not record the job's environment (secrets are always redacted)");
  std::string rec_raw;
  rec->add_option("--raw-dir", rec_raw, "Directory for the per-process record files (default OUT.db.raw; must not exist or be empty)");
  rec->add_flag("--keep-raw", rec_opt.keep_raw, "Keep the per-process record files (OUT.db.raw/) after merging");
  int rec_max_steps = 0;
  rec->add_option("--max-steps", rec_max_steps, "Python jobs: end the job (exit 0) after this many recorded steps "
                                                "(TRACETUNE_MAX_STEPS)")->check(CLI::Range(1, 1000000000));
  rec->add_option("command", rec_opt.command, "The job to run, after --")->required();
  rec->positionals_at_end();

  std::vector<std::string> merge_dirs;
  std::string merge_out;
  AnalyzeArgs an_args;
  auto* an = app.add_subcommand("analyze", "Name each step's bottleneck with evidence, estimated gain and the knobs that fix it "
                                           "(docs/analysis.md)");
  an->add_option("trace", an_args.input, "A tracetune trace, a Kineto JSON file or directory of ranks, or an nsys export")->required();
  an->add_option("--format", an_args.format,
                 "Report format: text (terminal), json (versioned schema), md (Markdown), html (one self-contained page "
                 "with charts)")
      ->check(CLI::IsMember({"text", "json", "md", "html"}));
  an->add_option("-o,--output", an_args.output, "Write the report to this file instead of stdout (mode 0600)");
  an->add_option("--rank", an_args.rank, "Analyse only this rank");
  an->add_option("--steps", an_args.steps, "Analyse only these step numbers: A:B, A:, :B or A");
  an->add_option("--step-range", an_args.step_range,
                 "Steps are the ranges (NVTX, annotations) whose names match this regex, e.g. '^train_step'; "
                 "without it, a trace with no steps gets them from ProfilerStep#N, step N or iteration N ranges");
  an->add_option("--threads", an_args.threads, "Ranks analysed in parallel (default: one per core)");
  an->add_flag("--hta-compat", an_args.hta_compat,
               "HTA 0.6's definitions (µs rounding, last step dropped, its kernel-name classes) for side-by-side numbers");

  DiffArgs diff_args;
  auto* dif = app.add_subcommand("diff", "Compare two traces: step time and throughput, per-step breakdown, kernels, I/O per\n"
                                         "file, settings and findings (plain words first, then tables; docs/analysis.md):\n"
                                         "  tracetune diff BASE NEW [--format text|json|md] [-o FILE]");
  dif->add_option("base", diff_args.base, "The trace before (any format analyze reads)")->required();
  dif->add_option("new", diff_args.next, "The trace after")->required();
  dif->add_option("--format", diff_args.format, "Report format: text (terminal), json (versioned schema), md (Markdown)")
      ->check(CLI::IsMember({"text", "json", "md"}));
  dif->add_option("-o,--output", diff_args.output, "Write the report to this file instead of stdout (mode 0600)");
  dif->add_option("--warmup", diff_args.warmup, "First steps of each rank left out before aligning steps by index (default 1)")
      ->check(CLI::Range(0, 1000000));

  auto* mrg = app.add_subcommand("merge", "Join raw record directories (e.g. one per host, from record --keep-raw) into one trace, aligning clocks");
  mrg->add_option("dirs", merge_dirs, "Raw record directories")->required();
  mrg->add_option("-o,--output", merge_out, "Output trace database")->required();

  tuner::RunOptions run_opt;
  std::string run_config;
  auto* run = app.add_subcommand("run", "Run a job with a tuned config applied (no recording):\n"
                                        "  tracetune run --config tuned.toml -- CMD...\n"
                                        "Every setting is checked against the knob catalogue first (tracetune knobs);\n"
                                        "a refused config exits 2 without starting CMD. Format: docs/tuning.md");
  run->add_option("-c,--config", run_config, "The tuned config (TOML; must be yours and not group/other-writable)")->required();
  run->add_flag("--check", run_opt.check_only, "Check the config and print what would be set; run nothing");
  run->add_flag("-q,--quiet", run_opt.quiet, "Do not print the settings applied");
  run->add_option("command", run_opt.command, "The job to run, after --");
  run->positionals_at_end();

  tuner::TuneOptions tune_opt;
  std::vector<std::string> tune_args;
  std::string tune_out = "tuned.toml";
  auto* tune = app.add_subcommand(
      "tune", "Find faster settings for a job with short trial runs and write tuned.toml:\n"
              "  tracetune tune [TRACE] [--max-trials 12] [--steps 15] -- CMD...\n"
              "Records the job (or analyses TRACE), searches only the knobs its findings name (coordinate\n"
              "descent, one knob at a time, kept only when faster by more than the noise), runs each trial\n"
              "for --steps steps under the collector (TRACETUNE_MAX_STEPS; DataLoader workers get a longer\n"
              "warm-up: workers x prefetch_factor batches), confirms the choice with --confirm interleaved\n"
              "baseline/choice pairs (applied only when the 95% interval of its speedup is above 1), prints\n"
              "the diff of the last pair and writes tuned.toml plus tuned.trials.json (every trial). TF32, AMP and gradient compression are tried only with\n"
              "--allow-numerics. Apply with `tracetune run --config tuned.toml -- CMD`. docs/tuning.md");
  tune->add_option("-o,--output", tune_out, "Config to write (default tuned.toml; trials go to <name>.trials.json)");
  tune->add_option("--max-trials", tune_opt.max_trials, "Trial budget, the baseline included (default 12)")->check(CLI::Range(1, 1000));
  tune->add_option("--steps", tune_opt.steps, "Steps per trial, warm-up included (default 15)")->check(CLI::Range(2, 1000000));
  tune->add_option("--warmup", tune_opt.warmup, "First steps of each trial not measured (default 3)")->check(CLI::Range(0, 1000000));
  tune->add_option("--trial-timeout", tune_opt.timeout_s, "Seconds per trial before it is killed (SIGTERM, then SIGKILL; default 120)")
      ->check(CLI::PositiveNumber);
  tune->add_option("--min-gain", tune_opt.min_gain, "Smallest speedup share a setting must bring to be kept (default 0.03)")
      ->check(CLI::Range(0.0, 1.0));
  std::string tune_kernel_shapes;
  int tune_kernel_threads = 0;
  tune->add_flag("--kernels", tune_opt.kernels, "Also try kernel substitutions (kernels.*): micro-benchmarked and parity-\n"
                                               "checked by `bench kernels` first, then trialled on the job");
  tune->add_option("--kernels-python", tune_opt.kernels_python, "Python with the job's PyTorch, for --kernels (default python3)");
  tune->add_option("--kernel-shapes", tune_kernel_shapes, "Shapes for --kernels' micro-benchmarks (as bench kernels --shapes)");
  tune->add_option("--kernel-threads", tune_kernel_threads, "torch threads for --kernels' micro-benchmarks (the job's)")
      ->check(CLI::Range(0, 1024));
  tune->add_option("--confirm", tune_opt.confirm,
                   "Interleaved baseline/choice pairs measured after the search; the choice is applied only when\n"
                   "the 95% interval of its speedup is above 1 (default 5; 0: no confirmation)")
      ->check(CLI::Range(0, 1000));
  std::string tune_budget;
  tune->add_option("--budget", tune_budget, "Wall-time cap over the search and the confirmation, e.g. 10m, 90s, 1h "
                                            "(default: none; --max-trials still applies)");
  tune->add_option("--early-stop", tune_opt.early_stop,
                   "A search trial ends after its warm-up and 3 steps when their median is this many times the best\n"
                   "median so far (default 1.5; 0: off)")
      ->check(CLI::Range(0.0, 100.0));
  tune->add_flag("--allow-numerics", tune_opt.allow_numerics, "Also try settings that change numerical results (TF32, AMP, compression)");
  tune->add_flag("--keep-traces", tune_opt.keep_traces, "Keep every trial's config, log and trace (in a private temporary directory)");
  tune->add_option("--nccl-sweep", tune_opt.nccl_sweep,
                   "A `bench nccl --json` sweep: after the search, try the per-size [[nccl.table]] it suggests (NCCL jobs only)");
  tune->add_option("--exhaustive", tune_opt.exhaustive,
                   "Benchmark helper: afterwards try every value of this knob alone and report the tuner's choice vs the best");
  tune->add_flag("-q,--quiet", tune_opt.quiet, "No live table");
  tune->add_option("args", tune_args, "[TRACE] -- CMD...: a trace to analyse instead of the baseline recording, then the job");
  tune->positionals_at_end();

  auto* bench = app.add_subcommand("bench", "Micro-benchmarks for tuning decisions (figures, never pass/fail)");
  bench->require_subcommand(1);
  tuner::StorageBenchOptions bs_opt;
  std::string bs_path, bs_threads = "1,2,4,8", bs_blocks = "64K,1M", bs_max = "1G";
  bool bs_json = false, bs_cached = false;
  auto* bench_storage = bench->add_subcommand(
      "storage", "Read throughput of a data path vs reader threads and block size (whole files, like DataLoader workers):\n"
                 "  tracetune bench storage PATH [--threads 1,2,4,8] [--block 64K,1M] [--json]");
  bench_storage->add_option("path", bs_path, "The job's data: a directory (read recursively) or a file")->required();
  bench_storage->add_option("--threads", bs_threads, "Reader thread counts to try (default 1,2,4,8)");
  bench_storage->add_option("--block", bs_blocks, "Read sizes to try, e.g. 4K,64K,1M (default 64K,1M)");
  bench_storage->add_option("--max-bytes", bs_max, "Read at most this much per trial (default 1G; first files by name)");
  bench_storage->add_flag("--cached", bs_cached, "Keep the page cache between trials (measures cached reads)");
  bench_storage->add_flag("--json", bs_json, "Machine-readable JSON output");

  tuner::CopyBenchOptions h2d_opt;
  std::string h2d_sizes = "4K,64K,1M,16M,64M";
  bool h2d_json = false;
  auto* bench_h2d = bench->add_subcommand("h2d", "Host<->device copy bandwidth, pageable vs pinned memory, by size (needs a GPU;\n"
                                                 "without one: one line and exit 3)");
  bench_h2d->add_option("--device", h2d_opt.device, "CUDA device (default 0)");
  bench_h2d->add_option("--sizes", h2d_sizes, "Copy sizes (default 4K,64K,1M,16M,64M)");
  bench_h2d->add_option("--repeats", h2d_opt.repeats, "Copies per size, median reported (default 10)")->check(CLI::Range(1, 10000));
  bench_h2d->add_flag("--json", h2d_json, "Machine-readable JSON output");
  tuner::GemmBenchOptions gemm_opt;
  std::string gemm_sizes = "1024,4096,8192";
  bool gemm_json = false;
  auto* bench_gemm = bench->add_subcommand(
      "gemm", "cuBLAS GEMM throughput (TFLOP/s, median of timed repetitions) in FP32, TF32, BF16 and FP16, and each\n"
              "format's speedup over FP32 (needs a GPU; without one: one line and exit 3)");
  bench_gemm->add_option("--device", gemm_opt.device, "CUDA device (default 0)");
  bench_gemm->add_option("--sizes", gemm_sizes, "Square matrix sizes M=N=K (default 1024,4096,8192)");
  bench_gemm->add_option("--repeats", gemm_opt.repeats, "Timed GEMMs per format and size, median reported (default 20)")
      ->check(CLI::Range(1, 10000));
  bench_gemm->add_flag("--json", gemm_json, "Machine-readable JSON output");

  tuner::LaunchBenchOptions launch_opt;
  bool launch_json = false;
  auto* bench_launch = bench->add_subcommand(
      "launch", "Kernel launch cost (us per kernel: host side, end to end, GPU) of N empty kernels launched one by one\n"
                "vs replayed as one CUDA graph (needs a GPU; without one: one line and exit 3)");
  bench_launch->add_option("--device", launch_opt.device, "CUDA device (default 0)");
  bench_launch->add_option("--kernels", launch_opt.kernels, "Kernels per repetition (default 1000)")->check(CLI::Range(1, 1000000));
  bench_launch->add_option("--repeats", launch_opt.repeats, "Repetitions, medians reported (default 10)")->check(CLI::Range(1, 10000));
  bench_launch->add_flag("--json", launch_json, "Machine-readable JSON output");

  NcclArgs nccl_args;
  auto* bench_nccl = bench->add_subcommand(
      "nccl", "NCCL sweep over all local GPUs in one process: time, algbw and busbw (as nccl-tests defines them) per\n"
              "collective, algorithm, protocol and size; --json writes the sweep `bench model` reads (needs GPUs;\n"
              "without one: one line and exit 3)");
  bench_nccl->add_option("--sizes", nccl_args.sizes, "Sizes, nccl-tests' size column (default 8 to 1G, doubling)");
  bench_nccl->add_option("--algos", nccl_args.algos, "NCCL_ALGO values to try (default Ring,Tree)");
  bench_nccl->add_option("--protos", nccl_args.protos, "NCCL_PROTO values to try (default LL,LL128,Simple)");
  bench_nccl->add_option("--collectives", nccl_args.collectives, "Collectives (default allreduce,allgather,reducescatter)");
  bench_nccl->add_option("--gpus", nccl_args.opt.gpus, "GPUs to use (default: all visible)")->check(CLI::Range(1, 1024));
  bench_nccl->add_option("--iters", nccl_args.opt.iters, "Timed operations per point (default 20)")->check(CLI::Range(1, 100000));
  bench_nccl->add_option("--warmup", nccl_args.opt.warmup, "Untimed operations first (default 5)")->check(CLI::Range(0, 100000));
  bench_nccl->add_flag("--json", nccl_args.json, "The sweep as JSON (the input of `tracetune bench model`)");

  ModelArgs model_args;
  auto* bench_model = bench->add_subcommand(
      "model", "Fit the alpha-beta all-reduce model to an NCCL sweep (JSON: {\"points\": [{collective, algorithm,\n"
               "protocol, bytes, ranks, time_us}]}) and predict, for N nodes, the all-reduce algorithm by size and the\n"
               "DDP bucket size exposing the least communication");
  bench_model->add_option("sweep", model_args.sweep, "The sweep JSON file")->required();
  bench_model->add_option("--nodes", model_args.nodes, "Nodes to predict for (default 2)")->check(CLI::Range(1, 100000));
  bench_model->add_option("--gpus-per-node", model_args.gpus, "GPUs per node (default: the sweep's rank count)")->check(CLI::Range(1, 1024));
  bench_model->add_option("--inter-alpha-us", model_args.inter_alpha_us, "Node-to-node latency per hop, us (default 20)")->check(CLI::PositiveNumber);
  bench_model->add_option("--inter-gbps", model_args.inter_gbps, "Node-to-node bandwidth per NIC, GB/s (default 12.5)")->check(CLI::PositiveNumber);
  bench_model->add_option("--gradient-mb", model_args.gradient_mb, "Gradient size, MiB (default 100)")->check(CLI::PositiveNumber);
  bench_model->add_option("--backward-ms", model_args.backward_ms, "Backward pass time, ms (default 50)")->check(CLI::PositiveNumber);
  bench_model->add_option("--buckets", model_args.buckets, "Bucket sizes to compare, MiB (default 1,5,10,25,50,100,200)");

  tuner::KernelBenchOptions kb_opt;
  std::string kb_only, kb_shapes, kb_device = "cpu";
  int kb_threads = 0, kb_warmup = 3, kb_repeats = 15;
  bool kb_json = false, kb_numerics = false;
  auto* bench_kernels = bench->add_subcommand(
      "kernels", "Kernel substitutions (LayerNorm, softmax + cross-entropy, optimizer step) against the stock PyTorch\n"
                 "ops at given shapes: forward + backward medians, the ratio, and the parity check of outputs and\n"
                 "gradients against the tolerances of each entry's numerics class (runs in the job's Python)");
  bench_kernels->add_option("--python", kb_opt.python, "Python interpreter with the job's PyTorch (default python3)");
  bench_kernels->add_option("--only", kb_only, "Substitution ids, comma-separated (layernorm,cross_entropy,optimizer)");
  bench_kernels->add_option("--shapes", kb_shapes, "id=ROWSxCOLS,... (optimizer: TENSORSxELEMENTS; defaults\n"
                                                   "layernorm=2048x256, cross_entropy=512x32000, optimizer=24x65536)");
  bench_kernels->add_option("--device", kb_device, "cpu or cuda (default cpu)")->check(CLI::IsMember({"cpu", "cuda"}));
  bench_kernels->add_option("--threads", kb_threads, "torch intra-op threads (default: PyTorch's)")->check(CLI::Range(0, 1024));
  bench_kernels->add_option("--warmup", kb_warmup, "Untimed runs of each first (default 3)")->check(CLI::Range(0, 1000));
  bench_kernels->add_option("--repeats", kb_repeats, "Timed runs of each, interleaved (default 15)")->check(CLI::Range(3, 100000));
  bench_kernels->add_flag("--allow-numerics", kb_numerics, "Also try implementations whose numerics class changes results");
  bench_kernels->add_flag("--json", kb_json, "Results as JSON");

  auto* knobs = app.add_subcommand("knobs", "List the knob catalogue: id, type, how applied, allowed values, findings addressed");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (*imp) return cmd_import(imp_inputs, imp_out, imp_quiet);
  if (*info) return cmd_info(info_in, info_json);
  if (*an) return cmd_analyze(an_args);
  if (*dif) return cmd_diff(diff_args);
  if (*exp) return cmd_export(exp_in, exp_format, exp_out);
  if (*mrg) return cmd_merge(merge_dirs, merge_out);
  if (*knobs) return cmd_knobs();
  if (*bench_h2d) return cmd_bench_h2d(h2d_opt, h2d_sizes, h2d_json);
  if (*bench_gemm) return cmd_bench_gemm(gemm_opt, gemm_sizes, gemm_json);
  if (*bench_launch) return cmd_bench_launch(launch_opt, launch_json);
  if (*bench_nccl) return cmd_bench_nccl(nccl_args);
  if (*bench_model) return cmd_bench_model(model_args);
  if (*bench_kernels) {
    kb_opt.args = {"--device", kb_device, "--threads", std::to_string(kb_threads), "--warmup", std::to_string(kb_warmup),
                   "--repeats", std::to_string(kb_repeats)};
    for (auto [flag, value] : {std::pair{"--only", &kb_only}, std::pair{"--shapes", &kb_shapes}})
      if (!value->empty()) kb_opt.args.insert(kb_opt.args.end(), {flag, *value});
    if (kb_json) kb_opt.args.push_back("--json");
    if (kb_numerics) kb_opt.args.push_back("--allow-numerics");
    return tuner::run_kernel_bench(kb_opt);
  }
  if (*bench_storage) {
    bs_opt.path = bs_path;
    bs_opt.drop_cache = !bs_cached;
    return cmd_bench_storage(bs_opt, bs_threads, bs_blocks, bs_max, bs_json);
  }
  if (*tune) {
    if (!tune_kernel_shapes.empty()) tune_opt.kernels_args.insert(tune_opt.kernels_args.end(), {"--shapes", tune_kernel_shapes});
    if (tune_kernel_threads > 0) tune_opt.kernels_args.insert(tune_opt.kernels_args.end(), {"--threads", std::to_string(tune_kernel_threads)});
    // CLI11 puts everything after -- into the positional list; a trace, if any, comes before.
    const auto dashdash = std::find(argv, argv + argc, std::string_view("--"));
    const std::size_t cmd_len = dashdash == argv + argc ? 0 : static_cast<std::size_t>(argv + argc - dashdash - 1);
    if (cmd_len == 0 || tune_args.size() < cmd_len)
      return usage_error("tune", std::string("no command given (usage: ") + tuner::kTuneUsage + ")");
    const std::size_t lead = tune_args.size() - cmd_len;
    if (lead > 1) return usage_error("tune", fmt::format("at most one trace before -- (got {} arguments)", lead));
    if (lead == 1) tune_opt.trace = tune_args[0];
    tune_opt.command.assign(tune_args.begin() + static_cast<std::ptrdiff_t>(lead), tune_args.end());
    tune_opt.output = tune_out;
    if (!tune_budget.empty()) {
      auto b = parse_duration(tune_budget);
      if (!b) return usage_error("tune", "--budget: " + b.error());
      tune_opt.budget_s = b.value();
    }
    tune_opt.version = TT_VERSION;
    return tuner::run_tune(tune_opt);
  }
  if (*run) {
    run_opt.config = run_config;
    return tuner::run_with_config(run_opt);
  }
  if (*rec) {
    rec_opt.output = rec_out;
    rec_opt.raw_dir = rec_raw;
    rec_opt.record_env = !rec_no_env;
    if (rec_max_steps > 0) rec_opt.extra_env.emplace_back("TRACETUNE_MAX_STEPS", std::to_string(rec_max_steps));
    auto sources = collector::parse_trace_sources(rec_trace);
    if (!sources) return fail("record: " + sources.error());
    rec_opt.trace = std::move(sources.value());
    return cmd_record(rec_opt);
  }
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
