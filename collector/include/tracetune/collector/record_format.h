// The raw record format: what the injected collector writes, per process, and the merger
// reads. Shared by the collector library (which must stay dependency-free: plain C++ with
// no exceptions, no allocation on the hot path) and by the merger.
//
// One file per process: <out>/<host>/proc-<pid>-<start_ns>.ttr, created 0600 with
// O_EXCL|O_NOFOLLOW in a 0700 directory. Layout:
//
//   [FileHeader, kHeaderSize bytes][chunk 0][chunk 1]...   each chunk kChunkSize bytes
//
// Each writing thread owns one chunk at a time, mapped MAP_SHARED: a record is in the page
// cache as soon as it is written, so a SIGKILLed process keeps every committed record with
// no flush. Chunks are reserved with fallocate first, so a full disk is an error at chunk
// reservation (recording stops, counted), never a SIGBUS inside the job.
//
// Records inside a chunk are packed, each 8-byte aligned:
//
//   RecordHeader{size, type, flags, checksum, tid} + payload, size = header + payload, padded
//
// Commit protocol: the writer fills the payload, type, tid and checksum, then stores `size`
// last with release order. A reader sees size == 0 as "no more records in this chunk". A
// record whose checksum does not match is a torn write (crash mid-record, lost page):
// the reader stops that chunk there and reports it; nothing before it is lost.
//
// Versions. 1: every I/O call is a 72-byte Io record. 2 (this writer): an I/O call is a 40-byte
// IoCompact record when its values fit (IoCompactRecord below), else the same wide Io record;
// I/O times may be TSC ticks (kIoClockTsc, ClockSyncRecord); the checksum's (type, flags, tid)
// prefix is one 8-byte word. Readers read both. A new record *type* needs no new version: a
// reader skips (and counts) valid records of a type it does not know, so a file of a newer
// collector still reads; only a new layout of an existing type does (the static_asserts below).
#pragma once

#include <cstddef>
#include <cstdint>

