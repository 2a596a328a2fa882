/* Target program for collector_test.py: small, deterministic workloads run under
 * LD_PRELOAD=libtracetune_collector.so, one per sub-command. Each prints nothing on success
 * (except bench-pread) and exits non-zero if a libc call misbehaves, so the test can tell a
 * collector bug from a wrong count.
 *
 *   reads FILE N          N preads of 4 KiB
 *   kill-after FILE N     N reads of 4 KiB, then raise(SIGKILL)
 *   fork-tree FILE        opens FILE, forks 2 children that pread the inherited fd 10 times
 *                         each and leave with _exit(0); the parent waits for both
 *   vfork-exec FILE N     N x (vfork; child closes the parent's FILE fd, execve /bin/true;
 *                         the first child's exec fails and it calls _exit(0)); then one
 *                         pread of FILE in the parent
 *   fork-exec             fork; the child execs /bin/true
 *   exit-code K           exit(K)
 *   underscore-exit K     _exit(K)
 *   threads FILE T N      T threads doing N preads of 4 KiB each
 *   io-mix DIR FILE       one call of each interposed I/O function family
 *   errno-check FILE      checks that errno is exactly what libc leaves
 *   thread-name NAME      pthread_setname_np on the calling thread
 *   fork-stress FILE T K  T threads stat unique paths (interning new strings all the time)
 *                         and pread FILE while the main thread forks K children that each
 *                         pread FILE 10 times and _exit(0)
 *   signal-reads FILE N   N preads of 4 KiB while a 50 us SIGALRM timer's handler preads
 *                         64 bytes; prints "handler_calls <count>"
 *   bench-pread FILE N    times N preads of 64 bytes; prints "ns_per_call <value>"
 *   bracketed-preads FILE N  N preads of 64 bytes, each between two CLOCK_MONOTONIC reads,
 *                         sleeping 3 ms after every 100; prints "<before> <after>" per call
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char** environ;

static int fail(const char* what) {
  fprintf(stderr, "collector_targets: %s failed: %s\n", what, strerror(errno));
  return 2;
}

static int open_or_die(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) {
    fail(path);
    exit(2);
  }
  return fd;
}

static off_t file_size(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? st.st_size : 0;
}

/* n preads of `len` bytes cycling through the file (which must hold at least `len`). */
static int pread_loop(int fd, long n, size_t len) {
  char buf[4096];
  off_t size = file_size(fd);
  off_t slots = size / (off_t)len;
  if (slots <= 0) slots = 1;
  for (long i = 0; i < n; ++i) {
    if (pread(fd, buf, len, (off_t)(i % slots) * (off_t)len) != (ssize_t)len) return fail("pread");
  }
  return 0;
}

static int cmd_reads(const char* file, long n) {
  int fd = open_or_die(file);
  int rc = pread_loop(fd, n, 4096);
  close(fd);
  return rc;
}

static int cmd_kill_after(const char* file, long n) {
  char buf[4096];
  int fd = open_or_die(file);
  for (long i = 0; i < n; ++i) {
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0) return fail("read");
    if (r < (ssize_t)sizeof buf) lseek(fd, 0, SEEK_SET);
  }
  raise(SIGKILL);
  return 3; /* not reached */
}

static int cmd_fork_tree(const char* file) {
  int fd = open_or_die(file);
  pid_t kids[2];
  for (int k = 0; k < 2; ++k) {
    kids[k] = fork();
    if (kids[k] < 0) return fail("fork");
    if (kids[k] == 0) _exit(pread_loop(fd, 10, 4096));
  }
  for (int k = 0; k < 2; ++k) {
    int status;
    if (waitpid(kids[k], &status, 0) != kids[k]) return fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 4;
  }
  close(fd);
  return 0;
}

