// Recording windows, host side (window.h). The job's side is collector/preload/window.cpp.
#include "tracetune/collector/window.h"

#include <fcntl.h>
#include <regex.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <map>
#include <cstdio>
#include <string_view>
#include <cstring>

#include <fmt/format.h>

#include "tracetune/collector/record_reader.h"
#include "tracetune/collector/window_control.h"

namespace tt::collector {
namespace fs = std::filesystem;

namespace {

std::int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::optional<std::int64_t> parse_step_number(std::string_view s) {
  std::int64_t v = -1;
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size() || v < 0) return std::nullopt;
  return v;
}

void copy_text(char (&to)[256], const std::string& from) {
  const std::size_t n = std::min(from.size(), sizeof to - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

std::string seconds(double s) { return fmt::format("{:g}s", s); }

WindowControl* map_control(int fd) {
  void* p = ::mmap(nullptr, sizeof(WindowControl), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : static_cast<WindowControl*>(p);
}

template <class T>
T load(const T& v) { return __atomic_load_n(&v, __ATOMIC_ACQUIRE); }

void add_holder(WindowControl* w) {
  if (__atomic_fetch_add(&w->holders, 1, __ATOMIC_ACQ_REL) == 0) {
    std::int64_t none = 0;
    const std::int64_t t = monotonic_ns();
    __atomic_compare_exchange_n(&w->first_open_ns, &none, t, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    __atomic_store_n(&w->last_open_ns, t, __ATOMIC_RELEASE);
    __atomic_fetch_add(&w->times_opened, 1, __ATOMIC_ACQ_REL);
  }
}

void remove_holder(WindowControl* w) {
  std::uint32_t cur = load(w->holders);
  while (cur > 0 && !__atomic_compare_exchange_n(&w->holders, &cur, cur - 1, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
  }
  if (cur == 1) __atomic_store_n(&w->last_close_ns, monotonic_ns(), __ATOMIC_RELEASE);
}

}  // namespace

std::string WindowRequest::describe() const {
  std::vector<std::string> parts;
  if (steps_first >= 0) parts.push_back(fmt::format("steps {}:{}", steps_first, steps_last));
  if (!start_on.empty()) parts.push_back("start-on " + start_on);
  if (delay_s > 0) parts.push_back("delay " + seconds(delay_s));
  if (duration_s > 0) parts.push_back("duration " + seconds(duration_s));
  if (armed) parts.push_back("armed");
  if (ring())
    parts.push_back(fmt::format("ring {} ({} MiB per process)",
                                ring_steps > 0 ? fmt::format("{} steps", ring_steps) : seconds(ring_s), ring_budget_mib));
  if (ring() && dump_signal > 0) parts.push_back("dump on " + signal_name(dump_signal));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string signal_name(int signo) {
  if (signo == SIGUSR1) return "SIGUSR1";
  if (signo == SIGUSR2) return "SIGUSR2";
  if (signo >= SIGRTMIN && signo <= SIGRTMAX) return fmt::format("SIGRTMIN+{}", signo - SIGRTMIN);
  return fmt::format("signal {}", signo);
}

Result<int> parse_dump_signal(const std::string& text) {
  std::string_view name(text);
  if (name == "none") return 0;
  if (name.starts_with("SIG")) name.remove_prefix(3);
  int signo = -1;
  if (name == "USR1") signo = SIGUSR1;
  if (name == "USR2") signo = SIGUSR2;
  if (name.starts_with("RTMIN+")) {
    if (const auto n = parse_step_number(name.substr(6)); n && *n <= SIGRTMAX - SIGRTMIN) signo = SIGRTMIN + static_cast<int>(*n);
  }
  if (const auto n = parse_step_number(name); n && *n < 1024) signo = static_cast<int>(*n);
  if (signo == SIGUSR1 || signo == SIGUSR2 || (signo >= SIGRTMIN && signo <= SIGRTMAX)) return signo;
  return make_error("--dump-signal: " + text + ": expected USR1, USR2, RTMIN+N (or their numbers) or none");
}

Result<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text) {
  const auto colon = text.find(':');
  if (colon == std::string::npos) return make_error("--steps: " + text + ": expected A:B (step numbers, both included)");
  const auto a = parse_step_number(std::string_view(text).substr(0, colon));
  const auto b = parse_step_number(std::string_view(text).substr(colon + 1));
  if (!a || !b) return make_error("--steps: " + text + ": A and B must be step numbers (0, 1, 2, ...)");
  if (*b < *a) return make_error("--steps: " + text + ": the end is before the start");
  return std::pair{*a, *b};
}

Result<void> check_window(const WindowRequest& w) {
  if (w.delay_s < 0 || w.duration_s < 0) return make_error("--delay and --duration must not be negative");
  if (w.steps_first >= 0 && (w.delay_s > 0 || w.duration_s > 0 || !w.start_on.empty()))
    return make_error("--steps cannot be combined with --delay, --duration or --start-on");
  if (!w.start_on.empty() && w.delay_s > 0) return make_error("--start-on cannot be combined with --delay");
  if (w.ring() && (w.steps_first >= 0 || w.delay_s > 0 || w.duration_s > 0 || !w.start_on.empty() || w.armed))
    return make_error("--ring records all the time: it cannot be combined with a window option");
  if (!w.ring() && (w.hang_s > 0 || w.slow_step_factor > 0 || w.dump_signal > 0))
    return make_error("--dump-on-hang, --dump-on-slow-step and --dump-signal need --ring");
  if (w.ring_s > 0 && w.ring_steps > 0) return make_error("--ring: seconds or steps, not both");
  if (w.ring() && (w.ring_budget_mib < 2 || w.ring_budget_mib > 4096))
    return make_error("--ring-budget: between 2 and 4096 MiB per process");
  if (w.slow_step_factor != 0 && w.slow_step_factor <= 1)
    return make_error("--dump-on-slow-step: the factor must be above 1");
  if (w.start_on.size() >= 256) return make_error("--start-on: the expression is longer than 255 characters");
  if (!w.start_on.empty()) {
    regex_t re;
    const int rc = regcomp(&re, w.start_on.c_str(), REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
      char why[256];
      regerror(rc, &re, why, sizeof why);
      return make_error("--start-on: " + w.start_on + ": " + why);
    }
    regfree(&re);
  }
  return {};
}

Result<std::unique_ptr<WindowDriver>> WindowDriver::create(const fs::path& raw_dir, const WindowRequest& w) {
  const fs::path path = raw_dir / kWindowControlName;
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return make_error(path.string() + ": " + std::strerror(errno));
  const bool sized = ::ftruncate(fd, sizeof(WindowControl)) == 0;
  WindowControl* c = sized ? map_control(fd) : nullptr;
  const int err = errno;
  ::close(fd);
  if (c == nullptr) return make_error(path.string() + ": " + std::strerror(err));
  c->version = kWindowControlVersion;
  c->steps_first = w.steps_first;
  c->steps_last = w.steps_last;
  copy_text(c->start_on, w.start_on);
  copy_text(c->spec, w.describe());
  // A step window from step 0 is open from the first instruction: the launcher holds it until
  // the first process is past step B (preload/window.cpp releases the hold).
  // A --duration without --delay opens at once.
  if (w.steps_first == 0) {
    c->launcher_hold = 1;
    add_holder(c);
  }
  if (w.ring()) add_holder(c);  // the flight recorder records all the time; the ring bounds it
  c->slow_step_permille = static_cast<std::int64_t>(w.slow_step_factor * 1000);
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(c->magic, kWindowControlMagic, sizeof c->magic);  // last: processes accept it complete
  auto driver = std::unique_ptr<WindowDriver>(new WindowDriver(c, w));
  (void)driver->tick();  // a window open from the start is open before the job starts
  return driver;
}

WindowDriver::WindowDriver(WindowControl* control, WindowRequest w)
    : control_(control), request_(std::move(w)), job_start_ns_(monotonic_ns()) {}

WindowDriver::~WindowDriver() { ::munmap(control_, sizeof(WindowControl)); }

WindowDriver::Tick WindowDriver::tick() {
  const std::int64_t now = monotonic_ns();
  time_transitions(now);
  Tick out;
  capture_closed(out);
  if (request_.ring()) out.dump_reason = dump_reason(now);
  return out;
}

std::string WindowDriver::dump_reason(std::int64_t now) {
  if (const std::int64_t asked = load(control_->dump_request); asked > dumps_requested_) {
    dumps_requested_ = asked;
    return "tracetune capture --dump";
  }
  if (const std::int64_t signalled = load(control_->signal_dumps); signalled > signal_dumps_seen_) {
    signal_dumps_seen_ = signalled;
    return signal_name(request_.dump_signal);
  }
  if (const std::int64_t slow = load(control_->slow_steps); slow > slow_steps_seen_) {
    slow_steps_seen_ = slow;
    return fmt::format("a step slower than {:g} x the running median", request_.slow_step_factor);
  }
  const std::int64_t last_step = load(control_->last_step_end_ns);
  if (request_.hang_s > 0 && last_step > 0 && last_step != stalled_since_step_ &&
      now - last_step > static_cast<std::int64_t>(request_.hang_s * 1e9)) {
    stalled_since_step_ = last_step;  // one dump per stall
    return fmt::format("no step for {:g} s (hang)", request_.hang_s);
  }
  return {};
}

// A capture's window has closed since its request: the span of its trace (opening to closing).
int WindowDriver::capture_closed(Tick& out) {
  if (const std::int64_t request = load(control_->capture_request); request > captures_seen_) {
    captures_seen_ = request;
    capture_pending_since_ = load(control_->capture_requested_ns);
  }
  if (capture_pending_since_ == 0 || load(control_->holders) != 0) return 0;
  const std::int64_t opened = load(control_->last_open_ns), closed = load(control_->last_close_ns);
  if (opened < capture_pending_since_ || closed < opened) return 0;
  capture_pending_since_ = 0;
  out.capture = static_cast<int>(captures_seen_);
  out.capture_from_ns = opened;
  out.capture_to_ns = closed;
  return out.capture;
}

void WindowDriver::time_transitions(std::int64_t now) {
  const bool timed = request_.delay_s > 0 || (request_.duration_s > 0 && request_.start_on.empty());
  if (timed && !time_opened_ && now >= job_start_ns_ + static_cast<std::int64_t>(request_.delay_s * 1e9)) {
    time_opened_ = true;
    time_opened_ns_ = now;
    add_holder(control_);
  }
  if (request_.duration_s <= 0 || time_closed_) return;
  // the duration counts from the time window's opening, or from the --start-on range's start
  std::int64_t opened = 0;
  if (timed && time_opened_) opened = time_opened_ns_;
  if (!request_.start_on.empty() && load(control_->start_on_fired) != 0) opened = load(control_->start_on_fired_ns);
  if (opened == 0 || now < opened + static_cast<std::int64_t>(request_.duration_s * 1e9)) return;
  time_closed_ = true;
  remove_holder(control_);
}

namespace {
Result<std::shared_ptr<WindowControl>> open_for_request(const fs::path& raw_dir) { return open_window_control(raw_dir); }
}  // namespace

namespace {
bool ended(const RecordFileHeader& h) { return (h.flags & (kExited | kExecReplaced)) != 0 && h.end_mono_ns > 0; }
}  // namespace

std::vector<fs::path> ring_files_out_of_span(const std::vector<std::pair<fs::path, RecordFileHeader>>& files,
                                             const WindowRequest& ring, std::int64_t now_ns) {
  std::vector<fs::path> out;
  if (ring.ring_s > 0) {
    const std::int64_t cutoff = now_ns - static_cast<std::int64_t>(ring.ring_s * 1e9);
    for (const auto& [path, h] : files)
      if (ended(h) && h.end_mono_ns < cutoff) out.push_back(path);
    return out;
  }
  if (ring.ring_steps <= 0) return out;
  // each host's earliest cut among its stepping processes; none while one of them holds fewer
  // than N steps (a dump then keeps everything of its host's processes without steps)
  std::map<std::string, std::int64_t> host_cut;
  for (const auto& [path, h] : files) {
    if (h.ring_steps_written <= 0) continue;
    const std::int64_t cut = h.ring_steps_written >= ring.ring_steps && h.ring_cut_ns > 0 ? h.ring_cut_ns : INT64_MIN;
    auto [it, fresh] = host_cut.emplace(h.host, cut);
    if (!fresh) it->second = std::min(it->second, cut);
  }
  for (const auto& [path, h] : files) {
    const auto cut = host_cut.find(h.host);
    if (cut != host_cut.end() && h.ring_steps_written == 0 && ended(h) && h.end_mono_ns < cut->second)
      out.push_back(path);
  }
  return out;
}

std::vector<fs::path> ring_files_to_remove(const fs::path& raw_dir, const WindowRequest& ring, std::int64_t now_ns) {
  std::vector<std::pair<fs::path, RecordFileHeader>> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(raw_dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".ttr" || !it->is_regular_file(ec)) continue;
    if (auto h = read_record_header(it->path())) files.emplace_back(fs::relative(it->path(), raw_dir, ec), std::move(h.value()));
  }
  return ring_files_out_of_span(files, ring, now_ns);
}

Result<void> request_capture(const fs::path& raw_dir, std::int64_t steps) {
  auto control = open_for_request(raw_dir);
  if (!control) return make_error(control.error());
  WindowControl* c = control->get();
  __atomic_store_n(&c->capture_steps, steps, __ATOMIC_RELEASE);
  __atomic_store_n(&c->capture_requested_ns, monotonic_ns(), __ATOMIC_RELEASE);
  __atomic_fetch_add(&c->capture_request, 1, __ATOMIC_ACQ_REL);  // last: the request is complete
  return {};
}

Result<void> request_dump(const fs::path& raw_dir) {
  auto control = open_for_request(raw_dir);
  if (!control) return make_error(control.error());
  if (std::string_view((*control)->spec).find("ring") == std::string_view::npos)
    return make_error("--dump: the job was not started with tracetune record --ring");
  __atomic_fetch_add(&(*control)->dump_request, 1, __ATOMIC_ACQ_REL);
  return {};
}

Result<fs::path> raw_dir_of_process(long pid) {
  const fs::path environ_path = fs::path("/proc") / std::to_string(pid) / "environ";
  std::FILE* f = std::fopen(environ_path.c_str(), "rb");
  if (f == nullptr) return make_error(fmt::format("process {}: {}", pid, std::strerror(errno)));
  std::string env;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) env.append(buf, n);
  std::fclose(f);
  constexpr std::string_view key = "TRACETUNE_OUTPUT_DIR=";
  for (std::size_t at = 0; at < env.size();) {
    const std::size_t end = std::min(env.find('\0', at), env.size());
    const std::string_view entry(env.data() + at, end - at);
    if (entry.starts_with(key)) return fs::path(std::string(entry.substr(key.size())));
    at = end + 1;
  }
  return make_error(fmt::format("process {} is not recorded by tracetune (no TRACETUNE_OUTPUT_DIR)", pid));
}

Result<std::shared_ptr<WindowControl>> open_window_control(const fs::path& raw_dir) {
  const fs::path path = raw_dir / kWindowControlName;
  const int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return make_error(path.string() + ": " + std::strerror(errno) +
                      " (was the job started with tracetune record --armed or a window option?)");
  struct stat st {};
  WindowControl* c = nullptr;
  if (::fstat(fd, &st) == 0 && st.st_uid == ::geteuid() && st.st_size >= static_cast<off_t>(sizeof(WindowControl)))
    c = map_control(fd);
  ::close(fd);
  if (c == nullptr || std::memcmp(c->magic, kWindowControlMagic, sizeof c->magic) != 0 ||
      c->version != kWindowControlVersion) {
    if (c != nullptr) ::munmap(c, sizeof(WindowControl));
    return make_error(path.string() + ": not a tracetune window control file of this version");
  }
  return std::shared_ptr<WindowControl>(c, [](WindowControl* p) { ::munmap(p, sizeof(WindowControl)); });
}

std::vector<std::pair<std::string, std::string>> window_metadata(const fs::path& raw_dir) {
  auto control = open_window_control(raw_dir);
  if (!control) return {};
  const WindowControl& c = **control;
  char spec[sizeof c.spec];
  std::memcpy(spec, c.spec, sizeof spec);
  spec[sizeof spec - 1] = '\0';
  return {
      {"window", spec},
      {"window.times_opened", std::to_string(load(c.times_opened))},
      {"window.first_open_ns", std::to_string(load(c.first_open_ns))},
      {"window.last_close_ns", std::to_string(load(c.last_close_ns))},
      {"window.captures", std::to_string(load(c.capture_request))},
  };
}

}  // namespace tt::collector
