// The collector's record writer: the only way code inside the profiled process records
// anything. Internal to libtracetune_collector.so (see record_format.h for the file layout).
//
// Rules for everything in this library (it runs inside someone else's process):
//  - never throw, never abort, never change errno as seen by the caller;
//  - no lock and no allocation on the hot path (emit); locks only on rare paths (string
//    interning of new strings, chunk reservation, process start);
//  - a failure (disk full, no output dir) stops recording and is counted, the job goes on;
//  - nothing here may run in a vfork child (callers check `in_vfork_child()`).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "tracetune/collector/record_format.h"

#if defined(TT_VFORK_HOOK)
// vfork_hook.S: the real vfork (resolved by the constructor), and the calling thread's mark,
// set before the real vfork runs and seen by the child, which runs on that thread's TLS.
extern "C" __attribute__((visibility("hidden"))) void* tracetune_real_vfork;
extern "C" __attribute__((visibility("hidden"))) thread_local unsigned char tracetune_vfork_pending;
#endif

namespace tt::collector {

// CLOCK_MONOTONIC in ns: the clock of every record (and of the trace).
std::int64_t now_ns();

// The clock of I/O records' start/end: TSC ticks where the file says so (kIoClockTsc: an
// invariant TSC that is the kernel's clocksource), else now_ns(). See ClockSyncRecord.
std::int64_t io_clock();

// True once the process has a record file and recording has not been stopped.
bool recording();

// True in a child created by vfork() (shares the parent's memory until exec/_exit):
// nothing may be written, locked or allocated there.
bool in_vfork_child();

// Thread-local re-entrancy guard: interposed functions call the real one directly when
// the collector itself is already running on this thread (e.g. its own file writes).
class ReentryGuard {
 public:
  ReentryGuard();
  ~ReentryGuard();
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;
  // False when this thread was already inside the collector: skip recording.
  bool active() const { return active_; }

