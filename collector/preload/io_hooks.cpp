// libc I/O interposition for libtracetune_collector.so (LD_PRELOAD).
//
// Place in the collector: the "io" trace category. Each exported function here shadows the
// libc function of the same name, calls the real one (found with dlsym(RTLD_NEXT)), and
// records one IoRecord through writer.h. The record is written after the call, so the
// timing covers the real call only.
//
// Rules every hook follows:
//  - Not recording, "io" filtered out by TRACETUNE_TRACE, or re-entered on this thread
//    (ReentryGuard): call the real function and nothing else.
//  - errno as seen by the caller is exactly what the real function left.
//  - User pointers are only read after the real call accepted them (a failed call with
//    EFAULT is recorded without its path), so a hook never faults where libc would not.
//  - Calls that change the fd -> path table (open*, creat*, close, fopen*, fclose) check for
//    a vfork child first: it shares our memory but has its own descriptor table (CPython's
//    subprocess closes descriptors in a vfork child). The check (in_vfork_child) is a
//    thread-local flag that the vfork hook (vfork_hook.S) sets, and a getpid syscall only on
//    a thread so marked; read/write/stat hooks skip it.
//  - If the real symbol cannot be resolved (only while dlsym itself is running on this
//    thread), the hook issues the raw syscall (sys.h), or fails with ENOSYS for stdio.
// stdio's own reads and writes use libc-internal calls that never reach these hooks, so
// fread/fwrite are recorded once, at the stdio level.
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "sys.h"
#include "writer.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

// Not declared by the headers unless _FORTIFY_SOURCE is on, or gone since glibc 2.33
// (binaries built against older glibc still call the __xstat family).
extern "C" {
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen);
int __xstat(int ver, const char* path, struct stat* buf);
int __xstat64(int ver, const char* path, struct stat64* buf);
int __lxstat(int ver, const char* path, struct stat* buf);
int __lxstat64(int ver, const char* path, struct stat64* buf);
int __fxstat(int ver, int fd, struct stat* buf);
int __fxstat64(int ver, int fd, struct stat64* buf);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* buf, int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* buf, int flags);
}

