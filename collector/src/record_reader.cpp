// Raw record file (.ttr) -> RawProcess: the byte-level half of the merger.
//
// The file is mapped read-only and walked once: header, then every chunk present on disk,
// record by record. The rules follow the writer's commit protocol (record_format.h):
//  - `size` is stored last, so size == 0 means "nothing more was committed in this chunk";
//  - a frame that cannot be right (size not a multiple of 8, below the header size, above
//    kMaxRecordSize, or past the end of the chunk or of the file) or a checksum mismatch is a
//    torn record: the rest of that chunk is not trusted, the next chunk is read normally;
//  - a valid record of an unknown type is skipped (a newer collector); its size still tells
//    where the next record starts;
//  - versions 1 and 2 are read (record_format.h): they differ in the checksum's header prefix
//    and in version 2's IoCompact records, whose start times chain within a chunk;
//  - the I/O times of a version-2 file with kIoClockTsc are TSC ticks: they are mapped to
//    CLOCK_MONOTONIC after the walk, once every ClockSync pair of the file is known.
// Chunks are walked by what is on disk, not by `chunks_reserved`: the header counter and the
// file length are updated at different moments, and a chunk that was never written reads as
// zeros. Such chunks are holes in the (sparse) file: SEEK_DATA skips them unread, so a file
// that claims 50 GB but holds a few chunks costs a few chunks. Inside a chunk only the data
// before its first hole is read: a hole reads as zeros, and a zero size ends the chunk.
// The file is read with pread into one chunk-sized buffer, not mapped: a leftover process of
// the job may still truncate its file during the merge, and a mapping would turn that into a
// SIGBUS of the whole `record`. A read that comes back short ends the file (cut_short).
#include "tracetune/collector/record_reader.h"

#include "tracetune/trace/strings.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace tt::collector {
namespace fs = std::filesystem;

