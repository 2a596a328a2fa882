// record_reader: one .ttr file -> RawProcess, clean and damaged (torn records, zero-filled
// tails, files cut inside a chunk, bad headers). Files are built by record_file_writer.h.
#include "tracetune/collector/record_reader.h"

#include <gtest/gtest.h>

#include "record_file_writer.h"

namespace tt::collector {
namespace {

using testing::RecordFileWriter;
using testing::TempDir;
namespace fs = std::filesystem;

std::string str(const RawProcess& p, std::uint32_t id) {
  const std::string* s = p.find_string(id);
  return s == nullptr ? "<missing>" : *s;
}

TEST(RecordReader, CleanFileRoundTrip) {
  TempDir dir;
  RecordFileWriter w(4242, "gpu-node-7");
  w.header.ppid = 4000;
  w.header.rank = 3;
  w.header.local_rank = 1;
  w.header.world_size = 8;
  w.header.start_real_ns = 1'700'000'000'123'456'789;
  w.process_info("python train.py --epochs 2", "/usr/bin/python3.12");
  w.thread_name(4243, "pt_data_worker");
  w.io(4242, IoFunc::OpenAt, 1'000'000'100, 1'000'000'200, "/data/shard-0.bin", -1, -1, 5);
  w.io(4243, IoFunc::Pread64, 1'000'000'300, 1'000'000'900, "/data/shard-0.bin", 4096, 5, 4096, 0, 8192);
  w.range(4242, RangeSource::Nvtx, 1'000'001'000, 1'000'002'000, "forward", "torch", 1);
  w.mark(4242, RangeSource::User, 1'000'002'500, "checkpoint");
  w.step(4242, StepKind::Step, 1'000'000'000, 1'000'003'000, 7);
  w.counter(4243, 1'000'003'500, "queue_depth", 2.5);
  w.fork(1'000'003'600, 5000);
  w.dropped(3, "disk full");
  w.exit(1'000'004'000, 0);
  w.write(dir.path() / "proc.ttr");

  auto r = read_record_file(dir.path() / "proc.ttr");
  ASSERT_TRUE(r) << r.error();
  const RawProcess& p = r.value();
  EXPECT_EQ(p.header.pid, 4242);
  EXPECT_EQ(p.header.ppid, 4000);
  EXPECT_EQ(p.header.rank, 3);
  EXPECT_EQ(p.header.local_rank, 1);
  EXPECT_EQ(p.header.world_size, 8);
  EXPECT_EQ(p.header.host, "gpu-node-7");
  EXPECT_EQ(p.header.start_real_ns, 1'700'000'000'123'456'789);
  EXPECT_TRUE(p.header.has(kExited));
  EXPECT_EQ(p.header.end_mono_ns, 1'000'004'000);
  EXPECT_EQ(p.chunks, 1u);
  EXPECT_FALSE(p.partial_chunk);
  EXPECT_FALSE(p.short_file);

  ASSERT_TRUE(p.process_info);
  EXPECT_EQ(str(p, p.process_info->command_line), "python train.py --epochs 2");
  EXPECT_EQ(str(p, p.process_info->executable), "/usr/bin/python3.12");
  ASSERT_EQ(p.thread_names.size(), 1u);
  EXPECT_EQ(p.thread_names[0].rec.tid, 4243u);
  EXPECT_EQ(str(p, p.thread_names[0].rec.name), "pt_data_worker");

  ASSERT_EQ(p.io.size(), 2u);
  EXPECT_EQ(p.io[0].tid, 4242u);
  EXPECT_EQ(p.io[0].rec.func, IoFunc::OpenAt);
  EXPECT_EQ(p.io[0].rec.result, 5);
  EXPECT_EQ(p.io[1].tid, 4243u);
  EXPECT_EQ(p.io[1].rec.func, IoFunc::Pread64);
  EXPECT_EQ(p.io[1].rec.bytes, 4096);
  EXPECT_EQ(p.io[1].rec.offset, 8192);
  EXPECT_EQ(p.io[1].rec.fd, 5);
  EXPECT_EQ(str(p, p.io[1].rec.path), "/data/shard-0.bin");

  ASSERT_EQ(p.ranges.size(), 1u);
  EXPECT_EQ(str(p, p.ranges[0].rec.name), "forward");
  EXPECT_EQ(str(p, p.ranges[0].rec.domain), "torch");
  EXPECT_EQ(p.ranges[0].rec.depth, 1);
  ASSERT_EQ(p.marks.size(), 1u);
  EXPECT_EQ(str(p, p.marks[0].rec.name), "checkpoint");
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.steps[0].rec.number, 7);
  ASSERT_EQ(p.counters.size(), 1u);
  EXPECT_EQ(str(p, p.counters[0].rec.name), "queue_depth");
  EXPECT_DOUBLE_EQ(p.counters[0].rec.value, 2.5);
  ASSERT_EQ(p.forks.size(), 1u);
  EXPECT_EQ(p.forks[0].rec.child_pid, 5000);
  ASSERT_EQ(p.dropped.size(), 1u);
  EXPECT_EQ(p.dropped[0].rec.count, 3u);
  EXPECT_EQ(str(p, p.dropped[0].rec.reason), "disk full");
  ASSERT_EQ(p.exits.size(), 1u);
  EXPECT_EQ(p.exits[0].rec.status, 0);

  EXPECT_EQ(p.torn_records, 0u);
  EXPECT_EQ(p.unknown_records, 0u);
  EXPECT_EQ(p.malformed_records, 0u);
  EXPECT_EQ(p.last_ts_ns, 1'000'004'000);
  EXPECT_EQ(p.find_string(0)->size(), 0u);
  EXPECT_EQ(p.find_string(999), nullptr);
}

TEST(RecordReader, HeaderOnlyReadMatchesFullRead) {
  TempDir dir;
  RecordFileWriter w(77, "h");
  w.header.start_real_ns = 123;
  w.write(dir.path() / "p.ttr");
  auto h = read_record_header(dir.path() / "p.ttr");
  ASSERT_TRUE(h) << h.error();
  EXPECT_EQ(h->pid, 77);
  EXPECT_EQ(h->host, "h");
  EXPECT_EQ(h->start_real_ns, 123);
  EXPECT_EQ(h->chunk_size, kChunkSize);
}

// A torn record in the middle of a chunk: what came before it is kept, the rest of that
// chunk is not trusted, the next chunk is read normally.
TEST(RecordReader, TornRecordStopsOnlyItsChunk) {
  TempDir dir;
  RecordFileWriter w(10);
  w.str("/a");  // String records first, so the damage below hits only events
  w.io(10, IoFunc::Read, 100, 200, "/a");
  const auto torn = w.io(10, IoFunc::Read, 300, 400, "/a");
  w.io(10, IoFunc::Read, 500, 600, "/a");  // after the torn one: lost with the chunk's tail
  w.new_chunk();
  w.io(11, IoFunc::Write, 700, 800, "/a");
  w.tear(torn);
  w.write(dir.path() / "p.ttr");

  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->torn_records, 1u);
  ASSERT_EQ(r->io.size(), 2u);
  EXPECT_EQ(r->io[0].rec.start_ns, 100);
  EXPECT_EQ(r->io[1].rec.start_ns, 700);
  EXPECT_EQ(r->io[1].tid, 11u);
  EXPECT_EQ(r->chunks, 2u);
}

TEST(RecordReader, ZeroFilledTailEndsTheChunkCleanly) {
  TempDir dir;
  RecordFileWriter w(10);
  w.io(10, IoFunc::Close, 100, 110, "");
  w.io(10, IoFunc::Close, 120, 130, "");
  w.write(dir.path() / "p.ttr");  // the rest of the 1 MiB chunk is zeros: size 0 = end
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->io.size(), 2u);
  EXPECT_EQ(r->torn_records, 0u);
  EXPECT_EQ(r->last_ts_ns, 130);
}

TEST(RecordReader, CommittedSizeWithZeroedPayloadIsTorn) {
  TempDir dir;
  RecordFileWriter w(10);
  w.io(10, IoFunc::Close, 100, 110, "");
  const auto lost = w.io(10, IoFunc::Close, 120, 130, "");
  w.zero_payload(lost);  // size and checksum reached the disk, the payload page did not
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->io.size(), 1u);
  EXPECT_EQ(r->torn_records, 1u);
  EXPECT_EQ(r->last_ts_ns, 110);
}

// The process died while the second chunk was being reserved / written: the file ends in
// the middle of a chunk, in the middle of a record.
TEST(RecordReader, FileCutInsideAChunk) {
  TempDir dir;
  RecordFileWriter w(10);
  w.io(10, IoFunc::Read, 100, 200, "");
  w.new_chunk();
  w.io(10, IoFunc::Read, 300, 400, "");
  const auto cut = w.io(10, IoFunc::Read, 500, 600, "");
  w.header.chunks_reserved = 3;  // a third chunk was promised and never reached the disk
  const std::uint64_t chunk1 = kHeaderSize + std::uint64_t{kChunkSize};
  w.write(dir.path() / "p.ttr", chunk1 + cut.offset + 24);
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->io.size(), 2u);
  EXPECT_EQ(r->io[1].rec.start_ns, 300);
  EXPECT_EQ(r->torn_records, 1u);  // the record the cut went through
  EXPECT_EQ(r->chunks, 2u);
  EXPECT_TRUE(r->partial_chunk);
  EXPECT_TRUE(r->short_file);
}

TEST(RecordReader, FileCutRightAfterTheHeader) {
  TempDir dir;
  RecordFileWriter w(10);
  w.header.chunks_reserved = 1;
  w.write(dir.path() / "p.ttr", kHeaderSize);
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->records, 0u);
  EXPECT_EQ(r->chunks, 0u);
  EXPECT_TRUE(r->short_file);
  EXPECT_EQ(r->last_ts_ns, 0);
}

TEST(RecordReader, BadHeadersAreErrorsNamingTheFile) {
  TempDir dir;
  const fs::path p = dir.path() / "bad.ttr";
  {
    RecordFileWriter w(1);
    w.header.magic[0] = 'X';
    w.write(p);
    auto r = read_record_file(p);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find(p.string()), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("bad magic"), std::string::npos) << r.error();
    auto h = read_record_header(p);
    ASSERT_FALSE(h);
    EXPECT_EQ(h.error(), r.error());
  }
  {
    RecordFileWriter w(1);
    w.header.version = 99;
    w.write(p);
    auto r = read_record_file(p);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find("record format version 99 is not supported (this tracetune reads versions 1 to 2)"),
              std::string::npos) << r.error();
  }
  {
    RecordFileWriter w(1);
    w.header.chunk_size = 1000;
    w.write(p, kHeaderSize);
    auto r = read_record_file(p);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find("chunk_size"), std::string::npos) << r.error();
  }
  {
    RecordFileWriter w(1);
    w.header.header_size = 512;
    w.write(p, kHeaderSize);
    EXPECT_FALSE(read_record_file(p));
  }
  {
    RecordFileWriter w(1);
    w.write(p, 100);  // created, header never written out
    auto r = read_record_file(p);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find(p.string()), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("100 bytes"), std::string::npos) << r.error();
  }
  auto missing = read_record_file(dir.path() / "missing.ttr");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().find("missing.ttr"), std::string::npos);
  auto directory = read_record_file(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().find("not a regular file"), std::string::npos) << directory.error();
}

