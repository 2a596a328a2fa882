// Applying a tuned config to a job (`tracetune run`). The config is checked completely
// before anything is written or started; then the settings go into private files (0600, in a
// fresh 0700 directory) that only the job reads, the job runs with stdin/stdout/stderr and
// signals passed through, and the files are removed when it ends.
#include "tracetune/trace/file_io.h"
#include "tracetune/tuner/apply.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "tracetune/collector/launcher.h"

extern char** environ;

namespace tt::tuner {
namespace fs = std::filesystem;

namespace {

using trace::self_exe_dir;


// Die of `sig` as the job did (no core file of ours), so our parent sees the same status.
[[noreturn]] void die_of_signal(int sig) {
  struct rlimit no_core {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::signal(sig, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  ::raise(sig);
  std::_Exit(128 + sig);  // a signal that does not terminate (SIGCHLD, ...) cannot kill a child
}

// `run --armed`: the recorder launches the job with the plan's variables, as a tuner trial
// applies a candidate (one launch that applies and records), and the window armed.
Result<collector::RecordOutcome> record_armed(const RunOptions& opt, const TunedConfig& cfg,
                                              std::vector<std::pair<std::string, std::string>> vars) {
  collector::RecordOptions rec;
  rec.command = opt.command;
  rec.output = opt.output;
  rec.extra_env = std::move(vars);
  rec.window.armed = true;
  for (const auto& s : cfg.settings) rec.metadata.emplace_back("tuned." + s.knob.id, display(s.value));
  return collector::record(rec);
}

}  // namespace

Status write_private(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      return make_error(fmt::format("{}: {}", path.string(), std::strerror(e)));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) return make_error(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  return {};
}

fs::path nccl_tuner_plugin_path() {
  std::error_code ec;
  for (const fs::path& c : {self_exe_dir() / "../lib/tracetune/libnccl-tuner-tracetune.so",
#ifdef TT_BUILD_NCCL_TUNER_LIB
                            fs::path(TT_BUILD_NCCL_TUNER_LIB),
#endif
       })
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec);
  return {};
}

fs::path kernels_library_path(bool cuda) {
  std::error_code ec;
  const char* name = cuda ? "libtracetune_kernels_cuda.so" : "libtracetune_kernels.so";
  std::vector<fs::path> candidates = {self_exe_dir() / "../lib/tracetune" / name};
#ifdef TT_BUILD_KERNELS_DIR
  candidates.push_back(fs::path(TT_BUILD_KERNELS_DIR) / name);
#endif
  for (const fs::path& c : candidates)
    if (fs::exists(c, ec)) return fs::weakly_canonical(c, ec);
  return {};
}

ApplyPlan make_plan(const TunedConfig& config, const std::string& source) {
  ApplyPlan plan;
  std::string py;
  for (const auto& s : config.settings) {
    switch (s.knob.apply) {
      case Apply::Env:
        plan.env.emplace_back(s.knob.env, env_string(s.value));
        plan.lines.push_back(fmt::format("{}={}  ({})", s.knob.env, env_string(s.value), s.knob.id));
        break;
      case Apply::Python:
        py += fmt::format("{}\n    \"{}\": {}", py.empty() ? "" : ",", s.knob.id, json_value(s.value));
        plan.lines.push_back(fmt::format("{} = {}  (Python integration)", s.knob.id, display(s.value)));
        break;
      case Apply::NcclTuner:
        break;  // not a [settings] knob; the table is below
    }
  }
  // kernels.* substitutions load the kernel pack inside the job: say where it is
  const bool kernels = std::any_of(config.settings.begin(), config.settings.end(),
                                   [](const auto& s) { return s.knob.id.starts_with("kernels."); });
  for (bool cuda : {false, true})
    if (auto lib = kernels_library_path(cuda); kernels && !lib.empty())
      plan.env.emplace_back(cuda ? "TRACETUNE_KERNELS_CUDA_LIB" : "TRACETUNE_KERNELS_LIB", lib.string());
  if (!py.empty())
    plan.python_json = fmt::format("{{\n  \"format\": \"tracetune-apply\",\n  \"version\": 1,\n  \"source\": {},\n"
                                   "  \"settings\": {{{}\n  }}\n}}\n",
                                   json_value(Value(source)), py);
  if (!config.nccl_table.empty()) {
    plan.nccl_table = nccl_table_text(config.nccl_table);
    plan.lines.push_back(fmt::format("nccl.tuner_table: {} entries  (NCCL tuner plugin)", config.nccl_table.size()));
  }
  return plan;
}

Result<fs::path> make_private_tempdir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = fmt::format("{}/{}-XXXXXX", tmp != nullptr && *tmp == '/' ? tmp : "/tmp", prefix);
  if (::mkdtemp(templ.data()) == nullptr)
    return make_error(fmt::format("cannot create a private directory ({}): {}", templ, std::strerror(errno)));
  return fs::path(templ);
}

Result<std::vector<std::pair<std::string, std::string>>> write_plan_files(const ApplyPlan& plan, const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> vars = plan.env;
  if (!plan.python_json.empty()) {
    const fs::path file = dir / "python-settings.json";
    if (auto st = write_private(file, plan.python_json); !st) return make_error(st.error());
    vars.emplace_back("TRACETUNE_APPLY", file.string());
  }
  if (!plan.nccl_table.empty()) {
    const std::string plugin = nccl_tuner_plugin_path().string();
    if (plugin.empty()) return make_error("the NCCL tuner plugin (libnccl-tuner-tracetune.so) was not found next to tracetune");
    const fs::path file = dir / "nccl-table.txt";
    if (auto st = write_private(file, plan.nccl_table); !st) return make_error(st.error());
    vars.emplace_back("NCCL_TUNER_PLUGIN", plugin);
    vars.emplace_back("TRACETUNE_NCCL_TABLE", file.string());
  }
  return vars;
}

std::vector<std::string> run_environment(const ApplyPlan& plan, char** base, const std::string& python_dir,
                                         const std::string& python_file, const std::string& plugin,
                                         const std::string& table_file) {
  std::vector<std::pair<std::string, std::string>> set = plan.env;
  std::string pythonpath;
  if (!python_file.empty()) {
    set.emplace_back("TRACETUNE_APPLY", python_file);
    pythonpath = python_dir;
  }
  if (!table_file.empty()) {
    set.emplace_back("NCCL_TUNER_PLUGIN", plugin);
    set.emplace_back("TRACETUNE_NCCL_TABLE", table_file);
  }
  std::vector<std::string> env;
  for (char** e = base; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const std::string_view name = kv.substr(0, kv.find('='));
    const std::string_view value = kv.find('=') == std::string_view::npos ? std::string_view() : kv.substr(kv.find('=') + 1);
    if (!pythonpath.empty() && name == "PYTHONPATH") {
      if (!value.empty()) pythonpath += ":" + std::string(value);
      continue;
    }
    bool replaced = false;
    for (const auto& [n, v] : set) replaced |= name == n;
    if (!replaced) env.emplace_back(kv);
  }
  for (const auto& [n, v] : set) env.push_back(n + "=" + v);
  if (!pythonpath.empty()) env.push_back("PYTHONPATH=" + pythonpath);
  return env;
}

namespace {

void remove_private_dir(const fs::path& dir) {
  std::error_code ec;
  if (!dir.empty()) fs::remove_all(dir, ec);
}

// The job started with the plan applied (its files written into a private directory, removed
// when the job ends): by the recorder with --armed, else by itself. The job's exit status; a job
// killed by a signal makes us die of the same signal.
int launch(const RunOptions& opt, const TunedConfig& cfg, const ApplyPlan& plan, const std::string& python_dir,
           const std::string& plugin) {
  auto say = [](const std::string& msg) { std::fprintf(stderr, "tracetune: %s\n", msg.c_str()); };
  fs::path dir;
  std::vector<std::pair<std::string, std::string>> vars = plan.env;  // with the files' variables once written
  if (!plan.python_json.empty() || !plan.nccl_table.empty()) {
    auto d = make_private_tempdir("tracetune-run");
    if (!d) {
      say("run: " + d.error());
      return 1;
    }
    dir = d.value();
    auto written = write_plan_files(plan, dir);
    if (!written) {
      remove_private_dir(dir);
      say("run: " + written.error());
      return 1;
    }
    vars = std::move(written.value());
  }
  if (opt.armed) {
    auto outcome = record_armed(opt, cfg, std::move(vars));
    remove_private_dir(dir);
    if (!outcome) {
      say("run: " + outcome.error());
      return 1;
    }
    if (outcome->signal > 0) die_of_signal(outcome->signal);
    return outcome->exit_code;
  }
  std::string python_file, table_file;
  for (const auto& [name, value] : vars) {
    if (name == "TRACETUNE_APPLY") python_file = value;
    if (name == "TRACETUNE_NCCL_TABLE") table_file = value;
  }
  auto status = collector::run_job(opt.command, run_environment(plan, environ, python_dir, python_file, plugin, table_file));
  remove_private_dir(dir);
  if (!status) {
    say("run: " + status.error());
    return 127;
  }
  const int ws = status.value();
  if (WIFSIGNALED(ws)) die_of_signal(WTERMSIG(ws));
  return WIFEXITED(ws) ? WEXITSTATUS(ws) : 1;
}

}  // namespace

int run_with_config(const RunOptions& opt) {
  auto say = [](const std::string& msg) { std::fprintf(stderr, "tracetune: %s\n", msg.c_str()); };
  auto cat = builtin_catalogue();
  if (!cat) {
    say("run: the built-in knob catalogue is broken: " + cat.error());
    return 2;
  }
  auto cfg = load_tuned_config(opt.config, cat.value());
  if (!cfg) {
    say(cfg.error());
    return 2;
  }
  for (const auto& w : cfg->warnings) say("warning: " + w);
  if (!opt.check_only && opt.command.empty()) {
    say("run: no command given (usage: tracetune run --config tuned.toml -- CMD...)");
    return 2;
  }
  const ApplyPlan plan = make_plan(cfg.value(), fs::absolute(opt.config).string());
  const std::string python_dir = plan.python_json.empty() ? "" : collector::python_integration_dir().string();
  if (!plan.python_json.empty() && python_dir.empty()) {
    say("run: the Python integration (share/tracetune/python) was not found next to tracetune");
    return 2;
  }
  const std::string plugin = plan.nccl_table.empty() ? "" : nccl_tuner_plugin_path().string();
  if (!plan.nccl_table.empty() && plugin.empty()) {
    say("run: the NCCL tuner plugin (libnccl-tuner-tracetune.so) was not found next to tracetune");
    return 2;
  }
  if (!opt.quiet) {
    say(fmt::format("applying {} ({} settings{})", opt.config.string(), cfg->settings.size(),
                    cfg->nccl_table.empty() ? "" : fmt::format(", {} NCCL table entries", cfg->nccl_table.size())));
    for (const auto& l : plan.lines) say("  " + l);
    if (plan.lines.empty()) say("  (nothing to set)");
  }
  if (opt.check_only) return 0;
  if (opt.armed) {
    if (auto st = trace::check_output_target(opt.output); !st) {
      say("run: " + st.error());
      return 2;
    }
  }

  return launch(opt, cfg.value(), plan, python_dir, plugin);
}

}  // namespace tt::tuner
