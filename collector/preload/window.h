// Recording windows inside the job (window.cpp; the shared state is window_control.h, the gate
// every record path checks window_gate.h).
#pragma once

#include <cstdint>

#include "window_gate.h"

namespace tt::collector {

// Called with 1 when this process opens the job's window (the first holder) and with 0 just
// before it closes it (the last holder, still open during the call): the CUPTI library turns
// its activity kinds on and off there (gpu_api.cpp, tracetune_set_window_listener).
using WindowListener = void (*)(int open);
void window_set_listener(WindowListener listener);

// Maps <out_dir>/window.ctl when it exists (library.cpp, at start; fork children keep the
// mapping) and compiles its --start-on expression.
void window_attach(const char* out_dir);

// A step record is about to be written (python_api.cpp): moves this process's step window
// (--steps, captures) and returns whether the record belongs in the trace.
bool window_admits_step(int kind, std::int64_t number, std::int64_t start_ns, std::int64_t end_ns);
// After that step record was written: closes this process's step window after its last step.
void window_after_step(int kind, std::int64_t number);

// In a fork child, before it runs anything else (process_hooks.cpp): no step state of the parent
// (its holds, its step durations), and the locks, which a parent thread may have held at the
// fork, free.
void window_forked();

// A range named `name` (text, n bytes) starts (NVTX push/start, Python range enter): --start-on.
void window_range_started(const char* name, std::size_t n);

// record --ring --dump-signal: the signal arrived in this process (async-signal-safe). Asks the
// launcher for one dump; the same signal reaching several processes within a second asks once.
void window_signal_dump();


}  // namespace tt::collector
