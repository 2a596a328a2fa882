// The knob catalogue loader. Every field of knobs.toml is checked here so that a typo in the
// catalogue fails the build's unit tests, not a user's job: unknown fields, missing fields,
// wrong types, duplicate ids, candidates outside the knob's own range, findings the analyzer
// does not emit, and env knobs naming a variable that loads code.
#include "tracetune/trace/json_text.h"
#include "tracetune/tuner/knobs.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "knobs.h"

namespace tt::tuner {

extern const char kBuiltinKnobsToml[];  // generated from tuner/knobs/knobs.toml

namespace {

template <class T>
bool parse_enum(std::string_view s, std::initializer_list<std::pair<std::string_view, T>> names, T& out) {
  for (const auto& [n, v] : names)
    if (n == s) {
      out = v;
      return true;
    }
  return false;
}

bool valid_id(std::string_view id) {
  // lower-case words of [a-z0-9_], at least two, joined by dots
  if (id.empty() || id.front() == '.' || id.back() == '.' || id.find("..") != std::string_view::npos) return false;
  if (id.find('.') == std::string_view::npos) return false;
  return std::all_of(id.begin(), id.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.'; });
}

bool valid_env_name(std::string_view n) {
  if (n.empty() || (n.front() >= '0' && n.front() <= '9')) return false;
  return std::all_of(n.begin(), n.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; });
}

// One [[knob]] table -> Knob, or why not.
// The knob's words: id, changes, apply, type, risk, doc and env, each checked.
Status parse_knob_words(const toml::table& t, Knob& k) {
  auto str = [&](std::string_view key, bool required, std::string& out) -> Status {
    const toml::node* n = t.get(key);
    if (n == nullptr) return required ? Status(make_error(fmt::format("missing field '{}'", key))) : Status();
    if (!n->is_string() || n->value<std::string>()->empty())
      return make_error(fmt::format("field '{}' must be a non-empty string ({})", key, detail::where(*n)));
    out = *n->value<std::string>();
    return {};
  };
  std::string apply, type, risk;
  for (auto [key, req, out] : {std::tuple{"id", true, &k.id}, {"changes", true, &k.changes}, {"apply", true, &apply},
                               {"type", true, &type}, {"risk", true, &risk}, {"doc", true, &k.doc}, {"env", false, &k.env}})
    if (auto st = str(key, req, *out); !st) return make_error(st.error());

  if (!valid_id(k.id)) return make_error(fmt::format("id '{}' is not dotted lower-case words (like dataloader.num_workers)", k.id));
  if (!parse_enum<Apply>(apply, {{"env", Apply::Env}, {"python", Apply::Python}, {"nccl_tuner", Apply::NcclTuner}}, k.apply))
    return make_error(fmt::format("apply '{}' is not one of env, python, nccl_tuner", apply));
  if (!parse_enum<KnobType>(type, {{"bool", KnobType::Bool}, {"int", KnobType::Int}, {"float", KnobType::Float},
                                   {"enum", KnobType::Enum}, {"enum_list", KnobType::EnumList}, {"table", KnobType::Table}},
                            k.type))
    return make_error(fmt::format("type '{}' is not one of bool, int, float, enum, enum_list, table", type));
  if (!parse_enum<Risk>(risk, {{"none", Risk::None}, {"numerics", Risk::Numerics}}, k.risk))
    return make_error(fmt::format("risk '{}' is not one of none, numerics", risk));
  return {};
}

// apply against env and type: an env knob names a variable that loads no code; a table knob is
// the NCCL tuner's, and only it.
Status check_knob_apply(const toml::table&, Knob& k) {
  if (k.apply == Apply::Env) {
    if (k.env.empty()) return make_error("apply = \"env\" needs field 'env' (the variable's name)");
    if (!valid_env_name(k.env)) return make_error(fmt::format("env '{}' is not an environment variable name", k.env));
    if (is_code_loading_env(k.env))
      return make_error(fmt::format("env '{}' makes the job load code; it cannot be a knob", k.env));
    if (k.type == KnobType::Table) return make_error("a table knob cannot be applied through the environment");
  } else if (!k.env.empty()) {
    return make_error("field 'env' is only for apply = \"env\"");
  }
  if ((k.apply == Apply::NcclTuner) != (k.type == KnobType::Table))
    return make_error("type = \"table\" goes with apply = \"nccl_tuner\", and only with it");
  return {};
}

// min and max: int and float knobs have them, others not.
Status parse_knob_range(const toml::table& t, Knob& k) {
  const bool numeric = k.type == KnobType::Int || k.type == KnobType::Float;
  for (auto [key, out] : {std::pair{"min", &k.min}, std::pair{"max", &k.max}}) {
    const toml::node* n = t.get(key);
    if (n == nullptr) {
      if (numeric) return make_error(fmt::format("missing field '{}' (int and float knobs need a range)", key));
      continue;
    }
    if (!numeric) return make_error(fmt::format("field '{}' is only for int and float knobs", key));
    if (k.type == KnobType::Int && !n->is_integer())
      return make_error(fmt::format("field '{}' must be an integer ({})", key, detail::where(*n)));
    if (!n->is_number()) return make_error(fmt::format("field '{}' must be a number ({})", key, detail::where(*n)));
    *out = n->is_integer() ? static_cast<double>(*n->value<std::int64_t>()) : *n->value<double>();
  }
  if (numeric && *k.min > *k.max) return make_error(fmt::format("min {} is above max {}", *k.min, *k.max));
  return {};
}

// choices: enum and enum_list knobs list them, once each.
Status parse_knob_choices(const toml::table& t, Knob& k) {
  const bool enumish = k.type == KnobType::Enum || k.type == KnobType::EnumList;
  if (const toml::node* n = t.get("choices")) {
    if (!enumish) return make_error("field 'choices' is only for enum and enum_list knobs");
    const toml::array* a = n->as_array();
    if (a == nullptr || a->empty()) return make_error("field 'choices' must be a non-empty array of strings");
    for (const auto& c : *a) {
      if (!c.is_string() || c.value<std::string>()->empty()) return make_error("field 'choices' must hold non-empty strings");
      if (std::count(k.choices.begin(), k.choices.end(), *c.value<std::string>()))
        return make_error(fmt::format("choice '{}' listed twice", *c.value<std::string>()));
      k.choices.push_back(*c.value<std::string>());
    }
  } else if (enumish) {
    return make_error("missing field 'choices' (enum knobs list their allowed values)");
  }
  return {};
}

// values (the candidates to try) and safe (the values that keep numerics), as the knob's type.
Status parse_knob_values(const toml::table& t, Knob& k) {
  for (auto [key, out] : {std::pair{"values", &k.values}, std::pair{"safe", &k.safe}}) {
    const toml::node* n = t.get(key);
    if (n == nullptr) continue;
    if (k.type == KnobType::Table) return make_error(fmt::format("field '{}' is not for table knobs", key));
    const toml::array* a = n->as_array();
    if (a == nullptr || a->empty()) return make_error(fmt::format("field '{}' must be a non-empty array", key));
    for (const auto& v : *a) {
      auto val = detail::value_from_toml(k, v);
      if (!val) return make_error(fmt::format("{} entry {}: {}", key, detail::display_node(v), val.error()));
      out->push_back(std::move(val.value()));
    }
  }
  if (k.type != KnobType::Table && k.values.empty()) return make_error("missing field 'values' (the candidates to try)");
  if (const toml::node* n = t.get("as_written")) {
    if (k.type == KnobType::Table) return make_error("field 'as_written' is not for table knobs");
    auto val = detail::value_from_toml(k, *n);
    if (!val) return make_error(fmt::format("as_written {}: {}", detail::display_node(*n), val.error()));
    k.as_written = std::move(val.value());
  }
  if (k.risk == Risk::Numerics && k.safe.empty())
    return make_error("risk = \"numerics\" needs field 'safe' (the values that keep numerics unchanged)");
  if (k.risk == Risk::None && !k.safe.empty()) return make_error("field 'safe' is only for risk = \"numerics\"");
  return {};
}

// slow_trial: a trial of the knob pays a one-off cost before its steps (compilation).
Status parse_knob_slow_trial(const toml::table& t, Knob& k) {
  const toml::node* n = t.get("slow_trial");
  if (n == nullptr) return {};
  if (!n->is_boolean()) return make_error(fmt::format("field 'slow_trial' must be true or false ({})", detail::where(*n)));
  k.slow_trial = *n->value<bool>();
  return {};
}

// acts_on: the op family the knob changes (kOpFamilies), optional.
Status parse_knob_acts_on(const toml::table& t, Knob& k) {
  const toml::node* n = t.get("acts_on");
  if (n == nullptr) return {};
  const auto s = n->value<std::string>();
  if (!s || std::find(std::begin(kOpFamilies), std::end(kOpFamilies), *s) == std::end(kOpFamilies))
    return make_error(fmt::format("field 'acts_on' must be \"convolution\" or \"attention\" ({})", detail::where(*n)));
  k.acts_on = *s;
  return {};
}

// addresses: the finding ids the knob addresses (rules.h's kFindingIds).
Status parse_knob_addresses(const toml::table& t, Knob& k) {
  const toml::node* addr = t.get("addresses");
  const toml::array* a = addr != nullptr ? addr->as_array() : nullptr;
  if (a == nullptr || a->empty()) return make_error("field 'addresses' must be a non-empty array of finding ids");
  for (const auto& f : *a) {
    const auto s = f.value<std::string>();
    if (!s || std::find(std::begin(kFindingIds), std::end(kFindingIds), *s) == std::end(kFindingIds)) {
      std::string known;
      for (auto id : kFindingIds) known += (known.empty() ? "" : ", ") + std::string(id);
      return make_error(fmt::format("addresses: {} is not a finding id ({})", detail::display_node(f), known));
    }
    k.addresses.push_back(*s);
  }
  return {};
}

Result<Knob> parse_knob(const toml::table& t) {
  static const std::set<std::string_view> kFields = {"id",   "changes", "apply",  "env",       "type", "min", "max",
                                                     "choices", "values", "safe", "as_written", "slow_trial", "acts_on", "addresses", "risk", "doc"};
  for (auto&& [k, v] : t)
    if (!kFields.count(k.str())) return make_error(fmt::format("unknown field '{}' ({})", k.str(), detail::where(v)));

  Knob k;
  for (auto step : {parse_knob_words, check_knob_apply, parse_knob_range, parse_knob_choices, parse_knob_values,
                    parse_knob_slow_trial, parse_knob_acts_on, parse_knob_addresses})
    if (auto st = step(t, k); !st) return make_error(st.error());
  return k;
}

}  // namespace

namespace detail {

std::string display_node(const toml::node& n) {
  std::ostringstream os;
  if (const auto* s = n.as_string()) os << '"' << s->get() << '"';
  else if (const auto* a = n.as_array()) os << *a;
  else if (n.is_table()) os << "{...}";
  else if (const auto* i = n.as_integer()) os << i->get();
  else if (const auto* f = n.as_floating_point()) os << f->get();
  else if (const auto* b = n.as_boolean()) os << (b->get() ? "true" : "false");
  else os << "a " << n.type();
  std::string s = os.str();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

Result<Value> value_from_toml(const Knob& knob, const toml::node& node) {
  Value v;
  switch (knob.type) {
    case KnobType::Bool:
      if (!node.is_boolean()) return make_error("expected true or false");
      v = *node.value<bool>();
      break;
    case KnobType::Int:
      if (!node.is_integer()) return make_error("expected an integer");
      v = *node.value<std::int64_t>();
      break;
    case KnobType::Float:
      if (node.is_integer()) v = static_cast<double>(*node.value<std::int64_t>());
      else if (node.is_floating_point()) v = *node.value<double>();
      else return make_error("expected a number");
      break;
    case KnobType::Enum:
      if (!node.is_string()) return make_error("expected a string");
      v = *node.value<std::string>();
      break;
    case KnobType::EnumList: {
      std::vector<std::string> items;
      if (node.is_string()) {
        items.push_back(*node.value<std::string>());
      } else if (const toml::array* a = node.as_array()) {
        for (const auto& e : *a) {
          if (!e.is_string()) return make_error("expected an array of strings");
          items.push_back(*e.value<std::string>());
        }
      } else {
        return make_error("expected a string or an array of strings");
      }
      v = std::move(items);
      break;
    }
    case KnobType::Table:
      return make_error("this knob is a table, written as [[nccl.table]] entries");
  }
  if (auto st = check_value(knob, v); !st) return make_error(st.error());
  return v;
}

}  // namespace detail

const Knob* Catalogue::find(std::string_view id) const {
  for (const auto& k : knobs)
    if (k.id == id) return &k;
  return nullptr;
}

Status check_value(const Knob& knob, const Value& value) {
  auto choices = [&] {
    std::string s;
    for (const auto& c : knob.choices) s += (s.empty() ? "" : ", ") + c;
    return s;
  };
  auto in_range = [&](double x) -> Status {
    if (!std::isfinite(x) || (knob.min && x < *knob.min) || (knob.max && x > *knob.max))
      return make_error(fmt::format("out of range (allowed {} to {})", knob.min.value_or(0), knob.max.value_or(0)));
    return {};
  };
  switch (knob.type) {
    case KnobType::Bool:
      if (!std::holds_alternative<bool>(value)) return make_error("expected true or false");
      return {};
    case KnobType::Int:
      if (!std::holds_alternative<std::int64_t>(value)) return make_error("expected an integer");
      return in_range(static_cast<double>(std::get<std::int64_t>(value)));
    case KnobType::Float:
      if (!std::holds_alternative<double>(value)) return make_error("expected a number");
      return in_range(std::get<double>(value));
    case KnobType::Enum: {
      const auto* s = std::get_if<std::string>(&value);
      if (s == nullptr) return make_error("expected a string");
      if (std::find(knob.choices.begin(), knob.choices.end(), *s) == knob.choices.end())
        return make_error(fmt::format("\"{}\" is not one of {}", *s, choices()));
      return {};
    }
    case KnobType::EnumList: {
      const auto* l = std::get_if<std::vector<std::string>>(&value);
      if (l == nullptr) return make_error("expected an array of strings");
      if (l->empty()) return make_error(fmt::format("expected at least one of {}", choices()));
      for (std::size_t i = 0; i < l->size(); ++i) {
        if (std::find(knob.choices.begin(), knob.choices.end(), (*l)[i]) == knob.choices.end())
          return make_error(fmt::format("\"{}\" is not one of {}", (*l)[i], choices()));
        if (std::find(l->begin(), l->begin() + static_cast<std::ptrdiff_t>(i), (*l)[i]) != l->begin() + static_cast<std::ptrdiff_t>(i))
          return make_error(fmt::format("\"{}\" is listed twice", (*l)[i]));
      }
      return {};
    }
    case KnobType::Table:
      return make_error("this knob is a table, written as [[nccl.table]] entries");
  }
  return make_error("unknown knob type");
}

bool numerics_safe(const Knob& knob, const Value& value) {
  if (knob.risk == Risk::None) return true;
  return std::find(knob.safe.begin(), knob.safe.end(), value) != knob.safe.end();
}

bool changes_numerics(const Catalogue& cat, const std::string& id, const Value& v) {
  const Knob* k = cat.find(id);
  return k != nullptr && !numerics_safe(*k, v);
}

bool is_code_loading_env(std::string_view n) {
  static constexpr std::string_view kExact[] = {
      "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "PYTHONEXECUTABLE", "PYTHONINSPECT",
      "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH", "NVTX_INJECTION32_PATH", "NCCL_PROFILER_PLUGIN",
      "NCCL_TUNER_PLUGIN", "NCCL_NET_PLUGIN", "NCCL_ENV_PLUGIN", "NCCL_CONF_FILE", "NCCL_TUNER_CONFIG_FILE",
      "GCONV_PATH", "BASH_ENV", "ENV", "PERL5LIB", "PERL5OPT", "RUBYLIB", "RUBYOPT", "NODE_OPTIONS",
      "JAVA_TOOL_OPTIONS", "MALLOC_CONF", "HOSTALIASES", "LOCPATH", "NLSPATH", "TMPDIR", "HOME", "PATH",
      "IFS", "SHELLOPTS", "PS4", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "HF_MODULES_CACHE"};
  if (n.starts_with("LD_") || n.starts_with("DYLD_") || n.starts_with("TRACETUNE_") || n.starts_with("PYTHON") ||
      n.starts_with("BASH_FUNC_"))
    return true;
  if (n.ends_with("_PLUGIN") || n.ends_with("_PATH") || n.ends_with("_PRELOAD") || n.ends_with("_LIBRARY") ||
      n.ends_with("_LIB") || n.ends_with("_FILE") || n.ends_with("_DIR") || n.ends_with("_HOME"))
    return true;
  return std::find(std::begin(kExact), std::end(kExact), n) != std::end(kExact);
}

std::string env_string(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "1" : "0";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", x);
        else if constexpr (std::is_same_v<T, std::string>) return x;
        else {
          std::string s;
          for (const auto& e : x) s += (s.empty() ? "" : ",") + e;
          return s;
        }
      },
      v);
}

