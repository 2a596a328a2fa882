// Recording windows inside the job: the job-wide open/closed state every event record checks
// (window.h, window_blocks), and the transitions the job's own progress drives: a process's
// step window (record --steps A:B, tracetune capture) and --start-on. The launcher drives the
// time window (--delay/--duration) from outside (collector/src/window.cpp).
//
// Step windows are counted per process, on the numbers of the step records the process writes
// (the numbers the analyzer reports): a process opens its window as it writes step A-1's record
// (which stays out) and closes it after step B's record. Its step records are admitted by number,
// so each rank's trace holds exactly steps A..B, whatever the other ranks do; everything else
// (I/O, ranges, workers' records) is admitted while any holder holds the job-wide window.
#include "window.h"

#include <regex.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

#include "sys.h"
#include "writer.h"

namespace tt::collector {

namespace {

// This process's step window. A fork child starts with none of its parent's holds (window_forked).
struct StepWindow {
  bool loaded = false;            // first/last/served_capture read from the control page
  std::int64_t first = -1;        // step numbers admitted, both ends included; -1: none
  std::int64_t last = -1;
  bool holding = false;           // this process holds the job-wide window
  std::int64_t served_capture = 0;
};
StepWindow g_steps;
SpinLock g_steps_lock;

regex_t g_start_on;
bool g_start_on_ok = false;

template <class T>
T load(const T& v) { return __atomic_load_n(&v, __ATOMIC_ACQUIRE); }

std::atomic<WindowListener> g_listener{nullptr};

void tell_listener(int open) {
  if (const WindowListener l = g_listener.load(std::memory_order_acquire)) l(open);
}

void window_mark(const char* name) {
  MarkRecord r{};
  r.ts_ns = now_ns();
  r.name = intern(name);
  r.domain = intern("tracetune");
  r.source = RangeSource::Python;
  emit_ungated(RecordType::Mark, &r, sizeof r);
}

// One more holder; the first one opens the window (and says so in this process's records).
void take_hold(const char* why) {
  WindowControl* w = g_window_control;
  if (__atomic_fetch_add(&w->holders, 1, __ATOMIC_ACQ_REL) == 0) {
    std::int64_t none = 0;
    const std::int64_t t = now_ns();
    __atomic_compare_exchange_n(&w->first_open_ns, &none, t, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
    __atomic_store_n(&w->last_open_ns, t, __ATOMIC_RELEASE);
    __atomic_fetch_add(&w->times_opened, 1, __ATOMIC_ACQ_REL);
    tell_listener(1);
  }
  window_mark(why);
}

void drop_hold(const char* why) {
  WindowControl* w = g_window_control;
  window_mark(why);
  std::uint32_t cur = load(w->holders);
  if (cur == 1) tell_listener(0);  // the last holder: GPU activity of the window is written before it closes
  while (cur > 0 && !__atomic_compare_exchange_n(&w->holders, &cur, cur - 1, true, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
  }
  if (cur == 1) __atomic_store_n(&w->last_close_ns, now_ns(), __ATOMIC_RELEASE);
}

// At this process's first step (a fork child's too: window_forked cleared the parent's state).
void load_once(StepWindow& s) {
  if (s.loaded) return;
  const WindowControl* w = g_window_control;
  s = StepWindow{};
  s.loaded = true;
  s.first = load(w->steps_first);
  s.last = load(w->steps_last);
  s.served_capture = load(w->capture_request);  // requests made before this process started are not its
}

// A capture asked for since this process last looked: its window is the next N steps.
void take_capture_request(StepWindow& s, std::int64_t number) {
  const WindowControl* w = g_window_control;
  const std::int64_t request = load(w->capture_request);
  if (request <= s.served_capture || s.holding) return;
  s.served_capture = request;
  const std::int64_t n = load(w->capture_steps);
  if (n <= 0) return;
  s.first = number + 1;
  s.last = number + n;
}

// record --dump-on-slow-step K: the durations of this process's last steps, and a slow step
// counted in the control file when one takes over K times their median (after 8 steps).
constexpr int kStepHistory = 64;
struct StepDurations {
  std::int64_t ns[kStepHistory] = {};
  int count = 0;
};
StepDurations g_durations;
SpinLock g_durations_lock;

std::int64_t median_of(const StepDurations& d) {
  std::int64_t sorted[kStepHistory];
  const int n = d.count < kStepHistory ? d.count : kStepHistory;
  std::memcpy(sorted, d.ns, sizeof(std::int64_t) * static_cast<std::size_t>(n));
  std::nth_element(sorted, sorted + n / 2, sorted + n);
  return sorted[n / 2];
}

void note_step_duration(std::int64_t ns) {
  WindowControl* w = g_window_control;
  const std::int64_t permille = load(w->slow_step_permille);
  if (permille <= 0 || ns <= 0) return;
  std::lock_guard<SpinLock> held(g_durations_lock);
  StepDurations& d = g_durations;
  if (d.count >= 8 && ns > median_of(d) / 1000 * permille) __atomic_fetch_add(&w->slow_steps, 1, __ATOMIC_ACQ_REL);
  d.ns[d.count % kStepHistory] = ns;
  ++d.count;
}

}  // namespace

void window_set_listener(WindowListener listener) { g_listener.store(listener, std::memory_order_release); }

void window_attach(const char* out_dir) {
  const WindowControl* w = map_window_control(out_dir);
  if (w == nullptr) return;
  char pattern[sizeof w->start_on];
  std::memcpy(pattern, w->start_on, sizeof pattern);
  pattern[sizeof pattern - 1] = '\0';
  if (pattern[0] != '\0') g_start_on_ok = regcomp(&g_start_on, pattern, REG_EXTENDED | REG_NOSUB) == 0;
}

bool window_admits_step(int kind, std::int64_t number, std::int64_t start_ns, std::int64_t end_ns) {
  WindowControl* w = g_window_control;
  if (w == nullptr) return true;
  if (kind == static_cast<int>(StepKind::Step)) {
    note_step_duration(end_ns - start_ns);
    std::int64_t seen = load(w->last_step_end_ns);
    while (seen < end_ns && !__atomic_compare_exchange_n(&w->last_step_end_ns, &seen, end_ns, true,
                                                         __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    }
  }
  std::lock_guard<SpinLock> held(g_steps_lock);
  StepWindow& s = g_steps;
  load_once(s);
  if (kind != static_cast<int>(StepKind::Step)) return s.first >= 0 ? number >= s.first && number <= s.last : window_open_now();
  take_capture_request(s, number);
  if (s.first < 0) return window_open_now();
  const bool admitted = number >= s.first && number <= s.last;
  if (!s.holding && (number + 1 == s.first || (admitted && number < s.last))) {
    s.holding = true;
    take_hold("tracetune.window open");
  }
  return admitted;
}

void window_after_step(int kind, std::int64_t number) {
  WindowControl* w = g_window_control;
  if (w == nullptr || kind != static_cast<int>(StepKind::Step)) return;
  std::lock_guard<SpinLock> held(g_steps_lock);
  StepWindow& s = g_steps;
  if (!s.loaded || s.first < 0 || number != s.last) return;
  std::uint32_t launcher = 1;  // a window from step 0: the first process past its end releases the launcher's hold
  if (__atomic_compare_exchange_n(&w->launcher_hold, &launcher, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
    drop_hold("tracetune.window close (launcher's hold)");
  if (!s.holding) return;
  s.holding = false;  // first/last stay: later step records are outside this window
  drop_hold("tracetune.window close");
}

void window_forked() {
  g_steps_lock.reset();
  g_steps = StepWindow{};
  g_durations_lock.reset();
  g_durations = StepDurations{};
}

void window_signal_dump() {
  WindowControl* w = g_window_control;
  if (w == nullptr) return;
  const std::int64_t t = now_ns();
  std::int64_t last = load(w->signal_dump_ns);
  if (last != 0 && t - last < 1'000'000'000) return;  // this signal already asked (it reached several processes)
  if (!__atomic_compare_exchange_n(&w->signal_dump_ns, &last, t, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
  __atomic_fetch_add(&w->signal_dumps, 1, __ATOMIC_ACQ_REL);
}

void window_range_started(const char* name, std::size_t n) {
  WindowControl* w = g_window_control;
  if (w == nullptr || !g_start_on_ok || load(w->start_on_fired) != 0 || name == nullptr) return;
  char text[1024];
  if (n >= sizeof text) n = sizeof text - 1;
  std::memcpy(text, name, n);
  text[n] = '\0';
  if (regexec(&g_start_on, text, 0, nullptr, 0) != 0) return;
  std::uint32_t expected = 0;
  if (!__atomic_compare_exchange_n(&w->start_on_fired, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return;
  __atomic_store_n(&w->start_on_fired_ns, now_ns(), __ATOMIC_RELEASE);
  take_hold("tracetune.window open (start-on)");
}

}  // namespace tt::collector
