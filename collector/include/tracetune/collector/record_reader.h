// Reading one raw record file (.ttr, see record_format.h) into plain decoded records.
//
// Place in the data flow: collector (in the job) ──writes──▶ proc-<pid>-<ns>.ttr ──this──▶
// RawProcess ──merge.cpp──▶ Trace. The reader knows the byte layout and the crash rules of
// the format and nothing about the trace model; the merger knows the model and nothing about
// bytes. Times stay on the writer's CLOCK_MONOTONIC here: host alignment is the merger's job.
//
// Damage is expected, not exceptional (a SIGKILLed job, a lost page, a full disk): only a
// file that is not a record file at all (bad header) is an error. Inside a valid file every
// problem is counted and reading goes on with the next chunk, so nothing committed before a
// torn record is lost.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tracetune/collector/record_format.h"
#include "tracetune/trace/result.h"

namespace tt::collector {

// The FileHeader's fields as read from disk (host NUL-terminated into a std::string).
struct RecordFileHeader {
  std::uint32_t version = 0;
  std::uint32_t chunk_size = 0;
  std::uint32_t flags = 0;  // FileFlags
  std::int64_t pid = 0;
  std::int64_t ppid = 0;
  std::int64_t start_mono_ns = 0;
  std::int64_t start_real_ns = 0;
  std::int64_t end_mono_ns = 0;
  std::int32_t exit_status = -1;
  std::int32_t rank = -1;
  std::int32_t local_rank = -1;
  std::int32_t world_size = -1;
  std::uint32_t chunks_reserved = 0;
  std::string host;
  std::uint64_t file_size = 0;  // bytes on disk when read
  // kDropsInHeader: drops not written as Dropped records (a SIGKILL, or threads that ran on
  // after the exit handler), by DropReason; stop_reason is the text for kDropStopped.
  std::uint64_t dropped[kDropReasons] = {};
  std::string stop_reason;
  // Execs of statically linked programs from this process or its vfork children, and the
  // first such program (FileHeader::static_execs): their I/O is not in the file.
  std::uint32_t static_execs = 0;
  std::string static_program;
  // record --ring Nsteps: Step records written and the start of the N-th last (FileHeader::ring_cut_ns).
  std::int64_t ring_steps_written = 0;
  std::int64_t ring_cut_ns = 0;

  bool has(FileFlags f) const { return (flags & f) != 0; }
};

// One decoded record and the kernel thread that wrote it.
template <class T>
struct ThreadRecord {
  std::uint32_t tid = 0;
  T rec{};
};

struct RawProcess {
  std::filesystem::path path;
  RecordFileHeader header;

  // String records: per-file id -> text. Id 0 is the empty string and never stored.
  std::unordered_map<std::uint32_t, std::string> strings;
  std::optional<ProcessInfoRecord> process_info;  // the last one in file order

  std::vector<ThreadRecord<ThreadNameRecord>> thread_names;
  std::vector<ThreadRecord<IoRecord>> io;
  std::vector<ThreadRecord<RangeRecord>> ranges;
  std::vector<ThreadRecord<MarkRecord>> marks;
  std::vector<ThreadRecord<StepRecord>> steps;
  std::vector<ThreadRecord<ForkRecord>> forks;
  std::vector<ThreadRecord<ExecRecord>> execs;
  std::vector<ThreadRecord<ExitRecord>> exits;
  std::vector<ThreadRecord<DroppedRecord>> dropped;
  std::vector<ThreadRecord<CounterRecord>> counters;
  // Python stack sampling: frame definitions (the first of an id wins) and samples, each
  // sample's frame ids (innermost first) at py_sample_frames[first, first + depth).
  std::vector<PyFrameRecord> py_frames;
  struct PySample {
    std::int64_t ts_ns = 0;
    std::uint32_t tid = 0;
    std::uint32_t first = 0, depth = 0;
  };
  std::vector<PySample> py_samples;
  std::vector<std::uint32_t> py_sample_frames;
  // (TSC, CLOCK_MONOTONIC) pairs of a kIoClockTsc file, in file order. `io` is already mapped
  // to CLOCK_MONOTONIC ns with them when read_record_file returns.
  std::vector<ClockSyncRecord> clock_syncs;
  // GPU capture (record types 100..199)
  std::vector<ThreadRecord<GpuStatusRecord>> gpu_status;
  std::vector<ThreadRecord<NcclCommRecord>> nccl_comms;
  std::vector<ThreadRecord<NcclCollRecord>> nccl_colls;
  std::vector<ThreadRecord<GpuDeviceRecord>> gpu_devices;
  std::vector<ThreadRecord<GpuKernelRecord>> gpu_kernels;
  std::vector<ThreadRecord<GpuMemcpyRecord>> gpu_memcpys;
  std::vector<ThreadRecord<GpuMemsetRecord>> gpu_memsets;
  std::vector<ThreadRecord<GpuSyncRecord>> gpu_syncs;
  std::vector<ThreadRecord<GpuApiRecord>> gpu_apis;
  std::vector<ThreadRecord<GpuGraphLaunchRecord>> gpu_graph_launches;
  std::vector<ThreadRecord<GpuOverheadRecord>> gpu_overheads;
  std::vector<ThreadRecord<GpuMemoryRecord>> gpu_memory;
  std::vector<ThreadRecord<GpuCudaEventRecord>> gpu_cuda_events;