static int cmd_vfork_exec(const char* file, long n) {
  int fd = open_or_die(file);
  char* const argv[] = {"true", NULL};
  for (long i = 0; i < n; ++i) {
    pid_t pid = vfork();
    if (pid < 0) return fail("vfork");
    if (pid == 0) {
      close(fd); /* like subprocess's close_fds: must not touch the parent's bookkeeping */
      /* The first child's exec fails and it leaves with _exit(0), in the parent's memory. */
      execve(i == 0 ? "/nonexistent/tracetune-no-such-program" : "/bin/true", argv, environ);
      _exit(i == 0 ? 0 : 127);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid) return fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 4;
  }
  char buf[4096];
  if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return fail("pread after vfork");
  close(fd);
  return 0;
}

static int cmd_fork_exec(void) {
  pid_t pid = fork();
  if (pid < 0) return fail("fork");
  if (pid == 0) {
    char* const argv[] = {"true", NULL};
    execve("/nonexistent/tracetune-no-such-program", argv, environ); /* fails: flag undone */
    execve("/bin/true", argv, environ);
    _exit(127);
  }
  int status;
  if (waitpid(pid, &status, 0) != pid) return fail("waitpid");
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 4;
}

struct thread_arg {
  int fd;
  long n;
  int rc;
};

static void* thread_main(void* p) {
  struct thread_arg* a = p;
  a->rc = pread_loop(a->fd, a->n, 4096);
  return NULL;
}

static int cmd_threads(const char* file, int t, long n) {
  int fd = open_or_die(file);
  pthread_t th[64];
  struct thread_arg args[64];
  if (t < 1 || t > 64) return 2;
  for (int i = 0; i < t; ++i) {
    args[i].fd = fd;
    args[i].n = n;
    args[i].rc = 0;
    if (pthread_create(&th[i], NULL, thread_main, &args[i]) != 0) return fail("pthread_create");
  }
  int rc = 0;
  for (int i = 0; i < t; ++i) {
    pthread_join(th[i], NULL);
    rc |= args[i].rc;
  }
  close(fd);
  return rc;
}

/* One call per family; the test checks each is recorded with the right path. */
static int cmd_io_mix(const char* dir, const char* file) {
  char buf[4096], path[4096];
  struct stat st;
  struct statx stx;
  struct iovec iov[2] = {{buf, 100}, {buf + 100, 200}};

  if (stat(file, &st) != 0) return fail("stat");
  if (lstat(file, &st) != 0) return fail("lstat");
  if (stat("/nonexistent/tracetune-missing", &st) == 0 || errno != ENOENT) return fail("stat missing");

  int dfd = open(dir, O_RDONLY | O_DIRECTORY);
  if (dfd < 0) return fail("open dir");
  const char* base = strrchr(file, '/') + 1;
  if (fstatat(dfd, base, &st, 0) != 0) return fail("fstatat");
  if (statx(dfd, base, 0, STATX_SIZE, &stx) != 0) return fail("statx");
  int fd = openat(dfd, base, O_RDONLY); /* relative to a known directory fd */
  if (fd < 0) return fail("openat");
  if (fstat(fd, &st) != 0) return fail("fstat");
  if (readv(fd, iov, 2) != 300) return fail("readv");
  if (preadv(fd, iov, 2, 4096) != 300) return fail("preadv");
  if (preadv2(fd, iov, 2, 8192, 0) != 300) return fail("preadv2");
  if (lseek(fd, 10, SEEK_SET) != 10) return fail("lseek");
  if (read(fd, buf, 10) != 10) return fail("read");
  void* m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) return fail("mmap");
  munmap(m, 4096);
  /* dup2 carries the path to the new number; close_range forgets it again. */
  if (dup2(fd, 100) != 100) return fail("dup2");
  if (pread(100, buf, 16, 0) != 16) return fail("pread on dup2");
  if (close_range(100, 100, 0) != 0) return fail("close_range");
  int p[2];
  if (pipe(p) != 0 || dup2(p[0], 100) != 100) return fail("pipe/dup2");
  if (write(p[1], "x", 1) != 1 || read(100, buf, 1) != 1) return fail("pipe read");
  close(100);
  close(p[0]);
  close(p[1]);
  close(fd);
  close(dfd);

  snprintf(path, sizeof path, "%s/written.bin", dir);
  int wfd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (wfd < 0) return fail("open for write");
  if (write(wfd, buf, 512) != 512) return fail("write");
  if (pwrite(wfd, buf, 256, 1024) != 256) return fail("pwrite");
  if (writev(wfd, iov, 2) != 300) return fail("writev");
  close(wfd);
  int cfd = creat(path, 0600);
  if (cfd < 0) return fail("creat");
  close(cfd);

  FILE* f = fopen(file, "rb");
  if (f == NULL) return fail("fopen");
  if (fread(buf, 16, 8, f) != 8) return fail("fread");
  fclose(f);
  FILE* w = fopen(path, "wb");
  if (w == NULL) return fail("fopen for write");
  if (fwrite(buf, 1, 77, w) != 77) return fail("fwrite");
  fclose(w);
  return 0;
}

