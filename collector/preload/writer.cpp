// The record writer and the process lifecycle core of libtracetune_collector.so.
//
// Place in the collector: every record the injected library produces goes through emit()
// here (io_hooks.cpp, process_hooks.cpp, python_api.cpp and nvtx_injection.cpp are its
// clients). This file also owns the process's record file: the library constructor (library.cpp) creates
// it, fork children replace it with their own (restart_in_fork_child), and exit/exec close
// it logically (record_exit/record_exec). See record_format.h for the on-disk contract.
//
// Design notes (the reasons behind the code below):
//  - Each writing thread owns one 1 MiB chunk of the file, mapped MAP_SHARED. A record is in
//    the page cache as soon as its `size` is stored, so SIGKILL loses nothing committed and
//    no flush thread is needed.
//  - File space is reserved with fallocate before a chunk is mapped: a full disk stops
//    recording (counted, flagged in the header); it can never raise SIGBUS in the job.
//  - The collector keeps no file descriptor open. Each chunk reservation opens the file by
//    its absolute path and checks (st_dev, st_ino): a long-lived descriptor could be closed
//    or dup2()'ed over by the job, and we would then fallocate/map the job's own file.
//  - The collector never calls the libc entry points it interposes: its file and memory
//    operations are raw syscalls. It cannot recurse into its own hooks, and the fork-child
//    path stays async-signal-safe (no malloc, no stdio, no locale).
//  - No allocation on record paths. Interned strings live in anonymous mmap memory.
//  - Checksums (record_checksum) cover the payload as given to emit, not the zero padding;
//    they are computed from the bytes as stored in the file, not from the caller's buffers.
#include "writer.h"

#include "clock_pair.h"
#include "interner.h"
#include "sys.h"
#include "window_gate.h"

#include "tracetune/collector/redact.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>

#if defined(TT_VFORK_HOOK)
// Declared in writer.h; used by vfork_hook.S (hence `used`: LTO must keep them by name).
__attribute__((used)) void* tracetune_real_vfork = nullptr;
__attribute__((used)) constinit thread_local unsigned char tracetune_vfork_pending = 0;
#endif

namespace tt::collector {
namespace {

static_assert(sizeof(void*) == 8, "the collector targets 64-bit Linux (x86_64, aarch64)");

// ---------------------------------------------------------------------------------------
// Small utilities
// ---------------------------------------------------------------------------------------

// Keeps the caller's errno: every public entry point that may run a syscall uses it.
class ErrnoSaver {
 public:
  ErrnoSaver() : saved_(errno) {}
  ~ErrnoSaver() { errno = saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;

 private:
  int saved_;
};


std::int64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);  // vDSO: no syscall, async-signal-safe
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// getenv without libc: reads environ directly (no locks, no hooks, safe in fork children).
const char* env_get(const char* name) {
  const std::size_t n = std::strlen(name);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return *e + n + 1;
  }
  return nullptr;
}

// Bounded text builder over a caller-provided buffer; silently truncates when full.
struct Text {
  char* data;
  std::size_t cap;
  std::size_t len = 0;
  bool full = false;

  void put(const char* s, std::size_t n) {
    if (full) return;
    if (n > cap - len) {
      n = cap - len;
      full = true;
    }
    std::memcpy(data + len, s, n);
    len += n;
  }
  void put(const char* s) { put(s, std::strlen(s)); }
  void put(char c) { put(&c, 1); }
  void put_int(std::int64_t v) {
    char tmp[24];
    int i = 24;
    std::uint64_t u = v < 0 ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
    do {
      tmp[--i] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0);
    if (v < 0) tmp[--i] = '-';
    put(tmp + i, static_cast<std::size_t>(24 - i));
  }
  // For paths passed to syscalls: false when it did not fit.
  bool terminate() {
    if (full || len >= cap) return false;
    data[len] = '\0';
    return true;
  }
};

// Strict decimal parse for rank variables; false for anything that is not a small integer.
bool parse_int(const char* s, std::int32_t* out) {
  if (s == nullptr || *s == '\0') return false;
  std::int64_t v = 0;
  for (const char* p = s; *p != '\0'; ++p) {
    if (*p < '0' || *p > '9') return false;
    v = v * 10 + (*p - '0');
    if (v > INT32_MAX) return false;
  }
  *out = static_cast<std::int32_t>(v);
  return true;
}

const char* errno_text(int err) {
  switch (err) {
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EFBIG: return "file too large";
    case EIO: return "input/output error";
    case EMFILE: return "too many open files";
    case ENFILE: return "too many open files in system";
    case ENOMEM: return "out of memory";
    case EACCES: return "permission denied";
    case EPERM: return "operation not permitted";
    case ENOENT: return "file not found";
    case EROFS: return "read-only file system";
    default: return "system error";
  }
}

// ---------------------------------------------------------------------------------------
// Process state
// ---------------------------------------------------------------------------------------

enum Mode : std::uint32_t { kOff = 0, kRecording = 1, kStopped = 2 };

// Ceiling on chunks per process file (1 TiB); beyond it recording stops like a full disk.
constexpr std::uint32_t kMaxChunks = 1u << 20;

struct Process {
  std::atomic<std::uint32_t> mode{kOff};
  std::atomic<std::int64_t> pid{0};      // pid that owns the current file (vfork detection)
  FileHeader* header = nullptr;          // MAP_SHARED view of the file's first page
  std::uint64_t file_dev = 0;            // identity of the record file, checked on reopen
  std::uint64_t file_ino = 0;
  std::atomic<std::uint32_t> next_chunk{0};
  std::atomic<std::uint32_t> exit_recorded{0};
  std::atomic<std::uint32_t> stop_claimed{0};
  // TSC calibration (io_tsc only): the file's first pair, and the tick after which the next
  // I/O call writes a ClockSync pair.
  std::int64_t sync_first_tsc = 0;
  std::int64_t sync_first_mono = 0;
  std::atomic<std::int64_t> sync_next_tsc{0};

