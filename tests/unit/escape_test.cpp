// Trace-derived strings in reports (analyzer/src/report/escape.h): shown, never acted on.
#include <gtest/gtest.h>

#include <string>

#include "escape.h"

using namespace tt::analyzer;
using namespace std::string_literals;

TEST(Visible, ControlsBidiAndBadBytesBecomeEscapes) {
  EXPECT_EQ(visible("aten::mm ÄÖ 日本 ✓"), "aten::mm ÄÖ 日本 ✓");  // ordinary names unchanged
  EXPECT_EQ(visible("a\x1b[31mb"), "a\\x1b[31mb");
  EXPECT_EQ(visible("l1\nl2\tx\r"), "l1\\nl2\\tx\\r");
  EXPECT_EQ(visible("nul\0end"s), "nul\\x00end");
  EXPECT_EQ(visible("\x7f"), "\\x7f");
  EXPECT_EQ(visible("csi\xc2\x9b" "31m"), "csi\\u009b31m");           // C1 CSI as UTF-8
  EXPECT_EQ(visible("\xe2\x80\xae" "evil"), "\\u202eevil");            // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(visible("\xe2\x81\xa6" "x\xe2\x81\xa9"), "\\u2066x\\u2069");  // isolates
  EXPECT_EQ(visible("\xe2\x80\xa8"), "\\u2028");
  EXPECT_EQ(visible("lone\x9b"), "lone\\x9b");                          // 8-bit CSI, not UTF-8
  EXPECT_EQ(visible("\xc0\xaf"), "\\xc0\\xaf");                         // overlong '/'
  EXPECT_EQ(visible("\xed\xa0\x80"), "\\xed\\xa0\\x80");                // a surrogate
  EXPECT_EQ(visible("cut\xe2\x80"), "cut\\xe2\\x80");                   // truncated sequence
}

TEST(MdText, MarkupIsEscapedAndReadsAsTheOriginal) {
  EXPECT_EQ(md_text("aten::mm"), "aten::mm");
  EXPECT_EQ(md_text("<script>alert(1)</script>"), "&lt;script&gt;alert\\(1\\)&lt;/script&gt;");
  EXPECT_EQ(md_text("![x](http://e/p.png)"), "\\!\\[x\\]\\(http://e/p.png\\)");
  EXPECT_EQ(md_text("a|b`c*d_e~f\\g"), "a\\|b\\`c\\*d\\_e\\~f\\\\g");
  EXPECT_EQ(md_text("&#60;"), "&amp;\\#60;");
  EXPECT_EQ(md_text("# heading"), "\\# heading");
  EXPECT_EQ(md_text("- item"), "\\- item");
  EXPECT_EQ(md_text("12. item"), "12\\. item");
  EXPECT_EQ(md_text("a-b #3"), "a-b \\#3");  // only a leading - starts a block; # is escaped anywhere
  EXPECT_EQ(md_text("x\n# h"), "x\\\\n\\# h");  // no new line, so no heading; the # escaped all the same
  EXPECT_EQ(md_text("> q"), "&gt; q");
}

TEST(MdCode, FenceOutgrowsTheBackticksInside) {
  EXPECT_EQ(md_code("aten::mm", MdPlace::Inline), "`aten::mm`");
  EXPECT_EQ(md_code("a`b", MdPlace::Inline), "``a`b``");
  EXPECT_EQ(md_code("x``y```", MdPlace::Inline), "```` x``y``` ````");
  EXPECT_EQ(md_code("", MdPlace::Inline), "` `");
  EXPECT_EQ(md_code("<img src=x>", MdPlace::Inline), "`<img src=x>`");  // inert inside a code span
  EXPECT_EQ(md_code("a\nb\x1b", MdPlace::Inline), "`a\\nb\\x1b`");
  EXPECT_EQ(md_code("a|b", MdPlace::Inline), "`a|b`");
  EXPECT_EQ(md_code("a|b", MdPlace::TableCell), "`a\\|b`");
  // a name's own backslash cannot pair with the one before its pipe: \| -> \\\| (both escaped)
  EXPECT_EQ(md_code("a\\|b", MdPlace::TableCell), "`a\\\\\\|b`");
}

TEST(HtmlText, EntitiesAfterVisible) {
  EXPECT_EQ(html_text("<b a='1' b=\"2\">&"), "&lt;b a=&#39;1&#39; b=&quot;2&quot;&gt;&amp;");
  EXPECT_EQ(html_text("\xe2\x80\xae" "x\0"s), "\\u202ex\\x00");
}

TEST(Utf8Prefix, CutsOnWholeCharacters) {
  EXPECT_EQ(utf8_prefix("abc", 5), "abc");
  EXPECT_EQ(utf8_prefix("ab日本", 4), "ab");  // 日 is 3 bytes: not cut in two
  EXPECT_EQ(utf8_prefix("ab日本", 5), "ab日");
}

TEST(Clip, ThreeDotsInPlaceOfTheCut) {
  EXPECT_EQ(clip("abcdef", 6), "abcdef");
  EXPECT_EQ(clip("abcdefg", 6), "abc...");
  EXPECT_EQ(clip("ab日本語", 7), "ab...");   // the 3 bytes of 日 are not cut in two
  EXPECT_EQ(clip("ab日本語", 8), "ab日...");
}
