// Inside the analyzer: a byte archive for the sharded analysis' part files (shard.cpp). One field
// list per struct, `fields(ar, x)`, serves both directions: ByteWriter appends, ByteReader reads
// back with every length checked against the bytes left (a short or corrupt file makes it fail,
// never read out of bounds). Trivially copyable structs go as their bytes; part files are read on
// the machine kind that wrote them (same endianness and layout; the file's version guards layout).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tt::analyzer::archive {

// After a trivially copyable struct is read as bytes: make its bools 0 or 1 again (a bool with
// another byte is undefined to read) and say whether its values are ones a writer could have
// produced (false fails the read: a forged duration must not overflow the arithmetic that
// reads it). Overloads beside the structs that need either.
template <class T>
bool repair(T&) { return true; }

// A bool read as a byte, as any byte: 0 is false, anything else true.
inline void repair_bool(bool& b) {
  unsigned char raw = 0;
  std::memcpy(&raw, &b, 1);
  b = raw != 0;
}

template <class T>
concept Bytes = std::is_trivially_copyable_v<T> && !std::is_pointer_v<T>;

class ByteWriter {
 public:
  template <class... T>
  void operator()(const T&... v) { (put(v), ...); }

  std::string& data() { return buf_; }

 private:
  std::string buf_;

  template <Bytes T>
  void put(const T& v) { buf_.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void put(const std::string& s) {
    put(static_cast<std::uint64_t>(s.size()));
    buf_.append(s);
  }
  template <class A, class B>
    requires(!Bytes<std::pair<A, B>>)
  void put(const std::pair<A, B>& p) { put(p.first), put(p.second); }
  template <class T>
  void put(const std::vector<T>& v) {
    put(static_cast<std::uint64_t>(v.size()));
    if constexpr (Bytes<T>) buf_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    else for (const auto& x : v) put(x);
  }
  template <class K, class V>
  void put(const std::unordered_map<K, V>& m) {
    put(static_cast<std::uint64_t>(m.size()));
    for (const auto& [k, v] : m) put(k), put(v);
  }
  template <class T>
    requires(!Bytes<T>)
  void put(const T& v) { fields(*this, v); }
};

class ByteReader {
 public:
  explicit ByteReader(std::string_view data) : data_(data) {}

  template <class... T>
  void operator()(T&... v) { (get(v), ...); }

  bool ok() const { return ok_; }
  bool at_end() const { return pos_ == data_.size(); }

 private:
  std::string_view data_;
  std::size_t pos_ = 0;
  bool ok_ = true;

  bool take(void* out, std::size_t n) {
    if (!ok_ || data_.size() - pos_ < n) { ok_ = false; return false; }
    if (n) std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  // a count of items of at least `min_bytes` each that the rest of the data could hold
  std::uint64_t count(std::size_t min_bytes) {
    std::uint64_t n = 0;
    if (!take(&n, sizeof n)) return 0;
    if (n > (data_.size() - pos_) / std::max<std::size_t>(min_bytes, 1)) { ok_ = false; return 0; }
    return n;
  }
  template <Bytes T>
  void get(T& v) {
    if (take(&v, sizeof v) && !repair(v)) ok_ = false;
  }
  void get(bool& b) {
    if (take(&b, 1)) repair_bool(b);
  }
  void get(std::string& s) {
    const auto n = count(1);
    if (!ok_) return;
    s.assign(data_.data() + pos_, n);
    pos_ += n;
  }
  template <class A, class B>
    requires(!Bytes<std::pair<A, B>>)
  void get(std::pair<A, B>& p) { get(p.first), get(p.second); }
  template <class T>
  void get(std::vector<T>& v) {
    const auto n = count(Bytes<T> ? sizeof(T) : 1);
    v.clear();
    if constexpr (Bytes<T>) {
      v.resize(n);
      if (take(v.data(), n * sizeof(T)))
        for (auto& x : v)
          if (!repair(x)) ok_ = false;
    } else {
      for (std::uint64_t i = 0; i < n && ok_; ++i) get(v.emplace_back());
    }
  }
  template <class K, class V>
  void get(std::unordered_map<K, V>& m) {
    const auto n = count(sizeof(K));
    m.clear();
    for (std::uint64_t i = 0; i < n && ok_; ++i) {
      K k{};
      get(k);
      get(m[k]);
    }
  }
  template <class T>
    requires(!Bytes<T>)
  void get(T& v) { fields(*this, v); }
};

}  // namespace tt::analyzer::archive
