// Recording windows, host side: what `record --steps/--delay/--duration/--start-on/--armed`
// asks for, the window control file it creates for the job (window_control.h), the launcher's
// time transitions, and what a merged trace says about its window. docs/collector.md,
// "Recording windows".
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "tracetune/trace/result.h"

namespace tt::collector {

struct WindowControl;
struct RecordFileHeader;

struct WindowRequest {
  std::int64_t steps_first = -1;  // --steps A:B, both included; -1: no step window
  std::int64_t steps_last = -1;
  double delay_s = 0;             // --delay: the window opens this long after the job starts
  double duration_s = 0;          // --duration: and closes this long after it opened (0: at the end)
  std::string start_on;           // --start-on: opens at the first range matching (POSIX ERE)
  bool armed = false;             // --armed: closed until `tracetune capture` opens it
  // Flight recorder (--ring): the last ring_s seconds, in ring_budget_mib MiB of ring per process;
  // dumped into a trace on `capture --dump`, on a step slower than slow_step_factor x the running
  // median (0: off), and after hang_s seconds without a step (0: off).
  // ring_steps instead of ring_s: each stepping process's last N steps (--ring 50steps).
  // dump_signal: the signal that asks for a dump in any process of the job (0: none).
  double ring_s = 0;
  std::int64_t ring_steps = 0;
  int ring_budget_mib = 64;
  double slow_step_factor = 0;
  double hang_s = 0;
  int dump_signal = 0;
  bool ring() const { return ring_s > 0 || ring_steps > 0; }
  // True when any window was asked for: the job then records only inside it.
  bool any() const { return steps_first >= 0 || delay_s > 0 || duration_s > 0 || !start_on.empty() || armed || ring(); }
  // The window as the user wrote it ("steps 100:120", "delay 5s, duration 10s"...).
  std::string describe() const;
};

// --dump-signal: "USR1", "SIGUSR2", "RTMIN+3", a number of one of those, or "none" (0). The
// signals a job can be sent without harm by default: USR1, USR2 and the real-time ones.
Result<int> parse_dump_signal(const std::string& text);
// "SIGUSR2", "SIGRTMIN+3".
std::string signal_name(int signo);

// "100:120" -> {100, 120}; errors name the problem ("--steps: 120:100: the end is before the start").
Result<std::pair<std::int64_t, std::int64_t>> parse_step_range(const std::string& text);
// The combination of options is one the collector implements, and --start-on compiles.
Result<void> check_window(const WindowRequest& w);

// The control file of one job, mapped by the launcher for the job's lifetime.
class WindowDriver {
 public:
  // Creates <raw_dir>/window.ctl (0600) for `w`; the job's processes map it at start.
  static Result<std::unique_ptr<WindowDriver>> create(const std::filesystem::path& raw_dir, const WindowRequest& w);
  ~WindowDriver();
  WindowDriver(const WindowDriver&) = delete;
  WindowDriver& operator=(const WindowDriver&) = delete;
  // What the launcher must write after a tick.
  struct Tick {
    std::string dump_reason;  // the flight recorder must be dumped now, and why ("": no)
    int capture = 0;          // a capture's window closed: its number (1, 2, ...; 0: none) and span
    std::int64_t capture_from_ns = 0, capture_to_ns = 0;
  };
  // Called every 20 ms while the job runs: opens and closes the time window, and says when to
  // dump the flight recorder or write a capture's trace.
  Tick tick();

 private:
  WindowDriver(WindowControl* control, WindowRequest w);
  void time_transitions(std::int64_t now);
  WindowControl* control_;
  WindowRequest request_;
  std::int64_t job_start_ns_;
  bool time_opened_ = false;
  std::int64_t time_opened_ns_ = 0;  // when tick() opened the time window
  bool time_closed_ = false;
  std::int64_t dumps_requested_ = 0;  // capture --dump requests seen
  std::int64_t slow_steps_seen_ = 0;
  std::int64_t signal_dumps_seen_ = 0;
  std::int64_t stalled_since_step_ = 0;  // last_step_end_ns of the stall already dumped
  std::int64_t captures_seen_ = 0;       // capture requests seen
  std::int64_t capture_pending_since_ = 0;  // the request whose window has not closed yet (0: none)
  std::string dump_reason(std::int64_t now);
  int capture_closed(Tick& out);
};

// `tracetune capture`: asks every stepping process of the job to record its next `steps` steps
// (each from its next step boundary); `dump` asks the launcher for a flight recorder dump.
Result<void> request_capture(const std::filesystem::path& raw_dir, std::int64_t steps);
Result<void> request_dump(const std::filesystem::path& raw_dir);
// The raw record directory of a recorded process (its TRACETUNE_OUTPUT_DIR).
Result<std::filesystem::path> raw_dir_of_process(long pid);

// Flight recorder: the record files (host/proc-*.ttr, relative to raw_dir) none of whose events a
// dump or the final trace at `now_ns` can keep: with a span of seconds, those of processes that
// ended (exit, or exec into a new image) before it; with N steps, those of processes without
// steps that ended before the earliest cut of their host's stepping processes (where each one's
// N-th last step starts, FileHeader::ring_cut_ns; none while one of them holds fewer than N). A
// job that starts processes all the time (DataLoader workers each epoch) would otherwise grow its
// raw directory without bound.
std::vector<std::filesystem::path> ring_files_to_remove(const std::filesystem::path& raw_dir, const WindowRequest& ring,
                                                        std::int64_t now_ns);
// The same choice over headers already read (path, header): what ring_files_to_remove decides.
std::vector<std::filesystem::path> ring_files_out_of_span(
    const std::vector<std::pair<std::filesystem::path, RecordFileHeader>>& files, const WindowRequest& ring,
    std::int64_t now_ns);

// Maps an existing job's control file (`tracetune capture`); nullptr with an error when the
// directory holds none or it is not ours.
Result<std::shared_ptr<WindowControl>> open_window_control(const std::filesystem::path& raw_dir);

// The `window*` metadata entries for a merged trace of `raw_dir` (none when it had no window).
std::vector<std::pair<std::string, std::string>> window_metadata(const std::filesystem::path& raw_dir);

}  // namespace tt::collector
