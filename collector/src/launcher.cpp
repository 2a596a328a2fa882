// `tracetune record`: the host side of recording. It prepares a private directory for the
// per-process record files, starts the job with the collector injected through the
// environment (LD_PRELOAD for I/O and process tracking, NVTX_INJECTION64_PATH for NVTX,
// CUDA_INJECTION64_PATH for CUPTI, NCCL_PROFILER_PLUGIN for NCCL, PYTHONPATH for the Python
// integration's sitecustomize), waits for it while forwarding
// signals that were sent to us, and finally merges the records into one trace DB.
//
// The job must behave exactly as without us: it inherits stdin/stdout/stderr, its exit code
// is returned unchanged, and a failure on our side after it started (disk full while
// merging, say) is reported on stderr but never changes that exit code.
#include "tracetune/collector/launcher.h"

#include "tracetune/collector/job_python.h"
#include "raw_dir_watch.h"
#include "tracetune/trace/strings.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "tracetune/collector/elf_probe.h"
#include "tracetune/collector/merge.h"
#include "tracetune/collector/redact.h"
#include "tracetune/collector/window_traces.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/summary.h"

extern char** environ;

namespace tt::collector {
namespace fs = std::filesystem;

namespace {

using trace::self_exe_dir;

fs::path first_existing(std::initializer_list<fs::path> candidates) {
  std::error_code ec;
  for (const auto& c : candidates)
    if (!c.empty() && fs::exists(c, ec)) return c;
  return {};
}

// The job's pid, for the signal handler; whether it leads a process group of its own (then
// the whole group gets what we receive, the terminal's Ctrl-C included, since the terminal
// does not send it there); whether a stop signal arrived.
std::atomic<pid_t> g_child{0};
std::atomic<bool> g_child_group{false};
std::atomic<bool> g_stop_requested{false};

// Signals sent to us by another process (kill, a scheduler) go on to the job. A terminal's
// Ctrl-C (si_code SI_KERNEL) already reached the job, which shares our process group:
// forwarding it would deliver it twice.
void forward_signal(int sig, siginfo_t* info, void*) {
  const pid_t child = g_child.load();
  if (child <= 0) return;
  if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) g_stop_requested.store(true);
  if (g_child_group.load()) {
    ::kill(-child, sig);
    return;
  }
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  ::kill(child, sig);
}

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

struct SignalForwarding {
  struct sigaction old[std::size(kForwarded)]{};
  SignalForwarding() {
    struct sigaction sa {};
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &sa, &old[i]);
  }
  ~SignalForwarding() {
    for (std::size_t i = 0; i < std::size(kForwarded); ++i) ::sigaction(kForwarded[i], &old[i], nullptr);
  }
};

// Spawn attributes for a job: the signals tracetune ignores (SIGXFSZ, see cli/main.cpp) are
// back to their default in the job, which must behave exactly as it would without us.
struct JobSpawnAttr {
  posix_spawnattr_t attr;
  explicit JobSpawnAttr(short flags = 0) {
    posix_spawnattr_init(&attr);
    sigset_t defaults;
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGXFSZ);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setflags(&attr, static_cast<short>(flags | POSIX_SPAWN_SETSIGDEF));
  }
  ~JobSpawnAttr() { posix_spawnattr_destroy(&attr); }
  JobSpawnAttr(const JobSpawnAttr&) = delete;
  JobSpawnAttr& operator=(const JobSpawnAttr&) = delete;
};

// Creates `dir` private to us: 0700, a real directory (not a symlink), owned by us, empty.
Status make_private_dir(const fs::path& dir) {
  if (::mkdir(dir.c_str(), 0700) != 0) {
    if (errno != EEXIST) return make_error(dir.string() + ": " + std::strerror(errno));
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return make_error(dir.string() + ": exists and is not a directory");
    if (st.st_uid != ::geteuid() || (st.st_mode & 0077) != 0)
      return make_error(dir.string() + ": exists and is not private to you (needs mode 0700, your ownership)");
    std::error_code ec;
    if (!fs::is_empty(dir, ec))
      return make_error(dir.string() + ": exists and is not empty (remove it, or choose another -o)");
  }
  ::chmod(dir.c_str(), 0700);
  return {};
}

