// Process lifecycle hooks for libtracetune_collector.so: fork, exec, exit, thread names.
//
// Place in the collector: these wrappers tell writer.cpp when the process changes identity
// or ends; the bookkeeping itself (files, header flags, records) lives in writer.cpp.
//
//  - fork(): the child gets its own record file from the pthread_atfork child handler (it
//    runs first among child handlers because we register from the library constructor);
//    the parent records Fork{child pid} from the wrapper, the only place that knows the pid.
//    _Fork() (glibc >= 2.34, runs no atfork handlers) is wrapped for the same reason.
//  - vfork(): no C wrapper (it cannot return twice on one stack). On x86-64 vfork_hook.S marks
//    the calling thread and jumps to the real vfork; elsewhere vfork is not interposed. A vfork
//    child shares our memory, so exec*/_exit wrappers, open/close/dup and the exit handler detect
//    it (getpid() differs from the pid that owns the file, asked only while the thread is marked
//    where the hook exists) and then only call the real function.
//  - exec family: Exec record and kExecReplaced before the call, undone if exec returns;
//    the new image re-initializes through LD_PRELOAD and writes its own file (same pid).
//    A statically linked program never loads us: its ELF program headers are read first
//    (elf_probe.h) and the exec is counted in the file's header (FileHeader::static_execs),
//    so that the trace can say whose I/O is missing.
//    posix_spawn needs no hook: its child runs only libc-internal code, then a new image.
//  - exit(): an on_exit handler (gets the status); _exit()/_Exit() are wrapped because
//    multiprocessing children (PyTorch DataLoader workers) leave through os._exit().
//  - Signals: no handlers are installed (but the flight recorder's dump signal, dump_signal.cpp,
//    under the job's own); a killed process keeps every committed record and the merger marks
//    it truncated (no Exit record).
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>

#include "ring_steps.h"
#include "sys.h"
#include "tracetune/collector/elf_probe.h"
#include "window.h"
#include "writer.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

