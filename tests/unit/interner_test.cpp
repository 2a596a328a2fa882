// The collector's string interner (collector/preload/interner.h), the deduplicating store
// behind the String records: what is remembered is found by text and by id, past growth of
// its table, while another thread adds strings; a reset empties it.
#include "interner.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace tt::collector {
namespace {

std::uint32_t find(Interner& in, const std::string& s) { return lookup(in, s.data(), s.size(), hash_bytes(s.data(), s.size())); }

void add(Interner& in, const std::string& s, std::uint32_t id) {
  in.lock.lock();
  remember(in, s.data(), s.size(), hash_bytes(s.data(), s.size()), id);
  in.lock.unlock();
}

// Each test owns a zero-initialised interner, as the collector's constinit ones are.
struct InternerTest : ::testing::Test {
  Interner in;
  ~InternerTest() override { reset_interner(in); }
};

TEST_F(InternerTest, RememberedStringsAreFoundByTextAndById) {
  EXPECT_EQ(find(in, "/data/train/0001.jpg"), 0u);  // empty
  add(in, "/data/train/0001.jpg", 1);
  add(in, "aten::mm", 2);
  EXPECT_EQ(find(in, "/data/train/0001.jpg"), 1u);
  EXPECT_EQ(find(in, "aten::mm"), 2u);
  EXPECT_EQ(find(in, "aten::m"), 0u);  // a prefix is another string
  const Entry* e = find_id(in, 2);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(std::string(e->bytes(), e->len), "aten::mm");
  EXPECT_EQ(find_id(in, 3), nullptr);
  EXPECT_EQ(find_id(in, 0), nullptr);
}

TEST_F(InternerTest, HashesAreNeverZero) {
  for (const std::string& s : {std::string(), std::string("a"), std::string("12345678"), std::string("123456789"), std::string(1000, 'x')})
    EXPECT_NE(hash_bytes(s.data(), s.size()), 0u) << s.size();
}

// More strings than the first table holds (4096 slots at load 0.7): the table doubles and
// every string is still found, by text and by id.
TEST_F(InternerTest, EveryStringSurvivesTheTableGrowing) {
  constexpr std::uint32_t kN = 20000;
  for (std::uint32_t i = 1; i <= kN; ++i) add(in, "/data/shard-" + std::to_string(i) + ".tar", i);
  for (std::uint32_t i = 1; i <= kN; ++i) {
    const std::string s = "/data/shard-" + std::to_string(i) + ".tar";
    ASSERT_EQ(find(in, s), i) << s;
    const Entry* e = find_id(in, i);
    ASSERT_NE(e, nullptr) << i;
    ASSERT_EQ(std::string(e->bytes(), e->len), s);
  }
}

// Lookups are lock-free: readers on other threads keep finding what was remembered before
// they started while a writer adds (and grows the table) under the lock.
TEST_F(InternerTest, LookupsWhileAnotherThreadRemembers) {
  for (std::uint32_t i = 1; i <= 100; ++i) add(in, "early-" + std::to_string(i), i);
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> misses{0};
  std::vector<std::thread> readers;
  for (int r = 0; r < 3; ++r)
    readers.emplace_back([&] {
      while (!done.load()) {
        for (std::uint32_t i = 1; i <= 100; ++i)
          if (find(in, "early-" + std::to_string(i)) != i) misses.fetch_add(1);
      }
    });
  for (std::uint32_t i = 101; i <= 30000; ++i) add(in, "late-" + std::to_string(i), i);
  done.store(true);
  for (auto& t : readers) t.join();
  EXPECT_EQ(misses.load(), 0u);
  EXPECT_EQ(find(in, "late-30000"), 30000u);
}

TEST_F(InternerTest, ResetEmptiesIt) {
  add(in, "kept before the fork", 1);
  reset_interner(in);
  EXPECT_EQ(find(in, "kept before the fork"), 0u);
  EXPECT_EQ(find_id(in, 1), nullptr);
  EXPECT_EQ(in.next_id, 1u);
  add(in, "after", 1);  // usable again
  EXPECT_EQ(find(in, "after"), 1u);
}

}  // namespace
}  // namespace tt::collector
