// The substitution catalogue's trace side (see substitutions.h) and the share of step time
// each entry's ops take in a trace.
#include "tracetune/tuner/substitutions.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "tracetune/tuner/kernel_bench.h"

namespace tt::tuner {

namespace {

Result<std::vector<std::string>> string_list(const toml::table& t, std::string_view key) {
  const toml::array* a = t[key].as_array();
  if (a == nullptr || a->empty()) return make_error(fmt::format("'{}' must be a non-empty array of strings", key));
  std::vector<std::string> out;
  for (const auto& n : *a) {
    if (!n.is_string() || n.value<std::string>()->empty())
      return make_error(fmt::format("'{}' must hold non-empty strings", key));
    out.push_back(*n.value<std::string>());
  }
  return out;
}

Result<Substitution> parse_entry(const toml::table& t) {
  Substitution s;
  for (auto [key, out] : {std::pair{"id", &s.id}, std::pair{"knob", &s.knob}}) {
    auto v = t[key].value<std::string>();
    if (!v || v->empty()) return make_error(fmt::format("'{}' must be a non-empty string", key));
    *out = *v;
  }
  if (!s.knob.starts_with("kernels.")) return make_error(fmt::format("knob {} is not a kernels.* knob", s.knob));
  auto kp = string_list(t, "kernel_patterns");
  if (!kp) return make_error(kp.error());
  auto op = string_list(t, "op_patterns");
  if (!op) return make_error(op.error());
  s.kernel_patterns = std::move(kp.value());
  s.op_patterns = std::move(op.value());
  const auto share = t["min_share"].value<double>();
  if (!share || *share <= 0 || *share >= 1) return make_error("'min_share' must be a number in (0, 1)");
  s.min_share = *share;
  return s;
}

bool contains_any(std::string_view name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) { return name.find(p) != name.npos; });
}

// Total length of the union of [start, end) intervals, per track (nested ops count once).
trace::Ns union_length(std::map<std::uint32_t, std::vector<std::pair<trace::Ns, trace::Ns>>>& by_track) {
  trace::Ns total = 0;
  for (auto& [track, v] : by_track) {
    std::sort(v.begin(), v.end());
    trace::Ns cur_s = 0, cur_e = 0;
    bool open = false;
    for (const auto& [s, e] : v) {
      if (open && s <= cur_e) {
        cur_e = std::max(cur_e, e);
        continue;
      }
      if (open) total += cur_e - cur_s;
      cur_s = s, cur_e = e, open = true;
    }
    if (open) total += cur_e - cur_s;
  }
  return total;
}

}  // namespace

Result<std::vector<Substitution>> parse_substitutions(std::string_view text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return make_error(fmt::format("{}: line {}: {}", source, e.source().begin.line, e.description()));
  }
  if (root["schema"].value<std::int64_t>() != 1) return make_error(fmt::format("{}: 'schema = 1' expected", source));
  const toml::array* entries = root["substitution"].as_array();
  if (entries == nullptr || entries->empty()) return make_error(fmt::format("{}: no [[substitution]] entries", source));
  std::vector<Substitution> out;
  for (const auto& node : *entries) {
    const toml::table* t = node.as_table();
    auto s = t != nullptr ? parse_entry(*t) : Result<Substitution>(make_error("not a table"));
    if (!s) return make_error(fmt::format("{}: substitution {}: {}", source, out.size() + 1, s.error()));
    if (std::any_of(out.begin(), out.end(), [&](const Substitution& o) { return o.id == s->id; }))
      return make_error(fmt::format("{}: substitution {}: id {} listed twice", source, out.size() + 1, s->id));
    out.push_back(std::move(s.value()));
  }
  return out;
}

Result<std::vector<Substitution>> builtin_substitutions() {
  return parse_substitutions(kBuiltinSubstitutionsToml, "substitutions.toml (built in)");
}

