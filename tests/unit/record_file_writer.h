// A test-only writer of raw record files (.ttr), following record_format.h byte for byte.
//
// The real writer (collector/preload/writer.cpp) runs inside a profiled process and is tested
// on real processes; the reader and the merger are tested here on files built exactly as
// needed, damage included: torn records, zero-filled tails, files cut inside a chunk.
// Records go into in-memory chunks; write() lays out header + chunks and can cut the file.
// Files are of the current kFormatVersion unless `header.version` is set before the first
// record (version 1: no IoCompact records, the version-1 checksum).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "temp_dir.h"
#include "tracetune/collector/record_format.h"

namespace tt::collector::testing {

// Where a record landed, to damage it afterwards.
struct RecordPos {
  std::size_t chunk = 0;
  std::size_t offset = 0;  // of the RecordHeader inside the chunk
  std::uint32_t size = 0;
};

class RecordFileWriter {
 public:
  explicit RecordFileWriter(std::int64_t pid, std::string_view host = "node-a",
                            std::uint32_t chunk_size = kChunkSize) {
    std::memset(&header, 0, sizeof header);
    std::memcpy(header.magic, kMagic, sizeof kMagic);
    header.version = kFormatVersion;
    header.header_size = kHeaderSize;
    header.chunk_size = chunk_size;
    header.pid = pid;
    header.ppid = 1;
    header.start_mono_ns = 1'000'000'000;
    header.start_real_ns = 1'700'000'000'000'000'000;
    header.rank = header.local_rank = header.world_size = -1;
    std::memcpy(header.host, host.data(), std::min(host.size(), sizeof header.host - 1));
    new_chunk();
  }

  FileHeader header;
  std::vector<std::vector<unsigned char>> chunks;

  // Later records go into a fresh chunk (as when a thread's chunk fills or a thread starts).
  void new_chunk() {
    chunks.emplace_back(header.chunk_size, 0);
    used_.push_back(0);
    io_base_ = 0;
  }

  // Appends one record with the writer's checksum (over the unpadded payload, as emit() is
  // given it). `checksum_padded` checksums the padded payload instead: the other reading of
  // the format, which the reader also accepts.
  RecordPos add_bytes(RecordType type, const void* payload, std::size_t n, std::uint32_t tid,
                      bool checksum_padded = false) {
    return add_raw(static_cast<std::uint16_t>(type), payload, n, tid, checksum_padded);
  }
  RecordPos add_raw(std::uint16_t type, const void* payload, std::size_t n, std::uint32_t tid,
                    bool checksum_padded = false, std::uint16_t flags = 0) {
    RecordHeader h{};
    h.size = padded_record_size(n);
    h.type = type;
    h.flags = flags;
    h.tid = tid;
    std::vector<unsigned char> body(h.size - sizeof h, 0);
    if (n > 0) std::memcpy(body.data(), payload, n);
    h.checksum = record_checksum(h, body.data(), checksum_padded ? body.size() : n, header.version);
    auto& chunk = chunks.back();
    std::size_t& used = used_.back();
    if (used + h.size > chunk.size()) {
      new_chunk();
      return add_raw(type, payload, n, tid, checksum_padded, flags);
    }
    const RecordPos pos{chunks.size() - 1, used, h.size};
    std::memcpy(chunk.data() + used, &h, sizeof h);
    std::memcpy(chunk.data() + used + sizeof h, body.data(), body.size());
    used += h.size;
    return pos;
  }
  template <class T>
  RecordPos add(RecordType type, const T& payload, std::uint32_t tid) {
    return add_bytes(type, &payload, sizeof payload, tid);
  }