namespace tt::collector {

inline constexpr char kMagic[8] = {'T', 'T', 'R', 'E', 'C', 'O', 'R', 'D'};
inline constexpr std::uint32_t kFormatVersion = 2;       // what the collector writes
inline constexpr std::uint32_t kOldestFormatVersion = 1;  // the oldest the reader still reads
inline constexpr std::uint32_t kHeaderSize = 4096;
inline constexpr std::uint32_t kChunkSize = 1u << 20;  // 1 MiB per thread at a time
inline constexpr std::uint32_t kMaxRecordSize = 64u * 1024u;

// File header. Fields that become known later (end time, exit status) are updated in
// place in the mapped header; all fields are little-endian host order.
struct FileHeader {
  char magic[8];
  std::uint32_t version;
  std::uint32_t header_size;   // kHeaderSize
  std::uint32_t chunk_size;    // kChunkSize
  std::uint32_t flags;         // FileFlags
  std::int64_t pid;
  std::int64_t ppid;
  std::int64_t start_mono_ns;  // CLOCK_MONOTONIC at process start (the trace clock)
  std::int64_t start_real_ns;  // CLOCK_REALTIME at the same instant (cross-host alignment)
  std::int64_t end_mono_ns;    // 0 until the process ends cleanly (exit/_exit/exec)
  std::int32_t exit_status;    // valid when flags & kExited
  std::int32_t rank;           // -1 unknown (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID)
  std::int32_t local_rank;     // -1 unknown (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID)
  std::int32_t world_size;     // -1 unknown
  std::uint32_t chunks_reserved;  // chunks allocated so far (the file may be longer on disk)
  std::uint32_t reserved0;
  char host[64];               // NUL-terminated
  // kDropsInHeader: events dropped and not yet written as Dropped records, by DropReason,
  // counted here in the shared mapping so that a SIGKILL (no exit handler) or a thread still
  // running after the exit handler loses no count; the exit handler moves them into Dropped
  // records. The reader adds what is left here to those records.
  std::uint64_t dropped[4];
  char stop_reason[160];       // kDropsInHeader: why recording stopped (NUL-terminated), or ""
  // Statically linked programs this process, or a vfork child of it, was about to exec
  // (elf_probe.h): LD_PRELOAD cannot reach them, so their I/O is missing. Counted in the
  // header, not in records, because a vfork child may not write records; the first such
  // program's path is kept (NUL-terminated; claimed by the 0 -> 1 step of the count).
  // Zero in files of earlier collectors (reserved space).
  std::uint32_t static_execs;
  std::uint32_t reserved1;
  char static_program[248];
  // Flight recorder of N steps (record --ring Nsteps, TRACETUNE_RING_STEPS=N): the Step records
  // this process wrote, and the start of the N-th last of them, from which a dump keeps its events
  // (its cut; 0 while it wrote fewer than N). Published at every step so that the launcher can
  // remove the files of ended processes none of whose events a dump can keep (an ended process
  // without steps whose end is before the earliest cut of its host's stepping processes).
  // Zero in files of earlier collectors and without a step ring (reserved space).
  std::int64_t ring_steps_written;
  std::int64_t ring_cut_ns;
  char reserved[4096 - 8 - 4 * 4 - 8 * 5 - 4 * 6 - 64 - 8 * 4 - 160 - 8 - 248 - 8 * 2];
};
static_assert(sizeof(FileHeader) == kHeaderSize, "FileHeader must fill the header page");

enum FileFlags : std::uint32_t {
  kExited = 1u << 0,         // end_mono_ns and exit_status are valid
  kExecReplaced = 1u << 1,   // the process image was replaced by exec (a new file follows)
  kForkChild = 1u << 2,      // started by fork() from a recorded parent (ppid's file)
  kRecordingStopped = 1u << 3,  // an error (e.g. ENOSPC) stopped recording; see kDropped
  kIoClockTsc = 1u << 4,     // version 2: I/O records' times are TSC ticks (see ClockSyncRecord)
  kDropsInHeader = 1u << 5,  // FileHeader::dropped and stop_reason are kept (else zero, unused)
  kRingChunks = 1u << 6,     // flight recorder: chunks below the first pinned one are a ring, reused
                             // oldest first (their file order is not time order)
};

// Why an event was not recorded: FileHeader::dropped's index.
enum DropReason : int { kDropStopped, kDropNested, kDropVforkChild, kDropTooLarge, kDropReasons };
// What a DropReason means in the trace's diagnostics. kDropStopped says "recording stopped"
// when the file has no stop_reason.
inline constexpr const char* kDropText[kDropReasons] = {
    "recording stopped",
    "record written from a signal handler while this thread was writing one",
    "record from a vfork child when its thread's chunk was full",
    "record larger than the maximum record size",
};

struct RecordHeader {
  std::uint32_t size;      // header + payload, multiple of 8; 0 = end of data in this chunk
  std::uint16_t type;      // RecordType
  std::uint16_t flags;     // 0, except IoCompact: IoCompactFlags
  std::uint32_t checksum;  // record_checksum(): type, flags, tid, then the payload bytes as
                           // given to the writer (not the zero padding up to `size`)
  std::uint32_t tid;       // kernel thread id of the writer
};
static_assert(sizeof(RecordHeader) == 16);

enum class RecordType : std::uint16_t {
  String = 1,       // StringRecord + bytes: defines a per-process string id
  ProcessInfo = 2,  // ProcessInfoRecord: command line / environment / executable string ids
  ThreadName = 3,   // ThreadNameRecord
  Io = 4,           // IoRecord
  Range = 5,        // RangeRecord: a closed NVTX / Python / user range
  Mark = 6,         // MarkRecord: an instant
  Step = 7,         // StepRecord: a training step or a "waiting for the next batch" span
  Fork = 8,         // ForkRecord: this process forked a child
  Exec = 9,         // ExecRecord: this process is about to exec (the image is replaced)
  Exit = 10,        // ExitRecord: the process is leaving (exit, _exit, fatal signal)
  Dropped = 11,     // DroppedRecord: events not recorded, with the reason
  Counter = 12,     // CounterRecord
  IoCompact = 13,   // IoCompactRecord (format version 2): an I/O call whose values fit 32 bits
  ClockSync = 14,   // ClockSyncRecord (format version 2): a TSC reading and CLOCK_MONOTONIC together
  PyFrame = 15,     // PyFrameRecord: defines a per-process Python frame id (function, file, line)
  PySample = 16,    // PySampleRecord + frame ids: one Python thread's stack at one instant
  // 100..199: GPU capture. Written by the CUPTI injection library (libtracetune_cupti.so) and
  // the NCCL profiler plugin (libtracetune_nccl_profiler.so) through the collector's exported
  // tracetune_emit_gpu_record(); see docs/collector.md, "GPU capture".
  GpuStatus = 100,       // GpuStatusRecord: what a GPU component could (not) record, and why
  NcclComm = 101,        // NcclCommRecord: a communicator the NCCL profiler plugin was given
  NcclColl = 102,        // NcclCollRecord: a collective / point-to-point operation
  GpuDevice = 110,       // GpuDeviceRecord (CUPTI DEVICE)
  GpuKernel = 111,       // GpuKernelRecord (CUPTI CONCURRENT_KERNEL)
  GpuMemcpy = 112,       // GpuMemcpyRecord (CUPTI MEMCPY)
  GpuMemset = 113,       // GpuMemsetRecord (CUPTI MEMSET)
  GpuSync = 114,         // GpuSyncRecord (CUPTI SYNCHRONIZATION)
  GpuApi = 115,          // GpuApiRecord (CUPTI RUNTIME / DRIVER)
  GpuGraphLaunch = 116,  // GpuGraphLaunchRecord (CUPTI GRAPH_TRACE)
  GpuOverhead = 117,     // GpuOverheadRecord (CUPTI OVERHEAD)
  GpuMemory = 118,       // GpuMemoryRecord (CUPTI MEMORY2: device memory allocated / released)
  GpuCudaEvent = 119,    // GpuCudaEventRecord (CUPTI CUDA_EVENT: where a CUDA event was recorded)
};
inline constexpr std::uint16_t kFirstGpuRecordType = 100;
inline constexpr std::uint16_t kLastGpuRecordType = 199;

// Interned string: ids are per process file, assigned by the writer, 0 = empty string.
struct StringRecord {
  std::uint32_t id;
  std::uint32_t length;  // bytes that follow (not NUL-terminated)
};
static_assert(sizeof(StringRecord) == 8, "StringRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct ProcessInfoRecord {
  std::uint32_t command_line;  // string id: argv joined by spaces (arguments quoted if needed)
  std::uint32_t executable;    // string id: /proc/self/exe target
  std::uint32_t environment;   // string id: NAME=value lines, secrets redacted; 0 with --no-env
  std::uint32_t cwd;           // string id
};
static_assert(sizeof(ProcessInfoRecord) == 16, "ProcessInfoRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct ThreadNameRecord {
  std::uint32_t tid;
  std::uint32_t name;  // string id
};
static_assert(sizeof(ThreadNameRecord) == 8, "ThreadNameRecord: on-disk layout (a new size needs a new kFormatVersion)");

// The libc function that was called (a finer grain than the trace's IoOp).
enum class IoFunc : std::uint8_t {
  Open, Open64, OpenAt, OpenAt64, Creat, Creat64, Open2, Open64_2, OpenAt2,
  Read, Pread, Pread64, Readv, Preadv, Preadv64, Preadv2,
  Write, Pwrite, Pwrite64, Writev,
  Close, Lseek, Lseek64,
  Stat, Fstat, Lstat, Fstatat, Statx, Stat64, Fstat64, Lstat64, Fstatat64,
  Mmap, Mmap64,
  Fopen, Fopen64, Fread, Fwrite, Fclose,
  Count
};

struct IoRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::int64_t bytes;    // requested (read/write) or mapped length; -1 n/a
  std::int64_t offset;   // explicit (pread) or current file offset when known; -1 n/a
  std::int64_t result;   // the call's return value (fd, bytes, 0/-1, or 0/1 for pointers)
  std::int32_t fd;       // -1 n/a
  std::int32_t err;      // errno when the call failed, else 0
  std::uint32_t path;    // string id of the path (from the call or the fd table), 0 unknown
  IoFunc func;
  std::uint8_t pad[3];
};
static_assert(sizeof(IoRecord) == 56, "IoRecord: on-disk layout (a new size needs a new kFormatVersion)");