TEST(RecordReader, ImpossibleFramesAreTorn) {
  struct Case {
    const char* what;
    std::uint32_t size;
  };
  for (const Case c : {Case{"not a multiple of 8", 28}, Case{"below the header size", 8},
                       Case{"above kMaxRecordSize", kMaxRecordSize + 8}, Case{"past the chunk end", 4096}}) {
    TempDir dir;
    RecordFileWriter w(10, "h", 4096);  // a small chunk, so a legal size can overrun it
    w.io(10, IoFunc::Read, 100, 200, "");
    const auto bad = w.io(10, IoFunc::Read, 300, 400, "");
    std::memcpy(w.at(bad), &c.size, sizeof c.size);
    w.write(dir.path() / "p.ttr");
    auto r = read_record_file(dir.path() / "p.ttr");
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->io.size(), 1u) << c.what;
    EXPECT_EQ(r->torn_records, 1u) << c.what;
  }
}

TEST(RecordReader, UnknownTypesAreSkippedAndCounted) {
  TempDir dir;
  RecordFileWriter w(10);
  const unsigned char gpu[40] = {1, 2, 3};
  w.add_raw(150, gpu, sizeof gpu, 10);  // e.g. a CUPTI record this build cannot decode
  w.io(10, IoFunc::Read, 100, 200, "");
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->unknown_records, 1u);
  EXPECT_EQ(r->io.size(), 1u);
  EXPECT_EQ(r->torn_records, 0u);
}

