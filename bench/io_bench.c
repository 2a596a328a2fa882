/* I/O micro-bench for the collector's hot paths, timed inside the process (process start-up,
 * the collector's constructor and merging are not counted). Run it bare, under
 * LD_PRELOAD=libtracetune_collector.so and under other preloaded tracers;
 * bench/collector_overhead.py runs all of them side by side and reports the differences.
 *
 *   io_bench pread FILE N        N preads of 64 B (offsets cycle through the first 4 KiB)
 *   io_bench openclose FILE N    N x (open FILE read-only, close it); timed per pair
 *   io_bench stat FILE N         N stat() calls on FILE
 *   io_bench fread_lines FILE N  N freads of one 64-byte line from a buffered FILE* (the
 *                                first 64 KiB of FILE, rewound every 1024 lines or at its end)
 *   io_bench burst FILE SECONDS THREADS [pread1|lseek|badclose [join|exit|kill [MIN_CALLS]]]
 *                                THREADS threads, each with its own descriptor of FILE,
 *                                issue the call as fast as they can for SECONDS, and on
 *                                until they made MIN_CALLS calls together (default 0: a
 *                                test that needs N calls must not depend on speed): pread of
 *                                1 byte (default), lseek(fd, 0, SEEK_CUR), or close(-1); then
 *                                they are stopped and joined (join, the default), or a forked
 *                                child that ran them calls exit(0) or raises SIGKILL while
 *                                they still run (exit, kill: tests of what an ending process
 *                                leaves; the parent prints "child pid=<pid> status=<s>")
 *   pread_bench FILE N           (the program under its old name) = io_bench pread FILE N
 *
 * The first four print "ns_per_call=<float>" (per open+close pair for openclose). burst
 * prints "thread <i> tid=<tid> calls=<n>" per thread, then "calls=<total> seconds=<s>
 * calls_per_s=<rate>": apart from the loop's calls, each thread makes one open and (join only)
 * one close of FILE, and the main thread no recorded I/O call, so a tracer that loses nothing
 * holds calls + 2 * THREADS I/O events (join) or calls + THREADS (exit, kill), or counts the
 * difference as dropped. With exit and kill a thread may be cut off between a call and
 * counting it: one call more per thread than printed may have been made. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int open_or_die(const char* path) {
  const int fd = open(path, O_RDONLY);
  if (fd < 0) {
    perror(path);
    exit(1);
  }
  return fd;
}

static long pread_loop(const char* path, long n) {
  const int fd = open_or_die(path);
  char buf[64];
  long sink = 0;
  for (long i = 0; i < n; ++i) sink += pread(fd, buf, sizeof buf, (i * 64) % 4096);
  close(fd);
  return sink;
}

static long openclose_loop(const char* path, long n) {
  long sink = 0;
  for (long i = 0; i < n; ++i) {
    const int fd = open(path, O_RDONLY);
    sink += fd;
    sink += close(fd);
  }
  return sink;
}

static long stat_loop(const char* path, long n) {
  struct stat st;
  long sink = 0;
  for (long i = 0; i < n; ++i) sink += stat(path, &st) == 0 ? (long)st.st_size : -1;
  return sink;
}

static long fread_lines_loop(const char* path, long n) {
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    perror(path);
    exit(1);
  }
  char line[64];
  long sink = 0;
  for (long i = 0; i < n; ++i) {
    const size_t got = fread(line, 1, sizeof line, f);
    sink += (long)got + line[0];
    if (got < sizeof line || i % 1024 == 1023) rewind(f);
  }
  fclose(f);
  return sink;
}

/* Times n calls of one mode after a warm-up of n / 100 (at least 100) calls. */
static int run_timed(const char* mode, const char* path, long n) {
  long (*loop)(const char*, long) = NULL;
  if (strcmp(mode, "pread") == 0) loop = pread_loop;
  if (strcmp(mode, "openclose") == 0) loop = openclose_loop;
  if (strcmp(mode, "stat") == 0) loop = stat_loop;
  if (strcmp(mode, "fread_lines") == 0) loop = fread_lines_loop;
  if (loop == NULL || n <= 0) return 2;
  long sink = loop(path, n / 100 > 100 ? n / 100 : 100);
  const double t0 = now();
  sink += loop(path, n);
  const double t1 = now();
  printf("ns_per_call=%.2f (%s x %ld, checksum %ld)\n", (t1 - t0) / (double)n, mode, n, sink);
  return 0;
}

/* ---- burst ---- */

enum burst_op { kPread1, kLseek, kBadClose };
enum burst_end { kJoin, kExit, kKill };

/* One thread's figures, on its own cache line of a MAP_SHARED page, so that a parent can read
 * them after a child ended with its threads still running (exit, kill). */
struct burst_slot {
  atomic_long calls;
  long tid;
  double seconds;
  char pad[64 - sizeof(atomic_long) - sizeof(long) - sizeof(double)];
};

struct burst_thread {
  const char* path;
  enum burst_op op;
  pthread_barrier_t* start;
  atomic_int* stop;
  struct burst_slot* slot;
};

