// The C API that tracetune's Python integration calls through ctypes.
//
// Place in the collector: the "python" side of recording. Python code (training-loop
// steps, user ranges and marks, counters) reaches the same per-process record file as the
// libc hooks by calling these exported functions in the already-loaded
// libtracetune_collector.so. All of them are cheap no-ops when the process is not
// recording, so the Python side can call them unconditionally. Times are CLOCK_MONOTONIC ns
// (tracetune_now_ns), the trace clock.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <mutex>

#include "ring_steps.h"
#include "sys.h"
#include "window.h"
#include "writer.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace tt::collector;

TT_EXPORT std::int64_t tracetune_now_ns(void) { return now_ns(); }

TT_EXPORT int tracetune_is_recording(void) { return recording() ? 1 : 0; }

// Writes a step record when the recording window admits it (window.cpp); returns whether it did.
static bool write_step(int kind, std::int64_t start_ns, std::int64_t end_ns, std::int64_t number) {
  StepRecord r{};
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.number = number;
  r.kind = static_cast<StepKind>(kind);
  if (!window_admits_step(kind, number, start_ns, end_ns)) return false;
  emit_ungated(RecordType::Step, &r, sizeof r);
  if (r.kind == StepKind::Step) ring_step_written(start_ns);  // record --ring Nsteps: this process's cut
  return true;
}

// kind: StepKind (0 step, 1 batch wait, 2 optimizer step); other values are ignored.
TT_EXPORT void tracetune_step(int kind, std::int64_t start_ns, std::int64_t end_ns,
                              std::int64_t number) {
  if (kind < 0 || kind > static_cast<int>(StepKind::OptimizerStep) || !recording()) return;
  ReentryGuard guard;
  write_step(kind, start_ns, end_ns, number);
  window_after_step(kind, number);
}

// The job's window state in place, for the Python integration's per-step work (_collector.py,
// window_open): the address of the control page's `holders` word (the window is open while it is
// above zero), or null when the job has no window (everything is recorded). Python reads it
// directly, about 60 ns, where a call costs 0.5 us; the page stays mapped for the process's life
// (fork children keep it at the same address).
TT_EXPORT const std::uint32_t* tracetune_window_holders(void) {
  return g_window_control != nullptr && recording() ? &g_window_control->holders : nullptr;
}

// A closed range measured by Python. Depth 0 and flags 0: the merger nests Python ranges
// by time containment.
TT_EXPORT void tracetune_range(const char* name, const char* domain, std::int64_t start_ns,
                               std::int64_t end_ns) {
  if (!recording()) return;
  ReentryGuard guard;
  RangeRecord r{};
  r.start_ns = start_ns;
  r.end_ns = end_ns;
  r.name = intern(name);
  r.domain = intern(domain);
  r.source = RangeSource::Python;
  emit(RecordType::Range, r);
}

// A Python range starts (tracetune.range's enter, called only under record --start-on):
// the window opens at the first range whose name matches.
TT_EXPORT void tracetune_range_begin(const char* name) {
  if (name == nullptr || !recording()) return;
  ReentryGuard guard;
  window_range_started(name, std::strlen(name));
}

TT_EXPORT void tracetune_mark(const char* name, const char* domain) {
  if (!recording()) return;
  ReentryGuard guard;
  MarkRecord r{};
  r.ts_ns = now_ns();
  r.name = intern(name);
  r.domain = intern(domain);
  r.source = RangeSource::Python;
  emit(RecordType::Mark, r);
}

// A counter sample at `ts_ns` (a trace-clock time the caller measured, e.g. the end of the
// step it describes).
TT_EXPORT void tracetune_counter_at(const char* name, double value, std::int64_t ts_ns) {
  if (!recording()) return;
  ReentryGuard guard;
  CounterRecord r{};
  r.ts_ns = ts_ns;
  r.name = intern(name);
  r.value = value;
  emit(RecordType::Counter, r);
}

TT_EXPORT void tracetune_counter(const char* name, double value) { tracetune_counter_at(name, value, now_ns()); }