  // Configuration, fixed by the constructor before recording starts.
  bool configured = false;  // TRACETUNE_OUTPUT_DIR usable and this is the only instance
  bool io = true;
  bool io_tsc = false;      // I/O records use TSC ticks (kIoClockTsc); fixed before recording
  bool zero_fill = true;    // populated chunks are reserved by writing zeros (not on tmpfs)
  bool no_env = false;
  bool trace_all = true;
  // Flight recorder (TRACETUNE_RING_CHUNKS, record --ring): event records go to chunks
  // 0..ring_chunks-1, reused oldest-first; the other records to chunks from ring_chunks on.
  std::uint32_t ring_chunks = 0;
  std::atomic<std::uint32_t> ring_next{0};
  char trace_list[256]{};
  char out_dir[PATH_MAX]{};   // absolute
  char host[64]{};            // sanitized host name: the directory and FileHeader::host
  char file_path[PATH_MAX]{}; // absolute path of the current record file
  pthread_key_t key{};
  bool key_ok = false;
};
constinit Process g;

// Per-thread state. Trivially destructible and small: it lives in the static TLS block
// (initial-exec), which is also why it holds no C++ objects with destructors.
enum Busy : std::uint8_t { kInEmit = 1, kInIntern = 2, kResolving = 4 };
struct ThreadState {
  char* chunk;             // current chunk mapping, nullptr before the first record
  std::int64_t io_base;    // start_ns of the last I/O record in chunk, 0 before (IoCompact chain)
  std::uint32_t used;      // bytes used in chunk
  std::uint32_t tid;       // kernel tid, 0 until first needed
  std::uint16_t depth;     // ReentryGuard nesting
  std::uint8_t busy;       // Busy bits: re-entry from signal handlers / dlsym
  std::uint8_t key_set;    // pthread key value set (destructor will run)
  std::uint32_t ring_slot; // flight recorder: 1 + the ring slot `chunk` maps, 0 none
};
static_assert(sizeof(ThreadState) <= 32, "initial-exec TLS must stay tiny (docs/collector.md, section 5)");
constinit thread_local ThreadState t_state{};

// Counted in the file's header (kDropsInHeader), not in process memory: the count survives
// a SIGKILL and the calls of threads still running after the exit handler wrote Dropped records.
// Without a header there is no file for the count to go to.
void drop(DropReason reason, std::uint64_t n = 1) {
  if (g.header != nullptr) __atomic_fetch_add(&g.header->dropped[reason], n, __ATOMIC_RELAXED);
}

std::uint32_t thread_id(ThreadState& ts) {
  if (ts.tid == 0) ts.tid = sys_gettid();
  return ts.tid;
}

void header_or_flags(std::uint32_t bits) {
  if (g.header != nullptr) __atomic_fetch_or(&g.header->flags, bits, __ATOMIC_SEQ_CST);
}

// First error wins: it becomes the reason text of the Dropped record (FileHeader::stop_reason).
void stop_recording(const char* what, int err) {
  std::uint32_t expected = kRecording;
  if (!g.mode.compare_exchange_strong(expected, kStopped)) return;
  if (g.stop_claimed.exchange(1) == 0 && g.header != nullptr) {
    char* reason = g.header->stop_reason;  // in the file: a killed process keeps it too
    Text t{reason, sizeof g.header->stop_reason - 1};
    t.put("recording stopped: ");
    t.put(what);
    if (err != 0) {
      t.put(": ");
      t.put(errno_text(err));
      t.put(" (errno ");
      t.put_int(err);
      t.put(')');
    }
    reason[t.len] = '\0';
  }
  header_or_flags(kRecordingStopped);
}

// ---------------------------------------------------------------------------------------
// Chunks
// ---------------------------------------------------------------------------------------

// Live chunk mappings, so a fork child can unmap its parent's (they point into the
// parent's file). A full registry only means a fork child keeps some address space mapped.
constexpr std::size_t kChunkSlots = 4096;
constinit std::atomic<char*> g_chunk_slots[kChunkSlots]{};

void remember_chunk(char* p, std::uint32_t hint) {
  for (std::size_t i = 0; i < kChunkSlots; ++i) {
    char* expected = nullptr;
    if (g_chunk_slots[(hint + i) % kChunkSlots].compare_exchange_strong(expected, p)) return;
  }
}

void release_chunk(char* p, std::uint32_t hint) {
  for (std::size_t i = 0; i < kChunkSlots; ++i) {
    char* expected = p;
    if (g_chunk_slots[(hint + i) % kChunkSlots].compare_exchange_strong(expected, nullptr)) break;
  }
  sys_munmap(p, kChunkSize);
}

// Zero source for writing a chunk's zeros (see reserve_space).
char g_zeros[64 * 1024];

// Growing a file past RLIMIT_FSIZE raises SIGXFSZ, whose default action kills the job:
// check first and treat it like a full disk instead.
bool within_file_size_limit(off_t end) {
  struct rlimit limit;
  if (sys_prlimit64(0, RLIMIT_FSIZE, nullptr, &limit) != 0) return true;
  return limit.rlim_cur == RLIM_INFINITY || static_cast<rlim_t>(end) <= limit.rlim_cur;
}

// Writes zeros over [off, off+len) in 64 KiB pieces; returns 0 or an errno value.
int write_zeros(int fd, off_t off, off_t len) {
  for (off_t done = 0; done < len;) {
    const std::size_t n = static_cast<std::size_t>(
        len - done < static_cast<off_t>(sizeof g_zeros) ? len - done : sizeof g_zeros);
    const long w = sys_pwrite(fd, g_zeros, n, off + done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return w < 0 ? errno : EIO;
    done += w;
  }
  return 0;
}

// Reserves [off, off+len) on disk, so that no later store into the mapping can fault for
// want of space (SIGBUS); returns 0 or an errno value. `zero_fill` writes the zeros instead of
// fallocate(): the page-cache pages then exist before the chunk is populated, which costs
// about a third as much per page on ext4 (bench/collector_profile.md: 0.35 vs 0.87 ms per
// 1 MiB chunk, measured on kernel 6.18); file systems without fallocate always get zeros.
int reserve_space(int fd, off_t off, off_t len, bool zero_fill) {
  if (!within_file_size_limit(off + len)) return EFBIG;
  if (zero_fill) return write_zeros(fd, off, len);
  for (;;) {
    if (sys_fallocate(fd, off, len) == 0) return 0;
    if (errno != EINTR) break;
  }
  if (errno != EOPNOTSUPP && errno != ENOSYS) return errno;
  return write_zeros(fd, off, len);
}

// Opens the record file for one reservation (see the header comment: no long-lived fd).
int open_record_file() {
  const int fd = sys_openat(AT_FDCWD, g.file_path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (sys_fstat(fd, &st) != 0 || st.st_dev != g.file_dev || st.st_ino != g.file_ino) {
    sys_close(fd);
    errno = ESTALE;
    return -1;
  }
  return fd;
}

void note_chunk_reserved(std::uint32_t count) {
  std::uint32_t cur = __atomic_load_n(&g.header->chunks_reserved, __ATOMIC_RELAXED);
  while (cur < count && !__atomic_compare_exchange_n(&g.header->chunks_reserved, &cur, count, true,
                                                     __ATOMIC_RELEASE, __ATOMIC_RELAXED)) {
  }
}

// TMPFS_MAGIC, from linux/magic.h.
constexpr long kTmpfsMagic = 0x01021994;

// MADV_POPULATE_WRITE, from Linux 5.14's uapi (older headers lack it).
constexpr int kMadvPopulateWrite = 23;

// ---- flight recorder ring (record --ring; docs/collector.md §9.3) ----
// A slot is busy while it is some thread's current chunk: a slot is reused only when no thread
// writes into it any more, so a thread that writes rarely keeps its chunk while others wrap.
constexpr std::uint32_t kMaxRingChunks = 4096;
constinit std::atomic<std::uint8_t> g_ring_busy[kMaxRingChunks]{};

// The next free slot after the last one taken (the oldest data, in the order slots were taken);
// -1 when every slot is some thread's current chunk.
std::int64_t take_ring_slot() {
  const std::uint32_t n = g.ring_chunks;
  for (std::uint32_t tries = 0; tries < n; ++tries) {
    const std::uint32_t slot = g.ring_next.fetch_add(1, std::memory_order_relaxed) % n;
    std::uint8_t idle = 0;
    if (g_ring_busy[slot].compare_exchange_strong(idle, 1, std::memory_order_acq_rel)) return slot;
  }
  return -1;
}

void free_ring_slot(ThreadState& ts) {
  if (ts.ring_slot != 0) g_ring_busy[ts.ring_slot - 1].store(0, std::memory_order_release);
  ts.ring_slot = 0;
}

// Reserves and maps the next chunk of the file; nullptr (recording stopped) on failure.
// `populate` pre-faults the chunk's pages for writing in one call: about a third of the cost
// of first-touch write faults taken one page at a time (2.5 vs 7.3 us per page measured on
// our VMs), which otherwise dominate the cost of a record. Such a chunk is reserved by
// writing its zeros (reserve_space), which makes the population itself cheaper. Only threads
// that already filled a chunk get it: a thread that writes a handful of records should not
// make the kernel materialize 1 MiB for it.
char* map_new_chunk(bool populate, std::int64_t ring_slot) {
  // A ring slot is written over: its zeros are written again (reserve_space with zero_fill), so
  // no record of its previous round is left behind the new ones.
  const bool ring = ring_slot >= 0;
  if (ring) populate = true;
  const std::uint32_t index =
      ring ? static_cast<std::uint32_t>(ring_slot) : g.next_chunk.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxChunks) {
    stop_recording("the record file reached its size limit (1 TiB)", 0);
    return nullptr;
  }
  const int fd = open_record_file();
  if (fd < 0) {
    stop_recording("reopening the record file", errno);
    return nullptr;
  }
  const off_t off = static_cast<off_t>(kHeaderSize) + static_cast<off_t>(index) * kChunkSize;
  const int err = reserve_space(fd, off, kChunkSize, ring || (populate && g.zero_fill));
  void* p = MAP_FAILED;
  if (err == 0) p = sys_mmap(nullptr, kChunkSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);
  const int map_err = errno;
  if (populate && p != MAP_FAILED) {
    // Write-fault every page now, in one call (Linux >= 5.14; older kernels say EINVAL and
    // the pages fault in lazily as before). MAP_POPULATE would only map them for reading:
    // each first store would still take a write fault for dirty tracking.
    ::madvise(p, kChunkSize, kMadvPopulateWrite);
  }
  sys_close(fd);
  if (err != 0) {
    stop_recording("reserving file space for a chunk", err);
    return nullptr;
  }
  if (p == MAP_FAILED) {
    stop_recording("mapping a chunk", map_err);
    return nullptr;
  }
  note_chunk_reserved(index + 1);
  return static_cast<char*>(p);
}

void thread_exit(void*);

// Gives the thread a fresh chunk. Slow path: once per 1 MiB of records.
ThreadState g_pinned{};  // flight recorder: the chunk of the records kept out of the ring
SpinLock g_pinned_lock;

bool next_chunk(ThreadState& ts) {
  if (g.mode.load(std::memory_order_relaxed) != kRecording) {
    drop(kDropStopped);
    return false;
  }
  ErrnoSaver errno_saver;
  if (in_vfork_child()) {  // the file belongs to the parent; mmap would land in its memory
    drop(kDropVforkChild);
    return false;
  }
  std::int64_t slot = -1;
  if (g.ring_chunks != 0 && &ts != &g_pinned) {
    slot = take_ring_slot();
    if (slot < 0) {  // more writing threads than ring slots: this record is lost, recording goes on
      drop(kDropStopped);
      return false;
    }
  }
  char* fresh = map_new_chunk(ts.chunk != nullptr, slot);
  if (fresh == nullptr) {
    if (slot >= 0) g_ring_busy[slot].store(0, std::memory_order_release);
    drop(kDropStopped);
    return false;
  }
  const std::uint32_t tid = thread_id(ts);
  if (ts.chunk != nullptr) release_chunk(ts.chunk, tid);
  free_ring_slot(ts);
  if (slot >= 0) ts.ring_slot = static_cast<std::uint32_t>(slot) + 1;
  ts.chunk = fresh;
  ts.used = 0;
  ts.io_base = 0;  // the IoCompact chain starts again in every chunk
  remember_chunk(fresh, tid);
  if (!ts.key_set && g.key_ok) {
    // Registers thread_exit for this thread (the value itself is unused).
    pthread_setspecific(g.key, reinterpret_cast<void*>(1));
    ts.key_set = 1;
  }
  return true;
}

// pthread key destructor: the thread is exiting; its data stays in the file.
void thread_exit(void*) {
  ThreadState& ts = t_state;
  ts.key_set = 0;
  if (ts.chunk == nullptr) return;
  ErrnoSaver errno_saver;
  release_chunk(ts.chunk, ts.tid);
  free_ring_slot(ts);
  ts.chunk = nullptr;
  ts.used = 0;
}

// Bytes at the end of every chunk that only `force` records may use: after a full disk stops
// recording, the thread that exits still has room for the stop reason, Dropped and Exit.
constexpr std::uint32_t kEndReserve = 512;

// Claims room for a record of up to `max_payload` bytes in this thread's chunk (taking a new
// chunk when needed) and marks the thread busy; nullptr when the record is dropped. `force`
// lets exit/exec bookkeeping use the space left in the current chunk after recording stopped
// (no new chunk is taken then). Every successful call is followed by commit_record().
char* begin_record(ThreadState& ts, std::size_t max_payload, bool force) {
  const std::uint32_t mode = g.mode.load(std::memory_order_acquire);
  if (mode != kRecording) {
    if (mode == kOff) return nullptr;
    if (!force) {
      drop(kDropStopped);
      return nullptr;
    }
  }
  if (max_payload > kMaxRecordSize - sizeof(RecordHeader)) {
    drop(kDropTooLarge);
    return nullptr;
  }
  if (ts.busy & kInEmit) {  // a signal handler interrupted this thread inside emit
    drop(kDropNested);
    return nullptr;
  }
  ts.busy |= kInEmit;
  const std::uint32_t size = padded_record_size(max_payload);
  const std::int64_t room = std::int64_t{kChunkSize} - ts.used - (force ? 0 : kEndReserve);
  if ((ts.chunk == nullptr || size > room) && !next_chunk(ts)) {
    ts.busy &= static_cast<std::uint8_t>(~kInEmit);
    return nullptr;
  }
  return ts.chunk + ts.used;
}

// Writes the header of the record at `rec` and then its `size` with release order (the
// commit), and ends the busy section begin_record() opened.
void seal_record(ThreadState& ts, char* rec, std::uint16_t type, std::uint16_t flags,
                 std::uint32_t checksum, std::uint32_t tid, std::uint32_t size) {
  auto* h = reinterpret_cast<RecordHeader*>(rec);
  h->type = type;
  h->flags = flags;
  h->checksum = checksum;
  h->tid = tid;
  ts.used += size;
  __atomic_store_n(&h->size, size, __ATOMIC_RELEASE);  // commit
  ts.busy &= static_cast<std::uint8_t>(~kInEmit);
}

// Seals the record at `rec` whose `payload` bytes are already in place: checksum, header, then
// `size` with release order (the commit), and ends the busy section begin_record() opened.
void commit_record(ThreadState& ts, char* rec, RecordType type, std::uint16_t flags,
                   std::size_t payload) {
  const std::uint32_t tid = thread_id(ts);
  const auto type16 = static_cast<std::uint16_t>(type);
  // Checksum what is in the file (a caller's buffer could change under us); the zero
  // padding after the payload is not covered (record_format.h).
  const std::uint32_t sum =
      checksum32(rec + sizeof(RecordHeader), payload, record_checksum_seed(type16, flags, tid));
  seal_record(ts, rec, type16, flags, sum, tid, padded_record_size(payload));
}

// commit_record() for a payload the caller holds as N words: stores them and checksums the
// same values. Reading back bytes just stored by narrower stores would stall store forwarding
// (about 15 ns per I/O record on our VMs, bench/collector_profile.md).
template <std::size_t N>
void commit_words(ThreadState& ts, char* rec, RecordType type, std::uint16_t flags,
                  const std::uint64_t (&words)[N]) {
  const std::uint32_t tid = thread_id(ts);
  const auto type16 = static_cast<std::uint16_t>(type);
  std::uint64_t x = record_checksum_seed(type16, flags, tid);
  char* body = rec + sizeof(RecordHeader);
  for (std::size_t i = 0; i < N; ++i) {
    std::memcpy(body + 8 * i, &words[i], 8);
    x = checksum_word(x, words[i]);
  }
  seal_record(ts, rec, type16, flags, checksum_final(x), tid, padded_record_size(8 * N));
}

// Flight recorder: a record that must outlive the ring (strings, processes, threads: what the
// ring's records refer to) goes to the process's pinned chunks, one writer at a time.
bool emit_pinned(RecordType type, const void* head, std::uint32_t head_size, const void* tail,
                 std::uint32_t tail_size, bool force) {
  ThreadState& self = t_state;
  if (self.busy & kInEmit) {  // a signal handler interrupted this thread inside emit: never spin here
    drop(kDropNested);
    return false;
  }
  self.busy |= kInEmit;
  g_pinned_lock.lock();
  g_pinned.tid = thread_id(self);  // the record is this thread's
  const std::size_t payload = std::size_t{head_size} + tail_size;
  char* rec = begin_record(g_pinned, payload, force);
  if (rec != nullptr) {
    char* body = rec + sizeof(RecordHeader);
    std::memcpy(body, head, head_size);
    if (tail_size != 0) std::memcpy(body + head_size, tail, tail_size);
    commit_record(g_pinned, rec, type, 0, payload);
  }
  g_pinned_lock.unlock();
  self.busy &= static_cast<std::uint8_t>(~kInEmit);
  return rec != nullptr;
}

// Appends one record (head + tail bytes as its payload) for this thread.
bool emit_record(RecordType type, const void* head, std::uint32_t head_size, const void* tail,
                 std::uint32_t tail_size, bool force, bool gated = true) {
  if (gated && window_blocks(type)) return false;
  const std::size_t payload = std::size_t{head_size} + tail_size;
  if (g.ring_chunks != 0 && window_always_recorded(type))
    return emit_pinned(type, head, head_size, tail, tail_size, force);
  ThreadState& ts = t_state;
  char* rec = begin_record(ts, payload, force);
  if (rec == nullptr) return false;
  char* body = rec + sizeof(RecordHeader);
  std::memcpy(body, head, head_size);
  if (tail_size != 0) std::memcpy(body + head_size, tail, tail_size);
  commit_record(ts, rec, type, 0, payload);
  return true;
}

// ---------------------------------------------------------------------------------------
// TSC clock for I/O records (record_format.h, ClockSyncRecord)
// ---------------------------------------------------------------------------------------

std::int64_t read_tsc() {
#if defined(__x86_64__)
  return static_cast<std::int64_t>(__rdtsc());
#else
  return 0;  // never used: tsc_usable() is false
#endif
}

// The TSC may stand in for CLOCK_MONOTONIC only when it is invariant (CPUID: constant rate
// through P- and C-states) and the kernel itself keeps time with it (so it is synchronized
// across CPUs and CLOCK_MONOTONIC is a linear function of it between NTP adjustments).
// TRACETUNE_IO_CLOCK=monotonic turns it off. Raw syscalls only: runs in the constructor.
bool tsc_usable() {
#if defined(__x86_64__)
  const char* choice = env_get("TRACETUNE_IO_CLOCK");
  if (choice != nullptr && std::strcmp(choice, "monotonic") == 0) return false;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000007, &a, &b, &c, &d) == 0 || (d & (1u << 8)) == 0) return false;
  const int fd = sys_openat(AT_FDCWD, "/sys/devices/system/clocksource/clocksource0/current_clocksource",
                            O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[16] = {};
  const long n = sys_read(fd, buf, sizeof buf - 1);
  sys_close(fd);
  return n == 4 && std::memcmp(buf, "tsc\n", 4) == 0;
#else
  return false;
#endif
}

// Writes one (TSC, CLOCK_MONOTONIC) pair, the tightest of a few tries (clock_pair.h).
ClockSyncRecord write_clock_pair(bool force) {
  const ClockSyncRecord r = tight_clock_pair([] { return clock_ns(CLOCK_MONOTONIC); }, read_tsc);
  emit_record(RecordType::ClockSync, &r, sizeof r, nullptr, 0, force);
  return r;
}

// Deadline for the next pair: half the time since the first pair, 2^20 to 2^28 ticks ahead.
std::int64_t next_sync_deadline(std::int64_t tsc) {
  constexpr std::int64_t kMin = 1ll << 20, kMax = 1ll << 28;
  const std::int64_t half = (tsc - g.sync_first_tsc) / 2;
  return tsc + (half < kMin ? kMin : half > kMax ? kMax : half);
}

// At file start: the first pair.
void start_clock_sync() {
  if (!g.io_tsc) return;
  const ClockSyncRecord r = write_clock_pair(false);
  g.sync_first_tsc = r.tsc;
  g.sync_first_mono = r.mono_ns;
  g.sync_next_tsc.store(next_sync_deadline(r.tsc), std::memory_order_relaxed);
}

// At the end of process (or fork-child) start: a second pair at least 50 us after the first,
// so that every file has a rate even if it is killed before any later pair.
void second_clock_pair() {
  if (!g.io_tsc || g.mode.load(std::memory_order_relaxed) != kRecording) return;
  while (clock_ns(CLOCK_MONOTONIC) - g.sync_first_mono < 50'000) cpu_relax();
  write_clock_pair(false);
}

// Called with the end tick of each I/O record: the first call past the deadline writes a pair.
inline void maybe_sync_clock(std::int64_t tsc) {
  std::int64_t due = g.sync_next_tsc.load(std::memory_order_relaxed);
  if (__builtin_expect(tsc < due, 1)) return;
  if (!g.sync_next_tsc.compare_exchange_strong(due, next_sync_deadline(tsc), std::memory_order_relaxed))
    return;  // another thread writes this one
  write_clock_pair(false);
}

// ---------------------------------------------------------------------------------------
// String interning
// ---------------------------------------------------------------------------------------
//
// The deduplicating store is interner.h. Here: a new string gets the next id and a String
// record (emitted before the id is published, so no record can reference an undefined id);
// past the store's memory limits strings are still emitted with fresh ids, just no longer
// deduplicated. Strings longer than kMaxInternLength bytes (the largest String record) are
// truncated.

constexpr std::size_t kMaxInternLength =
    kMaxRecordSize - sizeof(RecordHeader) - sizeof(StringRecord);
// Two instances: a fork child translates its inherited fd table from the parent's strings
// into a fresh table, then frees the parent's.
constinit Interner g_interners[2];
constinit std::atomic<Interner*> g_strings{&g_interners[0]};

std::uint32_t insert(Interner& in, const char* s, std::size_t n, std::uint64_t h, bool force) {
  if (in_vfork_child()) return 0;  // ids and records belong to the parent
  in.lock.lock();
  std::uint32_t id = lookup(in, s, n, h);  // another thread may have added it meanwhile
  if (id == 0 && in.next_id != UINT32_MAX) {
    const StringRecord head{in.next_id, static_cast<std::uint32_t>(n)};
    if (emit_record(RecordType::String, &head, sizeof head, s, static_cast<std::uint32_t>(n),
                    force)) {
      id = in.next_id++;
      remember(in, s, n, h, id);
    }
  }
  in.lock.unlock();
  return id;
}

std::uint32_t intern_impl(const char* s, std::size_t n, bool force) {
  if (s == nullptr || n == 0) return 0;
  const std::uint32_t mode = g.mode.load(std::memory_order_acquire);
  if (mode != kRecording && !(force && mode == kStopped)) return 0;
  if (n > kMaxInternLength) n = kMaxInternLength;
  ThreadState& ts = t_state;
  if (ts.busy & (kInIntern | kInEmit)) return 0;  // re-entered from a signal handler
  ts.busy |= kInIntern;
  Interner& in = *g_strings.load(std::memory_order_acquire);
  const std::uint64_t h = hash_bytes(s, n);
  std::uint32_t id = lookup(in, s, n, h);
  if (id == 0) {
    ErrnoSaver errno_saver;
    id = insert(in, s, n, h, force);
  }
  ts.busy &= static_cast<std::uint8_t>(~kInIntern);
  return id;
}

// ---------------------------------------------------------------------------------------
// fd -> path table
// ---------------------------------------------------------------------------------------

constexpr int kMaxFds = 65536;  // descriptors beyond are simply unknown
constinit std::atomic<std::uint32_t> g_fd_paths[kMaxFds]{};
constinit std::atomic<int> g_fd_high{-1};  // highest fd ever set (bounds the fork-child scan)

// ---------------------------------------------------------------------------------------
// The record file
// ---------------------------------------------------------------------------------------

// mkdir -p: missing components are created 0700.
void make_dirs(const char* path) {
  char buf[PATH_MAX];
  const std::size_t n = std::strlen(path);
  if (n == 0 || n >= sizeof buf) return;
  std::memcpy(buf, path, n + 1);
  for (std::size_t i = 1; i < n; ++i) {
    if (buf[i] != '/') continue;
    buf[i] = '\0';
    sys_mkdirat(AT_FDCWD, buf, 0700);
    buf[i] = '/';
  }
  sys_mkdirat(AT_FDCWD, buf, 0700);
}

// Opens <out>/<host>, creating it 0700. Refuses (returns -1) a directory that is a symlink,
// not owned by us, or writable by group/others: files are created relative to this fd.
int open_host_dir() {
  make_dirs(g.out_dir);
  const int out = sys_openat(AT_FDCWD, g.out_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (out < 0) return -1;
  const bool created = sys_mkdirat(out, g.host, 0700) == 0;
  const int dir = sys_openat(out, g.host, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  sys_close(out);
  if (dir < 0) return -1;
  struct stat st;
  if (sys_fstat(dir, &st) != 0 || st.st_uid != sys_geteuid() ||
      (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    sys_close(dir);
    return -1;
  }
  if (created) sys_fchmod(dir, 0700);  // exact mode whatever the umask
  return dir;
}

// Rank fields: the first variable found (and valid) in `names` wins.
std::int32_t first_int_env(const char* const* names) {
  for (; *names != nullptr; ++names) {
    std::int32_t v;
    if (parse_int(env_get(*names), &v)) return v;
  }
  return -1;
}

void fill_header(FileHeader* h, std::int64_t pid, std::int64_t ppid, std::uint32_t flags,
                 std::int64_t mono, std::int64_t real) {
  static constexpr const char* kRank[] = {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                          "SLURM_PROCID", nullptr};
  static constexpr const char* kLocal[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                           "SLURM_LOCALID", nullptr};
  static constexpr const char* kWorld[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                           "SLURM_NTASKS", nullptr};
  h->version = kFormatVersion;
  h->header_size = kHeaderSize;
  h->chunk_size = kChunkSize;
  h->flags = flags | kDropsInHeader;
  h->pid = pid;
  h->ppid = ppid;
  h->start_mono_ns = mono;
  h->start_real_ns = real;
  h->end_mono_ns = 0;
  h->exit_status = 0;
  h->rank = first_int_env(kRank);
  h->local_rank = first_int_env(kLocal);
  h->world_size = first_int_env(kWorld);
  h->chunks_reserved = 0;
  std::memcpy(h->host, g.host, sizeof h->host);
  // The magic goes last: a reader never accepts a half-written header.
  __atomic_thread_fence(__ATOMIC_RELEASE);
  std::memcpy(h->magic, kMagic, sizeof kMagic);
}

// Reads a small /proc file into buf (not NUL-terminated); returns the length read.
std::size_t read_proc(const char* path, char* buf, std::size_t cap) {
  const int fd = sys_openat(AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t len = 0;
  while (len < cap) {
    const long r = sys_read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += static_cast<std::size_t>(r);
  }
  sys_close(fd);
  return len;
}

bool needs_quotes(const char* s, std::size_t n) {
  if (n == 0) return true;
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c <= ' ' || c == 0x7f || std::strchr("'\"\\$`;&|<>(){}*?[]#~!", c) != nullptr) return true;
  }
  return false;
}

// argv from /proc/self/cmdline joined by spaces, secrets redacted (redact.h); arguments
// quoted shell-style when needed (always when redacted: the marker has < and >).
void build_command_line(Text& out, char* raw, std::size_t raw_cap) {
  const std::size_t n = read_proc("/proc/self/cmdline", raw, raw_cap);
  std::size_t start = 0;
  bool first = true, after_secret_flag = false;
  for (std::size_t i = 0; i <= n; ++i) {
    if (i < n && raw[i] != '\0') continue;
    if (i == n && i == start) break;  // trailing NUL already consumed the last argument
    const char* arg = raw + start;
    const std::size_t len = i - start;
    if (!first) out.put(' ');
    first = false;
    const bool redacted = redact::put_arg(arg, len, after_secret_flag, [](const char*, std::size_t) {});
    const bool quote = redacted || needs_quotes(arg, len);
    if (quote) out.put('\'');
    redact::put_arg(arg, len, after_secret_flag, [&](const char* s, std::size_t k) {
      for (std::size_t j = 0; j < k; ++j) {
        if (quote && s[j] == '\'') out.put("'\\''");
        else out.put(s[j]);
      }
    });
    if (quote) out.put('\'');
    after_secret_flag = redact::secret_flag(arg, len);
    start = i + 1;
  }
}

// NAME=value lines; values of secret-looking names replaced, and secrets inside other values
// (URL passwords, keys) too (redact.h). Whole lines only.
void build_environment(Text& out) {
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* entry = *e;
    const char* eq = std::strchr(entry, '=');
    if (eq == nullptr) continue;
    const std::size_t name_len = static_cast<std::size_t>(eq - entry);
    const bool secret = redact::secret_name(entry, name_len);
    const char* value = secret ? redact::kMarker : eq + 1;
    std::size_t value_len = 0;
    redact::put_value(value, std::strlen(value), [&](const char*, std::size_t k) { value_len += k; });
    if (name_len + value_len + 2 > out.cap - out.len) break;  // keep lines whole
    out.put(entry, name_len);
    out.put('=');
    redact::put_value(value, std::strlen(value), [&](const char* s, std::size_t k) { out.put(s, k); });
    out.put('\n');
  }
}

void record_thread_name_of(ThreadState& ts, const char* name, std::size_t n) {
  const ThreadNameRecord r{thread_id(ts), intern_impl(name, n, false)};
  emit(RecordType::ThreadName, r);
}

// ProcessInfo and the current thread's name (from /proc/thread-self/comm).
void write_process_info() {
  constexpr std::size_t kText = kMaxInternLength;
  constexpr std::size_t kScratch = 3 * kText + 2 * PATH_MAX;
  char* mem = static_cast<char*>(map_anonymous(kScratch));
  if (mem == nullptr) return;
  char* raw = mem;
  Text cmd{mem + kText, kText};
  Text env{mem + 2 * kText, kText};
  char* exe = mem + 3 * kText;
  char* cwd = exe + PATH_MAX;

  build_command_line(cmd, raw, kText);
  const long exe_len = sys_readlinkat(AT_FDCWD, "/proc/self/exe", exe, PATH_MAX);
  const long cwd_ok = sys_getcwd(cwd, PATH_MAX);
  if (!g.no_env) build_environment(env);

  ProcessInfoRecord info{};
  info.command_line = intern_impl(cmd.data, cmd.len, false);
  info.executable = exe_len > 0 ? intern_impl(exe, static_cast<std::size_t>(exe_len), false) : 0;
  info.environment = g.no_env ? 0 : intern_impl(env.data, env.len, false);
  info.cwd = cwd_ok > 0 ? intern_impl(cwd, std::strlen(cwd), false) : 0;
  emit(RecordType::ProcessInfo, info);

  std::size_t n = read_proc("/proc/thread-self/comm", raw, 64);
  while (n > 0 && (raw[n - 1] == '\n' || raw[n - 1] == '\0')) --n;
  if (n > 0) record_thread_name_of(t_state, raw, n);
  sys_munmap(mem, kScratch);
}

// Creates this process's record file and starts recording. Async-signal-safe.
bool start_file(std::int64_t ppid, std::uint32_t flags) {
  const std::int64_t pid = sys_getpid();
  g.pid.store(pid, std::memory_order_relaxed);
  // The two clocks back-to-back: the merger aligns hosts with this pair.
  const std::int64_t mono = clock_ns(CLOCK_MONOTONIC);
  const std::int64_t real = clock_ns(CLOCK_REALTIME);

  char name[64];
  Text nm{name, sizeof name};
  nm.put("proc-");
  nm.put_int(pid);
  nm.put('-');
  nm.put_int(mono);
  nm.put(".ttr");
  Text path{g.file_path, sizeof g.file_path};
  path.put(g.out_dir);
  path.put('/');
  path.put(g.host);
  path.put('/');
  path.put(name, nm.len);
  if (!nm.terminate() || !path.terminate()) return false;

  const int dir = open_host_dir();
  if (dir < 0) return false;
  const int fd =
      sys_openat(dir, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    sys_close(dir);
    return false;
  }
  sys_fchmod(fd, 0600);  // exact mode whatever the umask
  struct stat st;
  struct statfs fs;
  // tmpfs pages cost the same either way (zeros cost 15% more there, chunk_reserve_bench).
  g.zero_fill = !(sys_fstatfs(fd, &fs) == 0 && fs.f_type == kTmpfsMagic);
  void* hp = MAP_FAILED;
  if (sys_fstat(fd, &st) == 0 && reserve_space(fd, 0, kHeaderSize, false) == 0) {
    hp = sys_mmap(nullptr, kHeaderSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  sys_close(fd);
  if (hp == MAP_FAILED) {
    sys_unlinkat(dir, name);
    sys_close(dir);
    return false;
  }
  sys_close(dir);

  g.file_dev = st.st_dev;
  g.file_ino = st.st_ino;
  g.header = static_cast<FileHeader*>(hp);
  fill_header(g.header, pid, ppid,
              flags | (g.io_tsc ? std::uint32_t{kIoClockTsc} : 0u) | (g.ring_chunks != 0 ? std::uint32_t{kRingChunks} : 0u),
              mono, real);
  g.next_chunk.store(g.ring_chunks, std::memory_order_relaxed);  // the ring's slots come first
  g.ring_next.store(0, std::memory_order_relaxed);
  g.mode.store(kRecording, std::memory_order_release);
  start_clock_sync();
  write_process_info();
  return true;
}

// ---- constructor helpers ----

void sanitize_host(const char* node) {
  std::size_t n = 0;
  for (; node[n] != '\0' && n < sizeof g.host - 1; ++n) {
    const char c = node[n];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || (c == '.' && n > 0);
    g.host[n] = ok ? c : '_';
  }
  g.host[n] = '\0';
  if (n == 0) std::memcpy(g.host, "unknown-host", sizeof "unknown-host");
}

// Output directory (made absolute: fork children may chdir) and TRACETUNE_* options.
bool configure(const char* dir) {
  Text out{g.out_dir, sizeof g.out_dir};
  if (dir[0] != '/') {
    if (sys_getcwd(g.out_dir, sizeof g.out_dir) <= 0) return false;
    out.len = std::strlen(g.out_dir);
    out.put('/');
  }
  out.put(dir);
  if (!out.terminate()) return false;
  while (out.len > 1 && g.out_dir[out.len - 1] == '/') g.out_dir[--out.len] = '\0';

  struct utsname u;
  if (sys_uname(&u) != 0) std::memcpy(u.nodename, "unknown-host", 13);
  sanitize_host(u.nodename);

  const char* trace = env_get("TRACETUNE_TRACE");
  if (trace != nullptr && *trace != '\0') {
    Text list{g.trace_list, sizeof g.trace_list};
    list.put(trace);
    if (list.terminate()) g.trace_all = false;  // an over-long list means "everything"
  }
  g.io = trace_enabled("io");
  std::int32_t ring = 0;
  if (parse_int(env_get("TRACETUNE_RING_CHUNKS"), &ring) && ring >= 2)
    g.ring_chunks = static_cast<std::uint32_t>(ring < static_cast<std::int32_t>(kMaxRingChunks) ? ring : kMaxRingChunks);
  // ring chunks are not in time order: I/O keeps CLOCK_MONOTONIC rather than TSC ticks mapped by pairs
  g.io_tsc = g.io && g.ring_chunks == 0 && tsc_usable();
  const char* no_env = env_get("TRACETUNE_NO_ENV");
  g.no_env = no_env != nullptr && std::strcmp(no_env, "1") == 0;
  return true;
}

// The library may be both LD_PRELOADed and dlopen()ed from another path (e.g. as an
// injection library): only the first instance, the one in the global scope, records.
// The address of our own tracetune_now_ns cannot be taken directly (a GOT reference binds
// to the global-scope definition, i.e. the other instance), so compare the objects.
bool another_instance_active() {
  void* first = dlsym(RTLD_DEFAULT, "tracetune_now_ns");
  if (first == nullptr) return false;
  Dl_info theirs{};
  Dl_info ours{};
  if (dladdr(first, &theirs) == 0 || dladdr(reinterpret_cast<void*>(&g), &ours) == 0) return false;
  return theirs.dli_fbase != ours.dli_fbase;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// writer.h API
// ---------------------------------------------------------------------------------------

bool configure_from_environment() {
  ErrnoSaver errno_saver;
  const char* dir = env_get("TRACETUNE_OUTPUT_DIR");
  if (dir == nullptr || *dir == '\0') return false;  // not asked to record: pure pass-through
  if (another_instance_active() || !configure(dir)) return false;
  resolve_io_functions();
  resolve_process_functions();
  dlerror();  // do not leave our failed lookups for the application's dlerror()
  g.key_ok = pthread_key_create(&g.key, &thread_exit) == 0;
  return true;
}

const char* output_dir() { return g.out_dir; }

bool start_recording() {
  ErrnoSaver errno_saver;
  if (!start_file(sys_getppid(), 0)) return false;  // unusable directory: record nothing
  g.configured = true;
  return true;
}

void finish_start() {
  ErrnoSaver errno_saver;
  second_clock_pair();
}

bool env_int(const char* name, std::int32_t* out) { return parse_int(env_get(name), out); }

std::int64_t now_ns() { return clock_ns(CLOCK_MONOTONIC); }

std::int64_t io_clock() { return g.io_tsc ? read_tsc() : clock_ns(CLOCK_MONOTONIC); }

bool recording() { return g.mode.load(std::memory_order_relaxed) == kRecording; }

bool in_vfork_child() {
#if defined(TT_VFORK_HOOK)
  // Only a thread that called vfork() since its last check can be, or share its memory
  // with, a vfork child: the others skip the getpid() (~140 ns, at every open and close).
  if (tracetune_vfork_pending == 0) return false;
#endif
  // glibc no longer caches the pid, so this is a real syscall.
  const std::int64_t pid = g.pid.load(std::memory_order_relaxed);
  if (pid != 0 && sys_getpid() != pid) return true;
#if defined(TT_VFORK_HOOK)
  tracetune_vfork_pending = 0;  // the parent, back from vfork (or from a vfork that failed)
#endif
  return false;
}

ReentryGuard::ReentryGuard() : active_(t_state.depth++ == 0) {}
ReentryGuard::~ReentryGuard() { --t_state.depth; }

std::uint32_t intern(const char* s, std::size_t n) { return intern_impl(s, n, false); }

std::uint32_t intern(const char* s) { return s == nullptr ? 0 : intern_impl(s, std::strlen(s), false); }

void emit(RecordType type, const void* payload, std::uint32_t size) {
  emit_record(type, payload, size, nullptr, 0, false);
}

void emit_ungated(RecordType type, const void* payload, std::uint32_t size) {
  emit_record(type, payload, size, nullptr, 0, false, false);
}

void emit2(RecordType type, const void* head, std::uint32_t head_size, const void* tail,
           std::uint32_t tail_size) {
  emit_record(type, head, head_size, tail, tail_size, false);
}

void emit_io(const IoRecord& r) {
  if (!window_open_now()) return;
  ThreadState& ts = t_state;
  // Room for the wide form: which form fits is known only once the chunk (and so the chain's
  // base) is settled.
  char* rec = begin_record(ts, sizeof(IoRecord), false);
  if (rec == nullptr) return;
  IoCompactRecord c;
  std::uint16_t flags = 0;
  const bool compact = encode_io_compact(r, ts.io_base, c, flags);
  ts.io_base = r.start_ns;  // still inside the busy section: no other record can interleave
  if (compact) {
    std::uint64_t words[3];
    io_compact_words(c, words);
    commit_words(ts, rec, RecordType::IoCompact, flags, words);
  } else {
    std::memcpy(rec + sizeof(RecordHeader), &r, sizeof r);
    commit_record(ts, rec, RecordType::Io, 0, sizeof r);
  }
  if (g.io_tsc) maybe_sync_clock(r.end_ns);
}

void publish_ring_steps(std::int64_t written, std::int64_t cut_ns) {
  FileHeader* h = g.header;
  if (h == nullptr || in_vfork_child()) return;
  __atomic_store_n(&h->ring_cut_ns, cut_ns, __ATOMIC_RELEASE);  // first: a reader never pairs a count with a later cut
  __atomic_store_n(&h->ring_steps_written, written, __ATOMIC_RELEASE);
}

std::uint32_t fd_path(int fd) {
  return static_cast<unsigned>(fd) < kMaxFds ? g_fd_paths[fd].load(std::memory_order_acquire) : 0;
}

void set_fd_path(int fd, std::uint32_t path_id) {
  if (static_cast<unsigned>(fd) >= kMaxFds) return;
  g_fd_paths[fd].store(path_id, std::memory_order_release);
  int high = g_fd_high.load(std::memory_order_relaxed);
  while (path_id != 0 && fd > high &&
         !g_fd_high.compare_exchange_weak(high, fd, std::memory_order_relaxed)) {
  }
}

std::uint32_t take_fd_path(int fd) {
  return static_cast<unsigned>(fd) < kMaxFds ? g_fd_paths[fd].exchange(0, std::memory_order_acq_rel)
                                             : 0;
}

std::size_t copy_string(std::uint32_t id, char* out, std::size_t cap) {
  const Entry* e = find_id(*g_strings.load(std::memory_order_acquire), id);
  if (e == nullptr || e->len > cap) return 0;
  std::memcpy(out, e->bytes(), e->len);
  return e->len;
}

bool trace_enabled(const char* category) {
  if (g.trace_all) return true;
  const std::size_t n = std::strlen(category);
  const char* p = g.trace_list;
  while (*p != '\0') {
    while (*p == ',' || *p == ' ') ++p;
    const char* end = p;
    while (*end != '\0' && *end != ',') ++end;
    const char* last = end;
    while (last > p && last[-1] == ' ') --last;
    const std::size_t len = static_cast<std::size_t>(last - p);
    if ((len == n && std::strncmp(p, category, n) == 0) || (len == 3 && std::strncmp(p, "all", 3) == 0)) {
      return true;
    }
    p = end;
  }
  return false;
}

bool should_record_io() {
  const std::uint32_t mode = g.mode.load(std::memory_order_acquire);
  if (__builtin_expect(mode == kRecording, 1)) return g.io && window_open_now();
  if (mode == kStopped && g.io) drop(kDropStopped);
  return false;
}

void* resolve_next(const char* name, const char* version) {
  ThreadState& ts = t_state;
  if (ts.busy & kResolving) return nullptr;
  const int saved = errno;
  ts.busy |= kResolving;
  void* p = dlsym(RTLD_NEXT, name);
  if (p == nullptr && version != nullptr) p = dlvsym(RTLD_NEXT, name, version);
  ts.busy &= static_cast<std::uint8_t>(~kResolving);
  errno = saved;
  return p;
}

void record_thread_name(const char* name) {
  if (name == nullptr || !recording()) return;
  ErrnoSaver errno_saver;
  record_thread_name_of(t_state, name, std::strlen(name));
}

void record_fork(std::int64_t child_pid) {
  if (!recording()) return;
  const ForkRecord r{now_ns(), child_pid};
  emit(RecordType::Fork, r);
}

namespace {

// Dropped records for every reason counted so far (the counters restart at zero, so a
// failed exec followed by exit does not report the same drops twice).
void emit_drops() {
  if (g.header == nullptr) return;
  for (int r = 0; r < kDropReasons; ++r) {
    const std::uint64_t n = __atomic_exchange_n(&g.header->dropped[r], 0, __ATOMIC_RELAXED);
    if (n == 0) continue;
    const char* text = r == kDropStopped && g.header->stop_reason[0] != '\0' ? g.header->stop_reason : kDropText[r];
    DroppedRecord d{};
    d.count = n;
    d.reason = intern_impl(text, std::strlen(text), true);
    if (!emit_record(RecordType::Dropped, &d, sizeof d, nullptr, 0, true)) {
      drop(static_cast<DropReason>(r), n);
    }
  }
}

void set_end(std::int64_t ts) {
  if (g.header != nullptr) __atomic_store_n(&g.header->end_mono_ns, ts, __ATOMIC_RELEASE);
}

}  // namespace

void restart_in_fork_child() {
  if (!g.configured) return;
  ErrnoSaver errno_saver;
  const std::int64_t parent = g.pid.load(std::memory_order_relaxed);
  if (sys_getpid() == parent) return;  // already done (fork() and _Fork() both report)

  // The parent's chunks and header map the parent's file: never write there again.
  g.mode.store(kOff, std::memory_order_relaxed);
  ThreadState& ts = t_state;
  ts.chunk = nullptr;
  ts.used = 0;
  ts.tid = 0;
  ts.busy = 0;
  ts.ring_slot = 0;
  for (auto& slot : g_chunk_slots) {
    if (char* p = slot.exchange(nullptr, std::memory_order_relaxed)) sys_munmap(p, kChunkSize);
  }
  for (auto& busy : g_ring_busy) busy.store(0, std::memory_order_relaxed);
  g_pinned = ThreadState{};  // its chunk was the parent's (unmapped above)
  g_pinned_lock.reset();
  if (g.header != nullptr) sys_munmap(g.header, kHeaderSize);
  g.header = nullptr;
  g.exit_recorded.store(0, std::memory_order_relaxed);
  g.stop_claimed.store(0, std::memory_order_relaxed);

  // String ids are per file: start a fresh table, keep the parent's until the inherited
  // fd table has been translated.
  Interner* old = g_strings.load(std::memory_order_relaxed);
  Interner* fresh = old == &g_interners[0] ? &g_interners[1] : &g_interners[0];
  reset_interner(*fresh);
  g_strings.store(fresh, std::memory_order_release);

  start_file(parent, kForkChild);

  const int high = g_fd_high.load(std::memory_order_relaxed);
  for (int fd = 0; fd <= high && fd < kMaxFds; ++fd) {
    const std::uint32_t id = g_fd_paths[fd].load(std::memory_order_relaxed);
    if (id == 0) continue;
    const Entry* e = find_id(*old, id);
    g_fd_paths[fd].store(e != nullptr ? intern_impl(e->bytes(), e->len, false) : 0,
                         std::memory_order_relaxed);
  }
  reset_interner(*old);
  second_clock_pair();
}

bool record_exec(const char* path, std::uint32_t path_id) {
  if (g.mode.load(std::memory_order_relaxed) == kOff) return false;
  ErrnoSaver errno_saver;
  if (in_vfork_child()) return false;  // a vfork child shares our memory: touch nothing
  emit_drops();
  if (g.io_tsc) write_clock_pair(true);
  ExecRecord r{};
  r.ts_ns = now_ns();
  r.path = path != nullptr ? intern_impl(path, std::strlen(path), true) : path_id;
  emit_record(RecordType::Exec, &r, sizeof r, nullptr, 0, true);
  set_end(r.ts_ns);
  header_or_flags(kExecReplaced);
  return true;
}

void exec_failed() {
  if (g.header == nullptr) return;
  __atomic_fetch_and(&g.header->flags, ~static_cast<std::uint32_t>(kExecReplaced), __ATOMIC_SEQ_CST);
  set_end(0);
}

bool note_static_exec(const char* program) {
  if (g.mode.load(std::memory_order_relaxed) == kOff || g.header == nullptr || program == nullptr) return false;
  if (__atomic_fetch_add(&g.header->static_execs, 1, __ATOMIC_SEQ_CST) == 0) {
    Text t{g.header->static_program, sizeof g.header->static_program - 1};
    t.put(program);
    t.data[t.len] = '\0';  // a claim after a failed exec may write a shorter path
  }
  return true;
}

void static_exec_failed() {
  if (g.header != nullptr) __atomic_fetch_sub(&g.header->static_execs, 1, __ATOMIC_SEQ_CST);
}

void record_exit(int status, int how) {
  if (g.mode.load(std::memory_order_relaxed) == kOff) return;
  ErrnoSaver errno_saver;
  if (in_vfork_child()) return;
  if (g.exit_recorded.exchange(1) != 0) return;
  emit_drops();
  if (g.io_tsc) write_clock_pair(true);
  ExitRecord r{};
  r.ts_ns = now_ns();
  r.status = status & 0xff;  // what the parent's wait() sees
  r.how = how;
  emit_record(RecordType::Exit, &r, sizeof r, nullptr, 0, true);
  if (g.header != nullptr) __atomic_store_n(&g.header->exit_status, r.status, __ATOMIC_RELAXED);
  set_end(r.ts_ns);
  header_or_flags(kExited);
}

}  // namespace tt::collector