std::vector<SubstitutionShare> substitution_shares(const trace::Trace& t, const std::vector<Substitution>& subs,
                                                   bool* has_op_data) {
  bool ops = t.kernels.size() > 0;
  for (std::size_t i = 0; i < t.ranges.size() && !ops; ++i) ops = t.strings.get(t.ranges.name[i]).starts_with("aten::");
  if (has_op_data != nullptr) *has_op_data = ops;
  trace::Ns step_time = 0;
  for (std::size_t i = 0; i < t.steps.size(); ++i) step_time += t.steps.dur[i];
  if (step_time == 0) {  // no steps: the span of everything that could match
    trace::Ns lo = std::numeric_limits<trace::Ns>::max(), hi = 0;
    for (const trace::SpanColumns* c : {static_cast<const trace::SpanColumns*>(&t.kernels), static_cast<const trace::SpanColumns*>(&t.ranges)})
      for (std::size_t i = 0; i < c->size(); ++i) lo = std::min(lo, c->start[i]), hi = std::max(hi, c->end(i));
    step_time = hi > lo ? hi - lo : 0;
  }
  std::vector<SubstitutionShare> out;
  for (const auto& s : subs) {
    std::map<std::uint32_t, std::vector<std::pair<trace::Ns, trace::Ns>>> kernels, ranges;
    for (std::size_t i = 0; i < t.kernels.size(); ++i)
      if (contains_any(t.strings.get(t.kernels.name[i]), s.kernel_patterns))
        kernels[t.kernels.track[i]].emplace_back(t.kernels.start[i], t.kernels.end(i));
    for (std::size_t i = 0; i < t.ranges.size(); ++i)
      if (contains_any(t.strings.get(t.ranges.name[i]), s.op_patterns))
        ranges[t.ranges.track[i]].emplace_back(t.ranges.start[i], t.ranges.end(i));
    // GPU time when the op runs as kernels, else the host time of its op ranges
    const trace::Ns matched = std::max(union_length(kernels), union_length(ranges));
    const double share = step_time > 0 ? static_cast<double>(matched) / static_cast<double>(step_time) : 0.0;
    out.push_back({s.id, share, share >= s.min_share});
  }
  return out;
}

namespace {

// "shape.aten::layer_norm.256x16" -> {"aten::layer_norm", "256x16", 256 * 16}; false when the
// name is not a shape counter.
struct OpShape {
  std::string_view op, shape;
  double size = 0;
};

bool parse_shape_counter(std::string_view name, OpShape& out) {
  constexpr std::string_view kPrefix = "shape.";
  if (!name.starts_with(kPrefix)) return false;
  const auto dot = name.rfind('.');
  if (dot == std::string_view::npos || dot < kPrefix.size()) return false;
  out.op = name.substr(kPrefix.size(), dot - kPrefix.size());
  out.shape = name.substr(dot + 1);
  const auto x = out.shape.find('x');
  if (x == std::string_view::npos || x == 0 || x + 1 == out.shape.size()) return false;
  double rows = 0, cols = 0;
  for (char c : out.shape.substr(0, x)) {
    if (c < '0' || c > '9') return false;
    rows = rows * 10 + (c - '0');
  }
  for (char c : out.shape.substr(x + 1)) {
    if (c < '0' || c > '9') return false;
    cols = cols * 10 + (c - '0');
  }
  out.size = rows * cols;
  return out.size > 0;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> substitution_shapes(const trace::Trace& t,
                                                                     const std::vector<Substitution>& subs) {
  std::map<trace::StringId, double> calls;  // per counter name
  for (std::size_t i = 0; i < t.counters.size(); ++i) calls[t.counters.name[i]] += t.counters.value[i];
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : subs) {
    OpShape best;
    double best_calls = 0;
    for (const auto& [name, n] : calls) {
      OpShape shape;
      if (n <= 0 || !parse_shape_counter(t.strings.get(name), shape) || !contains_any(shape.op, s.op_patterns)) continue;
      if (n > best_calls || (n == best_calls && shape.size > best.size)) best = shape, best_calls = n;
    }
    if (best_calls > 0) out.emplace_back(s.id, std::string(best.shape));
  }
  return out;
}

}  // namespace tt::tuner
