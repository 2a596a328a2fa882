// The job's recording window as every record path sees it: the shared control page
// (window_control.h) and whether an event record may be written now. The writer needs only
// this; window.cpp moves the window (step windows, captures, --start-on) and library.cpp maps
// the page at start.
#pragma once

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

// Maps <out_dir>/window.ctl into g_window_control when it exists and is one of this version
// (fork children keep the mapping). Returns it, or nullptr.
WindowControl* map_window_control(const char* out_dir);

}  // namespace tt::collector
