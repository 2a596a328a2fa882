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
// handler at all). A job that changes the disposition through a raw rt_sigaction syscall, or
// through sigset()/sysv_signal(), replaces our handler: the job then owns the signal and no dump
// is asked for.
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

// glibc's signal(): BSD semantics (SA_RESTART, the signal blocked in its handler); it calls the
// internal sigaction, out of our reach, hence its own wrapper.
TT_EXPORT sighandler_t signal(int sig, sighandler_t handler) noexcept {
  if (sig != g_signal || g_signal == 0) {
    tt::collector::signal_fn real = tt::collector::r_signal.get();
    if (real == nullptr) {
      errno = ENOSYS;
      return SIG_ERR;
    }
    return real(sig, handler);
  }
  struct sigaction act {}, old {};
  act.sa_handler = handler;
  act.sa_flags = SA_RESTART;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  if (sigaction(sig, &act, &old) != 0) return SIG_ERR;
  return old.sa_handler;
}
