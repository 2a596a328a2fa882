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
  double ring_s = 0;
  int ring_budget_mib = 64;
  double slow_step_factor = 0;
  double hang_s = 0;
  bool ring() const { return ring_s > 0; }
  // True when any window was asked for: the job then records only inside it.
  bool any() const { return steps_first >= 0 || delay_s > 0 || duration_s > 0 || !start_on.empty() || armed || ring(); }
  // The window as the user wrote it ("steps 100:120", "delay 5s, duration 10s"...).
  std::string describe() const;
};

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
  // Called every 20 ms while the job runs: opens and closes the time window. Returns why the
  // flight recorder must be dumped now ("" for not now).
  std::string tick();

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
  std::int64_t stalled_since_step_ = 0;  // last_step_end_ns of the stall already dumped
};

// Flight recorder dump: merges what the job's processes hold now (their rings, while they keep
// running) into <output stem>.dump-<n>.db, keeping the last `request.ring_s` seconds, with
// metadata dump.reason and dump.at_ns. Returns the trace written.
Result<std::filesystem::path> dump_ring(const std::filesystem::path& raw_dir, const std::filesystem::path& output, int n,
                                        const std::string& reason, const WindowRequest& request,
                                        const std::vector<std::pair<std::string, std::string>>& metadata);

// Maps an existing job's control file (`tracetune capture`); nullptr with an error when the
// directory holds none or it is not ours.
Result<std::shared_ptr<WindowControl>> open_window_control(const std::filesystem::path& raw_dir);

// The `window*` metadata entries for a merged trace of `raw_dir` (none when it had no window).
std::vector<std::pair<std::string, std::string>> window_metadata(const std::filesystem::path& raw_dir);

}  // namespace tt::collector
