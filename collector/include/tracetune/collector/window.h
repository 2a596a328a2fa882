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
  // True when any window was asked for: the job then records only inside it.
  bool any() const { return steps_first >= 0 || delay_s > 0 || duration_s > 0 || !start_on.empty() || armed; }
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
  // Called every 20 ms while the job runs: opens and closes the time window.
  void tick();

 private:
  WindowDriver(WindowControl* control, WindowRequest w);
  WindowControl* control_;
  WindowRequest request_;
  std::int64_t job_start_ns_;
  bool time_opened_ = false;
  std::int64_t time_opened_ns_ = 0;  // when tick() opened the time window
  bool time_closed_ = false;
};

// Maps an existing job's control file (`tracetune capture`); nullptr with an error when the
// directory holds none or it is not ours.
Result<std::shared_ptr<WindowControl>> open_window_control(const std::filesystem::path& raw_dir);

// The `window*` metadata entries for a merged trace of `raw_dir` (none when it had no window).
std::vector<std::pair<std::string, std::string>> window_metadata(const std::filesystem::path& raw_dir);

}  // namespace tt::collector