namespace tt::collector {
namespace {

#if defined(__x86_64__)
constexpr const char* kXstatVersion = "GLIBC_2.2.5";
constexpr const char* kXstatAtVersion = "GLIBC_2.4";
#else
constexpr const char* kXstatVersion = "GLIBC_2.17";
constexpr const char* kXstatAtVersion = "GLIBC_2.17";
#endif

// ---- the real functions ----
using open_fn = int (*)(const char*, int, ...);
using openat_fn = int (*)(int, const char*, int, ...);
using creat_fn = int (*)(const char*, mode_t);
using open2_fn = int (*)(const char*, int);
using openat2_fn = int (*)(int, const char*, int);
using read_fn = ssize_t (*)(int, void*, size_t);
using pread_fn = ssize_t (*)(int, void*, size_t, off_t);
using readv_fn = ssize_t (*)(int, const struct iovec*, int);
using preadv_fn = ssize_t (*)(int, const struct iovec*, int, off_t);
using preadv2_fn = ssize_t (*)(int, const struct iovec*, int, off_t, int);
using write_fn = ssize_t (*)(int, const void*, size_t);
using pwrite_fn = ssize_t (*)(int, const void*, size_t, off_t);
using read_chk_fn = ssize_t (*)(int, void*, size_t, size_t);
using pread_chk_fn = ssize_t (*)(int, void*, size_t, off_t, size_t);
using close_fn = int (*)(int);
using lseek_fn = off_t (*)(int, off_t, int);
using stat_fn = int (*)(const char*, struct stat*);
using fstat_fn = int (*)(int, struct stat*);
using fstatat_fn = int (*)(int, const char*, struct stat*, int);
using stat64_fn = int (*)(const char*, struct stat64*);
using fstat64_fn = int (*)(int, struct stat64*);
using fstatat64_fn = int (*)(int, const char*, struct stat64*, int);
using statx_fn = int (*)(int, const char*, int, unsigned, struct statx*);
using xstat_fn = int (*)(int, const char*, struct stat*);
using xstat64_fn = int (*)(int, const char*, struct stat64*);
using fxstat_fn = int (*)(int, int, struct stat*);
using fxstat64_fn = int (*)(int, int, struct stat64*);
using fxstatat_fn = int (*)(int, int, const char*, struct stat*, int);
using fxstatat64_fn = int (*)(int, int, const char*, struct stat64*, int);
using mmap_fn = void* (*)(void*, size_t, int, int, int, off_t);
using fopen_fn = FILE* (*)(const char*, const char*);
using fio_fn = size_t (*)(void*, size_t, size_t, FILE*);
using fwrite_fn = size_t (*)(const void*, size_t, size_t, FILE*);
using fclose_fn = int (*)(FILE*);
using dup_fn = int (*)(int);
using dup2_fn = int (*)(int, int);
using dup3_fn = int (*)(int, int, int);
using close_range_fn = int (*)(unsigned, unsigned, int);
using closefrom_fn = void (*)(int);

constinit RealFunction<open_fn> r_open{"open"};
constinit RealFunction<open_fn> r_open64{"open64"};
constinit RealFunction<openat_fn> r_openat{"openat"};
constinit RealFunction<openat_fn> r_openat64{"openat64"};
constinit RealFunction<creat_fn> r_creat{"creat"};
constinit RealFunction<creat_fn> r_creat64{"creat64"};
constinit RealFunction<open2_fn> r_open_2{"__open_2"};
constinit RealFunction<open2_fn> r_open64_2{"__open64_2"};
constinit RealFunction<openat2_fn> r_openat_2{"__openat_2"};
constinit RealFunction<openat2_fn> r_openat64_2{"__openat64_2"};
constinit RealFunction<read_fn> r_read{"read"};
constinit RealFunction<pread_fn> r_pread{"pread"};
constinit RealFunction<pread_fn> r_pread64{"pread64"};
constinit RealFunction<readv_fn> r_readv{"readv"};
constinit RealFunction<preadv_fn> r_preadv{"preadv"};
constinit RealFunction<preadv_fn> r_preadv64{"preadv64"};
constinit RealFunction<preadv2_fn> r_preadv2{"preadv2"};
constinit RealFunction<preadv2_fn> r_preadv64v2{"preadv64v2"};
constinit RealFunction<read_chk_fn> r_read_chk{"__read_chk"};
constinit RealFunction<pread_chk_fn> r_pread_chk{"__pread_chk"};
constinit RealFunction<pread_chk_fn> r_pread64_chk{"__pread64_chk"};
constinit RealFunction<write_fn> r_write{"write"};
constinit RealFunction<pwrite_fn> r_pwrite{"pwrite"};
constinit RealFunction<pwrite_fn> r_pwrite64{"pwrite64"};
constinit RealFunction<readv_fn> r_writev{"writev"};
constinit RealFunction<close_fn> r_close{"close"};
constinit RealFunction<lseek_fn> r_lseek{"lseek"};
constinit RealFunction<lseek_fn> r_lseek64{"lseek64"};
constinit RealFunction<stat_fn> r_stat{"stat"};
constinit RealFunction<stat_fn> r_lstat{"lstat"};
constinit RealFunction<fstat_fn> r_fstat{"fstat"};
constinit RealFunction<fstatat_fn> r_fstatat{"fstatat"};
constinit RealFunction<stat64_fn> r_stat64{"stat64"};
constinit RealFunction<stat64_fn> r_lstat64{"lstat64"};
constinit RealFunction<fstat64_fn> r_fstat64{"fstat64"};
constinit RealFunction<fstatat64_fn> r_fstatat64{"fstatat64"};
constinit RealFunction<statx_fn> r_statx{"statx"};
constinit RealFunction<xstat_fn> r_xstat{"__xstat", kXstatVersion};
constinit RealFunction<xstat_fn> r_lxstat{"__lxstat", kXstatVersion};
constinit RealFunction<xstat64_fn> r_xstat64{"__xstat64", kXstatVersion};
constinit RealFunction<xstat64_fn> r_lxstat64{"__lxstat64", kXstatVersion};
constinit RealFunction<fxstat_fn> r_fxstat{"__fxstat", kXstatVersion};
constinit RealFunction<fxstat64_fn> r_fxstat64{"__fxstat64", kXstatVersion};
constinit RealFunction<fxstatat_fn> r_fxstatat{"__fxstatat", kXstatAtVersion};
constinit RealFunction<fxstatat64_fn> r_fxstatat64{"__fxstatat64", kXstatAtVersion};
constinit RealFunction<mmap_fn> r_mmap{"mmap"};
constinit RealFunction<mmap_fn> r_mmap64{"mmap64"};
constinit RealFunction<fopen_fn> r_fopen{"fopen"};
constinit RealFunction<fopen_fn> r_fopen64{"fopen64"};
constinit RealFunction<fio_fn> r_fread{"fread"};
constinit RealFunction<fwrite_fn> r_fwrite{"fwrite"};
constinit RealFunction<fclose_fn> r_fclose{"fclose"};
constinit RealFunction<dup_fn> r_dup{"dup"};
constinit RealFunction<dup2_fn> r_dup2{"dup2"};
constinit RealFunction<dup3_fn> r_dup3{"dup3"};
constinit RealFunction<close_range_fn> r_close_range{"close_range"};
constinit RealFunction<closefrom_fn> r_closefrom{"closefrom"};

// ---- recording ----

__attribute__((noinline)) void record_io(IoFunc func, std::int64_t start, std::int64_t end, int fd,
                                         std::int64_t bytes, std::int64_t offset,
                                         std::int64_t result, int err, std::uint32_t path) {
  const IoRecord r{start, end, bytes, offset, result, fd, err, path, func, {}};
  emit_io(r);
}

std::int64_t as_i64(std::size_t n) { return static_cast<std::int64_t>(n); }

// Byte count of an iovec array. Only called after the kernel accepted it.
std::int64_t iov_bytes(const struct iovec* iov, int count) {
  std::int64_t total = 0;
  for (int i = 0; i < count; ++i) total += as_i64(iov[i].iov_len);
  return total;
}

// Path id for a path argument, relative paths under a known directory fd joined to it.
// An empty path with a directory fd (AT_EMPTY_PATH) is that fd's own path.
std::uint32_t path_id(int dirfd, const char* path) {
  if (path == nullptr) return 0;
  if (path[0] == '\0') return dirfd == AT_FDCWD ? 0 : fd_path(dirfd);
  if (path[0] == '/' || dirfd == AT_FDCWD) return intern(path);
  const std::uint32_t dir = fd_path(dirfd);
  char joined[PATH_MAX];
  const std::size_t n = dir != 0 ? copy_string(dir, joined, sizeof joined) : 0;
  const std::size_t len = std::strlen(path);
  if (n == 0 || n + 1 + len > sizeof joined) return intern(path, len);
  joined[n] = '/';
  std::memcpy(joined + n + 1, path, len);
  return intern(joined, n + 1 + len);
}

// fd-based calls. `bytes_of(result)` is evaluated after the call (iovec sums need the
// kernel to have validated the array first).
template <class Call, class Bytes>
inline auto traced_fd(IoFunc func, int fd, std::int64_t offset, Call call, Bytes bytes_of)
    -> decltype(call()) {
  if (!should_record_io()) return call();
  ReentryGuard guard;
  if (!guard.active()) return call();
  const std::int64_t start = io_clock();
  const auto result = call();
  const std::int64_t end = io_clock();
  const int err = errno;
  record_io(func, start, end, fd, bytes_of(result), offset, static_cast<std::int64_t>(result),
            result < 0 ? err : 0, fd_path(fd));
  errno = err;
  return result;
}

inline auto no_bytes() {
  return [](auto) -> std::int64_t { return -1; };
}
inline auto fixed_bytes(std::size_t n) {
  return [v = as_i64(n)](auto) { return v; };
}

// Path-based stat calls (fd = the directory fd for *at calls).
template <class Call>
inline int traced_path(IoFunc func, int dirfd, const char* path, Call call) {
  if (!should_record_io()) return call();
  ReentryGuard guard;
  if (!guard.active()) return call();
  const std::int64_t start = io_clock();
  const int result = call();
  const std::int64_t end = io_clock();
  const int err = errno;
  const std::uint32_t id = result < 0 && err == EFAULT ? 0 : path_id(dirfd, path);
  record_io(func, start, end, dirfd == AT_FDCWD ? -1 : dirfd, -1, -1, result,
            result < 0 ? err : 0, id);
  errno = err;
  return result;
}

// open/openat/creat: the new fd's path goes into the fd table.
template <class Call>
inline int traced_open(IoFunc func, int dirfd, const char* path, Call call) {
  if (!should_record_io()) return call();
  ReentryGuard guard;
  if (!guard.active() || in_vfork_child()) return call();
  const std::int64_t start = io_clock();
  const int fd = call();
  const std::int64_t end = io_clock();
  const int err = errno;
  const std::uint32_t id = fd < 0 && err == EFAULT ? 0 : path_id(dirfd, path);
  if (fd >= 0) set_fd_path(fd, id);
  record_io(func, start, end, fd < 0 ? -1 : fd, -1, -1, fd, fd < 0 ? err : 0, id);
  errno = err;
  return fd;
}

// O_CREAT or O_TMPFILE are the only flags that make open() read its mode argument.
inline bool needs_mode(int flags) { return __OPEN_NEEDS_MODE(flags); }

int open_common(RealFunction<open_fn>& real_fn, IoFunc func, const char* path, int flags,
                mode_t mode) {
  open_fn real = real_fn.get();
  if (real == nullptr) return sys_openat(AT_FDCWD, path, flags, mode);
  return traced_open(func, AT_FDCWD, path, [&] { return real(path, flags, mode); });
}

int openat_common(RealFunction<openat_fn>& real_fn, IoFunc func, int dirfd, const char* path,
                  int flags, mode_t mode) {
  openat_fn real = real_fn.get();
  if (real == nullptr) return sys_openat(dirfd, path, flags, mode);
  return traced_open(func, dirfd, path, [&] { return real(dirfd, path, flags, mode); });
}

int file_fd(FILE* f) {
  if (f == nullptr) return -1;
  const int saved = errno;
  const int fd = fileno(f);  // sets EBADF for memory streams
  errno = saved;
  return fd;
}

std::int64_t stdio_bytes(std::size_t size, std::size_t n) {
  std::size_t total;
  return __builtin_mul_overflow(size, n, &total) ? -1 : as_i64(total);
}

// fread/fwrite report errors only through a short count: errno is cleared around the call
// to tell a real error from end-of-file, and restored when the call did not set it.
template <class Call>
inline std::size_t traced_stdio(IoFunc func, FILE* f, std::size_t size, std::size_t n, Call call) {
  if (!should_record_io()) return call();
  ReentryGuard guard;
  if (!guard.active()) return call();
  const int before = errno;
  errno = 0;
  const std::int64_t start = io_clock();
  const std::size_t result = call();
  const std::int64_t end = io_clock();
  const int err = errno;
  const int fd = file_fd(f);
  record_io(func, start, end, fd, stdio_bytes(size, n), -1, as_i64(result),
            result < n ? err : 0, fd_path(fd));
  errno = err != 0 ? err : before;
  return result;
}

FILE* fopen_common(RealFunction<fopen_fn>& real_fn, IoFunc func, const char* path,
                   const char* mode) {
  fopen_fn real = real_fn.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return nullptr;
  }
  if (!should_record_io()) return real(path, mode);
  ReentryGuard guard;
  if (!guard.active() || in_vfork_child()) return real(path, mode);
  const std::int64_t start = io_clock();
  FILE* f = real(path, mode);
  const std::int64_t end = io_clock();
  const int err = errno;
  const int fd = file_fd(f);
  const std::uint32_t id = f == nullptr && err == EFAULT ? 0 : path_id(AT_FDCWD, path);
  if (fd >= 0) set_fd_path(fd, id);
  record_io(func, start, end, fd, -1, -1, f != nullptr ? 1 : 0, f == nullptr ? err : 0, id);
  errno = err;
  return f;
}

void* mmap_common(RealFunction<mmap_fn>& real_fn, IoFunc func, void* addr, size_t len, int prot,
                  int flags, int fd, off_t off) {
  mmap_fn real = real_fn.get();
  if (real == nullptr) {
    return sys_mmap(addr, len, prot, flags, fd, off);
  }
  // Anonymous mappings (malloc's) are not file I/O: pass them straight through.
  if (fd < 0 || (flags & MAP_ANONYMOUS) != 0 || !should_record_io()) {
    return real(addr, len, prot, flags, fd, off);
  }
  ReentryGuard guard;
  if (!guard.active()) return real(addr, len, prot, flags, fd, off);
  const std::int64_t start = io_clock();
  void* p = real(addr, len, prot, flags, fd, off);
  const std::int64_t end = io_clock();
  const int err = errno;
  const bool ok = p != MAP_FAILED;
  record_io(func, start, end, fd, as_i64(len), off, ok ? 1 : 0, ok ? 0 : err, fd_path(fd));
  errno = err;
  return p;
}

// dup family: the new descriptor names the same file. Only the table changes (no record);
// a vfork child (CPython dup2()s stdio there) must leave the parent's table alone.
void copy_fd_path(int from, int to) {
  if (!recording()) return;
  const std::uint32_t path = fd_path(from);
  if (path == fd_path(to)) return;  // the common case (pipes, sockets): no syscall
  const int saved = errno;
  if (!in_vfork_child()) set_fd_path(to, path);
  errno = saved;
}

// close_range/closefrom: forget the paths of every descriptor they closed.
void forget_fd_range(unsigned first, unsigned last) {
  if (!recording()) return;
  const int saved = errno;
  if (!in_vfork_child()) {
    for (unsigned fd = first; fd <= last && fd < 65536; ++fd) {
      if (fd_path(static_cast<int>(fd)) != 0) take_fd_path(static_cast<int>(fd));
    }
  }
  errno = saved;
}

}  // namespace