/* errno must be exactly what the real call leaves, with or without the collector. */
static int cmd_errno_check(const char* file) {
  char buf[64];
  int fd = open_or_die(file);
  errno = 4242;
  if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return fail("pread");
  if (errno != 4242) return 10; /* success must leave errno alone */
  errno = 0;
  if (pread(-1, buf, sizeof buf, 0) != -1 || errno != EBADF) return 11;
  errno = 0;
  if (open("/nonexistent/tracetune-missing", O_RDONLY) != -1 || errno != ENOENT) return 12;
  errno = 4343;
  if (close(fd) != 0 || errno != 4343) return 13;
  errno = 0;
  if (close(fd) != -1 || errno != EBADF) return 14;
  errno = 4444;
  FILE* f = fopen(file, "rb");
  if (f == NULL || errno != 4444) return 15;
  errno = 4545;
  while (fread(buf, 1, sizeof buf, f) == sizeof buf) {
  }
  if (!feof(f) || errno != 4545) return 16; /* end of file is not an error */
  fclose(f);
  return 0;
}

static int cmd_thread_name(const char* name) {
  return pthread_setname_np(pthread_self(), name) == 0 ? 0 : 2;
}

struct stress_arg {
  int fd;
  int index;
  volatile int* stop;
};

static void* stress_thread(void* p) {
  struct stress_arg* a = p;
  char path[128], buf[4096];
  struct stat st;
  for (long i = 0; !*a->stop; ++i) {
    snprintf(path, sizeof path, "/nonexistent/tracetune-stress-%d-%ld", a->index, i);
    stat(path, &st);
    pread(a->fd, buf, sizeof buf, 0);
  }
  return NULL;
}

static int cmd_fork_stress(const char* file, int t, int k) {
  int fd = open_or_die(file);
  volatile int stop = 0;
  pthread_t th[16];
  struct stress_arg args[16];
  if (t < 1 || t > 16) return 2;
  for (int i = 0; i < t; ++i) {
    args[i].fd = fd;
    args[i].index = i;
    args[i].stop = &stop;
    if (pthread_create(&th[i], NULL, stress_thread, &args[i]) != 0) return fail("pthread_create");
  }
  int rc = 0;
  for (int i = 0; i < k && rc == 0; ++i) {
    pid_t pid = fork();
    if (pid < 0) return fail("fork");
    if (pid == 0) _exit(pread_loop(fd, 10, 4096));
    int status;
    if (waitpid(pid, &status, 0) != pid) return fail("waitpid");
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) rc = 4;
  }
  stop = 1;
  for (int i = 0; i < t; ++i) pthread_join(th[i], NULL);
  close(fd);
  return rc;
}

static int g_signal_fd = -1;
static volatile long g_handler_calls = 0;

static void on_alarm(int sig) {
  (void)sig;
  int saved = errno;
  char buf[64];
  pread(g_signal_fd, buf, sizeof buf, 0);
  ++g_handler_calls;
  errno = saved;
}