TEST(RecordReader, PayloadTooShortForItsTypeIsSkipped) {
  TempDir dir;
  RecordFileWriter w(10);
  const std::int64_t half[2] = {100, 200};
  w.add_bytes(RecordType::Io, half, sizeof half, 10);
  w.io(10, IoFunc::Read, 300, 400, "");
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->malformed_records, 1u);
  ASSERT_EQ(r->io.size(), 1u);
  EXPECT_EQ(r->io[0].rec.start_ns, 300);
}

// String records are the padded ones (5 + 8 bytes -> 16 of payload). The format does not
// say whether padding is checksummed: both conventions must verify.
TEST(RecordReader, StringChecksumWithOrWithoutPadding) {
  TempDir dir;
  RecordFileWriter w(10);
  for (const bool padded : {false, true}) {
    const std::string text = padded ? "hello" : "world";
    std::vector<unsigned char> buf(sizeof(StringRecord) + text.size());
    const StringRecord rec{padded ? 1u : 2u, static_cast<std::uint32_t>(text.size())};
    std::memcpy(buf.data(), &rec, sizeof rec);
    std::memcpy(buf.data() + sizeof rec, text.data(), text.size());
    w.add_bytes(RecordType::String, buf.data(), buf.size(), 10, padded);
  }
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->torn_records, 0u);
  EXPECT_EQ(str(r.value(), 1), "hello");
  EXPECT_EQ(str(r.value(), 2), "world");
}

