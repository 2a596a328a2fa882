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

}  // namespace

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

}  // namespace tt::trace