static int cmd_signal_reads(const char* file, long n) {
  g_signal_fd = open_or_die(file);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm;
  sa.sa_flags = SA_RESTART;
  sigaction(SIGALRM, &sa, NULL);
  struct itimerval timer = {{0, 50}, {0, 50}};
  setitimer(ITIMER_REAL, &timer, NULL);
  int rc = pread_loop(g_signal_fd, n, 4096);
  struct itimerval off = {{0, 0}, {0, 0}};
  setitimer(ITIMER_REAL, &off, NULL);
  printf("handler_calls %ld\n", (long)g_handler_calls);
  return rc;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmd_bench_pread(const char* file, long n) {
  char buf[64];
  int fd = open_or_die(file);
  if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return fail("pread");
  long long start = now_ns();
  for (long i = 0; i < n; ++i) {
    if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return fail("pread");
  }
  long long end = now_ns();
  printf("ns_per_call %.2f\n", (double)(end - start) / (double)n);
  close(fd);
  return 0;
}

static int cmd_bracketed_preads(const char* file, long n) {
  char buf[64];
  int fd = open_or_die(file);
  long long* t = malloc(sizeof(long long) * 2 * (size_t)n);
  if (t == NULL) return fail("malloc");
  for (long i = 0; i < n; ++i) {
    t[2 * i] = now_ns();
    if (pread(fd, buf, sizeof buf, 0) != (ssize_t)sizeof buf) return fail("pread");
    t[2 * i + 1] = now_ns();
    if (i % 100 == 99) usleep(3000);
  }
  for (long i = 0; i < n; ++i) printf("%lld %lld\n", t[2 * i], t[2 * i + 1]);
  free(t);
  close(fd);
  return 0;
}

static int usage(void) {
  fprintf(stderr, "usage: collector_targets COMMAND ARGS... (see the source header)\n");
  return 64;
}

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const char* cmd = argv[1];
  if (strcmp(cmd, "reads") == 0 && argc == 4) return cmd_reads(argv[2], atol(argv[3]));
  if (strcmp(cmd, "kill-after") == 0 && argc == 4) return cmd_kill_after(argv[2], atol(argv[3]));
  if (strcmp(cmd, "fork-tree") == 0 && argc == 3) return cmd_fork_tree(argv[2]);
  if (strcmp(cmd, "vfork-exec") == 0 && argc == 4) return cmd_vfork_exec(argv[2], atol(argv[3]));
  if (strcmp(cmd, "fork-exec") == 0 && argc == 2) return cmd_fork_exec();
  if (strcmp(cmd, "exit-code") == 0 && argc == 3) exit(atoi(argv[2]));
  if (strcmp(cmd, "underscore-exit") == 0 && argc == 3) _exit(atoi(argv[2]));
  if (strcmp(cmd, "threads") == 0 && argc == 5) {
    return cmd_threads(argv[2], atoi(argv[3]), atol(argv[4]));
  }
  if (strcmp(cmd, "io-mix") == 0 && argc == 4) return cmd_io_mix(argv[2], argv[3]);
  if (strcmp(cmd, "errno-check") == 0 && argc == 3) return cmd_errno_check(argv[2]);
  if (strcmp(cmd, "thread-name") == 0 && argc == 3) return cmd_thread_name(argv[2]);
  if (strcmp(cmd, "fork-stress") == 0 && argc == 5) {
    return cmd_fork_stress(argv[2], atoi(argv[3]), atoi(argv[4]));
  }
  if (strcmp(cmd, "signal-reads") == 0 && argc == 4) return cmd_signal_reads(argv[2], atol(argv[3]));
  if (strcmp(cmd, "bench-pread") == 0 && argc == 4) return cmd_bench_pread(argv[2], atol(argv[3]));
  if (strcmp(cmd, "bracketed-preads") == 0 && argc == 4) return cmd_bracketed_preads(argv[2], atol(argv[3]));
  return usage();
}