void resolve_io_functions() {
  r_open.get(), r_open64.get(), r_openat.get(), r_openat64.get(), r_creat.get(), r_creat64.get();
  r_open_2.get(), r_open64_2.get(), r_openat_2.get(), r_openat64_2.get();
  r_read.get(), r_pread.get(), r_pread64.get(), r_readv.get(), r_preadv.get(), r_preadv64.get();
  r_preadv2.get(), r_preadv64v2.get(), r_read_chk.get(), r_pread_chk.get(), r_pread64_chk.get();
  r_write.get(), r_pwrite.get(), r_pwrite64.get(), r_writev.get(), r_close.get();
  r_lseek.get(), r_lseek64.get(), r_stat.get(), r_lstat.get(), r_fstat.get(), r_fstatat.get();
  r_stat64.get(), r_lstat64.get(), r_fstat64.get(), r_fstatat64.get(), r_statx.get();
  r_xstat.get(), r_lxstat.get(), r_xstat64.get(), r_lxstat64.get(), r_fxstat.get();
  r_fxstat64.get(), r_fxstatat.get(), r_fxstatat64.get();
  r_mmap.get(), r_mmap64.get(), r_fopen.get(), r_fopen64.get(), r_fread.get(), r_fwrite.get();
  r_fclose.get(), r_dup.get(), r_dup2.get(), r_dup3.get(), r_close_range.get(), r_closefrom.get();
}

}  // namespace tt::collector

