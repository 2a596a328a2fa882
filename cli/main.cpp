// The `tracetune` command: thin verbs over the modules. Each verb parses its flags, calls one
// module function, prints a result or a one-line error, and returns 0 (ok), 1 (failed) or
// 2 (usage).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/collector/launcher.h"
#include "tracetune/collector/merge.h"
#include "tracetune/trace/exporters.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/summary.h"
#include "tracetune/tuner/apply.h"
#include "tracetune/tuner/knobs.h"
#include "tracetune/tuner/storage_bench.h"

namespace fs = std::filesystem;
using namespace tt;

namespace {

int fail(const std::string& msg) {
  std::fprintf(stderr, "tracetune: %s\n", msg.c_str());
  return 1;
}

// Our DB is read directly; anything else is imported on the fly.
Result<trace::Trace> load(const fs::path& input) {
  if (trace::detect_format(input) == trace::InputFormat::TracetuneDb) return trace::read_trace(input);
  trace::Trace t;
  const fs::path inputs[] = {input};
  if (auto st = trace::import_any(inputs, t); !st) return make_error(st.error());
  t.finalize();
  return t;
}

int cmd_import(const std::vector<std::string>& inputs, const std::string& output, bool quiet) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<fs::path> paths(inputs.begin(), inputs.end());
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
  auto t = load(input);
  if (!t) return fail(t.error());
  const auto s = trace::summarize(t.value());
  std::fputs(json ? trace::summary_json(s).c_str() : trace::summary_text(s).c_str(), stdout);
  return 0;
}

int cmd_export(const std::string& input, const std::string& format, const std::string& output) {
  if (format != "chrome") return fail("unknown export format '" + format + "' (supported: chrome)");
  auto t = load(input);
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

struct AnalyzeArgs {
  std::string input, format = "text", output, steps;
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
      std::fprintf(stderr, "tracetune: analyze: --steps wants A:B, A:, :B or A (step numbers), got '%s'\n", args.steps.c_str());
      return 2;
    }
    opt.steps = r;
  }
  auto t = load(args.input);
  if (!t) return fail(t.error());
  const analyzer::Analysis a = analyzer::analyze(t.value(), opt, args.input);
  std::string text;
  if (args.format == "json") text = analyzer::render_json(a);
  else if (args.format == "md") text = analyzer::render_markdown(a);
  else {
    const bool color = args.output.empty() && isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
    text = analyzer::render_text(a, color);
  }
  if (args.output.empty()) {
    std::fputs(text.c_str(), stdout);
    return 0;
  }
  auto out = trace::AtomicOutput::create(args.output);
  if (!out) return fail(out.error());
  {
    std::FILE* f = std::fopen(out->temp_path().c_str(), "wb");
    if (f == nullptr) return fail(args.output + ": cannot write the report");
    const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    if (std::fclose(f) != 0 || !ok) return fail(args.output + ": cannot write the report (disk full?)");
  }
  if (auto st = out->commit(); !st) return fail(st.error());
  return 0;
}

int cmd_record(collector::RecordOptions opt) {
  auto r = collector::record(opt);
  if (!r) return fail(r.error());
  return r->exit_code;  // the job's, unchanged, even when the trace could not be written
}

int cmd_merge(const std::vector<std::string>& dirs, const std::string& output) {
  std::vector<fs::path> paths(dirs.begin(), dirs.end());
  collector::MergeReport report;
  collector::MergeOptions mopt;
  auto t = collector::merge_raw(paths, mopt, report);
  if (!t) return fail(t.error());
  if (auto st = trace::write_trace(t.value(), output, "tracetune merge " TT_VERSION); !st) return fail(st.error());
  std::printf("%s", trace::summary_text(trace::summarize(t.value())).c_str());
  for (const auto& h : report.hosts)
    std::printf("host %-20s clock offset %lld ns (%zu files)\n", h.host.c_str(), static_cast<long long>(h.offset_ns), h.files);
  if (report.truncated > 0) std::printf("%zu processes ended without an exit record (marked truncated)\n", report.truncated);
  for (const auto& w : report.warnings) std::printf("warning: %s\n", w.c_str());
  std::printf("wrote %s\n", output.c_str());
  return 0;
}

