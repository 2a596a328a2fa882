// The strict number parsers behind every numeric flag and environment variable (units.h).
#include <gtest/gtest.h>

#include <cstdlib>

#include "tracetune/trace/file_io.h"
#include "tracetune/trace/units.h"

using namespace tt::trace;

TEST(ParseUnsigned, WholeTextInRangeOrAnErrorNamingTheFlag) {
  EXPECT_EQ(parse_unsigned("0", "--x").value(), 0u);
  EXPECT_EQ(parse_unsigned("18446744073709551615", "--x").value(), UINT64_MAX);
  // issue 32 (11): 4294967297 was read as 1 through a 32-bit scanf
  for (const char* bad : {"4294967297", "18446744073709551616", "-1", "+1", " 1", "1 ", "1x", "", "0x10", "1e3"}) {
    const auto r = parse_unsigned(bad, "--shard", 4294967295u);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().rfind("--shard: '", 0), 0u) << r.error();
  }
}

TEST(ParseFinite, RefusesNanInfAndTrailingText) {
  EXPECT_DOUBLE_EQ(parse_finite("1.5", "--x").value(), 1.5);
  EXPECT_DOUBLE_EQ(parse_finite("-2e3", "--x").value(), -2000);
  for (const char* bad : {"nan", "NaN", "inf", "-inf", "infinity", "1e400", "1.5s", "", " 1", "0x1p3"}) {
    const auto r = parse_finite(bad, "--trial-timeout");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("--trial-timeout"), std::string::npos);
    EXPECT_NE(r.error().find("finite"), std::string::npos);
  }
}

TEST(ParseByteCount, SuffixesAndOverflow) {
  EXPECT_EQ(parse_byte_count("0", "V").value(), 0u);
  EXPECT_EQ(parse_byte_count("64K", "V").value(), 64u << 10);
  EXPECT_EQ(parse_byte_count("512m", "V").value(), 512ull << 20);
  EXPECT_EQ(parse_byte_count("8G", "V").value(), 8ull << 30);
  for (const char* bad : {"abc", "12X", "K", "-1M", "17179869184G", "1.5G", "", "1 G"}) {
    const auto r = parse_byte_count(bad, "TRACETUNE_MAX_INFLATE");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().rfind("TRACETUNE_MAX_INFLATE: '", 0), 0u) << r.error();
  }
}

// A control character in a malformed value is not echoed raw into the one-line message.
TEST(ParseByteCount, MessageStaysOneLine) {
  const auto r = parse_byte_count("1\n\x1b[2J", "V");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().find('\n'), std::string::npos);
  EXPECT_EQ(r.error().find('\x1b'), std::string::npos);
}

TEST(CheckEnvironment, NamesAMalformedSizeVariable) {
  ::unsetenv(kMaxInflateVariable);
  ::setenv(kStreamFromBytesVariable, "abc", 1);
  auto st = check_environment();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find(kStreamFromBytesVariable), std::string::npos) << st.error();
  ::setenv(kStreamFromBytesVariable, "0", 1);  // 0: always stream, a valid value
  EXPECT_TRUE(check_environment().ok());
  ::setenv(kMaxInflateVariable, "0", 1);
  st = check_environment();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find(kMaxInflateVariable), std::string::npos) << st.error();
  ::unsetenv(kMaxInflateVariable);
  ::unsetenv(kStreamFromBytesVariable);
  EXPECT_TRUE(check_environment().ok());
}
