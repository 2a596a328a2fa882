// PackedColumn (the model's durations and small-id columns): every value reads back exactly
// whatever width the cells have, a value no 4-byte cell holds keeps its slot through copies and
// permutations, and the cells are as narrow as the values allow.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "tracetune/trace/model.h"

using namespace tt::trace;

namespace {

template <class T>
std::vector<T> values_of(const PackedColumn<T>& c) {
  return std::vector<T>(c.begin(), c.end());
}

}  // namespace

TEST(PackedColumn, WidensAsValuesGrowAndKeepsEveryValue) {
  PackedColumn<Ns> c;
  std::vector<Ns> want;
  auto add = [&](Ns v) { c.push_back(v); want.push_back(v); };
  add(0);
  add(255);
  EXPECT_EQ(c.width(), 1u);
  add(256);
  EXPECT_EQ(c.width(), 2u);
  add(65'536);
  EXPECT_EQ(c.width(), 4u);
  add(0x7fffffff);                          // the largest a cell holds
  add(0x80000000LL);                        // 2^31 ns: a slot
  add(-5);                                  // negative: a slot
  add(std::numeric_limits<Ns>::max());      // a slot
  add(std::numeric_limits<Ns>::min());      // a slot
  add(17);
  EXPECT_EQ(values_of(c), want);
  EXPECT_EQ(c.heap_bytes() >= c.size() * 4 + 4 * sizeof(Ns), true);
}

TEST(PackedColumn, UnsignedIdsStoreNoneAndZeroInAByte) {
  PackedColumn<std::uint32_t> c{kNone, 0, 254, kNone};
  EXPECT_EQ(c.width(), 1u);  // kNone + 1 wraps to 0, 254 + 1 is 255
  c.push_back(255);          // 256: two bytes
  EXPECT_EQ(c.width(), 2u);
  c.push_back(0xfffffffeu);  // + 1 is 2^32 - 1: above a cell's range, a slot
  c.push_back(0x7ffffffeu);  // + 1 is 2^31 - 1: the largest a cell holds
  EXPECT_EQ(c.width(), 4u);
  EXPECT_EQ(values_of(c), (std::vector<std::uint32_t>{kNone, 0, 254, kNone, 255, 0xfffffffeu, 0x7ffffffeu}));
  PackedColumn<std::int32_t> r{0, -1, std::numeric_limits<std::int32_t>::min(), 300};
  EXPECT_EQ(values_of(r), (std::vector<std::int32_t>{0, -1, std::numeric_limits<std::int32_t>::min(), 300}));
}

TEST(PackedColumn, TrySetRefusesWhatNeedsAWiderCellAndSetTakesIt) {
  PackedColumn<Ns> c;
  c.resize(4);
  EXPECT_EQ(c.width(), 1u);
  EXPECT_TRUE(c.try_set(1, 200));
  EXPECT_FALSE(c.try_set(2, 1'000));        // needs 2 bytes
  EXPECT_FALSE(c.try_set(3, 5'000'000'000));  // needs a slot
  EXPECT_EQ(values_of(c), (std::vector<Ns>{0, 200, 0, 0}));
  c.set(2, 1'000);
  c.set(3, 5'000'000'000);
  EXPECT_EQ(values_of(c), (std::vector<Ns>{0, 200, 1'000, 5'000'000'000}));
  c.widen(4);
  EXPECT_FALSE(c.try_set(0, -1));           // a slot even in 4-byte cells
  EXPECT_TRUE(c.try_set(0, 0x7fffffff));
  EXPECT_EQ(c[0], 0x7fffffff);
}

TEST(PackedColumn, PermuteAndCopyWithinCarryTheSlots) {
  const std::vector<Ns> v{3, 9'000'000'000, 70'000, -2, 0};
  PackedColumn<Ns> c(std::initializer_list<Ns>{3, 9'000'000'000, 70'000, -2, 0});
  c.permute({4, 3, 2, 1, 0});
  EXPECT_EQ(values_of(c), (std::vector<Ns>{0, -2, 70'000, 9'000'000'000, 3}));
  c.copy_within(1, 3, 0);  // rows 1..3 down to 0..2
  c.resize(3);
  EXPECT_EQ(values_of(c), (std::vector<Ns>{-2, 70'000, 9'000'000'000}));
}

TEST(PackedColumn, ShrinkToFitNarrowsAndDropsUnusedSlots) {
  PackedColumn<Ns> c(std::initializer_list<Ns>{1, 2, 9'000'000'000, 4});
  EXPECT_EQ(c.width(), 4u);
  c.set(2, 3);  // its slot is no longer used
  c.shrink_to_fit();
  EXPECT_EQ(c.width(), 1u);
  EXPECT_EQ(values_of(c), (std::vector<Ns>{1, 2, 3, 4}));
  EXPECT_EQ(c.heap_bytes(), 4u);
  PackedColumn<Ns> d(std::initializer_list<Ns>{1, -7, 70'000});
  d.set(1, -8);  // the old slot unused, a new one taken
  d.shrink_to_fit();
  EXPECT_EQ(d.width(), 4u);
  EXPECT_EQ(values_of(d), (std::vector<Ns>{1, -8, 70'000}));
  EXPECT_EQ(d.heap_bytes(), 3 * 4 + sizeof(Ns));  // one slot left
}
