/* Target program for flight_test.py's signal_paths case: the job installs its own handler for
 * the flight recorder's dump signal (SIGUSR2) through one of libc's entry points, raises the
 * signal, and checks that its handler ran and that it reads back its own disposition; then it
 * waits for the dump the signal asked for (DUMP appears, at most 120 s).
 *
 *   signal_paths MODE DUMP    MODE: sigaction __sigaction signal bsd_signal ssignal sysv_signal
 *                                   __sysv_signal sigset sigignore
 *
 * Prints "handler_calls N", and "dump seen" or "no dump". Exit 0, or 3 when the job saw
 * something a bare run would not (a wrong return value, a handler not run), 2 on usage errors.
 * sigset also goes through SIG_HOLD: the signal raised while held runs the handler when the
 * handler is set again (and that sigset returns SIG_HOLD). sysv_signal's handler is one-shot:
 * after it ran, the job reads back SIG_DFL. sigignore: the signal is ignored (no handler).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* X/Open's name for BSD signal(): glibc exports it, its headers no longer declare it with _GNU_SOURCE. */
extern sighandler_t bsd_signal(int sig, sighandler_t handler);
/* glibc's exported alias of sigaction. */
extern int __sigaction(int sig, const struct sigaction* act, struct sigaction* oldact);

static volatile sig_atomic_t calls = 0;

static void on_usr2(int sig) {
  (void)sig;
  ++calls;
}

static int wrong(const char* what) {
  fprintf(stderr, "signal_paths: %s\n", what);
  return 3;
}

static sighandler_t current_disposition(void) {
  struct sigaction now;
  if (sigaction(SIGUSR2, NULL, &now) != 0) return SIG_ERR;
  return now.sa_handler;
}

static int install(const char* mode) {
  sighandler_t old = SIG_ERR;
  if (strcmp(mode, "sigaction") == 0 || strcmp(mode, "__sigaction") == 0) {
    struct sigaction act, prev;
    memset(&act, 0, sizeof act);
    act.sa_handler = on_usr2;
    sigemptyset(&act.sa_mask);
    const int rc = mode[0] == '_' ? __sigaction(SIGUSR2, &act, &prev) : sigaction(SIGUSR2, &act, &prev);
    if (rc != 0) return wrong("sigaction failed");
    old = prev.sa_handler;
  } else if (strcmp(mode, "signal") == 0) {
    old = signal(SIGUSR2, on_usr2);
  } else if (strcmp(mode, "bsd_signal") == 0) {
    old = bsd_signal(SIGUSR2, on_usr2);
  } else if (strcmp(mode, "ssignal") == 0) {
    old = ssignal(SIGUSR2, on_usr2);
  } else if (strcmp(mode, "sysv_signal") == 0) {
    old = sysv_signal(SIGUSR2, on_usr2);
  } else if (strcmp(mode, "__sysv_signal") == 0) {
    old = __sysv_signal(SIGUSR2, on_usr2);
  } else if (strcmp(mode, "sigset") == 0) {
    old = sigset(SIGUSR2, on_usr2);
  } else if (strcmp(mode, "sigignore") == 0) {
    if (sigignore(SIGUSR2) != 0) return wrong("sigignore failed");
    return current_disposition() == SIG_IGN ? 0 : wrong("sigignore: the disposition read back is not SIG_IGN");
  } else {
    return 2;
  }
  if (old != SIG_DFL) return wrong("the previous disposition returned is not SIG_DFL");
  if (current_disposition() != on_usr2) return wrong("the disposition read back is not the job's handler");
  return 0;
}

/* sigset's SIG_HOLD: held, the signal waits; setting the handler again delivers it. */
static int sigset_hold(void) {
  if (sigset(SIGUSR2, SIG_HOLD) != on_usr2) return wrong("sigset(SIG_HOLD) did not return the handler");
  raise(SIGUSR2);
  if (calls != 1) return wrong("a held signal ran the handler");
  if (sigset(SIGUSR2, on_usr2) != SIG_HOLD) return wrong("sigset after SIG_HOLD did not return SIG_HOLD");
  if (calls != 2) return wrong("the held signal did not run the handler once released");
  return 0;
}

static int wait_for(const char* path) {
  struct timespec pause = {0, 50 * 1000 * 1000};
  struct stat st;
  for (int i = 0; i < 2400; ++i) {
    if (stat(path, &st) == 0) return 1;
    nanosleep(&pause, NULL);
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: signal_paths MODE DUMP\n");
    return 2;
  }
  const char* mode = argv[1];
  int rc = install(mode);
  if (rc != 0) return rc;
  raise(SIGUSR2);
  const int expected = strcmp(mode, "sigignore") == 0 ? 0 : 1;
  if (calls != expected) return wrong("the job's handler did not run as a bare run's would");
  if (strstr(mode, "sysv_signal") != NULL && current_disposition() != SIG_DFL)
    return wrong("sysv_signal's handler is not one-shot: the disposition read back is not SIG_DFL");
  if (strcmp(mode, "sigset") == 0 && (rc = sigset_hold()) != 0) return rc;
  printf("handler_calls %d\n", (int)calls);
  fflush(stdout);
  puts(wait_for(argv[2]) ? "dump seen" : "no dump");
  return 0;
}