namespace {

std::string errno_text(int e) {
  return std::error_code(e, std::generic_category()).message();
}

Error file_error(const fs::path& path, std::string_view what) {
  return make_error(path.string() + ": " + std::string(what));
}

// An open file descriptor, closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Opens a regular file for reading and reports its size.
Result<int> open_regular(const fs::path& path, std::uint64_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return file_error(path, "cannot open: " + errno_text(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return file_error(path, "cannot stat: " + errno_text(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return file_error(path, "not a regular file");
  }
  size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// Validates the fixed part of the header; every message names the file and what is wrong.
Result<RecordFileHeader> decode_header(const fs::path& path, const unsigned char* bytes,
                                       std::uint64_t file_size) {
  if (file_size < sizeof(FileHeader))
    return file_error(path, "not a tracetune record file (" + std::to_string(file_size) +
                                " bytes, shorter than the " + std::to_string(kHeaderSize) + "-byte header)");
  FileHeader h;
  std::memcpy(&h, bytes, sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return file_error(path, "not a tracetune record file (bad magic)");
  if (h.version < kOldestFormatVersion || h.version > kFormatVersion)
    return file_error(path, "record format version " + std::to_string(h.version) +
                                " is not supported (this tracetune reads versions " +
                                std::to_string(kOldestFormatVersion) + " to " +
                                std::to_string(kFormatVersion) + ")");
  if (h.header_size != kHeaderSize)
    return file_error(path, "bad record file header: header_size " + std::to_string(h.header_size) +
                                " (expected " + std::to_string(kHeaderSize) + ")");
  // The writer uses kChunkSize, but nothing in the reader depends on it: accept any
  // page-multiple size that can hold a record frame, refuse values no writer would produce.
  constexpr std::uint32_t kMaxChunk = 256u << 20;
  if (h.chunk_size < 4096 || h.chunk_size % 4096 != 0 || h.chunk_size > kMaxChunk)
    return file_error(path, "bad record file header: chunk_size " + std::to_string(h.chunk_size));

  RecordFileHeader out;
  out.version = h.version;
  out.chunk_size = h.chunk_size;
  out.flags = h.flags;
  out.pid = h.pid;
  out.ppid = h.ppid;
  out.start_mono_ns = h.start_mono_ns;
  out.start_real_ns = h.start_real_ns;
  out.end_mono_ns = h.end_mono_ns;
  out.exit_status = h.exit_status;
  out.rank = h.rank;
  out.local_rank = h.local_rank;
  out.world_size = h.world_size;
  out.chunks_reserved = h.chunks_reserved;
  if (out.has(kDropsInHeader)) {
    static_assert(kDropReasons <= std::size(FileHeader{}.dropped));
    std::copy_n(h.dropped, kDropReasons, out.dropped);
    out.stop_reason.assign(h.stop_reason, strnlen(h.stop_reason, sizeof h.stop_reason));
  }
  out.static_execs = h.static_execs;
  out.static_program = trace::valid_utf8(std::string_view(h.static_program, ::strnlen(h.static_program, sizeof h.static_program)));
  out.ring_steps_written = h.ring_steps_written;
  out.ring_cut_ns = h.ring_cut_ns;
  // NUL-terminated by the writer, but a damaged header must not make us read past the field.
  out.host = trace::valid_utf8(std::string_view(h.host, ::strnlen(h.host, sizeof h.host)));
  out.file_size = file_size;
  return out;
}

// The writer's checksum covers the payload it was given (record_format.h), which the frame
// pads to 8 bytes; the reader knows only the padded length, so it tries the (at most 8)
// unpadded lengths that pad to it. Fixed-size records match on the first try.
bool checksum_ok(const RecordHeader& h, const unsigned char* payload, std::uint32_t padded_len,
                 std::uint32_t version) {
  for (std::uint32_t n = padded_len, tries = 0; tries < 8 && n <= padded_len; --n, ++tries) {
    if (record_checksum(h, payload, n, version) == h.checksum) return true;
    if (n == 0) break;
  }
  return false;
}

// True when the file's I/O records carry TSC ticks (a flag only version 2 defines).
bool io_in_ticks(const RecordFileHeader& h) { return h.version >= 2 && h.has(kIoClockTsc); }

// Decodes the records of one file into a RawProcess.
class FileDecoder {
 public:
  explicit FileDecoder(RawProcess& out) : p_(out), version_(out.header.version) {}

  // Walks one chunk of `len` bytes (len < chunk_size only for the last, cut chunk).
  void walk_chunk(const unsigned char* chunk, std::size_t len) {
    std::size_t off = 0;
    io_base_ = 0;  // the IoCompact chain starts again in every chunk
    while (len - off >= sizeof(RecordHeader)) {
      RecordHeader h;
      std::memcpy(&h, chunk + off, sizeof h);
      if (h.size == 0) return;  // nothing more committed in this chunk
      if (h.size % 8 != 0 || h.size < sizeof(RecordHeader) || h.size > kMaxRecordSize || h.size > len - off) {
        ++p_.torn_records;
        return;
      }
      const unsigned char* payload = chunk + off + sizeof h;
      const std::uint32_t n = h.size - static_cast<std::uint32_t>(sizeof h);
      if (!checksum_ok(h, payload, n, version_)) {
        ++p_.torn_records;
        return;
      }
      ++p_.records;
      decode(h, payload, n);
      off += h.size;
    }
  }

 private:
  template <class T>
  bool take(const unsigned char* payload, std::uint32_t n, T& out) {
    // Larger is fine (a newer writer may append fields); shorter cannot be decoded.
    if (n < sizeof(T)) {
      ++p_.malformed_records;
      return false;
    }
    std::memcpy(&out, payload, sizeof(T));
    return true;
  }

  template <class T>
  bool push(std::vector<ThreadRecord<T>>& v, const RecordHeader& h, const unsigned char* payload,
            std::uint32_t n) {
    T rec;
    if (!take(payload, n, rec)) return false;
    v.push_back({h.tid, rec});
    return true;
  }

  void saw_time(std::int64_t t) { p_.last_ts_ns = std::max(p_.last_ts_ns, t); }
  void saw_io(const IoRecord& r) {
    io_base_ = r.start_ns;
    // TSC ticks are not ns: map_io_times() accounts for them once the pairs are known.
    if (!io_in_ticks(p_.header)) saw_time(std::max(r.start_ns, r.end_ns));
  }

  // The host event records that carry a thread and a time (I/O, ranges, marks, steps, process
  // events, counters) and the thread names and drop counts: true when `h` is one of them.
  bool decode_event(const RecordHeader& h, const unsigned char* payload, std::uint32_t n) {
    switch (static_cast<RecordType>(h.type)) {
      case RecordType::ThreadName:
        push(p_.thread_names, h, payload, n);
        return true;
      case RecordType::Io:
        if (push(p_.io, h, payload, n)) saw_io(p_.io.back().rec);
        return true;
      case RecordType::Range:
        if (push(p_.ranges, h, payload, n))
          saw_time(std::max(p_.ranges.back().rec.start_ns, p_.ranges.back().rec.end_ns));
        return true;
      case RecordType::Mark:
        if (push(p_.marks, h, payload, n)) saw_time(p_.marks.back().rec.ts_ns);
        return true;
      case RecordType::Step:
        if (push(p_.steps, h, payload, n))
          saw_time(std::max(p_.steps.back().rec.start_ns, p_.steps.back().rec.end_ns));
        return true;
      case RecordType::Fork:
        if (push(p_.forks, h, payload, n)) saw_time(p_.forks.back().rec.ts_ns);
        return true;
      case RecordType::Exec:
        if (push(p_.execs, h, payload, n)) saw_time(p_.execs.back().rec.ts_ns);
        return true;
      case RecordType::Exit:
        if (push(p_.exits, h, payload, n)) saw_time(p_.exits.back().rec.ts_ns);
        return true;
      case RecordType::Dropped:
        push(p_.dropped, h, payload, n);
        return true;
      case RecordType::Counter:
        if (push(p_.counters, h, payload, n)) saw_time(p_.counters.back().rec.ts_ns);
        return true;
      default:
        return false;
    }
  }

  void decode(const RecordHeader& h, const unsigned char* payload, std::uint32_t n) {
    if (h.type >= kFirstGpuRecordType) {
      if (!decode_gpu(h, payload, n)) ++p_.unknown_records;
      return;
    }
    if (decode_event(h, payload, n)) return;
    switch (static_cast<RecordType>(h.type)) {
      case RecordType::String: {
        StringRecord s;
        if (!take(payload, n, s)) return;
        if (s.length > n - sizeof s) {
          ++p_.malformed_records;
          return;
        }
        // First definition wins: ids are assigned once per file by the writer.
        if (s.id != 0)
          p_.strings.try_emplace(s.id, trace::valid_utf8(std::string_view(reinterpret_cast<const char*>(payload + sizeof s), s.length)));
        return;
      }
      case RecordType::ProcessInfo: {
        ProcessInfoRecord r;
        if (take(payload, n, r)) p_.process_info = r;
        return;
      }
      case RecordType::IoCompact: {
        IoCompactRecord c;
        if (version_ < 2) break;  // not a type of version 1: unknown
        if (!take(payload, n, c)) return;
        p_.io.push_back({h.tid, decode_io_compact(c, h.flags, io_base_)});
        saw_io(p_.io.back().rec);
        return;
      }
      case RecordType::ClockSync: {
        ClockSyncRecord c;
        if (version_ < 2) break;  // not a type of version 1: unknown
        if (take(payload, n, c)) p_.clock_syncs.push_back(c);
        return;
      }
      case RecordType::PyFrame: {
        PyFrameRecord f;
        if (take(payload, n, f)) p_.py_frames.push_back(f);
        return;
      }
      case RecordType::PySample:
        decode_py_sample(payload, n);
        return;
      default:  // GPU types are decode_gpu()'s
        break;
    }
    ++p_.unknown_records;
  }

  // A PySample and its frame ids; a depth the payload cannot hold is malformed.
  void decode_py_sample(const unsigned char* payload, std::uint32_t n) {
    PySampleRecord r;
    if (!take(payload, n, r)) return;
    if (r.depth > kMaxPyStackDepth || r.depth > (n - sizeof r) / sizeof(std::uint32_t)) {
      ++p_.malformed_records;
      return;
    }
    const auto first = static_cast<std::uint32_t>(p_.py_sample_frames.size());
    if (r.depth > 0) {  // an empty vector's data() may be null, which memcpy must not get even for 0 bytes
      p_.py_sample_frames.resize(first + r.depth);
      std::memcpy(p_.py_sample_frames.data() + first, payload + sizeof r, r.depth * sizeof(std::uint32_t));
    }
    p_.py_samples.push_back({r.ts_ns, r.tid, first, r.depth});
    saw_time(r.ts_ns);
  }

  // GPU records (false: a type this reader does not know). Only host-clock times advance
  // last_ts_ns: NCCL's device-side times are on the GPU's globaltimer (its observed_ns is on ours).
  bool decode_gpu(const RecordHeader& h, const unsigned char* payload, std::uint32_t n) {
    switch (static_cast<RecordType>(h.type)) {
      case RecordType::GpuStatus:
        if (push(p_.gpu_status, h, payload, n)) saw_time(p_.gpu_status.back().rec.ts_ns);
        return true;
      case RecordType::NcclComm:
        push(p_.nccl_comms, h, payload, n);
        return true;
      case RecordType::NcclColl:
        if (push(p_.nccl_colls, h, payload, n)) {
          const auto& r = p_.nccl_colls.back().rec;
          saw_time(r.side == NcclSide::Host ? r.end_ns : r.observed_ns);
        }
        return true;
      case RecordType::GpuDevice:
        push(p_.gpu_devices, h, payload, n);
        return true;
      case RecordType::GpuKernel:
        if (push(p_.gpu_kernels, h, payload, n)) saw_time(p_.gpu_kernels.back().rec.end_ns);
        return true;
      case RecordType::GpuMemcpy:
        if (push(p_.gpu_memcpys, h, payload, n)) saw_time(p_.gpu_memcpys.back().rec.end_ns);
        return true;
      case RecordType::GpuMemset:
        if (push(p_.gpu_memsets, h, payload, n)) saw_time(p_.gpu_memsets.back().rec.end_ns);
        return true;
      case RecordType::GpuSync:
        if (push(p_.gpu_syncs, h, payload, n)) saw_time(p_.gpu_syncs.back().rec.end_ns);
        return true;
      case RecordType::GpuApi:
        if (push(p_.gpu_apis, h, payload, n)) saw_time(p_.gpu_apis.back().rec.end_ns);
        return true;
      case RecordType::GpuGraphLaunch:
        if (push(p_.gpu_graph_launches, h, payload, n)) saw_time(p_.gpu_graph_launches.back().rec.end_ns);
        return true;
      case RecordType::GpuOverhead:
        if (push(p_.gpu_overheads, h, payload, n)) saw_time(p_.gpu_overheads.back().rec.end_ns);
        return true;
      case RecordType::GpuMemory:
        if (push(p_.gpu_memory, h, payload, n)) saw_time(p_.gpu_memory.back().rec.ts_ns);
        return true;
      case RecordType::GpuCudaEvent:  // no time of its own
        push(p_.gpu_cuda_events, h, payload, n);
        return true;
      default:
        return false;
    }
  }

  RawProcess& p_;
  std::uint32_t version_;
  std::int64_t io_base_ = 0;  // start of the chunk's last I/O record (IoCompact chain)
};

// I/O records of a kIoClockTsc file: TSC ticks -> CLOCK_MONOTONIC ns (record_format.h).
void map_io_times(RawProcess& p) {
  if (!io_in_ticks(p.header)) return;
  const TscMap map(p.clock_syncs);
  if (!map.usable()) {
    p.unmapped_io += p.io.size();
    p.io.clear();
    return;
  }
  for (auto& io : p.io) {
    io.rec.start_ns = map.to_ns(io.rec.start_ns);
    io.rec.end_ns = map.to_ns(io.rec.end_ns);
    p.last_ts_ns = std::max({p.last_ts_ns, io.rec.start_ns, io.rec.end_ns});
  }
}

}  // namespace

TscMap::TscMap(std::vector<ClockSyncRecord> pairs) {
  std::sort(pairs.begin(), pairs.end(),
            [](const ClockSyncRecord& a, const ClockSyncRecord& b) { return a.tsc < b.tsc; });
  constexpr std::int64_t kMinSpanNs = 10'000;
  for (const ClockSyncRecord& c : pairs) {
    if (knots_.empty() ||
        (c.tsc > knots_.back().tsc && static_cast<__int128>(c.mono_ns) - knots_.back().mono_ns >= kMinSpanNs))
      knots_.push_back(c);
  }
}

std::int64_t TscMap::to_ns(std::int64_t tsc) const {
  // The segment holding tsc, or the first/last one for extrapolation.
  auto hi = std::upper_bound(knots_.begin(), knots_.end(), tsc,
                             [](std::int64_t t, const ClockSyncRecord& k) { return t < k.tsc; });
  if (hi == knots_.begin()) ++hi;
  if (hi == knots_.end()) --hi;
  const ClockSyncRecord& a = *(hi - 1);
  const ClockSyncRecord& b = *hi;
  // 128-bit arithmetic, each factor clamped below 2^62 so that damaged values cannot overflow
  // it; the result saturates to int64.
  constexpr __int128 kLim = __int128{1} << 62;
  const auto clamp = [](__int128 v, __int128 lo, __int128 hi_) { return v < lo ? lo : v > hi_ ? hi_ : v; };
  const __int128 dt = clamp(static_cast<__int128>(tsc) - a.tsc, -kLim, kLim);
  const __int128 dns = clamp(static_cast<__int128>(b.mono_ns) - a.mono_ns, 0, kLim);
  const __int128 span = static_cast<__int128>(b.tsc) - a.tsc;  // > 0 (constructor)
  const __int128 ns = a.mono_ns + dt * dns / span;
  return static_cast<std::int64_t>(clamp(ns, INT64_MIN, INT64_MAX));
}

const std::string* RawProcess::find_string(std::uint32_t id) const {
  static const std::string kEmpty;
  if (id == 0) return &kEmpty;
  const auto it = strings.find(id);
  return it == strings.end() ? nullptr : &it->second;
}

long FileReads::read_at(int fd, void* buf, std::size_t n, std::uint64_t offset) {
  return static_cast<long>(::pread(fd, buf, n, static_cast<off_t>(offset)));
}

std::int64_t FileReads::seek(int fd, std::uint64_t offset, int whence) {
  return ::lseek(fd, static_cast<off_t>(offset), whence);
}

namespace {

// Reads up to n bytes at offset, through short reads and EINTR; fewer than n at the end of
// the file (or where it now ends). -1 with errno on a read error.
long read_fully(FileReads& reads, int fd, unsigned char* buf, std::size_t n, std::uint64_t offset) {
  std::size_t got = 0;
  while (got < n) {
    const long r = reads.read_at(fd, buf + got, n - got, offset + got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<std::size_t>(r);
  }
  return static_cast<long>(got);
}

// The bytes of [off, end) worth reading: 0 when the range starts in a hole (nothing was
// committed there), else up to the first hole. Where the file system cannot tell (EINVAL,
// no SEEK_DATA), everything is data.
std::uint64_t data_prefix(FileReads& reads, int fd, std::uint64_t off, std::uint64_t end) {
  const std::int64_t data = reads.seek(fd, off, SEEK_DATA);
  if (data < 0) return errno == ENXIO ? 0 : end - off;
  if (static_cast<std::uint64_t>(data) != off) return 0;
  const std::int64_t hole = reads.seek(fd, off, SEEK_HOLE);
  if (hole < 0 || static_cast<std::uint64_t>(hole) <= off) return end - off;
  return std::min<std::uint64_t>(end, static_cast<std::uint64_t>(hole)) - off;
}

// The first chunk start at or after `off` that holds data (`size` when none does): lets the
// walk jump over a run of holes with one lseek instead of one per chunk.
std::uint64_t next_chunk_with_data(FileReads& reads, int fd, std::uint64_t off, std::uint64_t chunk,
                                   std::uint64_t size) {
  const std::int64_t data = reads.seek(fd, off, SEEK_DATA);
  if (data < 0) return errno == ENXIO ? size : off;
  const auto d = static_cast<std::uint64_t>(data);
  if (d <= off) return off;
  return kHeaderSize + (d - kHeaderSize) / chunk * chunk;  // the chunk holding d
}

// Walks every chunk of the file that holds data into `p`.
void read_chunks(FileReads& reads, int fd, std::uint64_t size, RawProcess& p) {
  const std::uint64_t chunk = p.header.chunk_size;
  std::vector<unsigned char> buf(static_cast<std::size_t>(std::min(chunk, size - kHeaderSize)));
  FileDecoder decoder(p);
  for (std::uint64_t off = kHeaderSize; off < size; off += chunk) {
    off = next_chunk_with_data(reads, fd, off, chunk, size);
    if (off >= size) break;
    const std::uint64_t want = data_prefix(reads, fd, off, std::min(size, off + chunk));
    if (want == 0) continue;
    const long got = read_fully(reads, fd, buf.data(), static_cast<std::size_t>(want), off);
    if (got < 0) {
      p.cut_short = "read error at byte " + std::to_string(off) + ": " + errno_text(errno);
      return;
    }
    ++p.chunks_read;
    decoder.walk_chunk(buf.data(), static_cast<std::size_t>(got));
    if (static_cast<std::uint64_t>(got) < want) return;  // it shrank: read_record_file says so
  }
}

}  // namespace

Result<RecordFileHeader> read_record_header(const fs::path& path) {
  std::uint64_t size = 0;
  auto fd = open_regular(path, size);
  if (!fd) return Error{fd.error()};
  const Fd guard(fd.value());
  FileReads reads;
  unsigned char buf[sizeof(FileHeader)] = {};
  const long got = read_fully(reads, guard.get(), buf, sizeof buf, 0);
  if (got < 0) return file_error(path, "cannot read: " + errno_text(errno));
  return decode_header(path, buf, static_cast<std::uint64_t>(got));
}

Result<RawProcess> read_record_file(const fs::path& path) {
  FileReads reads;
  return read_record_file(path, reads);
}

Result<RawProcess> read_record_file(const fs::path& path, FileReads& reads) {
  std::uint64_t size = 0;
  auto fd = open_regular(path, size);
  if (!fd) return Error{fd.error()};
  const Fd guard(fd.value());
  unsigned char head[sizeof(FileHeader)] = {};
  const long got = read_fully(reads, guard.get(), head, sizeof head, 0);
  if (got < 0) return file_error(path, "cannot read: " + errno_text(errno));
  auto header = decode_header(path, head, static_cast<std::uint64_t>(got));
  if (!header) return Error{header.error()};
  size = std::max<std::uint64_t>(size, static_cast<std::uint64_t>(got));  // it may have grown

  RawProcess p;
  p.path = path;
  p.header = std::move(header.value());
  p.header.file_size = size;
  const std::uint64_t chunk = p.header.chunk_size;
  const std::uint64_t body = size - kHeaderSize;
  p.chunks = static_cast<std::uint32_t>(std::min<std::uint64_t>((body + chunk - 1) / chunk, UINT32_MAX));
  p.partial_chunk = body % chunk != 0;
  p.short_file = body < static_cast<std::uint64_t>(p.header.chunks_reserved) * chunk;
  if (body > 0) read_chunks(reads, guard.get(), size, p);
  struct stat now {};
  if (p.cut_short.empty() && ::fstat(guard.get(), &now) == 0 && static_cast<std::uint64_t>(now.st_size) < size)
    p.cut_short = "the file shrank from " + std::to_string(size) + " to " + std::to_string(now.st_size) +
                  " bytes while it was read (a process of the job still running?)";
  map_io_times(p);
  return p;
}

std::string_view io_func_name(IoFunc f) {
  // Indexed by IoFunc, in declaration order; the static_assert keeps the two in step.
  static constexpr std::string_view kNames[] = {
      "open",       "open64", "openat",   "openat64", "creat",  "creat64", "__open_2", "__open64_2",
      "__openat_2", "read",   "pread",    "pread64",  "readv",  "preadv",  "preadv64", "preadv2",
      "write",      "pwrite", "pwrite64", "writev",   "close",  "lseek",   "lseek64",  "stat",
      "fstat",      "lstat",  "fstatat",  "statx",    "stat64", "fstat64", "lstat64",  "fstatat64",
      "mmap",       "mmap64", "fopen",    "fopen64",  "fread",  "fwrite",  "fclose",
  };
  static_assert(std::size(kNames) == static_cast<std::size_t>(IoFunc::Count));
  const auto i = static_cast<std::size_t>(f);
  return i < std::size(kNames) ? kNames[i] : std::string_view("unknown");
}

}  // namespace tt::collector