// The common I/O call in 40 bytes (16 header + 24 payload) instead of 72: the same values as an
// IoRecord, narrowed. The writer uses it when every value fits (encode_io_compact), else the
// wide Io record; both decode to an IoRecord. Page population of the record file costs per
// byte written (bench/collector_profile.md), so the size is the hot path's cost.
//
// Times are chained: start_delta is relative to the start of the previous I/O record (Io or
// IoCompact) in the same chunk, 0 before the first. A chunk is one thread's, written in order,
// and the reader stops a chunk at its first torn record, so the chain never skips a record.
// The rest of the IoRecord lives in RecordHeader::flags:
enum IoCompactFlags : std::uint16_t {
  kIoFuncMask = 0x3f,          // bits 0-5: IoFunc
  kIoBytesIsResult = 1u << 6,  // bytes == result
  kIoBytesInArg = 1u << 7,     // bytes == arg (offset is -1); neither bytes flag: bytes = -1
  kIoOffsetInArg = 1u << 8,    // offset == arg; otherwise offset = -1
  kIoErrShift = 9,             // bits 9-15: errno (0..127)
};
inline constexpr std::uint32_t kIoMaxCompactErr = 127;

struct IoCompactRecord {
  std::int32_t start_delta;  // start_ns - the previous I/O record's start_ns in this chunk
  std::uint32_t duration;    // end_ns - start_ns
  std::int32_t result;
  std::int32_t fd;
  std::uint32_t path;
  std::uint32_t arg;         // offset or bytes (flags), else 0
};
static_assert(sizeof(IoCompactRecord) == 24, "IoCompactRecord: on-disk layout (a new size needs a new kFormatVersion)");

