/* Cost of the collector on the hottest I/O path: N small pread() calls timed inside the
 * process (so process start-up and merging are not counted). Run it bare and under
 * LD_PRELOAD=libtracetune_collector.so; collector_overhead.py does both and reports the
 * difference per call. Prints: ns_per_call=<float> */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: pread_bench FILE N\n");
    return 2;
  }
  const long n = atol(argv[2]);
  const int fd = open(argv[1], O_RDONLY);
  if (fd < 0) {
    perror(argv[1]);
    return 1;
  }
  char buf[64];
  long sink = 0;
  for (long i = 0; i < 10000; ++i) sink += pread(fd, buf, sizeof buf, (i * 64) % 4096); /* warm-up */
  const double t0 = now();
  for (long i = 0; i < n; ++i) sink += pread(fd, buf, sizeof buf, (i * 64) % 4096);
  const double t1 = now();
  close(fd);
  printf("ns_per_call=%.2f (checksum %ld)\n", (t1 - t0) / (double)n, sink);
  return 0;
}