// The output is ours for the whole run: a second `record` to the same -o would replace the
// first one's trace. An flock on OUT.lock (0600, removed at the end) held until we return;
// the lock dies with us, so a crashed run never blocks the next. After locking, the path
// must still name the file we locked (an earlier holder may have removed it meanwhile).
class OutputLock {
 public:
  static Result<OutputLock> take(const fs::path& output) {
    fs::path lock_path = output;
    lock_path += ".lock";
    for (int attempt = 0; attempt < 8; ++attempt) {
      const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
      if (fd < 0) return make_error(lock_path.string() + ": cannot create the lock: " + std::strerror(errno));
      if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        return make_error(output.string() + ": another tracetune record is writing this trace now (" +
                          lock_path.string() + " is locked); wait for it or choose another -o");
      }
      struct stat held {}, now {};
      if (::fstat(fd, &held) == 0 && ::stat(lock_path.c_str(), &now) == 0 && held.st_ino == now.st_ino &&
          held.st_dev == now.st_dev)
        return OutputLock(lock_path, fd);
      ::close(fd);  // removed by the previous holder after we opened it: take the new one
    }
    return make_error(lock_path.string() + ": cannot take the lock");
  }
  OutputLock(OutputLock&& o) noexcept : path_(std::move(o.path_)), fd_(std::exchange(o.fd_, -1)) {}
  OutputLock& operator=(OutputLock&&) = delete;
  ~OutputLock() {
    if (fd_ < 0) return;
    ::unlink(path_.c_str());  // while still locked: a waiter then finds a fresh file
    ::close(fd_);
  }

 private:
  OutputLock(fs::path path, int fd) : path_(std::move(path)), fd_(fd) {}
  fs::path path_;
  int fd_ = -1;
};

