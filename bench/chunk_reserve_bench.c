// How much a 1 MiB chunk of a record file costs to make writable, by reservation strategy:
// the per-page kernel cost that every recorded byte pays (collector/preload/writer.cpp,
// map_new_chunk; bench/collector_profile.md). Prints the median time per chunk and what that
// is per 40-byte record; never asserts a time.
//
//   chunk_reserve_bench DIR [CHUNKS]     (a file in DIR is created and removed)
//
// Strategies, run in turns so that each sees the same machine state:
//   fallocate+populate  fallocate(), mmap, madvise(MADV_POPULATE_WRITE)
//   zeros+populate      pwrite() of zeros in 64 KiB pieces, mmap, MADV_POPULATE_WRITE
//   fallocate lazy      fallocate(), mmap, then the stores fault the pages in one by one
// Each chunk is then filled with 40-byte stores (the "fill" column: the faults of the lazy
// strategy land there).
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

enum { kChunk = 1 << 20, kRecord = 40, kPiece = 64 * 1024, kStrategies = 3, kRounds = 5 };
static const char* const kNames[kStrategies] = {"fallocate+populate", "zeros+populate", "fallocate lazy"};
static char zeros[kPiece];

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int by_value(const void* a, const void* b) {
  const long long x = *(const long long*)a, y = *(const long long*)b;
  return x < y ? -1 : x > y;
}

static int by_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static int reserve(int fd, off_t off, int strategy) {
  if (strategy != 1) return fallocate(fd, 0, off, kChunk);
  for (off_t done = 0; done < kChunk; done += kPiece)
    if (pwrite(fd, zeros, kPiece, off + done) != kPiece) return -1;
  return 0;
}

// Median setup and fill time per chunk over `chunks` chunks of a fresh file.
static int run(const char* path, int strategy, int chunks, long long* setup, long long* fill) {
  const int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  for (int i = 0; i < chunks; ++i) {
    const off_t off = (off_t)i * kChunk;
    const long long t0 = now_ns();
    if (reserve(fd, off, strategy) != 0) return -1;
    char* p = mmap(NULL, kChunk, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
    if (p == MAP_FAILED) return -1;
    if (strategy != 2) madvise(p, kChunk, 23 /* MADV_POPULATE_WRITE */);
    const long long t1 = now_ns();
    for (int k = 0; k + kRecord <= kChunk; k += kRecord) memset(p + k, k & 0xff, kRecord);
    setup[i] = t1 - t0;
    fill[i] = now_ns() - t1;
    munmap(p, kChunk);
  }
  close(fd);
  unlink(path);
  qsort(setup, chunks, sizeof *setup, by_value);
  qsort(fill, chunks, sizeof *fill, by_value);
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR [CHUNKS]\n", argv[0]);
    return 2;
  }
  const int chunks = argc > 2 ? atoi(argv[2]) : 100;
  if (chunks < 1) return 2;
  char path[4096];
  snprintf(path, sizeof path, "%s/chunk_reserve_bench.%d", argv[1], (int)getpid());
  long long* setup = malloc(sizeof *setup * chunks);
  long long* fill = malloc(sizeof *fill * chunks);
  double total[kStrategies][kRounds];
  for (int round = 0; round < kRounds; ++round) {
    for (int s = 0; s < kStrategies; ++s) {
      if (run(path, s, chunks, setup, fill) != 0) {
        perror(kNames[s]);
        unlink(path);
        return 1;
      }
      total[s][round] = (double)(setup[chunks / 2] + fill[chunks / 2]);
    }
  }
  printf("%d rounds of %d chunks of 1 MiB in %s; medians over rounds of the median chunk:\n", kRounds,
         chunks, argv[1]);
  for (int s = 0; s < kStrategies; ++s) {
    qsort(total[s], kRounds, sizeof(double), by_double);
    const double med = total[s][kRounds / 2];
    printf("  %-20s %8.1f us per chunk  %5.1f ns per %d-byte record  (rounds %.1f..%.1f us)  x%.2f\n", kNames[s],
           med / 1e3, med / (kChunk / kRecord), kRecord, total[s][0] / 1e3, total[s][kRounds - 1] / 1e3,
           med / total[0][kRounds / 2]);
  }
  free(setup);
  free(fill);
  return 0;
}