TEST(RecordReader, StringLongerThanItsRecordIsMalformed) {
  TempDir dir;
  RecordFileWriter w(10);
  const StringRecord rec{1, 100};  // claims 100 bytes, carries none
  w.add(RecordType::String, rec, 10);
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->malformed_records, 1u);
  EXPECT_EQ(r->find_string(1), nullptr);
}

IoRecord io_rec(IoFunc f, std::int64_t start, std::int64_t end, std::int64_t bytes, std::int64_t offset,
               std::int64_t result, std::int32_t fd = 3, std::int32_t err = 0, std::uint32_t path = 0) {
  return IoRecord{start, end, bytes, offset, result, fd, err, path, f, {}};
}

void expect_same_io(const IoRecord& a, const IoRecord& b, const std::string& what) {
  EXPECT_EQ(a.start_ns, b.start_ns) << what;
  EXPECT_EQ(a.end_ns, b.end_ns) << what;
  EXPECT_EQ(a.bytes, b.bytes) << what;
  EXPECT_EQ(a.offset, b.offset) << what;
  EXPECT_EQ(a.result, b.result) << what;
  EXPECT_EQ(a.fd, b.fd) << what;
  EXPECT_EQ(a.err, b.err) << what;
  EXPECT_EQ(a.path, b.path) << what;
  EXPECT_EQ(a.func, b.func) << what;
}

