// The flight recorder's signal trigger (record --ring --dump-signal, docs/collector.md §9.3): a
// signal sent to any process of the job asks the launcher to dump the rings of every process.
//
// The job keeps the signal. Our handler is installed underneath whatever the job does with the
// signal: the job's sigaction()/signal() calls for it are interposed and only remembered (the
// job reads back its own disposition, never ours: Python's signal module sees SIG_DFL), and our
// handler, after asking for the dump, calls the handler the job installed (with its SA_SIGINFO
// arguments, its mask, its SA_RESTART/SA_ONSTACK/SA_NODEFER, its SA_RESETHAND). A job that
// ignores the signal still ignores it. A job that left it at SIG_DFL would have been terminated:
// that is the one change, and the reason the signal is configurable (--dump-signal none: no
// handler at all). Every libc entry point that sets a disposition is interposed: sigaction()
// (and its alias __sigaction()), signal() and its aliases bsd_signal()/ssignal(), sysv_signal()/__sysv_signal(), sigset(),
// sigignore(). A job that changes the disposition through a raw rt_sigaction syscall (Go
// runtimes) replaces our handler: the job then owns the signal and no dump is asked for.
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "dump_signal.h"
#include "window.h"
#include "writer.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

namespace tt::collector {
namespace {

using sigaction_fn = int (*)(int, const struct sigaction*, struct sigaction*);
using signal_fn = sighandler_t (*)(int, sighandler_t);
constinit RealFunction<sigaction_fn> r_sigaction{"sigaction"};
constinit RealFunction<signal_fn> r_signal{"signal"};

// The signal we handle (0: none) and the disposition the job believes it set, in two slots: a
// writer fills the slot not in use and then publishes it, so the handler never reads a half-written one.
int g_signal = 0;
struct sigaction g_job[2];
std::atomic<int> g_job_slot{0};

const struct sigaction& job_action() { return g_job[g_job_slot.load(std::memory_order_acquire)]; }

void set_job_action(const struct sigaction& act) {
  const int next = 1 - g_job_slot.load(std::memory_order_relaxed);
  g_job[next] = act;
  g_job_slot.store(next, std::memory_order_release);
}

bool is_handler(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) != 0 || (a.sa_handler != SIG_DFL && a.sa_handler != SIG_IGN);
}

void on_dump_signal(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  window_signal_dump();
  const struct sigaction job = job_action();
  if (is_handler(job)) {
    if ((job.sa_flags & SA_RESETHAND) != 0) {  // one-shot: the job's next delivery is SIG_DFL's
      struct sigaction reset {};
      reset.sa_handler = SIG_DFL;
      set_job_action(reset);
    }
    errno = saved;  // the job's handler sees the errno of the code it interrupted
    if ((job.sa_flags & SA_SIGINFO) != 0)
      job.sa_sigaction(sig, info, context);
    else
      job.sa_handler(sig);
    return;
  }
  errno = saved;
}

// Our handler, with the job's mask and the flags that change how the job's code sees a
// delivery (restarted calls, the alternate stack, nesting); SA_RESTART while the job has none.
int install_ours(const struct sigaction& job) {
  struct sigaction ours {};
  ours.sa_sigaction = on_dump_signal;
  ours.sa_mask = job.sa_mask;
  ours.sa_flags = SA_SIGINFO | (is_handler(job) ? job.sa_flags & (SA_RESTART | SA_ONSTACK | SA_NODEFER) : SA_RESTART);
  sigaction_fn real = r_sigaction.get();
  return real == nullptr ? -1 : real(g_signal, &ours, nullptr);
}

}  // namespace

void dump_signal_install(int signo) {
  sigaction_fn real = r_sigaction.get();
  if (real == nullptr || signo <= 0 || signo >= NSIG) return;
  struct sigaction inherited {};
  if (real(signo, nullptr, &inherited) != 0) return;
  set_job_action(inherited);  // SIG_DFL, or SIG_IGN kept across exec (nohup and the like)
  g_signal = signo;
  if (install_ours(inherited) != 0) g_signal = 0;
}

}  // namespace tt::collector

using tt::collector::g_signal;

TT_EXPORT int sigaction(int sig, const struct sigaction* act, struct sigaction* oldact) noexcept {
  if (sig != g_signal || g_signal == 0) {
    tt::collector::sigaction_fn real = tt::collector::r_sigaction.get();
    if (real == nullptr) {
      errno = ENOSYS;
      return -1;
    }
    return real(sig, act, oldact);
  }
  const struct sigaction previous = tt::collector::job_action();
  if (act != nullptr) {
    tt::collector::set_job_action(*act);
    if (tt::collector::install_ours(*act) != 0) return -1;
  }
  if (oldact != nullptr) *oldact = previous;
  return 0;
}

// glibc also exports its sigaction as __sigaction.
TT_EXPORT int __sigaction(int sig, const struct sigaction* act, struct sigaction* oldact) noexcept {
  return sigaction(sig, act, oldact);
}