using namespace tt::collector;

// ---- open family ----

TT_EXPORT int open(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return open_common(r_open, IoFunc::Open, path, flags, mode);
}

TT_EXPORT int open64(const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return open_common(r_open64, IoFunc::Open64, path, flags, mode);
}

TT_EXPORT int openat(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return openat_common(r_openat, IoFunc::OpenAt, dirfd, path, flags, mode);
}

TT_EXPORT int openat64(int dirfd, const char* path, int flags, ...) {
  mode_t mode = 0;
  if (needs_mode(flags)) {
    va_list ap;
    va_start(ap, flags);
    mode = static_cast<mode_t>(va_arg(ap, int));
    va_end(ap);
  }
  return openat_common(r_openat64, IoFunc::OpenAt64, dirfd, path, flags, mode);
}

TT_EXPORT int creat(const char* path, mode_t mode) {
  creat_fn real = r_creat.get();
  if (real == nullptr) return sys_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  return traced_open(IoFunc::Creat, AT_FDCWD, path, [&] { return real(path, mode); });
}

TT_EXPORT int creat64(const char* path, mode_t mode) {
  creat_fn real = r_creat64.get();
  if (real == nullptr) return sys_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode);
  return traced_open(IoFunc::Creat64, AT_FDCWD, path, [&] { return real(path, mode); });
}

