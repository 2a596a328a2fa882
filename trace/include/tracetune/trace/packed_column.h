// A column of integers kept in the fewest bytes its values need: 1, 2 or 4 bytes a row, the
// same for every row of the column, widened when a value that does not fit is stored. A value
// that fits in no 4-byte cell (a 64-bit duration of 2^31 ns or more, a negative one) is kept
// whole in a side vector and its row's cell holds the slot's number (top bit set), so a cell is
// copied or permuted with its row whatever it holds, and every value reads back exactly.
//
// Unsigned 32-bit columns store value + 1 (wrapping), so that kNone (0xffffffff, "unknown")
// and small ids both fit a byte. Reads return values (there are no references into the
// column): write with push_back or set. Concurrent writers are safe only through try_set on
// distinct rows, which never widens (see its comment).
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <vector>

namespace tt::trace {

template <class T>
class PackedColumn {
  static_assert(std::is_integral_v<T> && sizeof(T) <= 8 && !(std::is_unsigned_v<T> && sizeof(T) == 8),
                "PackedColumn holds signed integers or unsigned ones of up to 32 bits");

 public:
  using value_type = T;

  // Reads rows by value: enough for std::copy, range-for and assign/insert from another column.
  class const_iterator {
   public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = T;
    const_iterator() = default;
    const_iterator(const PackedColumn* c, std::size_t i) : c_(c), i_(i) {}
    T operator*() const { return (*c_)[i_]; }
    T operator[](difference_type k) const { return (*c_)[i_ + static_cast<std::size_t>(k)]; }
    const_iterator& operator++() { ++i_; return *this; }
    const_iterator operator++(int) { auto o = *this; ++i_; return o; }
    const_iterator& operator--() { --i_; return *this; }
    const_iterator& operator+=(difference_type k) { i_ += static_cast<std::size_t>(k); return *this; }
    const_iterator& operator-=(difference_type k) { i_ -= static_cast<std::size_t>(k); return *this; }
    const_iterator operator+(difference_type k) const { return {c_, i_ + static_cast<std::size_t>(k)}; }
    const_iterator operator-(difference_type k) const { return {c_, i_ - static_cast<std::size_t>(k)}; }
    difference_type operator-(const_iterator o) const {
      return static_cast<difference_type>(i_) - static_cast<difference_type>(o.i_);
    }
    bool operator==(const const_iterator& o) const { return i_ == o.i_; }
    auto operator<=>(const const_iterator& o) const { return i_ <=> o.i_; }

   private:
    const PackedColumn* c_ = nullptr;
    std::size_t i_ = 0;
  };

  PackedColumn() = default;
  PackedColumn(std::initializer_list<T> values) { assign(values.begin(), values.end()); }

  std::size_t size() const { return width_ == 1 ? b1_.size() : width_ == 2 ? b2_.size() : b4_.size(); }
  bool empty() const { return size() == 0; }
  // Bytes a row's cell takes now: 1, 2 or 4.
  unsigned width() const { return width_; }

  T operator[](std::size_t i) const {
    if (width_ == 1) return decode(b1_[i]);
    if (width_ == 2) return decode(b2_[i]);
    const std::uint32_t c = b4_[i];
    return c < kSlot ? decode(c) : wide_[c - kSlot];
  }
  T back() const { return (*this)[size() - 1]; }
  const_iterator begin() const { return {this, 0}; }
  const_iterator end() const { return {this, size()}; }

  void push_back(T v) {
    std::uint32_t code = 0;
    if (!inline_code(v, code)) {
      widen(4);
      b4_.push_back(kSlot | static_cast<std::uint32_t>(wide_.size()));
      wide_.push_back(v);
      return;
    }
    widen(width_of(code));
    if (width_ == 1) b1_.push_back(static_cast<std::uint8_t>(code));
    else if (width_ == 2) b2_.push_back(static_cast<std::uint16_t>(code));
    else b4_.push_back(code);
  }

