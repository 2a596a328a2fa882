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

TEST(AnnotationName, TheOpAndThePerCallArguments) {
  using tt::trace::split_annotation_name;
  auto split = [](std::string_view n) {
    const auto [op, args] = split_annotation_name(n);
    return std::pair<std::string_view, std::string_view>(op, args);
  };
  using P = std::pair<std::string_view, std::string_view>;
  EXPECT_EQ(split("aten::mm, seq = 12, sizes = [[2, 3], [3, 4]]"), P("aten::mm", "seq = 12, sizes = [[2, 3], [3, 4]]"));
  EXPECT_EQ(split("aten::empty_strided, op_id = 999730"), P("aten::empty_strided", "op_id = 999730"));
  EXPECT_EQ(split("aten::add_, seq = 3, op_id = 5, sizes = [[], []], input_op_ids = [1, 2]"),
            P("aten::add_", "seq = 3, op_id = 5, sizes = [[], []], input_op_ids = [1, 2]"));
  EXPECT_EQ(split("train_step"), P("train_step", ""));
  EXPECT_EQ(split("load, then train"), P("load, then train", ""));             // a comma alone is not an argument
  EXPECT_EQ(split("a, b, x = 1"), P("a, b", "x = 1"));                        // the first ", word = " splits
  EXPECT_EQ(split(", seq = 1"), P(", seq = 1", ""));                          // nothing before: kept whole
  EXPECT_EQ(split("step, x= 1"), P("step, x= 1", ""));                        // not the " = " form
  EXPECT_EQ(split(""), P("", ""));
}

// Names reach the trace from files anyone can craft (nsys exports, record files, tampered DBs):
// every interned string is valid UTF-8, invalid bytes becoming U+FFFD one by one.
TEST(Utf8, ValidTextIsUnchanged) {
  for (std::string_view s : {"", "plain", "é", "日本語", "\xF0\x9F\x98\x80 emoji", "aten::mm"}) {
    EXPECT_EQ(tt::trace::first_invalid_utf8(s), std::string_view::npos) << s;
    EXPECT_EQ(tt::trace::valid_utf8(s), s);
  }
}

TEST(Utf8, InvalidBytesBecomeReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(tt::trace::valid_utf8("a\xFF" "b"), "a" + r + "b");
  EXPECT_EQ(tt::trace::first_invalid_utf8("ab\xC3"), 2u);                         // cut short
  EXPECT_EQ(tt::trace::valid_utf8("\xC0\xAF"), r + r);                            // overlong '/'
  EXPECT_EQ(tt::trace::valid_utf8("\xED\xA0\x80"), r + r + r);                    // a surrogate
  EXPECT_EQ(tt::trace::valid_utf8("\xF4\x90\x80\x80"), r + r + r + r);            // past U+10FFFF
  EXPECT_EQ(tt::trace::valid_utf8("ok\xE6\x97" "x"), "ok" + r + r + "x");         // a truncated sequence mid-text
}

TEST(StringTable, InternsInvalidUtf8AsItsValidForm) {
  tt::trace::StringTable t;
  const auto bad = t.intern("host\xFF");
  EXPECT_EQ(t.get(bad), "host\xEF\xBF\xBD");
  EXPECT_EQ(t.intern("host\xEF\xBF\xBD"), bad);  // the same string as its valid form
  EXPECT_EQ(t.intern("host\xFF"), bad);
}