static void* burst_main(void* p) {
  struct burst_thread* t = p;
  t->slot->tid = syscall(SYS_gettid);
  const int fd = open_or_die(t->path);
  char c;
  long calls = 0;
  pthread_barrier_wait(t->start);
  const double t0 = now();
  while (!atomic_load_explicit(t->stop, memory_order_relaxed)) {
    if (t->op == kPread1) {
      if (pread(fd, &c, 1, 0) != 1) exit(3);
    } else if (t->op == kLseek) {
      if (lseek(fd, 0, SEEK_CUR) != 0) exit(3);
    } else if (close(-1) != -1) {
      exit(3);
    }
    atomic_store_explicit(&t->slot->calls, ++calls, memory_order_relaxed);
  }
  t->slot->seconds = (now() - t0) / 1e9;
  close(fd);
  return NULL;
}

/* Starts the threads, lets them run for `seconds`, then stops and joins them (kJoin), or
 * leaves them running and calls exit(0) (kExit) or raises SIGKILL (kKill). */
static long burst_calls(const struct burst_slot* slots, int threads) {
  long total = 0;
  for (int i = 0; i < threads; ++i) total += atomic_load_explicit(&slots[i].calls, memory_order_relaxed);
  return total;
}

static void burst_threads(const char* path, enum burst_op op, double seconds, int threads, enum burst_end end,
                          long min_calls, struct burst_slot* slots) {
  struct burst_thread t[256];
  pthread_t th[256];
  pthread_barrier_t start;
  atomic_int stop = 0;
  pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
  for (int i = 0; i < threads; ++i) {
    t[i] = (struct burst_thread){path, op, &start, &stop, &slots[i]};
    if (pthread_create(&th[i], NULL, burst_main, &t[i]) != 0) exit(1);
  }
  pthread_barrier_wait(&start);
  const struct timespec nap = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  nanosleep(&nap, NULL);
  const struct timespec tick = {0, 1000000};
  while (burst_calls(slots, threads) < min_calls) nanosleep(&tick, NULL);
  if (end == kExit) {
    /* exit() flushes stdout after running the exit handlers (a preloaded tracer's among them):
     * with 1 MiB still buffered, the threads run on for a while after those handlers, as in a
     * job that writes its last log lines at exit. The padding lines start with '#'. */
    static char buf[1 << 20];
    setvbuf(stdout, buf, _IOFBF, sizeof buf);
    /* printf, which no tracer here records (fputs of a constant string becomes fwrite) */
    for (int i = 0; i < (int)(sizeof buf / 80); ++i)
      printf("# padding flushed by exit() while the threads run %d\n", i);
    exit(0);
  }
  if (end == kKill) raise(SIGKILL);
  atomic_store(&stop, 1);
  for (int i = 0; i < threads; ++i) pthread_join(th[i], NULL);
}

static int run_burst(const char* path, double seconds, int threads, const char* opname, const char* endname,
                     long min_calls) {
  enum burst_op op = kPread1;
  if (strcmp(opname, "lseek") == 0)
    op = kLseek;
  else if (strcmp(opname, "badclose") == 0)
    op = kBadClose;
  else if (strcmp(opname, "pread1") != 0)
    return 2;
  enum burst_end end = kJoin;
  if (strcmp(endname, "exit") == 0)
    end = kExit;
  else if (strcmp(endname, "kill") == 0)
    end = kKill;
  else if (strcmp(endname, "join") != 0)
    return 2;
  if (threads < 1 || threads > 256 || seconds <= 0) return 2;
  struct burst_slot* slots =
      mmap(NULL, sizeof(struct burst_slot) * 256, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (slots == MAP_FAILED) return 1;
  if (end == kJoin) {
    burst_threads(path, op, seconds, threads, end, min_calls, slots);
  } else { /* the burst runs in a child that ends with its threads running */
    const pid_t child = fork();
    if (child == 0) burst_threads(path, op, seconds, threads, end, min_calls, slots);
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child) return 1;
    printf("child pid=%d status=%d\n", (int)child, status);
    for (int i = 0; i < threads; ++i) slots[i].seconds = seconds;
  }
  long total = 0;
  double longest = 0;
  for (int i = 0; i < threads; ++i) {
    total += slots[i].calls;
    if (slots[i].seconds > longest) longest = slots[i].seconds;
    printf("thread %d tid=%ld calls=%ld\n", i, slots[i].tid, (long)slots[i].calls);
  }
  printf("calls=%ld seconds=%.3f calls_per_s=%.0f\n", total, longest, (double)total / longest);
  return 0;
}

int main(int argc, char** argv) {
  const char* self = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  if (strcmp(self, "pread_bench") == 0 && argc == 3) return run_timed("pread", argv[1], atol(argv[2]));
  if (argc >= 5 && strcmp(argv[1], "burst") == 0) {
    return run_burst(argv[2], atof(argv[3]), atoi(argv[4]), argc > 5 ? argv[5] : "pread1",
                     argc > 6 ? argv[6] : "join", argc > 7 ? atol(argv[7]) : 0);
  }
  if (argc == 4 && run_timed(argv[1], argv[2], atol(argv[3])) == 0) return 0;
  fprintf(stderr,
          "usage: io_bench pread|openclose|stat|fread_lines FILE N\n"
          "       io_bench burst FILE SECONDS THREADS [pread1|lseek|badclose [join|exit|kill [MIN_CALLS]]]\n");
  return 2;
}
