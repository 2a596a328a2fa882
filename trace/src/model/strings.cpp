#include "tracetune/trace/strings.h"

#include <algorithm>

#include <cstring>

namespace tt::trace {
namespace {

// FNV-1a over 8-byte words then bytes; good enough for names and paths, and fast.
std::uint32_t hash_of(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h = (h ^ w) * 1099511628211ull;
    h ^= h >> 29;
  }
  for (; i < s.size(); ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  h ^= h >> 32;
  return static_cast<std::uint32_t>(h);
}

constexpr std::size_t kBlock = 1 << 16;

// The length of the valid UTF-8 sequence at in[i], or 0 when it is not one.
std::size_t utf8_sequence(std::string_view in, std::size_t i) {
  const auto c = static_cast<unsigned char>(in[i]);
  const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > in.size()) return 0;
  std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (std::size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(in[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  const bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  return overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : n;
}

}  // namespace

std::size_t first_invalid_utf8(std::string_view in) {
  for (std::size_t i = 0; i < in.size();) {
    if (static_cast<unsigned char>(in[i]) < 0x80) {
      ++i;
      continue;
    }
    const std::size_t n = utf8_sequence(in, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string_view::npos;
}

std::string valid_utf8(std::string_view in) {
  std::size_t i = first_invalid_utf8(in);
  if (i == std::string_view::npos) return std::string(in);
  std::string out(in.substr(0, i));
  while (i < in.size()) {
    const std::size_t n = utf8_sequence(in, i);
    if (n != 0) {
      out.append(in.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

StringTable::StringTable() {
  slots_.assign(1024, 0);
  views_.emplace_back();
  hashes_.push_back(hash_of({}));
  slots_[hashes_[0] & (slots_.size() - 1)] = 1;
}
StringTable::StringTable(StringTable&&) noexcept = default;
StringTable& StringTable::operator=(StringTable&&) noexcept = default;
StringTable::~StringTable() = default;

StringId StringTable::find(std::string_view s) const {
  const std::uint32_t h = hash_of(s);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const std::uint32_t v = slots_[i];
    if (v == 0) return kNotFound;
    if (hashes_[v - 1] == h && views_[v - 1] == s) return v - 1;
  }
}

StringId StringTable::intern(std::string_view s) {
  const std::uint32_t h = hash_of(s);
  std::size_t mask = slots_.size() - 1;
  std::size_t i = h & mask;
  for (;; i = (i + 1) & mask) {
    const std::uint32_t v = slots_[i];
    if (v == 0) break;
    if (hashes_[v - 1] == h && views_[v - 1] == s) return v - 1;
  }
  if (first_invalid_utf8(s) != std::string_view::npos) return intern(valid_utf8(s));
  // copy into the arena
  const char* stored;
  if (s.size() > kBlock / 4) {
    auto big = std::make_unique<char[]>(s.size());
    std::memcpy(big.get(), s.data(), s.size());
    stored = big.get();
    // keep the current small block as the last one so it keeps filling
    blocks_.insert(blocks_.empty() ? blocks_.end() : blocks_.end() - 1, std::move(big));
  } else {
    if (block_used_ + s.size() > block_cap_) {
      blocks_.push_back(std::make_unique<char[]>(kBlock));
      block_used_ = 0;
      block_cap_ = kBlock;
    }
    char* dst = blocks_.back().get() + block_used_;
    if (!s.empty()) std::memcpy(dst, s.data(), s.size());
    block_used_ += s.size();
    stored = dst;
  }
  const auto id = static_cast<StringId>(views_.size());
  views_.emplace_back(stored, s.size());
  hashes_.push_back(h);
  slots_[i] = id + 1;
  if (views_.size() * 2 > slots_.size()) grow();
  return id;
}

void StringTable::grow() {
  std::vector<std::uint32_t> next(slots_.size() * 2, 0);
  const std::size_t mask = next.size() - 1;
  for (std::uint32_t id = 0; id < views_.size(); ++id) {
    std::size_t i = hashes_[id] & mask;
    while (next[i] != 0) i = (i + 1) & mask;
    next[i] = id + 1;
  }
  slots_.swap(next);
}

std::size_t StringTable::bytes() const {
  std::size_t b = blocks_.size() * kBlock;  // upper bound for big strings too is fine
  b += views_.capacity() * sizeof(std::string_view) + slots_.capacity() * 4 +
       hashes_.capacity() * 4;
  return b;
}

std::vector<std::string_view> split_list(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  for (std::size_t pos = 0; pos <= text.size();) {
    const auto end = std::min(text.find(sep, pos), text.size());
    out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

AnnotationName split_annotation_name(std::string_view name) {
  auto is_word = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; };
  for (std::size_t comma = name.find(", "); comma != std::string_view::npos; comma = name.find(", ", comma + 1)) {
    std::size_t i = comma + 2, word = i;
    while (i < name.size() && is_word(name[i])) ++i;
    if (i == word || name.substr(i, 3) != " = ") continue;
    if (comma == 0) return {name, {}};
    return {name.substr(0, comma), name.substr(comma + 2)};
  }
  return {name, {}};
}

}  // namespace tt::trace
