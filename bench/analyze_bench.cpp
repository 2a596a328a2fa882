// Analyzer speed, as ratios measured side by side in one run (never a pass/fail time):
//   1. mtia_rank_0.json.gz: `zcat` vs import + full analysis in memory      target <= 2x zcat
//   2. a generated N-event trace (default 10M, 8 ranks) written to a trace DB, then
//      `tracetune analyze DB` run as a child: wall time and peak RSS      target <= 10 s, <= 1 GB
//      and the same with --threads 1 vs all cores (analysis of N ranks uses all cores)
//
// usage: analyze_bench TRACETUNE [KINETO_FILE] [REPS] [EVENTS]
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "synthetic_trace.h"
#include "tracetune/analyzer/analyze.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

using tt::bench::median_seconds;

// Runs argv as a child; returns wall seconds and the child's peak RSS in MiB.
std::pair<double, double> run_child(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    std::freopen("/dev/null", "w", stdout);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage ru{};
  wait4(pid, &status, 0, &ru);
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) std::fprintf(stderr, "child failed: %s\n", args[0].c_str());
  return {wall, static_cast<double>(ru.ru_maxrss) / 1024.0};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: analyze_bench TRACETUNE [KINETO_FILE] [REPS] [EVENTS]\n");
    return 2;
  }
  const std::string tracetune = fs::absolute(argv[1]).string();
  const fs::path input = argc > 2 ? argv[2] : "tests/data/corpus/kineto/hta/mtia_rank_0.json.gz";
  const int reps = argc > 3 ? std::atoi(argv[3]) : 5;
  const std::size_t events = argc > 4 ? std::strtoull(argv[4], nullptr, 10) : 10'000'000;

  const std::string zcat = "zcat '" + input.string() + "' > /dev/null";
  const double t_zcat = median_seconds(reps, [&] {
    if (std::system(zcat.c_str()) != 0) std::fprintf(stderr, "zcat failed\n");
  });
  std::size_t n = 0, findings = 0;
  double t_analysis_only = 0;
  const double t_full = median_seconds(reps, [&] {
    tt::trace::Trace t;
    const fs::path in[] = {input};
    if (auto st = tt::trace::import_any(in, t); !st) { std::fprintf(stderr, "%s\n", st.error().c_str()); std::exit(1); }
    t.finalize();
    const auto a0 = Clock::now();
    const auto a = tt::analyzer::analyze(t, {}, input.string());
    t_analysis_only = std::chrono::duration<double>(Clock::now() - a0).count();
    n = t.event_count();
    findings = a.findings.size() + tt::analyzer::render_json(a).size() * 0;
  });
  std::printf("%s (%zu events, %zu findings), medians of %d\n", input.filename().c_str(), n, findings, reps);
  std::printf("  zcat > /dev/null               %8.3f s\n", t_zcat);
  std::printf("  import + analyze (in memory)   %8.3f s  %5.2fx zcat (target <= 2x); analysis alone %.3f s\n", t_full,
              t_full / t_zcat, t_analysis_only);

  const fs::path db = fs::temp_directory_path() / ("tt_analyze_bench_" + std::to_string(events) + ".db");
  if (!fs::exists(db)) {
    std::printf("writing a generated %zu-event, 8-rank trace to %s ...\n", events, db.c_str());
    auto t = tt::bench::make_synthetic_trace(events, 8);
    if (auto st = tt::trace::write_trace(t, db, "analyze_bench"); !st) { std::fprintf(stderr, "%s\n", st.error().c_str()); return 1; }
  }
  std::vector<double> all, one;
  double rss_all = 0, rss_one = 0;
  for (int i = 0; i < std::max(1, reps / 2); ++i) {
    auto [w, r] = run_child({tracetune, "analyze", "--format", "json", db.string()});
    all.push_back(w);
    rss_all = std::max(rss_all, r);
    auto [w1, r1] = run_child({tracetune, "analyze", "--format", "json", "--threads", "1", db.string()});
    one.push_back(w1);
    rss_one = std::max(rss_one, r1);
  }
  std::sort(all.begin(), all.end());
  std::sort(one.begin(), one.end());
  const double m_all = all[all.size() / 2], m_one = one[one.size() / 2];
  std::printf("generated trace, %zu events, 8 ranks: `tracetune analyze` (load from the DB + analysis + JSON)\n", events);
  std::printf("  all %u cores   %8.3f s  peak RSS %7.1f MiB  (targets <= 10 s, <= 1024 MiB)\n",
              std::thread::hardware_concurrency(), m_all, rss_all);
  std::printf("  1 thread      %8.3f s  peak RSS %7.1f MiB  (parallel speedup %.2fx)\n", m_one, rss_one, m_one / m_all);
  return 0;
}
