// The part files' byte archive (analyzer/src/shard/archive.h): one field list both ways, and every
// read checked against the bytes left.
#include "archive.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tt::analyzer::archive {
namespace {

struct Pod {
  std::int64_t a = 0;
  double b = 0;
  bool operator==(const Pod&) const = default;
};

struct Sample {
  std::string name;
  std::vector<Pod> pods;
  std::vector<std::string> words;
  std::vector<std::pair<std::string, double>> by_kind;
  std::unordered_map<std::uint32_t, std::vector<Pod>> per_track;
  std::int32_t tail = 0;
  bool operator==(const Sample&) const = default;
};

template <class A, class T>
void fields(A& a, T& s) requires std::is_same_v<std::remove_const_t<T>, Sample> {
  a(s.name, s.pods, s.words, s.by_kind, s.per_track, s.tail);
}

Sample sample() {
  Sample s;
  s.name = "rank 3 (pid 12)";
  s.pods = {{1, 2.5}, {-7, 1e300}};
  s.words = {"", "ncclKernel_AllReduce", std::string(300, 'x')};
  s.by_kind = {{"gemm", 1.5}, {"conv", 0}};
  s.per_track[7] = {{3, 4}};
  s.per_track[9] = {};
  s.tail = -42;
  return s;
}

std::string bytes_of(const Sample& s) {
  ByteWriter w;
  w(s);
  return w.data();
}

TEST(Archive, RoundTrip) {
  const Sample s = sample();
  const std::string bytes = bytes_of(s);
  ByteReader r(bytes);
  Sample back;
  r(back);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.at_end());
  EXPECT_EQ(back, s);
}

TEST(Archive, EveryTruncationFails) {
  const std::string bytes = bytes_of(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    ByteReader r(std::string_view(bytes).substr(0, n));
    Sample back;
    r(back);
    EXPECT_FALSE(r.ok()) << "cut at " << n;
  }
}

TEST(Archive, HugeCountsAreRefusedBeforeAllocating) {
  // a vector claiming 2^60 items in a 16-byte input
  std::string bytes(8, '\0');
  const std::uint64_t huge = 1ull << 60;
  std::memcpy(bytes.data(), &huge, sizeof huge);
  bytes += std::string(8, '\0');
  ByteReader r(bytes);
  std::vector<Pod> v;
  r(v);
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(v.empty());
  ByteReader r2(bytes);
  std::vector<std::string> words;
  r2(words);
  EXPECT_FALSE(r2.ok());
}

}  // namespace
}  // namespace tt::analyzer::archive
