// The record reader under injected faults, SQLite's habit: the file truncated at the Nth read
// (a leftover process of the job truncating its file during the merge), short reads, EINTR
// and I/O errors at the Nth read; and sparse files that claim far more than they hold.
// Faults come in through the reader's FileReads seam; the files are real.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "record_file_writer.h"
#include "tracetune/collector/record_reader.h"

namespace tt::collector {
namespace {

using testing::RecordFileWriter;
using testing::TempDir;
namespace fs = std::filesystem;

enum class Fault { None, Truncate, ShortRead, Eintr, Eio };

const char* fault_name(Fault f) {
  switch (f) {
    case Fault::None: return "none";
    case Fault::Truncate: return "truncate";
    case Fault::ShortRead: return "short read";
    case Fault::Eintr: return "EINTR";
    case Fault::Eio: return "EIO";
  }
  return "?";
}

// Real reads, with one fault at read number `at` (1-based); counts reads and bytes asked for.
class FaultyReads : public FileReads {
 public:
  FaultyReads(fs::path path, int at, Fault fault, std::uint64_t truncate_to = 0)
      : path_(std::move(path)), at_(at), fault_(fault), truncate_to_(truncate_to) {}

  long read_at(int fd, void* buf, std::size_t n, std::uint64_t offset) override {
    ++reads;
    bytes_asked += n;
    if (reads == at_) {
      switch (fault_) {
        case Fault::None: break;
        case Fault::Truncate:
          if (::truncate(path_.c_str(), static_cast<off_t>(truncate_to_)) != 0) ADD_FAILURE() << "truncate";
          break;
        case Fault::ShortRead: n = n > 1 ? n / 2 : n; break;
        case Fault::Eintr: errno = EINTR; return -1;
        case Fault::Eio: errno = EIO; return -1;
      }
    }
    return FileReads::read_at(fd, buf, n, offset);
  }

  int reads = 0;
  std::uint64_t bytes_asked = 0;

