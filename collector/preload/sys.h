// Raw system calls and the rare-path lock the collector's in-job units share (writer.cpp,
// interner.cpp, python_api.cpp, io_hooks.cpp, process_hooks.cpp). Every raw syscall of the
// collector is one of the wrappers here. Raw syscalls, not libc: the collector never calls the
// entry points it interposes (a hook whose real function cannot be resolved yet falls back to
// these), and they stay async-signal-safe for the fork-child path.
#pragma once

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
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
          ::syscall(SYS_sched_yield);  // sys_sched_yield(), declared below
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

// ---- files and descriptors ----
inline int sys_openat(int dirfd, const char* path, int flags, int mode = 0) {
  return static_cast<int>(::syscall(SYS_openat, dirfd, path, flags, mode));
}
inline int sys_close(int fd) { return static_cast<int>(::syscall(SYS_close, fd)); }
inline long sys_read(int fd, void* buf, std::size_t n) { return ::syscall(SYS_read, fd, buf, n); }
inline long sys_pread(int fd, void* buf, std::size_t n, off_t off) { return ::syscall(SYS_pread64, fd, buf, n, off); }
inline long sys_readv(int fd, const struct iovec* iov, int count) { return ::syscall(SYS_readv, fd, iov, count); }
// preadv/preadv2 take the offset as two words (low, high); on 64-bit targets the low word is all of it
inline long sys_preadv(int fd, const struct iovec* iov, int count, off_t off) {
  return ::syscall(SYS_preadv, fd, iov, count, off, 0);
}
inline long sys_preadv2(int fd, const struct iovec* iov, int count, off_t off, int flags) {
  return ::syscall(SYS_preadv2, fd, iov, count, off, 0, flags);
}
inline long sys_write(int fd, const void* buf, std::size_t n) { return ::syscall(SYS_write, fd, buf, n); }
inline long sys_pwrite(int fd, const void* buf, std::size_t n, off_t off) {
  return ::syscall(SYS_pwrite64, fd, buf, n, off);
}
inline long sys_writev(int fd, const struct iovec* iov, int count) { return ::syscall(SYS_writev, fd, iov, count); }
inline off_t sys_lseek(int fd, off_t off, int whence) { return ::syscall(SYS_lseek, fd, off, whence); }
// x86_64 and aarch64 glibc use the kernel's struct stat, so `buf` may be either
inline int sys_fstat(int fd, void* buf) { return static_cast<int>(::syscall(SYS_fstat, fd, buf)); }
inline int sys_fstatat(int dirfd, const char* path, void* buf, int flags) {
  return static_cast<int>(::syscall(SYS_newfstatat, dirfd, path, buf, flags));
}
inline int sys_statx(int dirfd, const char* path, int flags, unsigned mask, void* buf) {
  return static_cast<int>(::syscall(SYS_statx, dirfd, path, flags, mask, buf));
}
inline int sys_fstatfs(int fd, struct statfs* st) { return static_cast<int>(::syscall(SYS_fstatfs, fd, st)); }
inline int sys_fchmod(int fd, int mode) { return static_cast<int>(::syscall(SYS_fchmod, fd, mode)); }
inline int sys_fallocate(int fd, off_t off, off_t len) {
  return static_cast<int>(::syscall(SYS_fallocate, fd, 0, off, len));
}
inline int sys_mkdirat(int dirfd, const char* path, int mode) {
  return static_cast<int>(::syscall(SYS_mkdirat, dirfd, path, mode));
}
inline int sys_unlinkat(int dirfd, const char* path) { return static_cast<int>(::syscall(SYS_unlinkat, dirfd, path, 0)); }
inline int sys_faccessat(int dirfd, const char* path, int mode) {
  return static_cast<int>(::syscall(SYS_faccessat, dirfd, path, mode, 0));
}
inline long sys_readlinkat(int dirfd, const char* path, char* buf, std::size_t size) {
  return ::syscall(SYS_readlinkat, dirfd, path, buf, size);
}
inline int sys_dup(int fd) { return static_cast<int>(::syscall(SYS_dup, fd)); }
inline int sys_dup3(int fd, int fd2, int flags) { return static_cast<int>(::syscall(SYS_dup3, fd, fd2, flags)); }
inline int sys_close_range(unsigned first, unsigned last, int flags) {
  return static_cast<int>(::syscall(SYS_close_range, first, last, flags));
}

// ---- processes and threads ----
inline std::int64_t sys_getpid() { return ::syscall(SYS_getpid); }
inline std::int64_t sys_getppid() { return ::syscall(SYS_getppid); }
inline std::uint32_t sys_gettid() { return static_cast<std::uint32_t>(::syscall(SYS_gettid)); }
inline std::uint32_t sys_geteuid() { return static_cast<std::uint32_t>(::syscall(SYS_geteuid)); }
inline int sys_execve(const char* path, char* const argv[], char* const envp[]) {
  return static_cast<int>(::syscall(SYS_execve, path, argv, envp));
}
[[noreturn]] inline void sys_exit_group(int status) {
  ::syscall(SYS_exit_group, status);
  __builtin_unreachable();
}
inline void sys_sched_yield() { ::syscall(SYS_sched_yield); }
inline int sys_prlimit64(int pid, int resource, const struct rlimit* fresh, struct rlimit* old) {
  return static_cast<int>(::syscall(SYS_prlimit64, pid, resource, fresh, old));
}
inline long sys_getcwd(char* buf, std::size_t size) { return ::syscall(SYS_getcwd, buf, size); }
inline int sys_uname(struct utsname* u) { return static_cast<int>(::syscall(SYS_uname, u)); }

// ---- memory ----
inline void* sys_mmap(void* addr, std::size_t len, int prot, int flags, int fd, off_t off) {
  return reinterpret_cast<void*>(::syscall(SYS_mmap, addr, len, prot, flags, fd, off));
}
inline int sys_munmap(void* p, std::size_t len) { return static_cast<int>(::syscall(SYS_munmap, p, len)); }

inline void* map_anonymous(std::size_t n) {
  void* p = sys_mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace tt::collector