// The record's bytes as three little-endian words, built from its fields: the writer stores
// and checksums these values without reading back what it just stored.
inline void io_compact_words(const IoCompactRecord& c, std::uint64_t (&w)[3]) {
  w[0] = static_cast<std::uint32_t>(c.start_delta) | std::uint64_t{c.duration} << 32;
  w[1] = static_cast<std::uint32_t>(c.result) | std::uint64_t{static_cast<std::uint32_t>(c.fd)} << 32;
  w[2] = c.path | std::uint64_t{c.arg} << 32;
}

// The compact form of `r` given the chain's `base` (see above); false when a value does not
// fit (the writer then writes the wide IoRecord). decode_io_compact(encode) == r, pad aside.
inline bool encode_io_compact(const IoRecord& r, std::int64_t base, IoCompactRecord& out,
                              std::uint16_t& flags) {
  constexpr std::int64_t kU32 = 0xffffffffll;
  const auto fits_i32 = [](std::int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; };
  std::int64_t delta = 0;
  if (__builtin_sub_overflow(r.start_ns, base, &delta) || !fits_i32(delta)) return false;
  std::int64_t duration = 0;
  if (__builtin_sub_overflow(r.end_ns, r.start_ns, &duration) || duration < 0 || duration > kU32)
    return false;
  const auto func = static_cast<std::uint32_t>(r.func);
  if (func > kIoFuncMask || !fits_i32(r.result) || r.err < 0 ||
      static_cast<std::uint32_t>(r.err) > kIoMaxCompactErr)
    return false;
  std::uint32_t f = func | (static_cast<std::uint32_t>(r.err) << kIoErrShift);
  std::int64_t arg = 0;
  if (r.offset != -1) {
    if (r.offset < 0 || r.offset > kU32) return false;
    f |= kIoOffsetInArg;
    arg = r.offset;
  }
  if (r.bytes == r.result && r.bytes != -1) {
    f |= kIoBytesIsResult;
  } else if (r.bytes != -1) {
    if (r.offset != -1 || r.bytes < 0 || r.bytes > kU32) return false;
    f |= kIoBytesInArg;
    arg = r.bytes;
  }
  out.start_delta = static_cast<std::int32_t>(delta);
  out.duration = static_cast<std::uint32_t>(duration);
  out.result = static_cast<std::int32_t>(r.result);
  out.fd = r.fd;
  out.path = r.path;
  out.arg = static_cast<std::uint32_t>(arg);
  flags = static_cast<std::uint16_t>(f);
  return true;
}