  // Row i's value becomes v; the column widens if v needs it (a value that had a slot leaves it
  // unused until the column is next compacted).
  void set(std::size_t i, T v) {
    if (try_set(i, v)) return;
    std::uint32_t code = 0;
    if (inline_code(v, code)) {
      widen(width_of(code));
      store(i, code);
      return;
    }
    widen(4);
    b4_[i] = kSlot | static_cast<std::uint32_t>(wide_.size());
    wide_.push_back(v);
  }

  // Stores v in row i when it fits the cells' width as they are (no widening, no slot) and says
  // whether it did: threads may call it at once on distinct rows, keeping the values it refuses
  // for set() afterwards, on one thread.
  bool try_set(std::size_t i, T v) {
    std::uint32_t code = 0;
    if (!inline_code(v, code) || width_of(code) > width_) return false;
    store(i, code);
    return true;
  }

  // Cells of at least `w` bytes from now on (values unchanged).
  void widen(unsigned w) {
    if (w <= width_) return;
    if (width_ == 1 && w == 2) b2_.assign(b1_.begin(), b1_.end());
    else if (width_ == 1) b4_.assign(b1_.begin(), b1_.end());
    else b4_.assign(b2_.begin(), b2_.end());
    const std::size_t cap = width_ == 1 ? b1_.capacity() : b2_.capacity();
    if (w == 2) b2_.reserve(cap); else b4_.reserve(cap);
    std::vector<std::uint8_t>().swap(b1_);
    if (w == 4) std::vector<std::uint16_t>().swap(b2_);
    width_ = w;
  }

  // The narrowest cells that hold every value, each at its exact size, and only the slots in
  // use (a column whose rows were set or cut may have left some).
  void shrink_to_fit() {
    if (width_ == 4 && !wide_.empty()) {
      std::vector<T> used;
      for (auto& c : b4_)
        if (c >= kSlot) {
          const T v = wide_[c - kSlot];
          c = kSlot | static_cast<std::uint32_t>(used.size());
          used.push_back(v);
        }
      wide_.swap(used);
    }
    if (wide_.empty()) {
      std::uint32_t top = 0;
      for_each_cell([&](std::uint32_t c) { top = c > top ? c : top; });
      narrow(width_of(top));
    }
    b1_.shrink_to_fit();
    b2_.shrink_to_fit();
    b4_.shrink_to_fit();
    wide_.shrink_to_fit();
  }

  void reserve(std::size_t n) {
    if (width_ == 1) b1_.reserve(n); else if (width_ == 2) b2_.reserve(n); else b4_.reserve(n);
  }
  // Rows the cells have room for.
  std::size_t capacity() const { return width_ == 1 ? b1_.capacity() : width_ == 2 ? b2_.capacity() : b4_.capacity(); }
  // Heap bytes held: the cells' and the slots' capacity.
  std::size_t heap_bytes() const {
    return b1_.capacity() + b2_.capacity() * 2 + b4_.capacity() * 4 + wide_.capacity() * sizeof(T);
  }

  // n rows; new rows hold `v` (the column widens for it first).
  void resize(std::size_t n, T v = T{}) {
    std::size_t at = size();
    if (n <= at) return cut(n);
    std::uint32_t code = 0;
    const bool fits = inline_code(v, code);
    if (fits) widen(width_of(code));
    if (width_ == 1) b1_.resize(n, static_cast<std::uint8_t>(code));
    else if (width_ == 2) b2_.resize(n, static_cast<std::uint16_t>(code));
    else b4_.resize(n, code);
    if (!fits)
      for (; at < n; ++at) set(at, v);
  }
  void clear() { cut(0); wide_.clear(); }

  template <class It>
  void assign(It first, It last) {
    clear();
    if constexpr (std::is_base_of_v<std::random_access_iterator_tag, typename std::iterator_traits<It>::iterator_category>)
      reserve(static_cast<std::size_t>(last - first));
    for (; first != last; ++first) push_back(static_cast<T>(*first));
  }
  // Appends [first, last); `at` must be end() (the only place the model inserts rows).
  template <class It>
  void insert(const_iterator /*at: end()*/, It first, It last) {
    for (; first != last; ++first) push_back(static_cast<T>(*first));
  }

