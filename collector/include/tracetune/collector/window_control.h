// The window control file: how `tracetune record --steps/--delay/--duration/--start-on/--armed`
// and `tracetune capture` tell every process of a job when to record (docs/collector.md,
// "Recording windows").
//
// The launcher creates `<raw dir>/window.ctl` (0600) before the job starts; every process of the
// job that finds it maps it MAP_SHARED at start (fork children inherit the mapping, exec'd
// images map it again), so all processes on the host see one state. Without the file nothing
// is gated: the library records everything, as before.
//
// Event records (I/O, ranges, marks, steps, counters, collectives, GPU activity: every type
// not listed in window_always_recorded) are written only while `holders` > 0. The records that
// give the trace its processes, threads, strings and Python frames are always written, so a
// string or frame interned outside the window still has its record when a record inside it
// refers to it.
//
// Every field is read and written with atomic builtins (several processes share the page).
#pragma once

#include <cstdint>

#include "tracetune/collector/record_format.h"

namespace tt::collector {

inline constexpr char kWindowControlMagic[8] = {'T', 'T', 'W', 'I', 'N', 'D', 'O', 'W'};
inline constexpr std::uint32_t kWindowControlVersion = 2;
inline constexpr const char* kWindowControlName = "window.ctl";

struct WindowControl {
  char magic[8];
  std::uint32_t version;
  // The window is open while > 0. Each holder is one reason to record: a process inside its
  // step window (--steps, a capture), the launcher's time window (--delay/--duration), the
  // launcher's hold for a step window that starts at step 0, a fired --start-on.
  std::uint32_t holders;
  // --steps A:B (step numbers as the analyzer reports them, both ends included); -1: none.
  std::int64_t steps_first;
  std::int64_t steps_last;
  // Step 0 windows: 1 while the launcher's hold (taken before the job starts) is held.
  std::uint32_t launcher_hold;
  // --start-on: 1 once a range matching start_on started in some process.
  std::uint32_t start_on_fired;
  std::int64_t start_on_fired_ns;
  // CLOCK_MONOTONIC of the first opening and of the latest closing (0: not yet).
  std::int64_t first_open_ns;
  std::int64_t last_close_ns;
  std::uint32_t times_opened;
  std::uint32_t pad0;
  std::int64_t last_open_ns;  // CLOCK_MONOTONIC of the latest opening
  // End of the latest step of any process (the launcher's hang/progress view).
  std::int64_t last_step_end_ns;
  // `tracetune capture`: a request is (capture_request incremented, capture_steps set). Each
  // stepping process serves each request once, from its next step on.
  std::int64_t capture_request;
  std::int64_t capture_steps;
  std::int64_t capture_requested_ns;  // CLOCK_MONOTONIC of the latest request
  // Flight recorder (record --ring): `tracetune capture --dump` increments dump_request; a
  // process whose step took over slow_step_permille/1000 times its running median increments
  // slow_steps (0: not watched).
  std::int64_t dump_request;
  std::int64_t slow_steps;
  std::int64_t slow_step_permille;
  // record --ring --dump-signal: the signal reached a process of the job. signal_dumps counts the
  // requests, signal_dump_ns is the latest one's CLOCK_MONOTONIC (one request per second at most:
  // a signal sent to the job's process group reaches every process).
  std::int64_t signal_dump_ns;
  std::int64_t signal_dumps;
  char start_on[256];  // --start-on's regular expression (POSIX extended), "" for none
  char spec[256];      // the window as asked for, for the trace's `window` metadata entry
};
static_assert(sizeof(WindowControl) == 664, "WindowControl: shared layout (a new size needs a new version)");

// Records written whatever the window: they describe processes, threads and strings, or are
// the collector's own bookkeeping.
inline bool window_always_recorded(RecordType type) {
  switch (type) {
    case RecordType::String:
    case RecordType::ProcessInfo:
    case RecordType::ThreadName:
    case RecordType::Fork:
    case RecordType::Exec:
    case RecordType::Exit:
    case RecordType::Dropped:
    case RecordType::ClockSync:
    case RecordType::GpuStatus:
    case RecordType::NcclComm:
    case RecordType::PyFrame:  // defines a frame id, as a String record defines a string id
      return true;
    default:
      return false;
  }
}

}  // namespace tt::collector