// _FORTIFY_SOURCE variants of open without a mode argument.
TT_EXPORT int __open_2(const char* path, int flags) {
  open2_fn real = r_open_2.get();
  if (real == nullptr) return sys_openat(AT_FDCWD, path, flags, 0);
  return traced_open(IoFunc::Open2, AT_FDCWD, path, [&] { return real(path, flags); });
}

TT_EXPORT int __open64_2(const char* path, int flags) {
  open2_fn real = r_open64_2.get();
  if (real == nullptr) return sys_openat(AT_FDCWD, path, flags, 0);
  return traced_open(IoFunc::Open64_2, AT_FDCWD, path, [&] { return real(path, flags); });
}

TT_EXPORT int __openat_2(int dirfd, const char* path, int flags) {
  openat2_fn real = r_openat_2.get();
  if (real == nullptr) return sys_openat(dirfd, path, flags, 0);
  return traced_open(IoFunc::OpenAt2, dirfd, path, [&] { return real(dirfd, path, flags); });
}

TT_EXPORT int __openat64_2(int dirfd, const char* path, int flags) {
  openat2_fn real = r_openat64_2.get();
  if (real == nullptr) return sys_openat(dirfd, path, flags, 0);
  return traced_open(IoFunc::OpenAt2, dirfd, path, [&] { return real(dirfd, path, flags); });
}

// ---- reads ----

TT_EXPORT ssize_t read(int fd, void* buf, size_t n) {
  read_fn real = r_read.get();
  if (real == nullptr) return sys_read(fd, buf, n);
  return traced_fd(IoFunc::Read, fd, -1, [&] { return real(fd, buf, n); }, fixed_bytes(n));
}

TT_EXPORT ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen) {
  read_chk_fn real = r_read_chk.get();
  if (real == nullptr) return sys_read(fd, buf, n < buflen ? n : buflen);
  return traced_fd(IoFunc::Read, fd, -1, [&] { return real(fd, buf, n, buflen); },
                   fixed_bytes(n));
}

TT_EXPORT ssize_t pread(int fd, void* buf, size_t n, off_t off) {
  pread_fn real = r_pread.get();
  if (real == nullptr) return sys_pread(fd, buf, n, off);
  return traced_fd(IoFunc::Pread, fd, off, [&] { return real(fd, buf, n, off); }, fixed_bytes(n));
}

TT_EXPORT ssize_t pread64(int fd, void* buf, size_t n, off64_t off) {
  pread_fn real = r_pread64.get();
  if (real == nullptr) return sys_pread(fd, buf, n, off);
  return traced_fd(IoFunc::Pread64, fd, off, [&] { return real(fd, buf, n, off); },
                   fixed_bytes(n));
}

TT_EXPORT ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  pread_chk_fn real = r_pread_chk.get();
  if (real == nullptr) return sys_pread(fd, buf, n < buflen ? n : buflen, off);
  return traced_fd(IoFunc::Pread, fd, off, [&] { return real(fd, buf, n, off, buflen); },
                   fixed_bytes(n));
}

TT_EXPORT ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  pread_chk_fn real = r_pread64_chk.get();
  if (real == nullptr) return sys_pread(fd, buf, n < buflen ? n : buflen, off);
  return traced_fd(IoFunc::Pread64, fd, off, [&] { return real(fd, buf, n, off, buflen); },
                   fixed_bytes(n));
}

