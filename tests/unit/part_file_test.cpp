// Part files of the sharded analysis (shard.cpp) as input: every single-bit flip is refused
// (checksum), parts of another job at the same path are refused (identity), and forged rank
// entries (a rank twice, a rank of INT32_MAX) are refused behind a valid checksum.
#include "tracetune/analyzer/shard.h"

#include "tracetune/analyzer/rules.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string_view>
#include <string>
#include <vector>

#include "temp_dir.h"

namespace tt::analyzer {
namespace {

using tt::testing::TempDir;
namespace fs = std::filesystem;

const fs::path kTwoRanks = fs::path(TT_TEST_DATA_DIR) / "kineto/two_ranks";

fs::path shard_part(const fs::path& input, Shard s, const fs::path& out) {
  auto r = analyze_shard(input, s, Options{}, "", out);
  EXPECT_TRUE(r) << (r ? "" : r.error());
  return out;
}

std::vector<unsigned char> read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_bytes(const fs::path& p, const std::vector<unsigned char>& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

Result<Analysis> combine(std::vector<fs::path> parts) { return combine_shards(parts, 1); }

TEST(PartFile, EverySingleBitFlipIsRefused) {
  TempDir dir;
  const fs::path part = shard_part(kTwoRanks, {0, 1}, dir.path() / "p.ttpart");
  auto clean = combine({part});
  ASSERT_TRUE(clean) << clean.error();
  const std::vector<unsigned char> bytes = read_bytes(part);
  ASSERT_GT(bytes.size(), 1000u);
  const int fd = ::open(part.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  std::size_t accepted = 0;
  std::string first;
  for (std::size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      const unsigned char flipped = bytes[i] ^ static_cast<unsigned char>(1u << bit);
      ASSERT_EQ(::pwrite(fd, &flipped, 1, static_cast<off_t>(i)), 1);
      auto r = combine({part});
      if (r) {
        ++accepted;
        if (first.empty()) first = "byte " + std::to_string(i) + " bit " + std::to_string(bit);
      } else {
        EXPECT_EQ(r.error().find('\n'), std::string::npos) << r.error();
      }
      ASSERT_EQ(::pwrite(fd, &bytes[i], 1, static_cast<off_t>(i)), 1);
    }
  ::close(fd);
  EXPECT_EQ(accepted, 0u) << "of " << bytes.size() * 8 << " flips; the first: " << first;
  EXPECT_TRUE(combine({part}));
}

// Two jobs traced one after the other into the same directory: shard 0 ran on the first,
// shard 1 on the second. Their paths, shard counts and options agree; their contents do not.
TEST(PartFile, PartsOfAnotherJobAtTheSamePathAreRefused) {
  TempDir dir;
  const fs::path job = dir.path() / "job";
  fs::copy(kTwoRanks, job);
  const fs::path p0 = shard_part(job, {0, 2}, dir.path() / "p0.ttpart");
  {
    std::ofstream f(job / "rank-0.json", std::ios::app);
    f << "\n";  // the same trace, and yet another file: a job that ran again
  }
  const fs::path p1 = shard_part(job, {1, 2}, dir.path() / "p1.ttpart");
  auto r = combine({p0, p1});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().find("different jobs"), std::string::npos) << r.error();

  const fs::path p0_again = shard_part(job, {0, 2}, dir.path() / "p0b.ttpart");
  EXPECT_TRUE(combine({p0_again, p1}));
}

// Rank entries forged behind a valid checksum: RankMetrics starts with rank (int32),
// rank_from_trace, process (uint32), pid (int64), then the label's length and text.
TEST(PartFile, ForgedRanksAreRefused) {
  TempDir dir;
  const fs::path part = shard_part(kTwoRanks, {0, 1}, dir.path() / "p.ttpart");
  const std::vector<unsigned char> bytes = read_bytes(part);
  const std::string text(bytes.begin(), bytes.end());
  const std::size_t label = text.find("rank 1 (pid");
  ASSERT_NE(label, std::string::npos);
  const std::size_t rank_at = label - 8 - 8 - 4 - 1 - 4;
  std::int32_t rank = -1;
  std::memcpy(&rank, bytes.data() + rank_at, sizeof rank);
  ASSERT_EQ(rank, 1);
  ASSERT_EQ(bytes[rank_at + 4], 1);  // rank_from_trace

  const auto forged = [&](std::int32_t value) {
    std::vector<unsigned char> b = bytes;
    std::memcpy(b.data() + rank_at, &value, sizeof value);
    EXPECT_TRUE(reseal_part(b));
    const fs::path p = dir.path() / ("forged-" + std::to_string(value) + ".ttpart");
    write_bytes(p, b);
    return combine({p});
  };
  auto resealed = forged(1);  // unchanged bytes, resealed: the reseal itself is sound
  EXPECT_TRUE(resealed) << resealed.error();
  auto twice = forged(0);
  ASSERT_FALSE(twice);
  EXPECT_NE(twice.error().find("appears twice"), std::string::npos) << twice.error();
  auto huge = forged(INT32_MAX);
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().find("out of range"), std::string::npos) << huge.error();
  auto negative = forged(-5);
  EXPECT_FALSE(negative);
}

// Behind a valid checksum, a part whose numbers are forged (here: INT64_MAX written at every
// 4-byte offset in turn) is refused or combined, never overflowing the arithmetic that reads it
// (UBSan aborts the sanitizer build on a signed overflow; before steps' durations were checked
// on reading, the CPU-bound rule's sum of a step's waits overflowed).
TEST(PartFile, ForgedNumbersNeverOverflow) {
  TempDir dir;
  const fs::path part = shard_part(kTwoRanks, {0, 1}, dir.path() / "p.ttpart");
  const std::vector<unsigned char> bytes = read_bytes(part);
  const fs::path p = dir.path() / "forged.ttpart";
  std::size_t combined = 0;
  for (std::size_t at = 32; at + 8 <= bytes.size(); at += 4) {
    std::vector<unsigned char> b = bytes;
    const std::int64_t huge = INT64_MAX;
    std::memcpy(b.data() + at, &huge, sizeof huge);
    if (!reseal_part(b)) continue;
    write_bytes(p, b);
    combined += combine({p}) ? 1 : 0;
  }
  EXPECT_GT(combined, 0u);  // some offsets hold values any number is fine for (names' bytes)
}

// A part that claims a graph past 2^64 (offset + size wraps) or an index of gigabytes held in
// a sparse file is refused before anything of that size is allocated.
TEST(PartFile, LengthsThatWrapOrClaimAbsentBytesAreRefused) {
  TempDir dir;
  const fs::path part = shard_part(kTwoRanks, {0, 1}, dir.path() / "p.ttpart");
  std::vector<unsigned char> bytes = read_bytes(part);
  // The header: magic (8), index_at (8), index_size (8), checksum (4), zero (4).
  std::uint64_t index_at = 0;
  std::memcpy(&index_at, bytes.data() + 8, 8);
  ASSERT_GT(index_at, 32u);
  ASSERT_LT(index_at, bytes.size());

  // The index ends with the last rank's graph offset and size: make their sum wrap to 8.
  {
    std::vector<unsigned char> b = bytes;
    const std::uint64_t offset = UINT64_MAX - 7, size = 16;
    std::memcpy(b.data() + b.size() - 16, &offset, 8);
    std::memcpy(b.data() + b.size() - 8, &size, 8);
    ASSERT_TRUE(reseal_part(b));
    const fs::path p = dir.path() / "wrap.ttpart";
    write_bytes(p, b);
    auto r = combine({p});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find("graph offsets"), std::string::npos) << r.error();
  }
  // A sparse 8 GB part: the index "starts" at byte 32 and runs over 8 GB of hole.
  {
    std::vector<unsigned char> b(bytes.begin(), bytes.begin() + 32);
    const std::uint64_t big = std::uint64_t{8} << 30, at = 32, size = big - at;
    std::memcpy(b.data() + 8, &at, 8);
    std::memcpy(b.data() + 16, &size, 8);
    const fs::path p = dir.path() / "sparse.ttpart";
    write_bytes(p, b);
    ASSERT_EQ(::truncate(p.c_str(), static_cast<off_t>(big)), 0);
    auto r = combine({p});
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().find("holes"), std::string::npos) << r.error();
  }
}

