// The analyzer's small streaming JSON writer (analysis and diff reports): commas and nesting
// handled, numbers written exactly, strings escaped by trace::append_json_string.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tracetune/trace/summary.h"

namespace tt::analyzer {

// A double written as the shortest text that reads back as the same value (Json::dbl_exact).
struct Exact {
  double v;
};

template <class T>
inline constexpr bool is_optional = false;
template <class T>
inline constexpr bool is_optional<std::optional<T>> = true;
// name/value pairs written as an object whose keys are data ({"compute": 12, "launch": 3})
template <class T>
inline constexpr bool is_keyed = false;
template <class V>
inline constexpr bool is_keyed<std::vector<std::pair<std::string_view, V>>> = true;
template <class V>
inline constexpr bool is_keyed<std::vector<std::pair<std::string, V>>> = true;
template <class T>
inline constexpr bool is_vector = false;
template <class T, class A>
inline constexpr bool is_vector<std::vector<T, A>> = true;

class Json {
 public:
  std::string out;
  // Set: flush() hands `out` to it once it holds kFlushAt bytes or more (a document written as
  // it is made, not held whole).
  std::function<void(std::string_view)> sink;
  static constexpr std::size_t kFlushAt = 1 << 20;
  void flush(bool all = false) {
    if (sink && (all || out.size() >= kFlushAt)) {
      sink(out);
      out.clear();
    }
  }
  void begin_object() { value_prefix(); out += '{'; first_.push_back(true); }
  void end_object() { out += '}'; first_.pop_back(); }
  void begin_array() { value_prefix(); out += '['; first_.push_back(true); }
  void end_array() { out += ']'; first_.pop_back(); }
  Json& key(std::string_view k) {
    comma();
    trace::append_json_string(out, k);
    out += ':';
    after_key_ = true;
    return *this;
  }
  void str(std::string_view v) { value_prefix(); trace::append_json_string(out, v); }
  void num(std::int64_t v) { value_prefix(); out += std::to_string(v); }
  void unum(std::uint64_t v) { value_prefix(); out += std::to_string(v); }
  void dbl(double v) { value_prefix(); out += fmt::format("{:.6g}", v); }
  // shortest text that reads back as the same double (ns means, byte counts)
  void dbl_exact(double v) { value_prefix(); out += std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); }
  void boolean(bool v) { value_prefix(); out += v ? "true" : "false"; }
  void null() { value_prefix(); out += "null"; }
  // a value by its type: std::optional is null when empty, a vector an array of its values
  template <typename T>
  void value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) boolean(v);
    else if constexpr (std::is_same_v<T, Exact>) dbl_exact(v.v);
    else if constexpr (std::is_floating_point_v<T>) dbl(v);
    else if constexpr (std::is_signed_v<T>) num(static_cast<std::int64_t>(v));
    else if constexpr (std::is_unsigned_v<T>) unum(static_cast<std::uint64_t>(v));
    else if constexpr (is_optional<T>) {
      if (v) value(*v);
      else null();
    } else if constexpr (is_keyed<T>) {
      begin_object();
      for (const auto& [k, x] : v) {
        key(k);
        value(x);
      }
      end_object();
    } else if constexpr (is_vector<T>) {
      begin_array();
      for (const auto& x : v) value(x);
      end_array();
    } else {
      str(v);
    }
  }
  template <typename T>
  void kv(std::string_view k, const T& v) {
    key(k);
    value(v);
  }

 private:
  std::vector<bool> first_;
  bool after_key_ = false;
  void comma() {
    if (!first_.empty()) {
      if (!first_.back()) out += ',';
      first_.back() = false;
    }
  }
  void value_prefix() {
    if (after_key_) { after_key_ = false; return; }
    comma();
  }
};

}  // namespace tt::analyzer