// Every I/O record reads back exactly as written, in the 40-byte form when its values fit and
// in the 72-byte wide form when one does not; the time chain restarts in each chunk.
TEST(RecordReader, CompactIoRecordsRoundTripAndEscapeToWide) {
  constexpr std::int64_t t = 5'000'000'000'000;  // boot + 83 min: no start fits 32 bits alone
  constexpr std::int64_t k4G = 1ll << 32;
  struct Case {
    const char* what;
    IoRecord rec;
    bool compact;
  };
  const Case cases[] = {
      {"first in the chunk: start relative to 0", io_rec(IoFunc::Read, t, t + 500, 64, -1, 64), false},
      {"read, bytes == result", io_rec(IoFunc::Read, t + 1000, t + 1500, 64, -1, 64), true},
      {"pread with an offset", io_rec(IoFunc::Pread64, t + 2000, t + 2600, 4096, 8192, 4096, 5), true},
      {"short read: bytes in arg", io_rec(IoFunc::Read, t + 3000, t + 3100, 4096, -1, 17), true},
      {"fread: items != bytes", io_rec(IoFunc::Fread, t + 3200, t + 3300, 40, -1, 10, -1), true},
      {"open: no bytes, no offset", io_rec(IoFunc::OpenAt, t + 3400, t + 9000, -1, -1, 7, -1, 0, 9), true},
      {"failed open with errno", io_rec(IoFunc::Open, t + 9100, t + 9200, -1, -1, -1, -1, 2, 9), true},
      {"failed fopen: result 0 and errno", io_rec(IoFunc::Fopen, t + 9300, t + 9400, -1, -1, 0, -1, 13), true},
      {"errno 127", io_rec(IoFunc::Close, t + 9500, t + 9600, -1, -1, -1, 3, 127), true},
      {"errno 133 (EHWPOISON) is wide", io_rec(IoFunc::Read, t + 9700, t + 9800, 8, -1, -1, 3, 133), false},
      {"start before the previous one", io_rec(IoFunc::Write, t + 9000, t + 9050, 8, -1, 8), true},
      {"mmap: offset and bytes != result", io_rec(IoFunc::Mmap, t + 9900, t + 9990, 1 << 20, 4096, 1), false},
      {"mmap at offset 0 of its length", io_rec(IoFunc::Mmap, t + 10'000, t + 10'100, 1 << 20, -1, 1), true},
      {"offset at 4 GiB - 1", io_rec(IoFunc::Pread, t + 11'000, t + 11'100, 8, k4G - 1, 8), true},
      {"offset past 4 GiB is wide", io_rec(IoFunc::Pread, t + 12'000, t + 12'100, 8, k4G, 8), false},
      {"lseek result past 2 GiB is wide", io_rec(IoFunc::Lseek, t + 13'000, t + 13'100, -1, k4G, k4G), false},
      {"a 4.3 s call is wide", io_rec(IoFunc::Read, t + 14'000, t + 14'000 + k4G, 8, -1, 8), false},
      {"duration 2^32 - 1", io_rec(IoFunc::Read, t + 15'000, t + 15'000 + k4G - 1, 8, -1, 8), true},
      {"next call 2.2 s later is wide", io_rec(IoFunc::Read, t + 15'000 + 2'200'000'000, t + 15'000 + 2'200'000'100, 8, -1, 8), false},
      {"end before start is wide", io_rec(IoFunc::Read, t + 2'200'020'000, t + 2'200'010'000, 8, -1, 8), false},
      {"fd beyond the fd table", io_rec(IoFunc::Read, t + 2'200'030'000, t + 2'200'030'100, 8, -1, 8, 1 << 20), true},
  };
  TempDir dir;
  RecordFileWriter w(10);
  for (const Case& c : cases) {
    const auto pos = w.io_record(10, c.rec);
    EXPECT_EQ(pos.size, c.compact ? 40u : 72u) << c.what;
  }
  w.new_chunk();  // a new thread's chunk: its first record is wide again
  EXPECT_EQ(w.io_record(11, cases[1].rec).size, 72u);
  EXPECT_EQ(w.io_record(11, cases[2].rec).size, 40u);
  w.write(dir.path() / "p.ttr");

  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->torn_records, 0u);
  EXPECT_EQ(r->unknown_records, 0u);
  ASSERT_EQ(r->io.size(), std::size(cases) + 2);
  for (std::size_t i = 0; i < std::size(cases); ++i) expect_same_io(r->io[i].rec, cases[i].rec, cases[i].what);
  expect_same_io(r->io[std::size(cases)].rec, cases[1].rec, "second chunk, first record");
  expect_same_io(r->io[std::size(cases) + 1].rec, cases[2].rec, "second chunk, compact");
  EXPECT_EQ(r->io.back().tid, 11u);
}