TT_EXPORT ssize_t readv(int fd, const struct iovec* iov, int count) {
  readv_fn real = r_readv.get();
  if (real == nullptr) return sys_readv(fd, iov, count);
  return traced_fd(IoFunc::Readv, fd, -1, [&] { return real(fd, iov, count); },
                   [&](ssize_t r) { return r >= 0 ? iov_bytes(iov, count) : -1; });
}

TT_EXPORT ssize_t preadv(int fd, const struct iovec* iov, int count, off_t off) {
  preadv_fn real = r_preadv.get();
  if (real == nullptr) return sys_preadv(fd, iov, count, off);
  return traced_fd(IoFunc::Preadv, fd, off, [&] { return real(fd, iov, count, off); },
                   [&](ssize_t r) { return r >= 0 ? iov_bytes(iov, count) : -1; });
}

TT_EXPORT ssize_t preadv64(int fd, const struct iovec* iov, int count, off64_t off) {
  preadv_fn real = r_preadv64.get();
  if (real == nullptr) return sys_preadv(fd, iov, count, off);
  return traced_fd(IoFunc::Preadv64, fd, off, [&] { return real(fd, iov, count, off); },
                   [&](ssize_t r) { return r >= 0 ? iov_bytes(iov, count) : -1; });
}

TT_EXPORT ssize_t preadv2(int fd, const struct iovec* iov, int count, off_t off, int flags) {
  preadv2_fn real = r_preadv2.get();
  if (real == nullptr) return sys_preadv2(fd, iov, count, off, flags);
  return traced_fd(IoFunc::Preadv2, fd, off, [&] { return real(fd, iov, count, off, flags); },
                   [&](ssize_t r) { return r >= 0 ? iov_bytes(iov, count) : -1; });
}

TT_EXPORT ssize_t preadv64v2(int fd, const struct iovec* iov, int count, off64_t off, int flags) {
  preadv2_fn real = r_preadv64v2.get();
  if (real == nullptr) return sys_preadv2(fd, iov, count, off, flags);
  return traced_fd(IoFunc::Preadv2, fd, off, [&] { return real(fd, iov, count, off, flags); },
                   [&](ssize_t r) { return r >= 0 ? iov_bytes(iov, count) : -1; });
}

// ---- writes ----

TT_EXPORT ssize_t write(int fd, const void* buf, size_t n) {
  write_fn real = r_write.get();
  if (real == nullptr) return sys_write(fd, buf, n);
  return traced_fd(IoFunc::Write, fd, -1, [&] { return real(fd, buf, n); }, fixed_bytes(n));
}

TT_EXPORT ssize_t pwrite(int fd, const void* buf, size_t n, off_t off) {
  pwrite_fn real = r_pwrite.get();
  if (real == nullptr) return sys_pwrite(fd, buf, n, off);
  return traced_fd(IoFunc::Pwrite, fd, off, [&] { return real(fd, buf, n, off); },
                   fixed_bytes(n));
}

TT_EXPORT ssize_t pwrite64(int fd, const void* buf, size_t n, off64_t off) {
  pwrite_fn real = r_pwrite64.get();
  if (real == nullptr) return sys_pwrite(fd, buf, n, off);
  return traced_fd(IoFunc::Pwrite64, fd, off, [&] { return real(fd, buf, n, off); },
                   fixed_bytes(n));
}

TT_EXPORT ssize_t writev(int fd, const struct iovec* iov, int count) {
  readv_fn real = r_writev.get();
  if (real == nullptr) return sys_writev(fd, iov, count);
  return traced_fd(IoFunc::Writev, fd, -1, [&] { return real(fd, iov, count); },
                   [&](ssize_t r) { return r >= 0 ? iov_bytes(iov, count) : -1; });
}

// ---- close / lseek ----

TT_EXPORT int close(int fd) {
  close_fn real = r_close.get();
  if (real == nullptr) return sys_close(fd);
  if (!should_record_io()) return real(fd);
  ReentryGuard guard;
  if (!guard.active() || in_vfork_child()) return real(fd);
  // Cleared before the call: once close returns, another thread may get the same number.
  const std::uint32_t path = take_fd_path(fd);
  const std::int64_t start = io_clock();
  const int result = real(fd);
  const std::int64_t end = io_clock();
  const int err = errno;
  record_io(IoFunc::Close, start, end, fd, -1, -1, result, result < 0 ? err : 0, path);
  errno = err;
  return result;
}

TT_EXPORT off_t lseek(int fd, off_t off, int whence) noexcept {
  lseek_fn real = r_lseek.get();
  if (real == nullptr) return sys_lseek(fd, off, whence);
  return traced_fd(IoFunc::Lseek, fd, off, [&] { return real(fd, off, whence); }, no_bytes());
}

