// JSON text helpers for the writers that format JSON by hand (summaries, reports, bench
// output, tuner files): one escaping rule everywhere.
#pragma once

#include <string>
#include <string_view>

namespace tt::trace {

// Appends `s` as a JSON string literal: quotes, backslashes and control characters escaped.
void append_json_string(std::string& out, std::string_view s);

// `s` as a JSON string literal.
inline std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_json_string(out, s);
  return out;
}

}  // namespace tt::trace
