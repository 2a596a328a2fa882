/* Target program for flight_test.py's fork_steps case: one thread writes steps without pause
 * (tracetune_step, the call the Python integration makes) while the main thread forks children
 * that each write one step of their own and exit. The collector's per-process step state (the
 * window's, the step ring's) sits behind spin locks that the stepping thread holds part of the
 * time: a child forked while one was held must still find it free, or it waits for ever.
 *
 *   fork_steps CHILDREN
 *
 * Prints "children N stuck K" and exits 0 when no child was stuck (each gets 60 s after the last
 * fork, a bound on a hang, not a timing), 1 otherwise, 2 on usage errors or without the collector.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef void (*step_fn)(int kind, int64_t start_ns, int64_t end_ns, int64_t number);
static step_fn step;
static atomic_int stop;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void* stepper(void* arg) {
  (void)arg;
  for (int64_t n = 0; !atomic_load(&stop); ++n) {
    const int64_t t = now_ns();
    step(0, t, t + 1, n);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2 || atoi(argv[1]) <= 0) {
    fprintf(stderr, "usage: fork_steps CHILDREN\n");
    return 2;
  }
  step = (step_fn)dlsym(RTLD_DEFAULT, "tracetune_step");
  if (step == NULL) {
    fprintf(stderr, "fork_steps: tracetune_step not found (run it under tracetune record)\n");
    return 2;
  }
  const int children = atoi(argv[1]);
  pid_t* pids = calloc((size_t)children, sizeof(pid_t));
  pthread_t thread;
  if (pids == NULL || pthread_create(&thread, NULL, stepper, NULL) != 0) return 2;
  for (int i = 0; i < children; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      const int64_t t = now_ns();
      step(0, t, t + 1, 1000000 + i);
      _exit(0);
    }
    pids[i] = pid;
  }
  atomic_store(&stop, 1);
  pthread_join(thread, NULL);
  int left = 0;
  for (int i = 0; i < children; ++i) left += pids[i] > 0;
  const int64_t deadline = now_ns() + 60 * 1000000000LL;
  while (left > 0 && now_ns() < deadline) {
    for (int i = 0; i < children; ++i)
      if (pids[i] > 0 && waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
        pids[i] = 0;
        --left;
      }
    usleep(10000);
  }
  for (int i = 0; i < children; ++i)
    if (pids[i] > 0) {
      kill(pids[i], SIGKILL);
      waitpid(pids[i], NULL, 0);
    }
  printf("children %d stuck %d\n", children, left);
  free(pids);
  return left == 0 ? 0 : 1;
}