namespace tt::collector {
namespace {

using fork_fn = pid_t (*)();
using execve_fn = int (*)(const char*, char* const[], char* const[]);
using execv_fn = int (*)(const char*, char* const[]);
using fexecve_fn = int (*)(int, char* const[], char* const[]);
using exit_fn = void (*)(int);
using setname_fn = int (*)(pthread_t, const char*);

constinit RealFunction<fork_fn> r_fork{"fork"};
constinit RealFunction<fork_fn> r_Fork{"_Fork"};
constinit RealFunction<execve_fn> r_execve{"execve"};
constinit RealFunction<execv_fn> r_execv{"execv"};
constinit RealFunction<execv_fn> r_execvp{"execvp"};
constinit RealFunction<execve_fn> r_execvpe{"execvpe"};
constinit RealFunction<fexecve_fn> r_fexecve{"fexecve"};
constinit RealFunction<exit_fn> r_exit{"_exit"};
constinit RealFunction<exit_fn> r_Exit{"_Exit"};
constinit RealFunction<setname_fn> r_setname{"pthread_setname_np"};

// Whether the program behind `fd` is statically linked. Raw syscalls, a stack buffer: exec
// may be called from a vfork child.
bool static_program(int fd) {
  return elf::linking([fd](void* buf, std::size_t n, std::uint64_t off) {
           return sys_pread(fd, buf, n, static_cast<off_t>(off));
         }) == elf::Linking::Static;
}

bool static_program(const char* path) {
  const int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool s = static_program(fd);
  sys_close(fd);
  return s;
}

// The program execvp would run for `file`: searched in PATH when it has no slash (the first
// executable match, as execvp does), into `buf`. Null when none is found.
const char* search_path(const char* file, char* buf, std::size_t size) {
  if (std::strchr(file, '/') != nullptr) return file;
  const char* dirs = ::getenv("PATH");
  if (dirs == nullptr) dirs = "/bin:/usr/bin";
  const std::size_t flen = std::strlen(file);
  for (const char* d = dirs;; ++d) {
    const char* end = std::strchr(d, ':');
    const std::size_t dlen = end != nullptr ? static_cast<std::size_t>(end - d) : std::strlen(d);
    if (dlen + flen + 3 <= size) {
      std::size_t k = 0;
      if (dlen == 0) buf[k++] = '.';
      std::memcpy(buf + k, d, dlen);
      k += dlen;
      buf[k++] = '/';
      std::memcpy(buf + k, file, flen + 1);
      if (sys_faccessat(AT_FDCWD, buf, X_OK) == 0) return buf;
    }
    if (end == nullptr) return nullptr;
    d = end;
  }
}

// The file behind fexecve's descriptor, from /proc/self/fd (null when it cannot be read).
const char* fd_program(int fd, char* buf, std::size_t size) {
  char link[32] = "/proc/self/fd/";
  char digits[12];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(fd); n == 0 || v != 0; v /= 10) digits[n++] = static_cast<char>('0' + v % 10);
  std::size_t k = 14;
  while (n > 0) link[k++] = digits[--n];
  link[k] = '\0';
  const long len = sys_readlinkat(AT_FDCWD, link, buf, size - 1);
  if (len <= 0) return nullptr;
  buf[len] = '\0';
  return buf;
}

// Exec record before the call; the header mark is undone if exec returns (it failed). A
// statically linked `program` (the file exec will run; null: unknown) is noted in the header,
// also from a vfork child, which writes no records.
template <class Call>
int traced_exec(const char* path, std::uint32_t path_id, const char* program, Call call) {
  const bool is_static = program != nullptr && static_program(program) && note_static_exec(program);
  const bool marked = record_exec(path, path_id);
  const int result = call();
  const int err = errno;
  if (marked) exec_failed();
  if (is_static) static_exec_failed();
  errno = err;
  return result;
}

int do_execve(const char* path, char* const argv[], char* const envp[]) {
  execve_fn real = r_execve.get();
  return traced_exec(path, 0, path, [&] {
    return real ? real(path, argv, envp) : sys_execve(path, argv, envp);
  });
}

int do_execvp(const char* file, char* const argv[]) {
  execv_fn real = r_execvp.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  char buf[4096];
  return traced_exec(file, 0, search_path(file, buf, sizeof buf), [&] { return real(file, argv); });
}

int do_execvpe(const char* file, char* const argv[], char* const envp[]) {
  execve_fn real = r_execvpe.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  char buf[4096];
  return traced_exec(file, 0, search_path(file, buf, sizeof buf), [&] { return real(file, argv, envp); });
}

// execl-style argument lists: the arguments after `first`, up to the terminating null.
std::size_t count_args(const char* first, va_list ap) {
  if (first == nullptr) return 0;
  std::size_t n = 1;
  while (va_arg(ap, const char*) != nullptr) ++n;
  return n;
}

void fill_args(char** argv, std::size_t n, const char* first, va_list ap) {
  if (n > 0) argv[0] = const_cast<char*>(first);
  for (std::size_t i = 1; i < n; ++i) argv[i] = va_arg(ap, char*);
  argv[n] = nullptr;
}

// In a fork child, before it runs anything else: its own record file, and its step state (window,
// step ring) from none, with the locks a parent thread may have held at the fork released.
void after_fork_in_child() {
  restart_in_fork_child();
  window_forked();
  ring_steps_forked();
}

void atfork_child() { after_fork_in_child(); }

void at_exit(int status, void*) { record_exit(status, 0); }

}  // namespace

void resolve_process_functions() {
  r_fork.get(), r_Fork.get(), r_execve.get(), r_execv.get(), r_execvp.get(), r_execvpe.get();
  r_fexecve.get(), r_exit.get(), r_Exit.get(), r_setname.get();
#if defined(TT_VFORK_HOOK)
  tracetune_real_vfork = resolve_next("vfork");
#endif
}

void install_process_handlers() {
  pthread_atfork(nullptr, nullptr, &atfork_child);
  on_exit(&at_exit, nullptr);
}

}  // namespace tt::collector

using namespace tt::collector;

// ---- fork ----

TT_EXPORT pid_t fork(void) {
  fork_fn real = r_fork.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  // Held across the whole fork: I/O in other atfork handlers on this thread must not be
  // recorded into a file that is about to belong to the other process.
  ReentryGuard guard;
  const pid_t pid = real();
  if (pid > 0 && guard.active()) {
    const int err = errno;
    record_fork(pid);
    errno = err;
  }
  return pid;
}