// The words the collector stores and checksums for a compact record are the record's bytes,
// negative fields included.
TEST(RecordReader, CompactIoWordsAreTheRecordBytes) {
  const IoCompactRecord cases[] = {{-5, 7, -1, -1, 3, 0xffffffffu}, {INT32_MAX, 0xffffffffu, INT32_MIN, 1 << 20, 0, 0},
                                   {0, 0, 0, 0, 0, 0}};
  for (const IoCompactRecord& c : cases) {
    std::uint64_t words[3];
    io_compact_words(c, words);
    EXPECT_EQ(std::memcmp(words, &c, sizeof c), 0) << c.start_delta << " " << c.result << " " << c.fd;
    EXPECT_EQ(checksum_final(checksum_word(checksum_word(checksum_word(99, words[0]), words[1]), words[2])),
              checksum32(&c, sizeof c, 99));
  }
}

// A torn compact record ends its chunk like any other; the next chunk's chain is its own.
TEST(RecordReader, TornCompactRecordStopsOnlyItsChunk) {
  TempDir dir;
  RecordFileWriter w(10);
  w.io(10, IoFunc::Read, 1'000'000, 1'000'100, "", 8, 3, 8);
  w.io(10, IoFunc::Read, 1'000'200, 1'000'300, "", 8, 3, 8);
  const auto torn = w.io(10, IoFunc::Read, 1'000'400, 1'000'500, "", 8, 3, 8);
  w.io(10, IoFunc::Read, 1'000'600, 1'000'700, "", 8, 3, 8);
  w.new_chunk();
  w.io(11, IoFunc::Read, 2'000'000, 2'000'100, "", 8, 3, 8);
  w.io(11, IoFunc::Read, 2'000'200, 2'000'300, "", 8, 3, 8);
  ASSERT_EQ(torn.size, 40u);
  w.tear(torn);
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->torn_records, 1u);
  ASSERT_EQ(r->io.size(), 4u);
  EXPECT_EQ(r->io[1].rec.start_ns, 1'000'200);
  EXPECT_EQ(r->io[2].rec.start_ns, 2'000'000);
  EXPECT_EQ(r->io[3].rec.start_ns, 2'000'200);
  EXPECT_EQ(r->io[3].rec.end_ns, 2'000'300);
}