  // Interns a string: the first use emits a String record (on `tid`, like the collector).
  std::uint32_t str(std::string_view s, std::uint32_t tid = 0) {
    if (s.empty()) return 0;
    if (auto it = ids_.find(std::string(s)); it != ids_.end()) return it->second;
    const auto id = static_cast<std::uint32_t>(ids_.size() + 1);
    ids_.emplace(std::string(s), id);
    std::vector<unsigned char> buf(sizeof(StringRecord) + s.size());
    const StringRecord rec{id, static_cast<std::uint32_t>(s.size())};
    std::memcpy(buf.data(), &rec, sizeof rec);
    std::memcpy(buf.data() + sizeof rec, s.data(), s.size());
    add_bytes(RecordType::String, buf.data(), buf.size(), tid == 0 ? main_tid() : tid);
    return id;
  }

  // ---- typed helpers (times are CLOCK_MONOTONIC ns, as recorded) ----
  std::uint32_t main_tid() const { return static_cast<std::uint32_t>(header.pid); }

  void process_info(std::string_view cmdline, std::string_view exe) {
    ProcessInfoRecord r{};
    r.command_line = str(cmdline);
    r.executable = str(exe);
    add(RecordType::ProcessInfo, r, main_tid());
  }
  void thread_name(std::uint32_t tid, std::string_view name) {
    ThreadNameRecord r{tid, str(name, tid)};
    add(RecordType::ThreadName, r, tid);
  }
  // An I/O record as the collector writes it: IoCompact when the values fit (version 2), else
  // the wide Io record. The IoCompact chain restarts in each chunk, as in the collector.
  RecordPos io(std::uint32_t tid, IoFunc f, std::int64_t start, std::int64_t end, std::string_view path,
               std::int64_t bytes = -1, std::int32_t fd = -1, std::int64_t result = 0, std::int32_t err = 0,
               std::int64_t offset = -1) {
    return io_record(tid, IoRecord{start, end, bytes, offset, result, fd, err, str(path, tid), f, {}});
  }
  RecordPos io_record(std::uint32_t tid, const IoRecord& r, bool wide = false) {
    // Room for the wide form first, so the record's chunk (and chain base) is settled.
    if (used_.back() + padded_record_size(sizeof(IoRecord)) > chunks.back().size()) new_chunk();
    IoCompactRecord c;
    std::uint16_t flags = 0;
    const bool compact = !wide && header.version >= 2 && encode_io_compact(r, io_base_, c, flags);
    io_base_ = r.start_ns;
    if (compact) return add_raw(static_cast<std::uint16_t>(RecordType::IoCompact), &c, sizeof c, tid, false, flags);
    return add(RecordType::Io, r, tid);
  }
  // `payload` >= 0 sets the NVTX payload (flags bit 1), as the NVTX handler does.
  RecordPos range(std::uint32_t tid, RangeSource src, std::int64_t start, std::int64_t end,
                  std::string_view name, std::string_view domain = {}, std::uint16_t depth = 0,
                  std::int64_t payload = -1) {
    RangeRecord r{};
    r.start_ns = start;
    r.end_ns = end;
    r.name = str(name, tid);
    r.domain = str(domain, tid);
    r.depth = depth;
    r.source = src;
    if (payload >= 0) {
      r.payload = static_cast<std::uint64_t>(payload);
      r.flags |= 2;
    }
    return add(RecordType::Range, r, tid);
  }
  void mark(std::uint32_t tid, RangeSource src, std::int64_t ts, std::string_view name,
            std::string_view domain = {}) {
    MarkRecord r{};
    r.ts_ns = ts;
    r.name = str(name, tid);
    r.domain = str(domain, tid);
    r.source = src;
    add(RecordType::Mark, r, tid);
  }
  void step(std::uint32_t tid, StepKind kind, std::int64_t start, std::int64_t end, std::int64_t number) {
    StepRecord r{};
    r.start_ns = start;
    r.end_ns = end;
    r.number = number;
    r.kind = kind;
    add(RecordType::Step, r, tid);
  }
  void counter(std::uint32_t tid, std::int64_t ts, std::string_view name, double value) {
    CounterRecord r{};
    r.ts_ns = ts;
    r.name = str(name, tid);
    r.value = value;
    add(RecordType::Counter, r, tid);
  }
  void py_frame(std::uint32_t tid, std::uint32_t id, std::string_view function, std::string_view file, std::int32_t line) {
    add(RecordType::PyFrame, PyFrameRecord{id, str(function, tid), str(file, tid), line}, tid);
  }
  // One PySample: `frames` innermost first; `depth` overrides the count written (damage).
  RecordPos py_sample(std::uint32_t tid, std::int64_t ts, std::uint32_t sampled, const std::vector<std::uint32_t>& frames,
                      std::uint32_t depth = 0xffffffffu) {
    const PySampleRecord r{ts, sampled, depth == 0xffffffffu ? static_cast<std::uint32_t>(frames.size()) : depth};
    std::vector<unsigned char> buf(sizeof r + frames.size() * sizeof(std::uint32_t));
    std::memcpy(buf.data(), &r, sizeof r);
    if (!frames.empty()) std::memcpy(buf.data() + sizeof r, frames.data(), frames.size() * sizeof(std::uint32_t));
    return add_bytes(RecordType::PySample, buf.data(), buf.size(), tid);
  }
  void clock_sync(std::int64_t tsc, std::int64_t mono_ns) {
    add(RecordType::ClockSync, ClockSyncRecord{tsc, mono_ns}, main_tid());
  }
  void fork(std::int64_t ts, std::int64_t child) { add(RecordType::Fork, ForkRecord{ts, child}, main_tid()); }
  void exec(std::int64_t ts, std::string_view program) {
    ExecRecord r{};
    r.ts_ns = ts;
    r.path = str(program);
    add(RecordType::Exec, r, main_tid());
  }
  void dropped(std::uint64_t count, std::string_view reason) {
    DroppedRecord r{};
    r.count = count;
    r.reason = str(reason);
    add(RecordType::Dropped, r, main_tid());
  }
  // Exit record plus the header update the collector does on the way out.
  void exit(std::int64_t ts, std::int32_t status, std::int32_t how = 0) {
    add(RecordType::Exit, ExitRecord{ts, status, how}, main_tid());
    header.flags |= kExited;
    header.end_mono_ns = ts;
    header.exit_status = status;
  }