// Where a trace that could not be written can still come from.
std::string merge_later_hint(const fs::path& raw_dir, const fs::path& output) {
  return fmt::format("raw records kept in {}; merge them later with: tracetune merge {} -o {}", raw_dir.string(),
                     raw_dir.string(), output.string());
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

bool has(const std::vector<std::string>& v, std::string_view x) {
  for (const auto& s : v)
    if (s == x) return true;
  return false;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// "killed by SIGSEGV (signal 11, exit code 139)": the job's own exit code alone does not tell a
// crash from an exit(139).
std::string killed_line(int signo) {
  const char* abbrev = ::sigabbrev_np(signo);
  return fmt::format("job          killed by {}{} (signal {}, exit code {})\n", abbrev != nullptr ? "SIG" : "signal ",
                     abbrev != nullptr ? abbrev : std::to_string(signo), signo, 128 + signo);
}

void print_summary(const trace::TraceSummary& summary, const MergeReport& report, const RecordOptions& opt,
                   const fs::path& raw_dir, int job_signal) {
  std::string s = "\n== tracetune record: " + opt.output.string() + "\n";
  if (job_signal != 0) s += killed_line(job_signal);
  s += trace::summary_text(summary);
  s += fmt::format("recorded     {} processes from {} record files{}\n", report.processes, report.files,
                   report.hosts.size() > 1 ? fmt::format(" on {} hosts", report.hosts.size()) : "");
  for (const auto& h : report.hosts)
    if (report.hosts.size() > 1)
      s += fmt::format("  host {}: clock offset {} ns ({} files); {}\n", h.host, h.offset_ns, h.files, h.clock_line());
  std::vector<std::string> missing;
  for (const auto& source : kTraceSources)
    if (!has(opt.trace, source.id)) missing.push_back(fmt::format("{} (not requested)", source.what));
  for (const auto& [program, n] : report.static_programs)
    missing.push_back(fmt::format("I/O of {} (statically linked: LD_PRELOAD cannot reach it; exec'd {} time{})", program,
                                  n, n == 1 ? "" : "s"));
  if (has(opt.trace, "cuda") || has(opt.trace, "nccl"))
    s += "GPU          " + report.gpu_line(!cupti_library_path().empty()) + "\n";
  for (const auto& n : report.gpu_notes) s += "warning      GPU: " + n + "\n";
  s += "not recorded\n";
  for (const auto& m : missing) s += "  " + m + "\n";
  if (missing.empty()) s += "  (nothing left out)\n";
  if (report.truncated > 0)
    s += fmt::format("warning      {} processes ended without an exit record (killed or crashed); their "
                     "events up to the end are kept\n", report.truncated);
  if (report.torn_records > 0)
    s += fmt::format("warning      {} torn records detected and skipped\n", report.torn_records);
  if (report.dropped_records > 0)
    s += fmt::format("warning      {} records could not be written (see diagnostics)\n", report.dropped_records);
  for (const auto& w : report.warnings) s += "warning      " + w + "\n";
  if (opt.keep_raw) s += "raw records  kept in " + raw_dir.string() + "\n";
  std::fputs(s.c_str(), stderr);
}


// Why LD_PRELOAD cannot reach `program`, or "" when it can (or we cannot tell): a static
// executable has no dynamic loader, and the loader ignores LD_PRELOAD for setuid/setgid
// programs. Their dynamically linked children are still recorded.
std::string preload_blocker(const fs::path& program) {
  struct stat st {};
  if (program.empty() || ::stat(program.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  if ((st.st_mode & (S_ISUID | S_ISGID)) != 0) return "is setuid/setgid";
  const int fd = ::open(program.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  const auto linking = elf::linking([fd](void* buf, std::size_t n, std::uint64_t off) {
    return static_cast<long>(::pread(fd, buf, n, static_cast<off_t>(off)));
  });
  const std::string why = linking == elf::Linking::Static ? "is statically linked" : "";
  ::close(fd);
  return why;
}

}  // namespace

// The job's command line for the trace, with secrets redacted as the collector does (redact.h).
std::string redacted_command(const std::vector<std::string>& command) {
  std::string out;
  bool after_secret_flag = false;
  for (const auto& a : command) {
    if (!out.empty()) out += ' ';
    redact::put_arg(a.data(), a.size(), after_secret_flag, [&](const char* s, std::size_t n) { out.append(s, n); });
    after_secret_flag = redact::secret_flag(a.data(), a.size());
  }
  return out;
}

std::string trace_source_ids(std::string_view sep) {
  std::string ids;
  for (const auto& source : kTraceSources) ids += (ids.empty() ? "" : std::string(sep)) + std::string(source.id);
  return ids;
}

Result<std::vector<std::string>> parse_trace_sources(std::string_view list) {
  std::vector<std::string> out;
  for (const std::string_view item : trace::split_list(list)) {
    const bool known = std::any_of(std::begin(kTraceSources), std::end(kTraceSources),
                                   [&](const TraceSource& s) { return s.id == item; });
    if (!known)
      return make_error(fmt::format("unknown --trace item '{}' (known: {})", item, trace_source_ids(", ")));
    out.emplace_back(item);
  }
  return out;
}

namespace {

// Between two looks at the job: 20 ms, less when the tick's fd becomes readable.
void wait_for_tick(const JobTick& tick) {
  if (tick.wake_fd < 0) {
    ::usleep(20'000);
    return;
  }
  pollfd p{tick.wake_fd, POLLIN, 0};
  ::poll(&p, 1, 20);
}

}  // namespace

Result<int> run_job(const std::vector<std::string>& command, const std::vector<std::string>& env,
                    const JobTick& tick) {
  if (command.empty()) return make_error("no command given");
  std::vector<std::string> env_copy = env, args = command;
  std::vector<char*> envp, argv;
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  SignalForwarding forwarding;
  pid_t pid = 0;
  JobSpawnAttr attr;
  const int rc = ::posix_spawnp(&pid, argv[0], nullptr, &attr.attr, argv.data(), envp.data());
  if (rc != 0) return make_error(command[0] + ": " + std::strerror(rc));
  g_child.store(pid);
  int status = 0;
  while (true) {
    const pid_t r = ::waitpid(pid, &status, tick.run ? WNOHANG : 0);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      status = 0;
      break;
    }
    if (r == 0) {
      tick.run();
      wait_for_tick(tick);
    }
  }
  g_child.store(0);
  return status;
}

namespace {

// The processes whose parent is us, from /proc/<pid>/stat (every kernel has it;
// /proc/self/task/*/children needs CONFIG_PROC_CHILDREN).
std::vector<pid_t> children_of_self() {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(f, stat);
    const auto name_end = stat.rfind(')');  // the command name may hold spaces and parentheses
    char state = 0;
    long ppid = 0;
    if (name_end != std::string::npos && std::sscanf(stat.c_str() + name_end + 1, " %c %ld", &state, &ppid) == 2 &&
        ppid == self)
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

// A descendant of the job that left its process group (a daemon that called setsid) escapes
// kill(-group). run_job_limited makes us a child subreaper, so such a process becomes our child
// once its parent is gone. Each round sends SIGTERM to every child we have, gives them
// `grace_s`, SIGKILLs the rest and reaps them all; their own children come to us in turn.
void end_adopted_descendants(double grace_s) {
  using clock = std::chrono::steady_clock;
  for (int round = 0; round < 16; ++round) {
    std::vector<pid_t> left = children_of_self();
    if (left.empty()) return;
    for (pid_t k : left) ::kill(k, SIGTERM);
    const auto deadline = clock::now() + std::chrono::duration<double>(grace_s);
    while (true) {
      std::erase_if(left, [](pid_t k) { return ::waitpid(k, nullptr, WNOHANG) != 0; });  // reaped (or not ours)
      if (left.empty()) break;
      if (clock::now() >= deadline) {
        for (pid_t k : left) ::kill(k, SIGKILL);
        for (pid_t k : left) ::waitpid(k, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace

Result<JobEnd> run_job_limited(const std::vector<std::string>& command, const std::vector<std::string>& env,
                               double timeout_s, double kill_grace_s, const fs::path& log, const JobTick& tick) {
  if (command.empty()) return make_error("no command given");
  std::vector<std::string> env_copy = env, args = command;
  std::vector<char*> envp, argv;
  for (auto& e : env_copy) envp.push_back(e.data());
  envp.push_back(nullptr);
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  SignalForwarding forwarding;
  // Orphans of the job become our children rather than init's: end_adopted_descendants()
  // finds the ones that left the job's process group. (Process-wide, and kept: harmless for a
  // process that reaps what it starts.)
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  JobSpawnAttr job_attr(POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_t& attr = job_attr.attr;
  posix_spawnattr_setpgroup(&attr, 0);  // the child leads a new group
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
    posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  }
  pid_t pid = 0;
  g_stop_requested.store(false);
  const int rc = ::posix_spawnp(&pid, argv[0], &files, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) return make_error(command[0] + ": " + std::strerror(rc));
  g_child_group.store(true);
  g_child.store(pid);

  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(clock::now() - start).count(); };
  JobEnd end;
  double term_sent_at = -1;
  while (true) {
    const pid_t r = ::waitpid(pid, &end.status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) {
      end.status = 0;
      break;
    }
    const double t = elapsed();
    if (timeout_s > 0 && t >= timeout_s && term_sent_at < 0) {
      end.timed_out = true;
      term_sent_at = t;
      ::kill(-pid, SIGTERM);
    } else if (term_sent_at >= 0 && t >= term_sent_at + kill_grace_s) {
      ::kill(-pid, SIGKILL);
      term_sent_at = 1e300;  // once
    }
    if (tick.run) tick.run();
    wait_for_tick(tick);
  }
  // Leftovers of the group (workers that outlived the job's main process) go too, and so do
  // descendants that left the group (setsid daemons): nothing of a trial outlives it.
  ::kill(-pid, end.timed_out ? SIGKILL : SIGTERM);
  end_adopted_descendants(end.timed_out ? 0 : kill_grace_s);
  g_child.store(0);
  g_child_group.store(false);
  end.interrupted = g_stop_requested.exchange(false);
  return end;
}

fs::path collector_library_path() {
  if (const char* env = std::getenv("TRACETUNE_COLLECTOR_LIB"); env != nullptr && *env != '\0') return env;
  const fs::path dir = self_exe_dir();
  return first_existing({
      dir / "../lib/tracetune/libtracetune_collector.so",
#ifdef TT_BUILD_COLLECTOR_LIB
      fs::path(TT_BUILD_COLLECTOR_LIB),
#endif
  });
}

fs::path python_integration_dir() {
  const fs::path dir = self_exe_dir();
  return first_existing({
      dir / "../share/tracetune/python",
#ifdef TT_SOURCE_PYTHON_DIR
      fs::path(TT_SOURCE_PYTHON_DIR),
#endif
  });
}

fs::path cupti_library_path() {
#ifdef TT_BUILD_CUPTI_LIB
  const fs::path dir = self_exe_dir();
  return first_existing({dir / "../lib/tracetune/libtracetune_cupti.so", fs::path(TT_BUILD_CUPTI_LIB)});
#else
  return {};
#endif
}

fs::path nccl_profiler_path() {
  const fs::path dir = self_exe_dir();
  return first_existing({
      dir / "../lib/tracetune/libtracetune_nccl_profiler.so",
#ifdef TT_BUILD_NCCL_PROFILER_LIB
      fs::path(TT_BUILD_NCCL_PROFILER_LIB),
#endif
  });
}

namespace {
// Inherited TRACETUNE_* variables that are settings for the job rather than the state of an
// outer recording: what `tracetune run --config` sets for the job to apply (so
// `run --config cfg -- tracetune record -- JOB` applies cfg to JOB), and switches the user sets
// for the job's libraries. Every other inherited TRACETUNE_* (an outer record's output
// directory, trace list, CUPTI path; a tuner trial's step limits) is dropped.
constexpr std::string_view kInheritedSettings[] = {
    "TRACETUNE_APPLY",          "TRACETUNE_NCCL_TABLE",     "TRACETUNE_KERNELS_LIB", "TRACETUNE_KERNELS_CUDA_LIB",
    "TRACETUNE_RANKS_PER_NODE", "TRACETUNE_CUDA_GRAPHS",    "TRACETUNE_IO_CLOCK",    "TRACETUNE_CUDA_API",
};

bool inherited_setting(std::string_view name) {
  return std::find(std::begin(kInheritedSettings), std::end(kInheritedSettings), name) != std::end(kInheritedSettings);
}
}  // namespace

// The inherited environment the job keeps: not our own TRACETUNE_ settings (but those a nested
// run inherits) and not the injection variables we set; the inherited LD_PRELOAD and
// PYTHONPATH are appended to ours (`ld_preload`, `pythonpath`).
std::vector<std::string> inherited_environment(const RecordOptions& opt, char** base, const std::string& cupti,
                                               const std::string& nccl, std::string& ld_preload,
                                               std::string& pythonpath) {
  std::vector<std::string> env;
  for (char** e = base; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const auto name = kv.substr(0, kv.find('='));
    const auto value = kv.find('=') == std::string_view::npos ? std::string_view() : kv.substr(kv.find('=') + 1);
    // ours replace any inherited value (a nested `tracetune record` records into its own dir)
    if (name == "LD_PRELOAD") {
      if (!value.empty()) ld_preload += ":" + std::string(value);
    } else if (name == "PYTHONPATH") {
      if (!value.empty()) pythonpath += ":" + std::string(value);
    } else if (name == "CUDA_INJECTION64_PATH" && has(opt.trace, "cuda") && !cupti.empty()) {
      // ours replaces theirs: the driver loads one injection library
    } else if (name == "NCCL_PROFILER_PLUGIN" && has(opt.trace, "nccl") && !nccl.empty()) {
      // ours replaces theirs: NCCL loads one profiler plugin
    } else if ((!name.starts_with("TRACETUNE_") || inherited_setting(name)) && name != "NVTX_INJECTION64_PATH") {
      env.emplace_back(kv);
    }
  }
  return env;
}

// opt.extra_env (a trial's settings) over `env`, each replacing an inherited value; true when
// one is a Python setting (TRACETUNE_APPLY, TRACETUNE_MAX_STEPS), which needs our PYTHONPATH.
bool add_extra_environment(const RecordOptions& opt, std::vector<std::string>& env) {
  bool python_settings = false;
  for (const auto& var : opt.extra_env) {
    const std::string& name = var.first;  // not a structured binding: clang 14 cannot capture one
    const std::string& value = var.second;
    if (name == "PYTHONPATH" || name == "LD_PRELOAD") continue;  // ours, above
    python_settings |= name == "TRACETUNE_APPLY" || name == "TRACETUNE_MAX_STEPS";
    std::erase_if(env, [&](const std::string& kv) { return kv.size() > name.size() && kv[name.size()] == '=' &&
                                                           kv.compare(0, name.size(), name) == 0; });
    env.push_back(name + "=" + value);
  }
  return python_settings;
}

std::vector<std::string> job_environment(const RecordOptions& opt, const fs::path& raw_dir, char** base) {
  const std::string lib = collector_library_path().string();
  const std::string py = python_integration_dir().string();
  const std::string cupti = cupti_library_path().string();
  const std::string nccl = nccl_profiler_path().string();
  std::string ld_preload = lib, pythonpath = py;
  std::vector<std::string> env = inherited_environment(opt, base, cupti, nccl, ld_preload, pythonpath);
  if (has(opt.trace, "cuda") && !cupti.empty()) {
    env.push_back("CUDA_INJECTION64_PATH=" + cupti);
    // for the injection library, when the loader cannot find libcupti (collector/cupti/injection.cpp)
    if (const fs::path wheel = find_wheel_cupti(opt.command); !wheel.empty())
      env.push_back("TRACETUNE_CUPTI_LIB=" + wheel.string());
  }
  // Set explicitly: without it NCCL would look for libnccl-profiler.so and then take a
  // profiler from the net plugin library.
  if (has(opt.trace, "nccl") && !nccl.empty()) env.push_back("NCCL_PROFILER_PLUGIN=" + nccl);
  env.push_back("LD_PRELOAD=" + ld_preload);
  env.push_back("TRACETUNE_OUTPUT_DIR=" + raw_dir.string());
  env.push_back("TRACETUNE_TRACE=" + join(opt.trace, ","));
  if (!opt.record_env) env.push_back("TRACETUNE_NO_ENV=1");
  if (has(opt.trace, "nvtx")) env.push_back("NVTX_INJECTION64_PATH=" + lib);
  if (opt.window.ring()) {
    env.push_back("TRACETUNE_RING_CHUNKS=" + std::to_string(opt.window.ring_budget_mib));  // 1 MiB chunks
    env.push_back("TRACETUNE_COLLECTIVE_ENTRY=1");  // host collectives say when they start (hang diagnosis)
    // a step ring: each stepping process publishes where its last N steps start (ring_steps.cpp)
    if (opt.window.ring_steps > 0) env.push_back("TRACETUNE_RING_STEPS=" + std::to_string(opt.window.ring_steps));
    if (opt.window.dump_signal > 0) env.push_back("TRACETUNE_DUMP_SIGNAL=" + std::to_string(opt.window.dump_signal));
  }
  // tracetune.range tells the collector when a Python range starts, for --start-on only
  if (!opt.window.start_on.empty()) env.push_back("TRACETUNE_WINDOW_START_ON=1");
  const bool python_settings = add_extra_environment(opt, env);
  if ((has(opt.trace, "python") || has(opt.trace, "pystack") || python_settings) && !py.empty()) env.push_back("PYTHONPATH=" + pythonpath);
  return env;
}

namespace {
std::int64_t monotonic_now_ns() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// One stderr line per flight recorder dump or capture trace written while the job runs.
void report_partial_trace(const std::string& what, const char* done, const Result<fs::path>& written) {
  if (written)
    std::fprintf(stderr, "tracetune: %s: %s into %s\n", what.c_str(), done, written.value().c_str());
  else
    std::fprintf(stderr, "tracetune: %s: no trace written: %s\n", what.c_str(), written.error().c_str());
}
}  // namespace

// Merges what every process of the job recorded into the trace opt.output (with the command
// and opt.metadata), prints the summary and removes the raw directory unless kept; on failure,
// says so with the `tracetune merge` command that can still write it (outcome.error).
void merge_and_write(const RecordOptions& opt, const fs::path& raw_dir, RecordOutcome& outcome) {
  // the flight recorder's trace at the end: its last N seconds or steps
  MergeOptions mopt = opt.window.ring() ? ring_span(opt.window, monotonic_now_ns()) : MergeOptions{};
  const bool tty = opt.progress && ::isatty(STDERR_FILENO) != 0;
  if (tty)
    mopt.progress = [](std::size_t done, std::size_t total) {
      std::fprintf(stderr, "\rtracetune: merging records %zu/%zu", done, total);
      if (done == total) std::fputc('\n', stderr);
    };
  MergeReport report;
  const fs::path dirs[] = {raw_dir};
  MergeOutput output{opt.output, "tracetune record " TT_COLLECTOR_VERSION, {{"command", redacted_command(opt.command)}}};
  output.metadata.insert(output.metadata.end(), opt.metadata.begin(), opt.metadata.end());
  auto summary = merge_raw_to_file(dirs, mopt, report, output);  // streamed: one process's events at a time
  if (!summary) {
    outcome.error = summary.error();
    std::fprintf(stderr, "tracetune: no trace written: %s (%s)\n", summary.error().c_str(),
                 merge_later_hint(raw_dir, opt.output).c_str());
    return;
  }
  outcome.trace_written = true;
  if (opt.summary) print_summary(summary.value(), report, opt, raw_dir, outcome.signal);
  std::error_code ec;
  if (!opt.keep_raw) fs::remove_all(raw_dir, ec);
}

// The job's program when the collector cannot be injected into it (statically linked, setuid):
// a warning, the job still runs.
void warn_if_not_injectable(const std::string& command) {
  if (const fs::path program = resolve_program(command); !program.empty())
    if (const std::string why = preload_blocker(program); !why.empty())
      std::fprintf(stderr, "tracetune: warning: %s %s: the collector cannot be injected into it; only "
                   "dynamically linked programs it starts will be recorded\n", program.c_str(), why.c_str());
}

// Runs the job, with opt.timeout_s when given (then marking a timeout or an interruption in
// `outcome`); its wait status.
Result<int> run_recorded_job(const RecordOptions& opt, const std::vector<std::string>& env, const JobTick& tick,
                             RecordOutcome& outcome) {
  if (opt.timeout_s <= 0) return run_job(opt.command, env, tick);
  auto end = run_job_limited(opt.command, env, opt.timeout_s, opt.kill_grace_s, opt.job_log, tick);
  if (!end) return make_error(end.error());
  outcome.timed_out = end->timed_out;
  outcome.interrupted = end->interrupted;
  return end->status;
}

Result<RecordOutcome> record(const RecordOptions& opt) {
  if (opt.command.empty()) return make_error("record: no command given (usage: tracetune record -- CMD...)");
  if (collector_library_path().empty())
    return make_error("record: the collector library (libtracetune_collector.so) was not found next to tracetune; "
                      "set TRACETUNE_COLLECTOR_LIB");
  fs::path out_dir = opt.output.parent_path();
  if (out_dir.empty()) out_dir = ".";
  std::error_code ec;
  if (!fs::is_directory(out_dir, ec)) return make_error(opt.output.string() + ": directory does not exist");
  auto lock = OutputLock::take(opt.output);
  if (!lock) return make_error(lock.error());
  const fs::path raw_dir = opt.raw_dir.empty() ? fs::path(opt.output.string() + ".raw") : opt.raw_dir;
  if (auto st = make_private_dir(raw_dir); !st) return make_error(st.error());

  warn_if_not_injectable(opt.command[0]);

  RecordOutcome outcome;
  std::unique_ptr<WindowDriver> window;
  if (opt.window.any()) {
    auto created = WindowDriver::create(raw_dir, opt.window);
    if (!created) {
      fs::remove_all(raw_dir, ec);
      return make_error("record: " + created.error());
    }
    window = std::move(created.value());
  }
  const auto env = job_environment(opt, fs::absolute(raw_dir), environ);
  RawDirWatch watch(raw_dir);  // the job may delete its record files: keep them open
  // woken by the watch's inotify fd: a record file is held as soon as it appears
  int dumps = 0, ticks = 0, pruned = 0;
  std::vector<std::pair<std::string, std::string>> dump_meta{{"command", redacted_command(opt.command)}};
  dump_meta.insert(dump_meta.end(), opt.metadata.begin(), opt.metadata.end());  // e.g. run --armed's tuned.* settings
  const JobTick tick{[&] {
                       watch.poll();
                       if (!window) return;
                       const WindowDriver::Tick done = window->tick();
                       if (opt.window.ring() && ++ticks % 50 == 0) {  // about once a second
                         for (const fs::path& rel : ring_files_to_remove(raw_dir, opt.window, monotonic_now_ns())) {
                           watch.release(rel);
                           pruned += fs::remove(raw_dir / rel, ec) ? 1 : 0;
                         }
                       }
                       if (!done.dump_reason.empty()) {
                         const std::int64_t at = monotonic_now_ns();
                         auto meta = dump_meta;
                         meta.emplace_back("dump.reason", done.dump_reason);
                         meta.emplace_back("dump.at_ns", std::to_string(at));
                         report_partial_trace(done.dump_reason, "flight recorder dumped",
                                              write_ring_dump(raw_dir, opt.output, fmt::format(".dump-{}", ++dumps),
                                                              opt.window, at, std::move(meta)));
                       }
                       if (done.capture > 0)
                         report_partial_trace(fmt::format("capture {}", done.capture), "its window written",
                                              write_partial_trace(raw_dir, opt.output, fmt::format(".capture-{}", done.capture),
                                                                  done.capture_from_ns, done.capture_to_ns, dump_meta));
                     },
                     watch.fd()};
  const Result<int> status = run_recorded_job(opt, env, tick, outcome);
  if (!status) {
    fs::remove_all(raw_dir, ec);
    return make_error(status.error());
  }
  outcome.exit_code = exit_code_of(status.value());
  if (WIFSIGNALED(status.value())) outcome.signal = WTERMSIG(status.value());
  if (const std::string lost = watch.restore(); !lost.empty()) std::fprintf(stderr, "tracetune: warning: %s\n", lost.c_str());
  if (pruned > 0)
    std::fprintf(stderr, "tracetune: flight recorder: %d record file(s) of processes that ended before the last %s "
                 "removed while the job ran\n", pruned,
                 opt.window.ring_s > 0 ? fmt::format("{:g}s", opt.window.ring_s).c_str()
                                       : fmt::format("{} steps", opt.window.ring_steps).c_str());

  merge_and_write(opt, raw_dir, outcome);
  return outcome;
}

}  // namespace tt::collector