inline IoRecord decode_io_compact(const IoCompactRecord& c, std::uint16_t flags, std::int64_t base) {
  IoRecord r{};
  // Unsigned arithmetic: a damaged base or delta wraps instead of overflowing.
  r.start_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(base) +
                                         static_cast<std::uint64_t>(std::int64_t{c.start_delta}));
  r.end_ns = static_cast<std::int64_t>(static_cast<std::uint64_t>(r.start_ns) + c.duration);
  r.result = c.result;
  r.fd = c.fd;
  r.path = c.path;
  r.err = static_cast<std::int32_t>(flags >> kIoErrShift);
  r.func = static_cast<IoFunc>(flags & kIoFuncMask);
  r.offset = (flags & kIoOffsetInArg) != 0 ? std::int64_t{c.arg} : -1;
  r.bytes = (flags & kIoBytesIsResult) != 0 ? r.result
            : (flags & kIoBytesInArg) != 0 ? std::int64_t{c.arg}
                                             : -1;
  return r;
}

// I/O timestamps from the TSC (format version 2, header flag kIoClockTsc): where the TSC is
// invariant and is the kernel's clocksource, the I/O hooks read it (rdtsc, ~10 ns) instead of
// CLOCK_MONOTONIC (~24 ns a read, two per call), and the file carries ClockSync pairs from
// which the reader maps ticks to CLOCK_MONOTONIC ns, piecewise linearly (extrapolating
// before the first and after the last pair with the nearest segment's rate). Pairs are
// written at file start and again at least 50 us later (so every file has a rate), then by the
// first I/O call past a deadline that doubles from 2^20 to 2^28 ticks (about 0.4 to 100 ms),
// and at exec and exit. Every other record's times stay CLOCK_MONOTONIC.
struct ClockSyncRecord {
  std::int64_t tsc;      // rdtsc
  std::int64_t mono_ns;  // CLOCK_MONOTONIC at the same instant (the middle of two reads around it,
                         // the tightest of a few tries: collector/preload/clock_pair.h)
};
static_assert(sizeof(ClockSyncRecord) == 16, "ClockSyncRecord: on-disk layout (a new size needs a new kFormatVersion)");

enum class RangeSource : std::uint8_t { Nvtx = 0, Python = 1, User = 2 };

struct RangeRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t name;      // string id
  std::uint32_t domain;    // string id (NVTX domain name; 0 = default domain)
  std::uint32_t category;  // NVTX category id, 0 none
  std::uint32_t color;     // ARGB, 0 none
  std::uint64_t payload;   // NVTX payload value (or NCCL payload summary), 0 none
  std::uint16_t depth;     // nesting depth on its thread at push time (push/pop ranges)
  RangeSource source;
  std::uint8_t flags;      // bit 0: start/end (not push/pop) range; bit 1: payload valid
  std::uint32_t pad;
};
static_assert(sizeof(RangeRecord) == 48, "RangeRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct MarkRecord {
  std::int64_t ts_ns;
  std::uint32_t name;
  std::uint32_t domain;
  std::uint32_t category;
  RangeSource source;
  std::uint8_t pad[3];
};
static_assert(sizeof(MarkRecord) == 24, "MarkRecord: on-disk layout (a new size needs a new kFormatVersion)");

enum class StepKind : std::uint8_t { Step = 0, BatchWait = 1, OptimizerStep = 2 };

struct StepRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::int64_t number;  // step number (BatchWait: the step it waits for)
  StepKind kind;
  std::uint8_t pad[7];
};
static_assert(sizeof(StepRecord) == 32, "StepRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct ForkRecord {
  std::int64_t ts_ns;
  std::int64_t child_pid;
};
static_assert(sizeof(ForkRecord) == 16, "ForkRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct ExecRecord {
  std::int64_t ts_ns;
  std::uint32_t path;  // string id of the program
  std::uint32_t pad;
};
static_assert(sizeof(ExecRecord) == 16, "ExecRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct ExitRecord {
  std::int64_t ts_ns;
  std::int32_t status;  // exit status, or 128 + signal for a fatal signal
  std::int32_t how;     // 0 exit(), 1 _exit()/_Exit(), 2 signal
};
static_assert(sizeof(ExitRecord) == 16, "ExitRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct DroppedRecord {
  std::uint64_t count;
  std::uint32_t reason;  // string id
  std::uint32_t pad;
};
static_assert(sizeof(DroppedRecord) == 16, "DroppedRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct CounterRecord {
  std::int64_t ts_ns;
  std::uint32_t name;  // string id
  std::uint32_t pad;
  double value;
};
static_assert(sizeof(CounterRecord) == 24, "CounterRecord: on-disk layout (a new size needs a new kFormatVersion)");