 private:
  bool active_;
};

// Interns a string for this process and returns its id (0 for empty). The first use of a
// string emits a String record. Thread-safe.
std::uint32_t intern(const char* s, std::size_t n);
std::uint32_t intern(const char* s);  // NUL-terminated; nullptr -> 0

// Appends one record for the calling thread. Lock-free; drops (and counts) the record when
// recording is off or the disk is full. `size` is the payload size (<= kMaxRecordSize - 16).
void emit(RecordType type, const void* payload, std::uint32_t size);

template <class T>
inline void emit(RecordType type, const T& payload) {
  emit(type, &payload, static_cast<std::uint32_t>(sizeof(T)));
}

// emit() for a record the caller has already admitted to the recording window (window.cpp:
// step records, whose window is decided by their number; the window's own marks).
void emit_ungated(RecordType type, const void* payload, std::uint32_t size);

// One I/O call: an IoCompact record when its values fit (record_format.h), else a wide Io
// record. Lock-free, like emit().
void emit_io(const IoRecord& r);

// Variable-length payload: a fixed struct followed by bytes (e.g. StringRecord + text).
void emit2(RecordType type, const void* head, std::uint32_t head_size, const void* tail,
           std::uint32_t tail_size);

// record --ring Nsteps (ring_steps.cpp): the Step records this process wrote and its cut, the
// start of the N-th last of them (0 while fewer), into the record file's header
// (FileHeader::ring_cut_ns) where the launcher reads them. Two atomic stores, no lock.
void publish_ring_steps(std::int64_t written, std::int64_t cut_ns);

// Path of an open file descriptor as a string id (0 when unknown), maintained by the I/O
// hooks from open/close (the fd table is lock-free).
std::uint32_t fd_path(int fd);
void set_fd_path(int fd, std::uint32_t path_id);

// ---- Added for the process lifecycle (writer.cpp <-> io_hooks.cpp / process_hooks.cpp) ----
// Not needed by other clients of the writer; they keep using the API above.

// TRACETUNE_TRACE filter: true when `category` ("io", "nvtx", ...) is enabled. Unset or
// empty TRACETUNE_TRACE enables everything; "all" in the list too.
bool trace_enabled(const char* category);

// The I/O hooks' gate: true when recording and the "io" category is on. When recording
// was stopped by an error it counts the call as dropped and returns false.
bool should_record_io();

// Removes fd's path from the fd table and returns it (close/fclose).
std::uint32_t take_fd_path(int fd);

// Copies the text of an interned string (no NUL) into out; returns its length, or 0 when
// the id is unknown or longer than cap. Used to resolve paths relative to a directory fd.
std::size_t copy_string(std::uint32_t id, char* out, std::size_t cap);

// ThreadName record for the calling thread.
void record_thread_name(const char* name);

// Fork record in the parent (after fork() returned the child's pid).
void record_fork(std::int64_t child_pid);

// In a fork child (atfork child handler or after _Fork): forget the parent's file, chunks
// and string ids, then start this process's own file (ppid = the parent, kForkChild).
// Only async-signal-safe operations.
void restart_in_fork_child();

// Before exec: Exec record, header end time and kExecReplaced. Returns true when it marked
// the header, in which case exec_failed() must be called if exec returns. `path_id` is
// used when path is null (fexecve).
bool record_exec(const char* path, std::uint32_t path_id);
void exec_failed();

// Before exec of a statically linked program (process_hooks.cpp's probe): counted in the
// header with its path (FileHeader::static_execs). Safe in a vfork child: it touches only the
// mapped header, atomically. Returns whether it counted (then exec_failed() undoes it).
bool note_static_exec(const char* program);
void static_exec_failed();

// Process end: Dropped records, Exit{status, how}, header kExited/end/exit_status.
// how: 0 exit(), 1 _exit()/_Exit(). Only the first call per process records.
void record_exit(int status, int how);

// dlsym(RTLD_NEXT, name), falling back to dlvsym(name, version) when version is set.
// Returns nullptr when re-entered on the same thread (dlsym itself called a hook): the
// hook then falls back to the raw system call. Preserves errno.
void* resolve_next(const char* name, const char* version = nullptr);

// The next definition of an interposed function, resolved once and cached. get() returns
// nullptr while unresolvable (re-entered resolution, missing symbol): hooks then fall back
// to the raw system call or fail with ENOSYS, never abort.
template <class Fn>
class RealFunction {
 public:
  constexpr explicit RealFunction(const char* name, const char* version = nullptr)
      : name_(name), version_(version) {}
  Fn get() {
    Fn f = fn_.load(std::memory_order_acquire);
    return f != nullptr ? f : resolve();
  }

 private:
  __attribute__((noinline)) Fn resolve() {
    Fn f = reinterpret_cast<Fn>(resolve_next(name_, version_));
    if (f != nullptr) fn_.store(f, std::memory_order_release);
    return f;
  }
  const char* name_;
  const char* version_;
  std::atomic<Fn> fn_{nullptr};
};

// ---- The library's start (library.cpp, the constructor, in this order) ----
// Reads TRACETUNE_OUTPUT_DIR and the TRACETUNE_* options, resolves the real functions; false
// when this process is not to record (no directory, another instance of the library active).
bool configure_from_environment();
// The absolute output directory (after configure_from_environment).
const char* output_dir();
// Creates this process's record file and starts recording; false when the directory is unusable.
bool start_recording();
// After the other parts started: the file's second clock pair.
void finish_start();
// A TRACETUNE_* variable holding a small decimal integer (read without libc: safe in fork children).
bool env_int(const char* name, std::int32_t* out);

// Resolve the real libc functions (called once from the library constructor; the hooks
// also resolve lazily). Defined in io_hooks.cpp and process_hooks.cpp.
void resolve_io_functions();
void resolve_process_functions();
// Registers the atfork child handler and the exit handler (process_hooks.cpp).
void install_process_handlers();

}  // namespace tt::collector