std::string display(const Value& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>) return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", x);
        else if constexpr (std::is_same_v<T, std::string>) return "\"" + x + "\"";
        else {
          std::string s;
          for (const auto& e : x) s += (s.empty() ? "\"" : ", \"") + e + "\"";
          return "[" + s + "]";
        }
      },
      v);
}

std::string json_value(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return trace::json_quote(*s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&v)) {
    std::string out = "[";
    for (std::size_t i = 0; i < list->size(); ++i) out += (i ? ", " : "") + trace::json_quote((*list)[i]);
    return out + "]";
  }
  return display(v);  // bool, int, double spell the same
}

std::string_view to_string(Apply a) {
  switch (a) {
    case Apply::Env: return "env";
    case Apply::Python: return "python";
    case Apply::NcclTuner: return "nccl_tuner";
  }
  return "?";
}

std::string_view to_string(KnobType t) {
  switch (t) {
    case KnobType::Bool: return "bool";
    case KnobType::Int: return "int";
    case KnobType::Float: return "float";
    case KnobType::Enum: return "enum";
    case KnobType::EnumList: return "enum_list";
    case KnobType::Table: return "table";
  }
  return "?";
}

std::string_view to_string(Risk r) { return r == Risk::Numerics ? "numerics" : "none"; }

Result<Catalogue> parse_catalogue(std::string_view text, std::string_view source) {
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return make_error(fmt::format("{}: line {}: {}", source, e.source().begin.line, e.description()));
  }
  for (auto&& [k, v] : root)
    if (k.str() != "schema" && k.str() != "knob")
      return make_error(fmt::format("{}: unknown top-level key '{}' ({})", source, k.str(), detail::where(v)));
  if (root["schema"].value<std::int64_t>() != 1)
    return make_error(fmt::format("{}: 'schema = 1' expected (this tracetune reads catalogue schema 1)", source));
  const toml::array* knobs = root["knob"].as_array();
  if (knobs == nullptr || knobs->empty()) return make_error(fmt::format("{}: no [[knob]] entries", source));
  Catalogue cat;
  std::size_t i = 0;
  for (const auto& node : *knobs) {
    ++i;
    const toml::table* t = node.as_table();
    if (t == nullptr) return make_error(fmt::format("{}: knob {}: not a table", source, i));
    auto k = parse_knob(*t);
    const std::string name = t->get("id") && t->get("id")->is_string() ? " (" + *t->get("id")->value<std::string>() + ")" : "";
    if (!k) return make_error(fmt::format("{}: knob {}{} at {}: {}", source, i, name, detail::where(node), k.error()));
    if (cat.find(k->id) != nullptr) return make_error(fmt::format("{}: knob {}{}: id defined twice", source, i, name));
    if (k->apply == Apply::Env)
      for (const auto& other : cat.knobs)
        if (other.env == k->env) return make_error(fmt::format("{}: knob {}{}: env {} already set by {}", source, i, name, k->env, other.id));
    cat.knobs.push_back(std::move(k.value()));
  }
  return cat;
}

Result<Catalogue> load_catalogue(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return make_error(path.string() + ": cannot open");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_catalogue(ss.str(), path.string());
}

Result<Catalogue> builtin_catalogue() { return parse_catalogue(kBuiltinKnobsToml, "knobs.toml (built in)"); }

}  // namespace tt::tuner