// Python stack sampling (`record --trace pystack`, docs/collector.md): the Python integration's
// sampler thread interns each (code object, line) once per process as a PyFrame record and writes
// one PySample per sampled thread and tick. Frame ids are per process file, like string ids,
// and start at 1. The record header's tid is the sampler's; the sampled thread is `tid`.
struct PyFrameRecord {
  std::uint32_t id;
  std::uint32_t function;  // string id: the code object's name (co_qualname where Python has it)
  std::uint32_t file;      // string id: co_filename
  std::int32_t line;       // the line executing in that frame (-1: unknown)
};
static_assert(sizeof(PyFrameRecord) == 16, "PyFrameRecord: on-disk layout (a new size needs a new kFormatVersion)");
// Followed by `depth` 32-bit frame ids, innermost (the executing frame) first.
struct PySampleRecord {
  std::int64_t ts_ns;  // CLOCK_MONOTONIC when the sampler read the stacks
  std::uint32_t tid;   // kernel thread id of the sampled thread
  std::uint32_t depth;
};
static_assert(sizeof(PySampleRecord) == 16, "PySampleRecord: on-disk layout (a new size needs a new kFormatVersion)");
inline constexpr std::uint32_t kMaxPyStackDepth = 1024;  // deeper stacks keep their innermost frames

// ---- GPU capture (types 100..199) ----
// Times are CLOCK_MONOTONIC ns like every other record, except where a field says "GPU
// globaltimer". CUPTI enum values (copy kind, memory kind, sync type, overhead kind) are kept
// as CUPTI numbers (cupti_activity.h, CUDA 13.0); the merger maps them to the trace model.

enum class GpuComponent : std::uint8_t { Cupti = 0, NcclProfiler = 1 };
enum class GpuStatus : std::uint8_t {
  Active = 0,            // recording GPU activity
  NoDevice = 1,          // CUDA was initialised but reports no device
  CuptiUnavailable = 2,  // libcupti could not be loaded or lacks a needed function
  CuptiInUse = 3,        // another profiler owns CUPTI (CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
  CuptiError = 4,        // another CUPTI call failed (error code in `error`)
  TakenOver = 5,         // another profiler re-registered CUPTI's callbacks mid-run (e.g. torch.profiler)
  Flushed = 6,           // the final flush ran, at exit or at the hand-over to another profiler
                         // (records up to `ts_ns` are complete)
};

struct GpuStatusRecord {
  std::int64_t ts_ns;
  GpuComponent component;
  GpuStatus status;
  std::uint16_t pad0;
  std::int32_t error;         // the failing library's error code, 0 none
  std::int32_t device_count;  // -1 unknown
  std::uint32_t message;      // string id: one line for the user
};
static_assert(sizeof(GpuStatusRecord) == 24, "GpuStatusRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct NcclCommRecord {
  std::uint64_t comm_id;  // NCCL commHash: the same on every rank of the communicator
  std::int32_t rank;
  std::int32_t nranks;
  std::int32_t nnodes;
  std::uint32_t name;     // string id of the user-given communicator name, 0 none
};
static_assert(sizeof(NcclCommRecord) == 24, "NcclCommRecord: on-disk layout (a new size needs a new kFormatVersion)");

enum class NcclOpKind : std::uint8_t { Collective = 0, P2p = 1 };
enum class NcclSide : std::uint8_t { Host = 0, Device = 1 };