  // ---- damage ----
  unsigned char* at(const RecordPos& p) { return chunks[p.chunk].data() + p.offset; }
  // Flips a payload byte: the checksum no longer matches (a torn write).
  void tear(const RecordPos& p) { at(p)[sizeof(RecordHeader)] ^= 0x5a; }
  // Keeps the committed size but zeroes the payload (a page that never reached the disk).
  void zero_payload(const RecordPos& p) {
    std::memset(at(p) + sizeof(RecordHeader), 0, p.size - sizeof(RecordHeader));
  }

  // Writes header + chunks. chunks_reserved defaults to the chunk count; `cut_at` (bytes
  // from the file start) truncates the file as a crash while reserving would.
  void write(const std::filesystem::path& path, std::uint64_t cut_at = UINT64_MAX) {
    if (header.chunks_reserved == 0) header.chunks_reserved = static_cast<std::uint32_t>(chunks.size());
    std::filesystem::create_directories(path.parent_path());
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      f.write(reinterpret_cast<const char*>(&header), sizeof header);
      for (const auto& c : chunks)
        f.write(reinterpret_cast<const char*>(c.data()), static_cast<std::streamsize>(c.size()));
    }
    if (cut_at != UINT64_MAX) std::filesystem::resize_file(path, cut_at);
  }

 private:
  std::vector<std::size_t> used_;
  std::int64_t io_base_ = 0;  // start of the last I/O record in the current chunk
  std::map<std::string, std::uint32_t> ids_;
};

using tt::testing::TempDir;

}  // namespace tt::collector::testing
