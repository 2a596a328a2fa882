// The one streaming JSON writer behind every JSON document (the analysis and diff reports,
// `info --json`'s summary, the tuner's trials file): commas and nesting handled, numbers written
// as their type says, strings escaped by append_json_string. Two styles: compact
// ({"a":1,"b":[1,2]}) and indented ({"a": 1, "b": [1, 2]} with the top level's members one per
// line); in either, a container may put its members one per line (Lines).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "tracetune/trace/json_text.h"

namespace tt::trace::json {

// A double written as the shortest text that reads back as the same value (Json::dbl_exact).
struct Exact {
  double v;
};
// A double written with `places` decimals ("1.2500"); null when not finite.
struct Fixed {
  double v;
  int places;
};
// A value its owner already wrote as JSON text (a tuner setting: tuner::json_value).
struct Raw {
  std::string text;
};

// compact: no spaces, everything on one line; indented: ": " and ", " between members, the
// top-level object's members one per line.
enum class Style { compact, indented };
// Where a container's members go: on its own line (none), or each on a line of its own,
// indented two spaces a level, with the closing bracket on a line of its own when there are
// members (each) or always (each_even_empty: `[` and `]` on two lines when empty).
enum class Lines { none, each, each_even_empty };

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
template <class V>
inline constexpr bool is_keyed<std::map<std::string, V>> = true;
template <class T>
inline constexpr bool is_vector = false;
template <class T, class A>
inline constexpr bool is_vector<std::vector<T, A>> = true;

class Json {
 public:
  explicit Json(Style style = Style::compact) : spaced_(style == Style::indented) {}
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
  void begin_object(Lines lines = Lines::none) { open('{', lines); }
  void end_object() { close('}'); }
  void begin_array(Lines lines = Lines::none) { open('[', lines); }
  void end_array() { close(']'); }
  Json& key(std::string_view k) {
    member_prefix();
    append_json_string(out, k);
    out += spaced_ ? ": " : ":";
    after_key_ = true;
    return *this;
  }
  void str(std::string_view v) { value_prefix(); append_json_string(out, v); }
  void num(std::int64_t v) { value_prefix(); out += std::to_string(v); }
  void unum(std::uint64_t v) { value_prefix(); out += std::to_string(v); }
  void dbl(double v) { value_prefix(); out += fmt::format("{:.6g}", v); }
  // shortest text that reads back as the same double (ns means, byte counts)
  void dbl_exact(double v) { value_prefix(); out += std::isfinite(v) ? fmt::format("{}", v) : std::string("null"); }
  void fixed(double v, int places) {
    value_prefix();
    out += std::isfinite(v) ? fmt::format("{:.{}f}", v, places) : std::string("null");
  }
  void raw(std::string_view text) { value_prefix(); out += text; }
  void boolean(bool v) { value_prefix(); out += v ? "true" : "false"; }
  void null() { value_prefix(); out += "null"; }
  // A value by its type: std::optional is null when empty, a vector an array of its values,
  // name/value pairs an object; `lines` places the members of the value's own container.
  template <typename T>
  void value(const T& v, Lines lines = Lines::none) {
    if constexpr (std::is_same_v<T, bool>) boolean(v);
    else if constexpr (std::is_same_v<T, Exact>) dbl_exact(v.v);
    else if constexpr (std::is_same_v<T, Fixed>) fixed(v.v, v.places);
    else if constexpr (std::is_same_v<T, Raw>) raw(v.text);
    else if constexpr (std::is_floating_point_v<T>) dbl(v);
    else if constexpr (std::is_signed_v<T>) num(static_cast<std::int64_t>(v));
    else if constexpr (std::is_unsigned_v<T>) unum(static_cast<std::uint64_t>(v));
    else if constexpr (is_optional<T>) {
      if (v) value(*v, lines);
      else null();
    } else if constexpr (is_keyed<T>) {
      begin_object(lines);
      for (const auto& [k, x] : v) {
        key(k);
        value(x);
      }
      end_object();
    } else if constexpr (is_vector<T>) {
      begin_array(lines);
      for (const auto& x : v) value(x);
      end_array();
    } else {
      str(v);
    }
  }
  template <typename T>
  void kv(std::string_view k, const T& v, Lines lines = Lines::none) {
    key(k);
    value(v, lines);
  }

 private:
  struct Level {
    Lines lines = Lines::none;
    bool first = true;
  };
  std::vector<Level> levels_;
  bool spaced_ = false;
  bool after_key_ = false;
  void new_line(std::size_t depth) {
    out += '\n';
    out.append(2 * depth, ' ');
  }
  // the separator before a member of the innermost container
  void member_prefix() {
    if (levels_.empty()) return;
    Level& l = levels_.back();
    if (!l.first) out += spaced_ && l.lines == Lines::none ? ", " : ",";
    if (l.lines != Lines::none) new_line(levels_.size());
    l.first = false;
  }
  void value_prefix() {
    if (after_key_) { after_key_ = false; return; }
    member_prefix();
  }
  void open(char bracket, Lines lines) {
    value_prefix();
    out += bracket;
    levels_.push_back({lines});
  }
  void close(char bracket) {
    const Level l = levels_.back();
    levels_.pop_back();
    if (l.lines == Lines::each_even_empty || (l.lines == Lines::each && !l.first)) new_line(levels_.size());
    out += bracket;
  }
};

}  // namespace tt::trace::json