  // Rows [from, from + n) copied over rows [to, to + n), cells as they are (a slot's cell too):
  // for moving rows down within the column; the rows copied from keep their cells.
  void copy_within(std::size_t from, std::size_t n, std::size_t to) {
    auto move = [&](auto& cells) {
      for (std::size_t k = 0; k < n; ++k) cells[to + k] = cells[from + k];
    };
    if (width_ == 1) move(b1_); else if (width_ == 2) move(b2_); else move(b4_);
  }

  // The column with its rows in `order` (row k of the result is row order[k]).
  void permute(const std::vector<std::uint32_t>& order) {
    PackedColumn out;
    out.reserve(order.size());
    for (auto i : order) out.push_back((*this)[i]);
    *this = std::move(out);
  }

  friend bool operator==(const PackedColumn& a, const PackedColumn& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
      if (a[i] != b[i]) return false;
    return true;
  }

 private:
  static constexpr std::uint32_t kSlot = 0x80000000u;  // a cell at or above it: a slot's number
  static constexpr bool kBiased = std::is_unsigned_v<T> && sizeof(T) == 4;

  // v's cell value when it has one (below kSlot).
  static bool inline_code(T v, std::uint32_t& code) {
    std::uint64_t u = 0;
    if constexpr (kBiased) {
      u = static_cast<std::uint32_t>(v + 1u);
    } else {
      if constexpr (std::is_signed_v<T>)
        if (v < 0) return false;
      u = static_cast<std::uint64_t>(v);
    }
    if (u >= kSlot) return false;
    code = static_cast<std::uint32_t>(u);
    return true;
  }
  static T decode(std::uint32_t code) {
    if constexpr (kBiased) return static_cast<T>(code - 1u);
    else return static_cast<T>(code);
  }
  static unsigned width_of(std::uint32_t code) { return code < 0x100u ? 1 : code < 0x10000u ? 2 : 4; }

  void store(std::size_t i, std::uint32_t code) {
    if (width_ == 1) b1_[i] = static_cast<std::uint8_t>(code);
    else if (width_ == 2) b2_[i] = static_cast<std::uint16_t>(code);
    else b4_[i] = code;
  }
  template <class F>
  void for_each_cell(F&& f) const {
    if (width_ == 1) for (auto c : b1_) f(c);
    else if (width_ == 2) for (auto c : b2_) f(c);
    else for (auto c : b4_) f(c);
  }
  void cut(std::size_t n) {
    if (width_ == 1) b1_.resize(n); else if (width_ == 2) b2_.resize(n); else b4_.resize(n);
  }
  // Cells of `w` bytes, w <= width_, every cell below 2^(8w) and no slot in use.
  void narrow(unsigned w) {
    if (w >= width_) return;
    if (w == 2) b2_.assign(b4_.begin(), b4_.end());
    else if (width_ == 2) b1_.assign(b2_.begin(), b2_.end());
    else b1_.assign(b4_.begin(), b4_.end());
    if (width_ == 2) std::vector<std::uint16_t>().swap(b2_);
    if (width_ == 4) std::vector<std::uint32_t>().swap(b4_);
    width_ = w;
  }

  unsigned width_ = 1;
  std::vector<std::uint8_t> b1_;
  std::vector<std::uint16_t> b2_;
  std::vector<std::uint32_t> b4_;
  std::vector<T> wide_;  // values no cell holds, by slot
};

// Gives back a column's slack (a packed one also narrows to what its values need): what
// Trace::finalize() does to every column, and a deferred read to the columns it fills.
template <class T> void shrink_column(std::vector<T>& col) {
  if (col.capacity() > col.size() + col.size() / 8) col.shrink_to_fit();
}
template <class T> void shrink_column(PackedColumn<T>& col) { col.shrink_to_fit(); }

}  // namespace tt::trace