// Host side: start/end = the enqueue (NCCL's startEvent/stopEvent), CLOCK_MONOTONIC.
// Device side: start/end = GPU globaltimer ns of the first channel start and the last channel
// stop; `observed_ns` = CLOCK_MONOTONIC when the plugin saw that last stop (the merger maps
// the GPU clock to the host clock with these pairs).
struct NcclCollRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::int64_t observed_ns;  // device side only, else 0
  std::uint64_t comm_id;
  std::int64_t seq;          // NCCL's per-communicator sequence number, -1 none (p2p)
  std::uint64_t count;       // elements (per rank, as NCCL counts)
  std::uint32_t func;        // string ids: "AllReduce", "Send", ...
  std::uint32_t dtype;       // "ncclFloat32", ...
  std::uint32_t algo;        // "RING", "TREE", ... (0 for p2p)
  std::uint32_t proto;       // "LL", "LL128", "SIMPLE" (0 for p2p)
  std::int32_t root;         // -1 none
  std::int32_t peer;         // -1 none
  std::int32_t rank;
  std::uint8_t channels;
  std::uint8_t warps;
  NcclSide side;
  NcclOpKind kind;
};
static_assert(sizeof(NcclCollRecord) == 80);

struct GpuDeviceRecord {
  std::int32_t index;  // CUDA device ordinal (CUPTI deviceId)
  std::int32_t sm_count;
  std::int64_t total_memory;
  std::int32_t compute_major;
  std::int32_t compute_minor;
  std::uint32_t name;  // string ids
  std::uint32_t uuid;
};
static_assert(sizeof(GpuDeviceRecord) == 32, "GpuDeviceRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuKernelRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t device, context, stream, correlation;
  std::uint32_t name;  // string id (mangled or demangled, as CUPTI reports it)
  std::uint32_t grid_x, grid_y, grid_z, block_x, block_y, block_z;
  std::uint32_t registers, shared_static, shared_dynamic;
  std::uint32_t graph_id;  // 0: not launched from a graph
  std::uint32_t pad;
};
static_assert(sizeof(GpuKernelRecord) == 80, "GpuKernelRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuMemcpyRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint64_t bytes;
  std::uint32_t device, context, stream, correlation;
  std::uint8_t copy_kind;  // CUpti_ActivityMemcpyKind
  std::uint8_t src_kind;   // CUpti_ActivityMemoryKind
  std::uint8_t dst_kind;
  std::uint8_t flags;      // CUpti_ActivityFlag bits (1 = async)
  std::uint32_t graph_id;
};
static_assert(sizeof(GpuMemcpyRecord) == 48, "GpuMemcpyRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuMemsetRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint64_t bytes;
  std::uint32_t device, context, stream, correlation;
  std::uint32_t value;
  std::uint8_t mem_kind;  // CUpti_ActivityMemoryKind
  std::uint8_t flags;     // 1 = async
  std::uint16_t pad0;
  std::uint32_t graph_id;
  std::uint32_t pad;
};
static_assert(sizeof(GpuMemsetRecord) == 56, "GpuMemsetRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuSyncRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t context, stream, correlation;
  std::uint32_t type;   // CUpti_ActivitySynchronizationType (1 event, 2 stream wait, 3 stream, 4 context)
  std::uint32_t event;  // CUDA event id; 0xffffffff none
  std::uint32_t pad;
};
static_assert(sizeof(GpuSyncRecord) == 40, "GpuSyncRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuApiRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t correlation;
  std::uint32_t cbid;
  std::uint32_t name;  // string id, e.g. "cudaLaunchKernel"
  std::int32_t return_value;
  std::uint32_t tid;   // system thread id of the calling thread
  std::uint8_t kind;   // 0 runtime, 1 driver
  std::uint8_t pad[3];
};
static_assert(sizeof(GpuApiRecord) == 40, "GpuApiRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuGraphLaunchRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t device, context, stream, correlation;
  std::uint32_t graph_id;
  std::uint32_t pad;
};
static_assert(sizeof(GpuGraphLaunchRecord) == 40, "GpuGraphLaunchRecord: on-disk layout (a new size needs a new kFormatVersion)");

struct GpuOverheadRecord {
  std::int64_t start_ns;
  std::int64_t end_ns;
  std::uint32_t kind;         // CUpti_ActivityOverheadKind
  std::uint32_t object_kind;  // CUpti_ActivityObjectKind (1 process, 2 thread, 3 device, ...)
  std::uint32_t object_id;    // thread id (object kind 2) or device id, else 0
  std::uint32_t correlation;
};
static_assert(sizeof(GpuOverheadRecord) == 32, "GpuOverheadRecord: on-disk layout (a new size needs a new kFormatVersion)");