  std::uint64_t records = 0;            // records with a valid frame and checksum
  std::uint64_t torn_records = 0;       // bad framing or checksum: the rest of that chunk is unread
  std::uint64_t unknown_records = 0;    // valid records of a type this reader does not know
  std::uint64_t malformed_records = 0;  // known type, payload too short for it (skipped)
  std::uint64_t unmapped_io = 0;        // I/O records of a kIoClockTsc file without a usable
                                        // pair of ClockSync records (dropped: no time)
  std::uint32_t chunks = 0;             // chunks present on disk (the last one may be partial)
  bool partial_chunk = false;           // the file ends inside a chunk
  bool short_file = false;              // fewer bytes on disk than chunks_reserved promises
  std::uint32_t chunks_read = 0;        // chunks whose bytes were read (the others are holes)
  // Why reading stopped before the end the file had when it was opened (it shrank while it was
  // read: a leftover process truncated it; a read error); empty when it was read to the end.
  std::string cut_short;
  // Latest time in any record (end of spans), CLOCK_MONOTONIC ns; 0 when there is none.
  // For a process that died without an exit record this is the best estimate of its end.
  std::int64_t last_ts_ns = 0;

  // The text of a string id; nullptr when the file has no String record for it (0 -> "").
  const std::string* find_string(std::uint32_t id) const;
};

// Reads and validates only the header (one small read): used to align clocks across hosts
// before any record is decoded. Errors name the file: "PATH: not a tracetune record file ...".
Result<RecordFileHeader> read_record_header(const std::filesystem::path& path);

// How the reader gets at a file's bytes: pread(2) and lseek(2)'s SEEK_DATA/SEEK_HOLE. Tests
// pass a subclass that injects faults at the Nth call (a file truncated while it is read,
// short reads, I/O errors: tests/unit/record_faults_test.cpp).
class FileReads {
 public:
  virtual ~FileReads() = default;
  // pread(2): bytes read (fewer than n at the end of the file), -1 with errno set.
  virtual long read_at(int fd, void* buf, std::size_t n, std::uint64_t offset);
  // lseek(fd, offset, SEEK_DATA or SEEK_HOLE): -1 with errno (ENXIO: no data at or past offset).
  virtual std::int64_t seek(int fd, std::uint64_t offset, int whence);
};

// Reads the whole file with pread, chunk by chunk; chunks that are holes are skipped unread.
// The file may shrink while it is read (cut_short says so): what was read is kept.
Result<RawProcess> read_record_file(const std::filesystem::path& path);
Result<RawProcess> read_record_file(const std::filesystem::path& path, FileReads& reads);

// Maps TSC ticks to CLOCK_MONOTONIC ns through ClockSync pairs (record_format.h): piecewise
// linear between pairs, extrapolated with the nearest segment's rate outside them. Pairs closer
// than 10 us to the previous kept one, or not later in both clocks, are skipped.
class TscMap {
 public:
  explicit TscMap(std::vector<ClockSyncRecord> pairs);
  bool usable() const { return knots_.size() >= 2; }  // at least one segment (a rate)
  std::int64_t to_ns(std::int64_t tsc) const;        // requires usable()

 private:
  std::vector<ClockSyncRecord> knots_;
};

// The libc function an I/O record stands for ("openat", "pread64", "fread", ...);
// "unknown" for a value this build does not know.
std::string_view io_func_name(IoFunc f);

}  // namespace tt::collector