TT_EXPORT off64_t lseek64(int fd, off64_t off, int whence) noexcept {
  lseek_fn real = r_lseek64.get();
  if (real == nullptr) return sys_lseek(fd, off, whence);
  return traced_fd(IoFunc::Lseek64, fd, off, [&] { return real(fd, off, whence); }, no_bytes());
}

// ---- stat family ----

TT_EXPORT int stat(const char* path, struct stat* buf) noexcept {
  stat_fn real = r_stat.get();
  return traced_path(IoFunc::Stat, AT_FDCWD, path, [&] {
    return real ? real(path, buf) : sys_fstatat(AT_FDCWD, path, buf, 0);
  });
}

TT_EXPORT int lstat(const char* path, struct stat* buf) noexcept {
  stat_fn real = r_lstat.get();
  return traced_path(IoFunc::Lstat, AT_FDCWD, path, [&] {
    return real ? real(path, buf) : sys_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
  });
}

TT_EXPORT int fstat(int fd, struct stat* buf) noexcept {
  fstat_fn real = r_fstat.get();
  if (real == nullptr) return sys_fstat(fd, buf);
  return traced_fd(IoFunc::Fstat, fd, -1, [&] { return real(fd, buf); }, no_bytes());
}

TT_EXPORT int fstatat(int dirfd, const char* path, struct stat* buf, int flags) noexcept {
  fstatat_fn real = r_fstatat.get();
  return traced_path(IoFunc::Fstatat, dirfd, path, [&] {
    return real ? real(dirfd, path, buf, flags) : sys_fstatat(dirfd, path, buf, flags);
  });
}

TT_EXPORT int stat64(const char* path, struct stat64* buf) noexcept {
  stat64_fn real = r_stat64.get();
  return traced_path(IoFunc::Stat64, AT_FDCWD, path, [&] {
    return real ? real(path, buf) : sys_fstatat(AT_FDCWD, path, buf, 0);
  });
}

TT_EXPORT int lstat64(const char* path, struct stat64* buf) noexcept {
  stat64_fn real = r_lstat64.get();
  return traced_path(IoFunc::Lstat64, AT_FDCWD, path, [&] {
    return real ? real(path, buf) : sys_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
  });
}

TT_EXPORT int fstat64(int fd, struct stat64* buf) noexcept {
  fstat64_fn real = r_fstat64.get();
  if (real == nullptr) return sys_fstat(fd, buf);
  return traced_fd(IoFunc::Fstat64, fd, -1, [&] { return real(fd, buf); }, no_bytes());
}

TT_EXPORT int fstatat64(int dirfd, const char* path, struct stat64* buf, int flags) noexcept {
  fstatat64_fn real = r_fstatat64.get();
  return traced_path(IoFunc::Fstatat64, dirfd, path, [&] {
    return real ? real(dirfd, path, buf, flags) : sys_fstatat(dirfd, path, buf, flags);
  });
}

#if __GLIBC_PREREQ(2, 28)
TT_EXPORT int statx(int dirfd, const char* path, int flags, unsigned mask,
                    struct statx* buf) noexcept {
  statx_fn real = r_statx.get();
  return traced_path(IoFunc::Statx, dirfd, path, [&] {
    return real ? real(dirfd, path, flags, mask, buf)
                : sys_statx(dirfd, path, flags, mask, buf);
  });
}
#endif  // glibc >= 2.28

// glibc < 2.33 ABI: `ver` is _STAT_VER; the fallback assumes the kernel layout, as glibc
// itself does on x86_64 and aarch64.
TT_EXPORT int __xstat(int ver, const char* path, struct stat* buf) {
  xstat_fn real = r_xstat.get();
  return traced_path(IoFunc::Stat, AT_FDCWD, path, [&] {
    return real ? real(ver, path, buf) : sys_fstatat(AT_FDCWD, path, buf, 0);
  });
}

TT_EXPORT int __xstat64(int ver, const char* path, struct stat64* buf) {
  xstat64_fn real = r_xstat64.get();
  return traced_path(IoFunc::Stat64, AT_FDCWD, path, [&] {
    return real ? real(ver, path, buf) : sys_fstatat(AT_FDCWD, path, buf, 0);
  });
}

TT_EXPORT int __lxstat(int ver, const char* path, struct stat* buf) {
  xstat_fn real = r_lxstat.get();
  return traced_path(IoFunc::Lstat, AT_FDCWD, path, [&] {
    return real ? real(ver, path, buf) : sys_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
  });
}

TT_EXPORT int __lxstat64(int ver, const char* path, struct stat64* buf) {
  xstat64_fn real = r_lxstat64.get();
  return traced_path(IoFunc::Lstat64, AT_FDCWD, path, [&] {
    return real ? real(ver, path, buf) : sys_fstatat(AT_FDCWD, path, buf, AT_SYMLINK_NOFOLLOW);
  });
}

TT_EXPORT int __fxstat(int ver, int fd, struct stat* buf) {
  fxstat_fn real = r_fxstat.get();
  if (real == nullptr) return sys_fstat(fd, buf);
  return traced_fd(IoFunc::Fstat, fd, -1, [&] { return real(ver, fd, buf); }, no_bytes());
}