 private:
  fs::path path_;
  int at_;
  Fault fault_;
  std::uint64_t truncate_to_;
};

constexpr std::uint32_t kSmallChunk = 4096;

// Three chunks of small I/O records (a thread's chunk filling up twice).
void write_three_chunks(const fs::path& path) {
  RecordFileWriter w(77, "node-a", kSmallChunk);
  w.process_info("train", "/usr/bin/train");
  for (int c = 0; c < 3; ++c) {
    if (c > 0) w.new_chunk();
    for (int i = 0; i < 20; ++i) {
      const std::int64_t t = 1'000'000'000 + c * 100'000 + i * 1000;
      w.io(77, IoFunc::Pread64, t, t + 500, "/data/x", 4096, 3, 4096, i * 4096);
    }
  }
  w.exit(1'001'000'000, 0);
  w.write(path);
}

TEST(RecordFaults, FileTruncatedWhileReadKeepsWhatWasRead) {
  TempDir dir;
  const fs::path path = dir.path() / "p.ttr";
  write_three_chunks(path);
  auto clean = read_record_file(path);
  ASSERT_TRUE(clean) << clean.error();
  ASSERT_TRUE(clean.value().cut_short.empty());
  // Read 1 is the header, read 2 chunk 0, read 3 chunk 1: cut the file inside chunk 1 just
  // before it is read, as a leftover process truncating its file would. A mapped reader died
  // here with SIGBUS (and took `record`, its job's exit status and the trace with it).
  FaultyReads reads(path, 3, Fault::Truncate, kHeaderSize + kSmallChunk + 1000);
  auto r = read_record_file(path, reads);
  ASSERT_TRUE(r) << r.error();
  const RawProcess& p = r.value();
  EXPECT_NE(p.cut_short.find("shrank"), std::string::npos) << p.cut_short;
  EXPECT_GE(p.io.size(), 20u);  // chunk 0 whole
  EXPECT_LT(p.io.size(), clean.value().io.size());

  // Emptied before the first chunk is read.
  write_three_chunks(path);
  FaultyReads to_zero(path, 2, Fault::Truncate, 0);
  auto z = read_record_file(path, to_zero);
  ASSERT_TRUE(z) << z.error();
  EXPECT_FALSE(z.value().cut_short.empty());
  EXPECT_EQ(z.value().records, 0u);
}

// Every fault at every read: the reader returns (no signal, no exception); short reads and
// EINTR are retried to the same result; truncation and I/O errors keep a prefix of the records.
TEST(RecordFaults, EveryFaultAtEveryRead) {
  TempDir dir;
  const fs::path path = dir.path() / "p.ttr";
  write_three_chunks(path);
  FaultyReads counting(path, 0, Fault::None);
  auto clean = read_record_file(path, counting);
  ASSERT_TRUE(clean) << clean.error();
  const std::size_t all_io = clean.value().io.size();
  ASSERT_EQ(all_io, 60u);
  ASSERT_GE(counting.reads, 4);  // header + 3 chunks

  for (Fault f : {Fault::Truncate, Fault::ShortRead, Fault::Eintr, Fault::Eio}) {
    for (int at = 1; at <= counting.reads + 1; ++at) {
      for (std::uint64_t cut : {std::uint64_t{0}, std::uint64_t{100}, std::uint64_t{kHeaderSize + 8},
                                std::uint64_t{kHeaderSize + 2 * kSmallChunk + 50}}) {
        if (f != Fault::Truncate && cut != 0) continue;
        SCOPED_TRACE(std::string(fault_name(f)) + " at read " + std::to_string(at) + ", cut " + std::to_string(cut));
        write_three_chunks(path);
        FaultyReads reads(path, at, f, cut);
        auto r = read_record_file(path, reads);
        if (f == Fault::ShortRead || f == Fault::Eintr) {
          ASSERT_TRUE(r) << r.error();
          EXPECT_EQ(r.value().io.size(), all_io);
          EXPECT_TRUE(r.value().cut_short.empty()) << r.value().cut_short;
          continue;
        }
        if (!r) {  // only a header that could not be read is an error
          EXPECT_EQ(at, 1);
          EXPECT_NE(r.error().find("p.ttr"), std::string::npos) << r.error();
          continue;
        }
        EXPECT_LE(r.value().io.size(), all_io);
        if (at <= counting.reads && r.value().io.size() < all_io) {
          EXPECT_FALSE(r.value().cut_short.empty());
        }
      }
    }
  }
}

// A forged file: two chunks of data, then 64 GiB of hole. The reader reads the two chunks
// and jumps over the hole (it used to walk, and page in, every zero chunk: 61 s and 1.3 GB for
// 50 GB). A chunk of data far out, past the hole, is still found.
TEST(RecordFaults, SparseFileCostsWhatItHolds) {
  TempDir dir;
  const fs::path path = dir.path() / "sparse.ttr";
  RecordFileWriter w(88, "node-a");
  w.process_info("train", "/usr/bin/train");
  for (int c = 0; c < 2; ++c) {
    if (c > 0) w.new_chunk();
    for (int i = 0; i < 10; ++i) w.io(88, IoFunc::Read, 1'000'000'000 + i, 1'000'000'001 + i, "/d", 64, 3, 64);
  }
  w.write(path);
  auto small = read_record_file(path);
  ASSERT_TRUE(small) << small.error();

  constexpr std::uint64_t kClaimed = std::uint64_t{64} << 30;
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(kClaimed)), 0);
  FaultyReads reads(path, 0, Fault::None);
  auto r = read_record_file(path, reads);
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r.value().io.size(), small.value().io.size());
  EXPECT_EQ(r.value().chunks_read, 2u);
  EXPECT_LE(reads.bytes_asked, kHeaderSize + 2 * std::uint64_t{kChunkSize});
  EXPECT_EQ(r.value().header.file_size, kClaimed);

  // Chunk 1's bytes again near the end of the hole: read, and only it.
  std::vector<unsigned char> chunk1(kChunkSize);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pread(fd, chunk1.data(), chunk1.size(), kHeaderSize + kChunkSize), static_cast<ssize_t>(kChunkSize));
  const std::uint64_t far = kHeaderSize + (kClaimed / kChunkSize - 3) * kChunkSize;
  ASSERT_EQ(::pwrite(fd, chunk1.data(), chunk1.size(), static_cast<off_t>(far)), static_cast<ssize_t>(kChunkSize));
  ::close(fd);
  FaultyReads again(path, 0, Fault::None);
  auto far_r = read_record_file(path, again);
  ASSERT_TRUE(far_r) << far_r.error();
  EXPECT_EQ(far_r.value().chunks_read, 3u);
  EXPECT_EQ(far_r.value().io.size(), small.value().io.size() + 10);
  EXPECT_LE(again.bytes_asked, kHeaderSize + 3 * std::uint64_t{kChunkSize});
}

}  // namespace
}  // namespace tt::collector
