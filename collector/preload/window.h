// Recording windows inside the job (window.cpp; the shared state is window_control.h).
#pragma once

#include <cstdint>

#include "tracetune/collector/window_control.h"

namespace tt::collector {

// The job's window control page, or nullptr when the job records everything (no window.ctl).
extern WindowControl* g_window_control;

// True when an event record of `type` must not be written now: the job has a window and it is
// closed. One load when the window is open or absent.
inline bool window_blocks(RecordType type) {
  const WindowControl* w = g_window_control;
  return w != nullptr && __atomic_load_n(&w->holders, __ATOMIC_RELAXED) == 0 && !window_always_recorded(type);
}

// For hooks that would measure a call before recording it (I/O): false while the window is closed.
inline bool window_open_now() {
  const WindowControl* w = g_window_control;
  return w == nullptr || __atomic_load_n(&w->holders, __ATOMIC_RELAXED) != 0;
}

// Called with 1 when this process opens the job's window (the first holder) and with 0 just
// before it closes it (the last holder, still open during the call): the CUPTI library turns
// its activity kinds on and off there (gpu_api.cpp, tracetune_set_window_listener).
using WindowListener = void (*)(int open);
void window_set_listener(WindowListener listener);

// Maps <out_dir>/window.ctl when it exists (library constructor; fork children keep the mapping).
void window_attach(const char* out_dir);

// A step record is about to be written (python_api.cpp): moves this process's step window
// (--steps, captures) and returns whether the record belongs in the trace.
bool window_admits_step(int kind, std::int64_t number, std::int64_t start_ns, std::int64_t end_ns);
// After that step record was written: closes this process's step window after its last step.
void window_after_step(int kind, std::int64_t number);

// A range named `name` (text, n bytes) starts (NVTX push/start, Python range enter): --start-on.
void window_range_started(const char* name, std::size_t n);

// record --ring --dump-signal: the signal arrived in this process (async-signal-safe). Asks the
// launcher for one dump; the same signal reaching several processes within a second asks once.
void window_signal_dump();

// Installs the flight recorder's signal handler for `signo` underneath the job's (dump_signal.cpp).
void dump_signal_install(int signo);

}  // namespace tt::collector