// Where a CUDA event was recorded (CUPTI CUDA_EVENT, CudaEvent2): the stream whose work up to
// then the event captures, and the correlation id of the cudaEventRecord / cuEventRecord call.
// CUPTI gives it no host time: the merger places it at the start of that call. A stream wait
// (GpuSyncRecord type 2, stream = the waiting stream) on the same event id waits for the latest
// record before it.
struct GpuCudaEventRecord {
  std::uint32_t device, context, stream, correlation;
  std::uint32_t event;  // CUPTI's event id, the one GpuSyncRecord::event of a wait on it names
  std::uint32_t pad;
};
static_assert(sizeof(GpuCudaEventRecord) == 24, "GpuCudaEventRecord: on-disk layout (a new size needs a new kFormatVersion)");

// One allocation or release of GPU memory by the CUDA driver (cudaMalloc, cudaFree, memory
// pools): what the job's allocators hold, not what they hand out.
enum class GpuMemoryOp : std::uint8_t { Allocate = 1, Release = 2 };  // CUpti_ActivityMemoryOperationType
struct GpuMemoryRecord {
  std::int64_t ts_ns;
  std::uint64_t address;
  std::uint64_t bytes;
  std::uint32_t device;       // CUDA device ordinal (CUPTI deviceId)
  std::uint32_t correlation;  // the API call that did it, 0 none
  GpuMemoryOp op;
  std::uint8_t mem_kind;      // CUpti_ActivityMemoryKind (3 = device)
  std::uint16_t pad0;
  std::uint32_t pad;
};
static_assert(sizeof(GpuMemoryRecord) == 40, "GpuMemoryRecord: on-disk layout (a new size needs a new kFormatVersion)");

// 32-bit checksum, 8 bytes per step (a multiply and a shift per word: ~10 ns for a 64-byte
// record, where a byte-wise hash cost ~60 ns on the I/O hot path); remaining bytes one at a
// time. It detects torn and zero-filled records, not adversaries. Calls chain through `h`.
inline constexpr std::uint64_t kChecksumPrime = 0x100000001b3ull;
// One 8-byte step of checksum32 (the state is 64 bits until checksum_final).
inline constexpr std::uint64_t checksum_word(std::uint64_t x, std::uint64_t w) {
  x = (x ^ w) * kChecksumPrime;
  return x ^ (x >> 32);
}
inline constexpr std::uint32_t checksum_final(std::uint64_t x) {
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}
inline std::uint32_t checksum32(const void* data, std::size_t n, std::uint32_t h = 2166136261u) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t x = h;
  for (; n >= 8; n -= 8, p += 8) {
    std::uint64_t w;
    __builtin_memcpy(&w, p, 8);  // little-endian hosts only (x86-64, aarch64)
    x = checksum_word(x, w);
  }
  for (; n > 0; --n, ++p) x = (x ^ *p) * kChecksumPrime;
  return checksum_final(x);
}

// Checksum of a record as the writer computes it: type, flags and tid, then the payload.
// Version 1 chained the three header fields one call each (8 byte-wise steps); version 2 takes
// them as one little-endian 8-byte word (type | flags << 16 | tid << 32), one step.
inline std::uint32_t record_checksum_seed(std::uint16_t type, std::uint16_t flags, std::uint32_t tid) {
  const std::uint64_t w = type | (std::uint64_t{flags} << 16) | (std::uint64_t{tid} << 32);
  return checksum32(&w, sizeof w);
}
inline std::uint32_t record_checksum(const RecordHeader& h, const void* payload, std::size_t n,
                                     std::uint32_t version = kFormatVersion) {
  std::uint32_t c;
  if (version == 1) {
    c = checksum32(&h.type, sizeof h.type);
    c = checksum32(&h.flags, sizeof h.flags, c);
    c = checksum32(&h.tid, sizeof h.tid, c);
  } else {
    c = record_checksum_seed(h.type, h.flags, h.tid);
  }
  return checksum32(payload, n, c);
}

inline constexpr std::uint32_t padded_record_size(std::size_t payload) {
  return static_cast<std::uint32_t>((sizeof(RecordHeader) + payload + 7) & ~std::size_t{7});
}

}  // namespace tt::collector
