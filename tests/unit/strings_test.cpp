#include <gtest/gtest.h>

#include <string>

#include "tracetune/trace/strings.h"

using tt::trace::StringTable;

TEST(StringTable, EmptyStringIsIdZero) {
  StringTable t;
  EXPECT_EQ(t.intern(""), 0u);
  EXPECT_EQ(t.get(0), "");
}

TEST(StringTable, InternIsIdempotentAndStable) {
  StringTable t;
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < 20000; ++i) ids.push_back(t.intern("name_" + std::to_string(i)));
  for (int i = 0; i < 20000; ++i) {
    EXPECT_EQ(t.intern("name_" + std::to_string(i)), ids[i]);
    EXPECT_EQ(t.get(ids[i]), "name_" + std::to_string(i));
  }
  EXPECT_EQ(t.size(), 20001u);
  EXPECT_EQ(t.find("missing"), StringTable::kNotFound);
}

TEST(StringTable, HugeStringsSurviveLaterSmallOnes) {
  StringTable t;
  const std::string big(1 << 20, 'x');
  const auto a = t.intern("small");
  const auto b = t.intern(big);
  const auto c = t.intern("after");
  EXPECT_EQ(t.get(a), "small");
  EXPECT_EQ(t.get(b), big);
  EXPECT_EQ(t.get(c), "after");
}

TEST(SplitList, EveryItemBetweenSeparators) {
  using tt::trace::split_list;
  EXPECT_EQ(split_list("a,b,,c"), (std::vector<std::string_view>{"a", "b", "", "c"}));
  EXPECT_EQ(split_list(""), (std::vector<std::string_view>{""}));
  EXPECT_EQ(split_list("x"), (std::vector<std::string_view>{"x"}));
  EXPECT_EQ(split_list("1:2", ':'), (std::vector<std::string_view>{"1", "2"}));
}