TT_EXPORT int __fxstat64(int ver, int fd, struct stat64* buf) {
  fxstat64_fn real = r_fxstat64.get();
  if (real == nullptr) return sys_fstat(fd, buf);
  return traced_fd(IoFunc::Fstat64, fd, -1, [&] { return real(ver, fd, buf); }, no_bytes());
}

TT_EXPORT int __fxstatat(int ver, int dirfd, const char* path, struct stat* buf, int flags) {
  fxstatat_fn real = r_fxstatat.get();
  return traced_path(IoFunc::Fstatat, dirfd, path, [&] {
    return real ? real(ver, dirfd, path, buf, flags) : sys_fstatat(dirfd, path, buf, flags);
  });
}

TT_EXPORT int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* buf, int flags) {
  fxstatat64_fn real = r_fxstatat64.get();
  return traced_path(IoFunc::Fstatat64, dirfd, path, [&] {
    return real ? real(ver, dirfd, path, buf, flags) : sys_fstatat(dirfd, path, buf, flags);
  });
}

// ---- mmap ----

TT_EXPORT void* mmap(void* addr, size_t len, int prot, int flags, int fd, off_t off) noexcept {
  return mmap_common(r_mmap, IoFunc::Mmap, addr, len, prot, flags, fd, off);
}

TT_EXPORT void* mmap64(void* addr, size_t len, int prot, int flags, int fd, off64_t off) noexcept {
  return mmap_common(r_mmap64, IoFunc::Mmap64, addr, len, prot, flags, fd, off);
}

// ---- stdio ----

TT_EXPORT FILE* fopen(const char* path, const char* mode) {
  return fopen_common(r_fopen, IoFunc::Fopen, path, mode);
}

TT_EXPORT FILE* fopen64(const char* path, const char* mode) {
  return fopen_common(r_fopen64, IoFunc::Fopen64, path, mode);
}

TT_EXPORT size_t fread(void* ptr, size_t size, size_t n, FILE* f) {
  fio_fn real = r_fread.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return 0;
  }
  return traced_stdio(IoFunc::Fread, f, size, n, [&] { return real(ptr, size, n, f); });
}

TT_EXPORT size_t fwrite(const void* ptr, size_t size, size_t n, FILE* f) {
  fwrite_fn real = r_fwrite.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return 0;
  }
  return traced_stdio(IoFunc::Fwrite, f, size, n, [&] { return real(ptr, size, n, f); });
}

TT_EXPORT int fclose(FILE* f) {
  fclose_fn real = r_fclose.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return EOF;
  }
  if (!should_record_io()) return real(f);
  ReentryGuard guard;
  if (!guard.active() || in_vfork_child()) return real(f);
  const int fd = file_fd(f);
  const std::uint32_t path = take_fd_path(fd);
  const std::int64_t start = io_clock();
  const int result = real(f);
  const std::int64_t end = io_clock();
  const int err = errno;
  record_io(IoFunc::Fclose, start, end, fd, -1, -1, result, result != 0 ? err : 0, path);
  errno = err;
  return result;
}

// ---- descriptor bookkeeping (no records) ----

TT_EXPORT int dup(int fd) noexcept {
  dup_fn real = r_dup.get();
  const int result = real ? real(fd) : sys_dup(fd);
  if (result >= 0) copy_fd_path(fd, result);
  return result;
}

TT_EXPORT int dup2(int fd, int fd2) noexcept {
  dup2_fn real = r_dup2.get();
  const int result = real ? real(fd, fd2) : sys_dup3(fd, fd2, 0);
  if (result >= 0 && fd != fd2) copy_fd_path(fd, fd2);
  return result;
}

TT_EXPORT int dup3(int fd, int fd2, int flags) noexcept {
  dup3_fn real = r_dup3.get();
  const int result = real ? real(fd, fd2, flags) : sys_dup3(fd, fd2, flags);
  if (result >= 0) copy_fd_path(fd, fd2);
  return result;
}

#if __GLIBC_PREREQ(2, 34)
TT_EXPORT int close_range(unsigned first, unsigned last, int flags) noexcept {
  close_range_fn real = r_close_range.get();
  const int result = real ? real(first, last, flags)
                          : sys_close_range(first, last, flags);
  if (result == 0 && (flags & CLOSE_RANGE_CLOEXEC) == 0) forget_fd_range(first, last);
  return result;
}

TT_EXPORT void closefrom(int lowfd) noexcept {
  closefrom_fn real = r_closefrom.get();
  if (real != nullptr) {
    real(lowfd);
  } else {
    sys_close_range(lowfd, ~0u, 0);
  }
  if (lowfd >= 0) forget_fd_range(static_cast<unsigned>(lowfd), ~0u);
}
#endif  // glibc >= 2.34