namespace {

// The entry points that set a handler with fixed flags, for the dump signal: through the
// interposed sigaction above, which remembers what the job set and keeps our handler underneath.
// glibc's versions call its internal sigaction, out of our reach, hence one wrapper each.
sighandler_t set_job_handler(int sig, sighandler_t handler, int flags, bool block_itself) {
  struct sigaction act {}, old {};
  act.sa_handler = handler;
  act.sa_flags = flags;
  sigemptyset(&act.sa_mask);
  if (block_itself) sigaddset(&act.sa_mask, sig);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}

// signal(), bsd_signal(), ssignal() (one function in glibc): BSD semantics, SA_RESTART and the
// signal blocked in its handler.
sighandler_t bsd_signal_for(int sig, sighandler_t handler, tt::collector::signal_fn next) {
  if (sig != g_signal || g_signal == 0) {
    if (next == nullptr) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    return next(sig, handler);
  }
  return set_job_handler(sig, handler, SA_RESTART, true);
}

// sysv_signal(), __sysv_signal(): System V semantics, a one-shot handler (SA_RESETHAND) that
// does not block its signal (SA_NODEFER), calls interrupted (no SA_RESTART).
sighandler_t sysv_signal_for(int sig, sighandler_t handler, tt::collector::signal_fn next) {
  if (sig != g_signal || g_signal == 0) {
    if (next == nullptr) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    return next(sig, handler);
  }
  if (handler == SIG_ERR) {
    errno = EINVAL;
    return SIG_ERR;
  }
  return set_job_handler(sig, handler, SA_RESETHAND | SA_NODEFER, false);
}

using tt::collector::RealFunction;
using tt::collector::signal_fn;
constinit RealFunction<signal_fn> r_bsd_signal{"bsd_signal"};
constinit RealFunction<signal_fn> r_ssignal{"ssignal"};
constinit RealFunction<signal_fn> r_sysv_signal{"sysv_signal"};
constinit RealFunction<signal_fn> r___sysv_signal{"__sysv_signal"};
constinit RealFunction<signal_fn> r_sigset{"sigset"};
using sigignore_fn = int (*)(int);
constinit RealFunction<sigignore_fn> r_sigignore{"sigignore"};

}  // namespace

TT_EXPORT sighandler_t signal(int sig, sighandler_t handler) noexcept {
  return bsd_signal_for(sig, handler, tt::collector::r_signal.get());
}

TT_EXPORT sighandler_t bsd_signal(int sig, sighandler_t handler) noexcept {
  return bsd_signal_for(sig, handler, r_bsd_signal.get());
}

TT_EXPORT sighandler_t ssignal(int sig, sighandler_t handler) noexcept {
  return bsd_signal_for(sig, handler, r_ssignal.get());
}

TT_EXPORT sighandler_t sysv_signal(int sig, sighandler_t handler) noexcept {
  return sysv_signal_for(sig, handler, r_sysv_signal.get());
}

TT_EXPORT sighandler_t __sysv_signal(int sig, sighandler_t handler) noexcept {
  return sysv_signal_for(sig, handler, r___sysv_signal.get());
}

// sigset(): a handler with no flags and an empty mask, or SIG_HOLD (the signal blocked, the
// handler kept); either returns SIG_HOLD when the signal was blocked before, else the previous
// disposition (glibc's sysdeps/posix/sigset.c, with our sigaction).
TT_EXPORT sighandler_t sigset(int sig, sighandler_t disp) noexcept {
  if (sig != g_signal || g_signal == 0) {
    const signal_fn next = r_sigset.get();
    if (next == nullptr) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    return next(sig, disp);
  }
  sigset_t one, before;
  sigemptyset(&one);
  sigaddset(&one, sig);
  if (disp == SIG_HOLD) {
    if (sigprocmask(SIG_BLOCK, &one, &before) != 0) return SIG_ERR;
    if (sigismember(&before, sig)) return SIG_HOLD;
    struct sigaction old {};
    if (sigaction(sig, nullptr, &old) != 0) return SIG_ERR;
    return old.sa_handler;
  }
  const sighandler_t old = set_job_handler(sig, disp, 0, false);
  if (old == SIG_ERR || sigprocmask(SIG_UNBLOCK, &one, &before) != 0) return SIG_ERR;
  return sigismember(&before, sig) ? SIG_HOLD : old;
}

// sigignore(): SIG_IGN for the signal.
TT_EXPORT int sigignore(int sig) noexcept {
  if (sig != g_signal || g_signal == 0) {
    const sigignore_fn next = r_sigignore.get();
    if (next == nullptr) {
      errno = ENOSYS;
      return -1;
    }
    return next(sig);
  }
  return set_job_handler(sig, SIG_IGN, 0, false) == SIG_ERR ? -1 : 0;
}