#if __GLIBC_PREREQ(2, 34)  // _Fork: async-signal-safe fork without atfork handlers
TT_EXPORT pid_t _Fork(void) noexcept {
  fork_fn real = r_Fork.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  ReentryGuard guard;
  const pid_t pid = real();
  const int err = errno;
  if (pid == 0) {
    after_fork_in_child();
  } else if (pid > 0 && guard.active()) {
    record_fork(pid);
  }
  errno = err;
  return pid;
}
#endif

#if defined(TT_VFORK_HOOK)
// vfork_hook.S jumps here while the real vfork is unresolved: a fork is a valid vfork.
extern "C" __attribute__((visibility("hidden"))) pid_t tracetune_vfork_fallback() { return fork(); }
#endif

// ---- exec family ----

TT_EXPORT int execve(const char* path, char* const argv[], char* const envp[]) noexcept {
  return do_execve(path, argv, envp);
}

TT_EXPORT int execv(const char* path, char* const argv[]) noexcept {
  execv_fn real = r_execv.get();
  if (real == nullptr) return do_execve(path, argv, environ);
  return traced_exec(path, 0, path, [&] { return real(path, argv); });
}

TT_EXPORT int execvp(const char* file, char* const argv[]) noexcept {
  return do_execvp(file, argv);
}

TT_EXPORT int execvpe(const char* file, char* const argv[], char* const envp[]) noexcept {
  return do_execvpe(file, argv, envp);
}

TT_EXPORT int fexecve(int fd, char* const argv[], char* const envp[]) noexcept {
  fexecve_fn real = r_fexecve.get();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  char buf[4096];
  return traced_exec(nullptr, fd_path(fd), fd_program(fd, buf, sizeof buf), [&] { return real(fd, argv, envp); });
}

// The variadic forms build argv on the stack (as glibc does) and share the paths above.
TT_EXPORT int execl(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  const std::size_t n = count_args(arg, ap);
  va_end(ap);
  auto** argv = static_cast<char**>(__builtin_alloca((n + 1) * sizeof(char*)));
  va_start(ap, arg);
  fill_args(argv, n, arg, ap);
  va_end(ap);
  return do_execve(path, argv, environ);
}

TT_EXPORT int execlp(const char* file, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  const std::size_t n = count_args(arg, ap);
  va_end(ap);
  auto** argv = static_cast<char**>(__builtin_alloca((n + 1) * sizeof(char*)));
  va_start(ap, arg);
  fill_args(argv, n, arg, ap);
  va_end(ap);
  return do_execvp(file, argv);
}

TT_EXPORT int execle(const char* path, const char* arg, ...) noexcept {
  va_list ap;
  va_start(ap, arg);
  const std::size_t n = count_args(arg, ap);
  va_end(ap);
  auto** argv = static_cast<char**>(__builtin_alloca((n + 1) * sizeof(char*)));
  va_start(ap, arg);
  fill_args(argv, n, arg, ap);
  if (n > 0) (void)va_arg(ap, char*);  // the null that ends the list; envp follows it
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return do_execve(path, argv, envp);
}

// ---- exit ----

TT_EXPORT void _exit(int status) {
  record_exit(status, 1);  // no-op in a vfork child
  if (exit_fn real = r_exit.get()) real(status);
  sys_exit_group(status);
  __builtin_unreachable();
}

TT_EXPORT void _Exit(int status) noexcept {
  record_exit(status, 1);
  if (exit_fn real = r_Exit.get()) real(status);
  sys_exit_group(status);
  __builtin_unreachable();
}

// ---- thread names ----

// Only names set for the calling thread are recorded: glibc offers no pthread_t -> tid
// mapping for other threads (PyTorch and CPython name threads from the thread itself).
TT_EXPORT int pthread_setname_np(pthread_t thread, const char* name) noexcept {
  setname_fn real = r_setname.get();
  if (real == nullptr) return ENOSYS;
  const int result = real(thread, name);
  if (result == 0 && pthread_equal(thread, pthread_self())) record_thread_name(name);
  return result;
}
