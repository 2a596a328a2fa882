#include "escape.h"

#include <algorithm>
#include <cstdint>

#include <fmt/format.h>

namespace tt::analyzer {

namespace {

// The code point of the UTF-8 sequence at s[i] and its length; length 0 when s[i] does not
// start a valid sequence (a stray continuation byte, a truncated, overlong or surrogate
// sequence, or beyond U+10FFFF).
std::pair<char32_t, std::size_t> decode_utf8(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  std::size_t n = 0;
  char32_t cp = 0, min = 0;
  if (c < 0x80) return {c, 1};
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F, min = 0x800;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07, min = 0x10000;
  else return {0, 0};
  if (i + n > s.size()) return {0, 0};
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xC0) != 0x80) return {0, 0};
    cp = cp << 6 | (b(k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0, 0};
  return {cp, n};
}

// Characters a terminal or a renderer acts on instead of showing.
bool acts(char32_t cp) {
  return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0x2028 || cp == 0x2029;
}

}  // namespace

std::string visible(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto [cp, n] = decode_utf8(s, i);
    if (n == 0) {  // not UTF-8: the byte, shown
      o += fmt::format("\\x{:02x}", static_cast<unsigned char>(s[i]));
      ++i;
      continue;
    }
    if (!acts(cp)) o.append(s.substr(i, n));
    else if (cp == '\n') o += "\\n";
    else if (cp == '\t') o += "\\t";
    else if (cp == '\r') o += "\\r";
    else if (cp < 0x80) o += fmt::format("\\x{:02x}", static_cast<unsigned>(cp));
    else o += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
    i += n;
  }
  return o;
}

namespace {

// Whether Markdown needs a backslash before `c`, the i-th character of a text whose first
// `digits` characters are digits (`numbered`: followed by '.' or ')', a list marker).
bool md_needs_escape(char c, std::size_t i, bool numbered, std::size_t digits) {
  switch (c) {
    case '\\': case '`': case '*': case '_': case '[': case ']': case '(': case ')': case '!': case '|':
    case '~': case '$': case '{': case '}':
    case '#':  // anywhere: a heading at a line's start, an issue reference (#123) on GitHub elsewhere
      return true;
    case '-': case '+': case '=':
      return i == 0;
    default:
      return numbered && i == digits;
  }
}

}  // namespace

std::string md_text(std::string_view s) {
  const std::string v = visible(s);
  std::string o;
  o.reserve(v.size() + 8);
  // a leading quote or list marker ("> ", "- ", "+ ", "1. ", "1) ") would start a block; '#' is
  // escaped wherever it is
  std::size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  const bool numbered = digits > 0 && digits < v.size() && (v[digits] == '.' || v[digits] == ')');
  for (std::size_t i = 0; i < v.size(); ++i) {
    const char c = v[i];
    if (c == '&') o += "&amp;";
    else if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else o += md_needs_escape(c, i, numbered, digits) ? std::string{'\\', c} : std::string(1, c);
  }
  return o;
}

std::string md_code(std::string_view s, MdPlace place) {
  std::string v = visible(s);
  if (place == MdPlace::TableCell) {
    // GFM splits a row at every | not escaped by a backslash, inside code spans too; doubling
    // each backslash keeps a name's own \ from escaping the \ we put before its |.
    std::string cell;
    for (char c : v) {
      if (c == '|' || c == '\\') cell += '\\';
      cell += c;
    }
    v = std::move(cell);
  }
  std::size_t longest = 0, run = 0;
  for (char c : v) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  if (v.empty()) return "` `";
  const std::string fence(longest + 1, '`');
  const bool pad = v.front() == '`' || v.back() == '`' || v.front() == ' ' || v.back() == ' ';
  return pad ? fence + " " + v + " " + fence : fence + v + fence;
}

std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut);
}

std::string clip(std::string_view s, std::size_t max_bytes) {
  return s.size() <= max_bytes ? std::string(s) : std::string(utf8_prefix(s, max_bytes - 3)) + "...";
}

std::string html_text(std::string_view s) {
  const std::string v = visible(s);
  std::string o;
  o.reserve(v.size() + 8);
  for (char c : v) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace tt::analyzer
