// Raw system calls and the rare-path lock the collector's in-job units share (writer.cpp,
// interner.cpp, python_api.cpp). Raw syscalls, not libc: the collector never calls the entry points it
// interposes, and these stay async-signal-safe for the fork-child path.
#pragma once

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace tt::collector {

inline void cpu_relax() {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Rare-path lock (string interning, descriptor reopen). Yields after a short spin so a
// preempted holder is not starved; never used on the per-record path.
class SpinLock {
 public:
  constexpr SpinLock() = default;
  void lock() {
    int spins = 0;
    while (state_.exchange(1, std::memory_order_acquire) != 0) {
      while (state_.load(std::memory_order_relaxed) != 0) {
        if (++spins < 256) {
          cpu_relax();
        } else {
          ::syscall(SYS_sched_yield);
        }
      }
    }
  }
  void unlock() { state_.store(0, std::memory_order_release); }
  // After fork the holder may be a thread that no longer exists.
  void reset() { state_.store(0, std::memory_order_relaxed); }

 private:
  std::atomic<std::uint32_t> state_{0};
};

inline int sys_openat(int dirfd, const char* path, int flags, int mode = 0) {
  return static_cast<int>(::syscall(SYS_openat, dirfd, path, flags, mode));
}
inline int sys_close(int fd) { return static_cast<int>(::syscall(SYS_close, fd)); }
inline long sys_read(int fd, void* buf, std::size_t n) { return ::syscall(SYS_read, fd, buf, n); }
inline long sys_pread(int fd, void* buf, std::size_t n, off_t off) { return ::syscall(SYS_pread64, fd, buf, n, off); }
inline std::int64_t sys_getpid() { return ::syscall(SYS_getpid); }

inline void* sys_mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t off) {
  return reinterpret_cast<void*>(::syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}
inline int sys_munmap(void* p, std::size_t len) { return static_cast<int>(::syscall(SYS_munmap, p, len)); }

inline void* map_anonymous(std::size_t n) {
  void* p = sys_mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace tt::collector