int cmd_bench_storage(tuner::StorageBenchOptions opt, const std::string& threads, const std::string& blocks,
                      const std::string& max_bytes, bool json) {
  auto usage = [](const std::string& msg) {
    std::fprintf(stderr, "tracetune: bench storage: %s\n", msg.c_str());
    return 2;
  };
  auto items = [](const std::string& list) {
    std::vector<std::string> out;
    for (std::size_t pos = 0; pos <= list.size();) {
      const auto comma = std::min(list.find(',', pos), list.size());
      out.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
    return out;
  };
  opt.threads.clear();
  for (const auto& t : items(threads)) {
    char* end = nullptr;
    const long n = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || n < 1 || n > 256) return usage("--threads: '" + t + "' is not a count from 1 to 256");
    opt.threads.push_back(static_cast<int>(n));
  }
  opt.blocks.clear();
  for (const auto& b : items(blocks)) {
    auto v = tuner::parse_size(b);
    if (!v) return usage("--block: " + v.error());
    opt.blocks.push_back(v.value());
  }
  auto mb = tuner::parse_size(max_bytes);
  if (!mb) return usage("--max-bytes: " + mb.error());
  opt.max_bytes = mb.value();
  auto r = tuner::run_storage_bench(opt);
  if (!r) return fail(r.error());
  std::fputs(json ? tuner::storage_bench_json(opt, r.value()).c_str() : tuner::storage_bench_text(opt, r.value()).c_str(), stdout);
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

int main(int argc, char** argv) {
#if defined(TT_X86_64_LEVEL) && defined(__x86_64__)
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("bmi2")) {
    std::fprintf(stderr, "tracetune: this build needs an %s CPU (AVX2, BMI2); rebuild with -DTT_X86_64_LEVEL= for older CPUs\n",
                 TT_X86_64_LEVEL);
    return 1;
  }
#endif
  // No umask change here: `record` passes it on to the job, which must behave as without us.
  // Every file we create is made private explicitly (0600 files, 0700 directories).
  CLI::App app{"tracetune: a profiler and tuning advisor for training jobs. Record a job (file I/O, processes,\n"
               "NVTX ranges, steps), or import PyTorch-profiler (Kineto) JSON and Nsight Systems SQLite exports, and\n"
               "inspect the trace. Traces are SQLite files (docs/trace-format.md); imports are accepted\n"
               "wherever a trace is. Apply tuned settings with `run --config` (docs/tuning.md)."};
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
  std::string rec_trace = "io,nvtx,python,cuda,nccl";
  std::string rec_out = "trace.db";
  bool rec_no_env = false;
  auto* rec = app.add_subcommand("record", "Run a job with the collector injected and record it into a trace:\n"
                                           "  tracetune record [-o OUT.db] [--trace io,nvtx,python,cuda,nccl] -- CMD...");
  rec->add_option("-o,--output", rec_out, "Trace database to write (default trace.db)");
  rec->add_option("--trace", rec_trace, "What to record: comma-separated io, nvtx, python, cuda (CUPTI), nccl (NCCL profiler plugin)");
  rec->add_flag("--no-env", rec_no_env, "Do not record the job's environment (secrets are always redacted)");
  std::string rec_raw;
  rec->add_option("--raw-dir", rec_raw, "Directory for the per-process record files (default OUT.db.raw; must not exist or be empty)");
  rec->add_flag("--keep-raw", rec_opt.keep_raw, "Keep the per-process record files (OUT.db.raw/) after merging");
  rec->add_option("command", rec_opt.command, "The job to run, after --")->required();
  rec->positionals_at_end();

  std::vector<std::string> merge_dirs;
  std::string merge_out;
  AnalyzeArgs an_args;
  auto* an = app.add_subcommand("analyze", "Name each step's bottleneck with evidence, estimated gain and the knobs that fix it "
                                           "(docs/analysis.md)");
  an->add_option("trace", an_args.input, "A tracetune trace, a Kineto JSON file or directory of ranks, or an nsys export")->required();
  an->add_option("--format", an_args.format, "Report format: text (terminal), json (versioned schema), md (Markdown)")
      ->check(CLI::IsMember({"text", "json", "md"}));
  an->add_option("-o,--output", an_args.output, "Write the report to this file instead of stdout (mode 0600)");
  an->add_option("--rank", an_args.rank, "Analyse only this rank");
  an->add_option("--steps", an_args.steps, "Analyse only these step numbers: A:B, A:, :B or A");
  an->add_option("--threads", an_args.threads, "Ranks analysed in parallel (default: one per core)");
  an->add_flag("--hta-compat", an_args.hta_compat,
               "HTA 0.6's definitions (µs rounding, last step dropped, its kernel-name classes) for side-by-side numbers");

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
  if (*exp) return cmd_export(exp_in, exp_format, exp_out);
  if (*mrg) return cmd_merge(merge_dirs, merge_out);
  if (*knobs) return cmd_knobs();
  if (*bench_storage) {
    bs_opt.path = bs_path;
    bs_opt.drop_cache = !bs_cached;
    return cmd_bench_storage(bs_opt, bs_threads, bs_blocks, bs_max, bs_json);
  }
  if (*run) {
    run_opt.config = run_config;
    return tuner::run_with_config(run_opt);
  }
  if (*rec) {
    rec_opt.output = rec_out;
    rec_opt.raw_dir = rec_raw;
    rec_opt.record_env = !rec_no_env;
    rec_opt.trace.clear();
    for (std::size_t pos = 0; pos <= rec_trace.size();) {
      const auto comma = std::min(rec_trace.find(',', pos), rec_trace.size());
      const std::string item = rec_trace.substr(pos, comma - pos);
      if (item != "io" && item != "nvtx" && item != "python" && item != "cuda" && item != "nccl")
        return fail("record: unknown --trace item '" + item + "' (known: io, nvtx, python, cuda, nccl)");
      rec_opt.trace.push_back(item);
      pos = comma + 1;
    }
    return cmd_record(rec_opt);
  }
  return 2;
}