// Files of the previous format (72-byte Io records, the chained header checksum) still read;
// version 1 knows no IoCompact type, and each version's checksum is its own.
TEST(RecordReader, Version1FilesStillRead) {
  TempDir dir;
  RecordFileWriter w(10);
  w.header.version = 1;
  w.io(10, IoFunc::OpenAt, 1'000'000, 1'000'100, "/data/a", -1, -1, 5);
  const auto pread = w.io(10, IoFunc::Pread64, 1'000'200, 1'000'300, "/data/a", 64, 5, 64, 0, 4096);
  EXPECT_EQ(pread.size, 72u);
  const unsigned char compact[24] = {};
  w.add_raw(static_cast<std::uint16_t>(RecordType::IoCompact), compact, sizeof compact, 10);
  w.exit(1'000'400, 0);
  w.write(dir.path() / "v1.ttr");
  auto r = read_record_file(dir.path() / "v1.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->header.version, 1u);
  EXPECT_EQ(r->torn_records, 0u);
  EXPECT_EQ(r->unknown_records, 1u);
  ASSERT_EQ(r->io.size(), 2u);
  EXPECT_EQ(r->io[1].rec.offset, 4096);
  EXPECT_EQ(str(r.value(), r->io[1].rec.path), "/data/a");
  ASSERT_EQ(r->exits.size(), 1u);

  // The same bytes labelled version 2: the checksums no longer match.
  w.header.version = 2;
  w.write(dir.path() / "relabelled.ttr");
  auto bad = read_record_file(dir.path() / "relabelled.ttr");
  ASSERT_TRUE(bad) << bad.error();
  EXPECT_EQ(bad->torn_records, 1u);
  EXPECT_EQ(bad->records, 0u);
}

// A file written by the version-1 collector itself (the library at 131c64c, running
// `head -c 100 input.txt` with TRACETUNE_NO_ENV=1), cut after its last record: the rest of
// its one chunk was zeros. Every record must still read.
TEST(RecordReader, FileOfTheVersion1CollectorStillReads) {
  auto r = read_record_file(fs::path(TT_TEST_DATA_DIR) / "collector/v1-head.ttr");
  ASSERT_TRUE(r) << r.error();
  const RawProcess& p = r.value();
  EXPECT_EQ(p.header.version, 1u);
  EXPECT_EQ(p.records, 14u);
  EXPECT_EQ(p.torn_records, 0u);
  EXPECT_EQ(p.unknown_records, 0u);
  EXPECT_EQ(p.malformed_records, 0u);
  ASSERT_TRUE(p.process_info);
  EXPECT_EQ(str(p, p.process_info->command_line), "/usr/bin/head -c 100 input.txt");
  ASSERT_EQ(p.io.size(), 6u);
  EXPECT_EQ(p.io[0].rec.func, IoFunc::Open);
  EXPECT_EQ(str(p, p.io[0].rec.path), "input.txt");
  EXPECT_EQ(p.io[0].rec.result, 3);
  EXPECT_EQ(p.io[1].rec.func, IoFunc::Read);
  EXPECT_EQ(p.io[1].rec.bytes, 100);
  EXPECT_EQ(p.io[1].rec.result, 9);  // "hello v1\n"
  EXPECT_EQ(p.io[1].rec.fd, 3);
  EXPECT_EQ(p.io[3].rec.func, IoFunc::Close);
  for (const auto& io : p.io) EXPECT_LE(io.rec.start_ns, io.rec.end_ns);
  ASSERT_EQ(p.exits.size(), 1u);
  EXPECT_EQ(p.exits[0].rec.status, 0);
  EXPECT_TRUE(p.header.has(kExited));
}

// A clock of 2.5 ticks per ns from tick 1,000,000: exact at every multiple of 2 ticks.
constexpr std::int64_t kTick0 = 1'000'000;
constexpr std::int64_t ticks(std::int64_t ns) { return kTick0 + ns * 5 / 2; }

TEST(TscMap, InterpolatesBetweenPairsAndExtrapolatesOutside) {
  // Two segments with different rates (2.5 and 2.0 ticks per ns), given out of order.
  const TscMap m({{ticks(2'000'000), 2'000'000}, {ticks(0), 0},
                  {ticks(2'000'000) + 2 * 1'000'000, 3'000'000}});
  ASSERT_TRUE(m.usable());
  EXPECT_EQ(m.to_ns(ticks(0)), 0);
  EXPECT_EQ(m.to_ns(ticks(1'234'568)), 1'234'568);
  EXPECT_EQ(m.to_ns(ticks(2'000'000)), 2'000'000);
  EXPECT_EQ(m.to_ns(ticks(2'000'000) + 2 * 500'000), 2'500'000);  // second segment's rate
  EXPECT_EQ(m.to_ns(ticks(-400)), -400);                            // before the first pair
  EXPECT_EQ(m.to_ns(ticks(2'000'000) + 2 * 1'500'000), 3'500'000);  // after the last
  // Monotone across the knot.
  for (std::int64_t t = ticks(2'000'000) - 10; t < ticks(2'000'000) + 10; ++t)
    EXPECT_LE(m.to_ns(t), m.to_ns(t + 1));
}

TEST(TscMap, SkipsPairsTooCloseOrOutOfStepAndNeedsTwo) {
  EXPECT_FALSE(TscMap({}).usable());
  EXPECT_FALSE(TscMap({{ticks(0), 0}}).usable());
  // 9 us after the first: too close for a rate; a pair earlier in ns than its predecessor.
  EXPECT_FALSE(TscMap({{ticks(0), 0}, {ticks(9'000), 9'000}}).usable());
  EXPECT_FALSE(TscMap({{ticks(0), 0}, {ticks(50'000), -50'000}}).usable());
  const TscMap m({{ticks(0), 0}, {ticks(5'000), 5'000}, {ticks(50'000), 50'000}});
  ASSERT_TRUE(m.usable());
  EXPECT_EQ(m.to_ns(ticks(20'000)), 20'000);
  // Damaged values neither overflow (UBSan in the asan preset) nor reverse the order.
  const TscMap wild({{INT64_MIN, INT64_MIN}, {INT64_MAX, INT64_MAX}});
  ASSERT_TRUE(wild.usable());
  EXPECT_LE(wild.to_ns(-1), wild.to_ns(0));
  EXPECT_GE(m.to_ns(INT64_MAX), m.to_ns(ticks(50'000)));
  EXPECT_LE(m.to_ns(INT64_MIN), 0);
}

// A file whose I/O records are timed by the TSC: the reader hands back CLOCK_MONOTONIC ns,
// wide and compact records alike, whichever chunk the pairs are in.
TEST(RecordReader, TscTimedIoIsMappedToMonotonic) {
  TempDir dir;
  RecordFileWriter w(10);
  w.header.flags |= kIoClockTsc;
  w.clock_sync(ticks(1'000'000'000), 1'000'000'000);
  w.io(10, IoFunc::OpenAt, ticks(1'000'100'000), ticks(1'000'100'400), "/d", -1, -1, 3);
  w.io(10, IoFunc::Read, ticks(1'000'200'000), ticks(1'000'200'800), "/d", 64, 3, 64);
  w.new_chunk();
  w.io(11, IoFunc::Read, ticks(1'000'300'000), ticks(1'000'300'800), "/d", 64, 3, 64);
  w.clock_sync(ticks(1'001'000'000), 1'001'000'000);
  w.exit(1'001'000'100, 0);
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->clock_syncs.size(), 2u);
  EXPECT_EQ(r->unmapped_io, 0u);
  ASSERT_EQ(r->io.size(), 3u);
  EXPECT_EQ(r->io[0].rec.start_ns, 1'000'100'000);
  EXPECT_EQ(r->io[0].rec.end_ns, 1'000'100'400);
  EXPECT_EQ(r->io[1].rec.start_ns, 1'000'200'000);
  EXPECT_EQ(r->io[2].rec.end_ns, 1'000'300'800);
  EXPECT_EQ(r->last_ts_ns, 1'001'000'100);  // the exit, not a tick count
}

// Version 1 defines no TSC flag: a version-1 header with that bit (damage) keeps its ns times.
TEST(RecordReader, TscFlagMeansNothingInVersion1) {
  TempDir dir;
  RecordFileWriter w(10);
  w.header.version = 1;
  w.header.flags |= kIoClockTsc;
  w.io(10, IoFunc::Read, 5'000, 5'100, "", 8, 3, 8);
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->io.size(), 1u);
  EXPECT_EQ(r->io[0].rec.start_ns, 5'000);
  EXPECT_EQ(r->unmapped_io, 0u);
  EXPECT_EQ(r->last_ts_ns, 5'100);
}

TEST(RecordReader, TscTimedIoWithoutTwoPairsIsDroppedAndCounted) {
  TempDir dir;
  RecordFileWriter w(10);
  w.header.flags |= kIoClockTsc;
  w.clock_sync(ticks(0), 0);
  w.io(10, IoFunc::Read, ticks(100), ticks(200), "", 8, 3, 8);
  w.io(10, IoFunc::Read, ticks(300), ticks(400), "", 8, 3, 8);
  w.write(dir.path() / "p.ttr");
  auto r = read_record_file(dir.path() / "p.ttr");
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->unmapped_io, 2u);
  EXPECT_TRUE(r->io.empty());
  EXPECT_EQ(r->last_ts_ns, 0);
}

TEST(RecordReader, IoFunctionNames) {
  EXPECT_EQ(io_func_name(IoFunc::OpenAt), "openat");
  EXPECT_EQ(io_func_name(IoFunc::Pread64), "pread64");
  EXPECT_EQ(io_func_name(IoFunc::Fread), "fread");
  EXPECT_EQ(io_func_name(IoFunc::Fclose), "fclose");
  EXPECT_EQ(io_func_name(IoFunc::OpenAt2), "__openat_2");
  EXPECT_EQ(io_func_name(IoFunc::Lseek64), "lseek64");
  EXPECT_EQ(io_func_name(IoFunc::Statx), "statx");
  EXPECT_EQ(io_func_name(IoFunc::Mmap64), "mmap64");
  EXPECT_EQ(io_func_name(static_cast<IoFunc>(200)), "unknown");
  for (int f = 0; f < static_cast<int>(IoFunc::Count); ++f)
    EXPECT_NE(io_func_name(static_cast<IoFunc>(f)), "unknown") << f;
}

}  // namespace
}  // namespace tt::collector