// A part with Python stack samples (a shard of samples/cpu_bound recorded: the fuzz seed): the
// combine attributes the CPU-bound finding to hash_features() from the part's samples alone,
// and forged sample tables (each 4-byte word of them set to a huge index in turn) are refused or
// combined, never read out of bounds (the asan preset runs this too).
TEST(PartFile, PythonSamplesAreCombinedAndForgedOnesRefused) {
  const fs::path seed = fs::path(TT_TEST_DATA_DIR) / "../fuzz/corpus/part_file/cpu_bound_samples.ttpart";
  auto clean = combine({seed});
  ASSERT_TRUE(clean) << clean.error();
  const auto cpu = std::find_if(clean->findings.begin(), clean->findings.end(),
                                [](const Finding& f) { return f.category == Category::CpuBound; });
  ASSERT_NE(cpu, clean->findings.end());
  ASSERT_FALSE(cpu->hot.top.empty());
  EXPECT_EQ(cpu->hot.top[0].function, "hash_features");
  TempDir dir;
  const std::vector<unsigned char> bytes = read_bytes(seed);
  // the samples' tables: from just before their first string to the index's end (but the
  // first 2 KiB of the sample columns, whose words are all alike, and the graph's location)
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  const std::size_t strings = text.find("hash_features");
  ASSERT_NE(strings, std::string_view::npos);
  std::vector<std::size_t> words;
  for (std::size_t at = strings - 128; at < strings + 2048; at += 4) words.push_back(at);
  for (std::size_t at = bytes.size() - 512; at + 16 < bytes.size(); at += 4) words.push_back(at);
  const fs::path p = dir.path() / "forged.ttpart";
  std::size_t refused = 0;
  for (std::size_t at : words) {
    std::vector<unsigned char> b = bytes;
    const std::uint32_t huge = 0x7fffffffu;
    std::memcpy(b.data() + at, &huge, sizeof huge);
    ASSERT_TRUE(reseal_part(b));
    write_bytes(p, b);
    auto r = combine({p});
    refused += !r && r.error().find("corrupt Python stack samples") != std::string::npos;
  }
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace tt::analyzer