// The process's resident set in bytes (-1: unknown), read from /proc/self/statm with raw
// syscalls: the Python integration samples it at every step's end, and through libc each sample
// would cost an open and a read through our own I/O hooks (about 20 µs) and show up in the trace
// as the job's I/O. The descriptor is kept per process (a fork child opens its own).
TT_EXPORT std::int64_t tracetune_rss_bytes(void) {
  static SpinLock lock;
  static int fd = -1;
  static std::int64_t owner = -1;
  std::lock_guard<SpinLock> held(lock);
  const std::int64_t pid = sys_getpid();
  if (pid != owner) {
    if (fd >= 0) sys_close(fd);  // the parent's, inherited
    fd = sys_openat(AT_FDCWD, "/proc/self/statm", O_RDONLY | O_CLOEXEC);
    owner = pid;
  }
  if (fd < 0) return -1;
  char buf[128];
  const long n = sys_pread(fd, buf, sizeof buf - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  // "size resident shared ...", in pages
  const char* p = buf;
  while (*p && *p != ' ') ++p;
  std::int64_t pages = 0;
  bool digits = false;
  if (*p) ++p;
  for (; *p >= '0' && *p <= '9'; ++p, digits = true) pages = pages * 10 + (*p - '0');
  static const long page = ::sysconf(_SC_PAGESIZE);
  return digits ? pages * page : -1;
}

// A step record and, stamped with the step's end, the process's resident set as the counter
// "host memory.rss": what the Python integration writes at every step boundary, in one call
// (one ctypes transition instead of three, the counter's name never encoded by Python). kind as
// for tracetune_step; an unknown RSS writes the step alone.
TT_EXPORT void tracetune_step_end(int kind, std::int64_t start_ns, std::int64_t end_ns, std::int64_t number) {
  if (kind < 0 || kind > static_cast<int>(StepKind::OptimizerStep) || !recording()) return;
  ReentryGuard guard;
  if (write_step(kind, start_ns, end_ns, number)) {
    if (const std::int64_t rss = tracetune_rss_bytes(); rss >= 0) {
      CounterRecord c{};
      c.ts_ns = end_ns;
      c.name = intern("host memory.rss");
      c.value = static_cast<double>(rss);
      emit_ungated(RecordType::Counter, &c, sizeof c);  // the step's own sample, admitted with it
    }
  }
  window_after_step(kind, number);
}

// ---- Python stack sampling (record --trace pystack; tracetune/_pystack.py) ----

// Defines the per-process frame `id` (>= 1): a PyFrame record with the function's and the file's
// string ids. The sampler calls it once per (code object, line) it meets.
TT_EXPORT void tracetune_py_frame(std::uint32_t id, const char* function, const char* file, std::int32_t line) {
  if (id == 0 || !recording()) return;
  ReentryGuard guard;
  PyFrameRecord r{};
  r.id = id;
  r.function = intern(function);
  r.file = intern(file);
  r.line = line;
  emit(RecordType::PyFrame, r);
}

// One sampling tick: `words` holds, per sampled thread, its tid, its depth and then `depth` frame
// ids, innermost first ([tid, depth, f0, f1, ...] repeated), `n` words in all. Each thread becomes
// one PySample record stamped `ts_ns`; a depth beyond kMaxPyStackDepth keeps the innermost
// frames, and a block that runs past `n` ends the tick (the rest is not written).
TT_EXPORT void tracetune_py_samples(std::int64_t ts_ns, const std::uint32_t* words, std::uint32_t n) {
  if (words == nullptr || !recording()) return;
  ReentryGuard guard;
  std::uint32_t i = 0;
  while (n - i >= 2) {
    PySampleRecord r{};
    r.ts_ns = ts_ns;
    r.tid = words[i];
    const std::uint32_t depth = words[i + 1];
    i += 2;
    if (depth > n - i) return;
    r.depth = depth < kMaxPyStackDepth ? depth : kMaxPyStackDepth;
    emit2(RecordType::PySample, &r, sizeof r, words + i, r.depth * static_cast<std::uint32_t>(sizeof(std::uint32_t)));
    i += depth;
  }
}
