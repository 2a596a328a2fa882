// Parsing tuned.toml against the knob catalogue. Nothing here is lenient: a key the
// catalogue does not know, a value of the wrong type or out of range, a raw environment
// variable, a numerics-changing value without the config saying `numerics = true`: each is
// refused with one line naming the file, the line and the fix.
#include "tracetune/tuner/tuned_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "knobs.h"

namespace tt::tuner {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool looks_like_env_var(std::string_view k) {
  return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) { return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'; });
}

// Why a key that is not a knob id was refused.
std::string refuse_unknown(std::string_view key, const Catalogue& cat) {
  if (looks_like_env_var(key)) {
    if (is_code_loading_env(key))
      return fmt::format("{} is refused: environment variables that make the job load code cannot be set by a config", key);
    for (const auto& k : cat.knobs)
      if (k.apply == Apply::Env && k.env == key)
        return fmt::format("raw environment variable {} is not accepted; use the knob id \"{}\"", key, k.id);
    return fmt::format("raw environment variable {} is not accepted; only catalogue knobs can be set (tracetune knobs lists them)", key);
  }
  return fmt::format("unknown knob \"{}\" (tracetune knobs lists the known ones)", key);
}

// [settings] may spell ids quoted ("ddp.bucket_cap_mb" = 50) or as nested tables
// (ddp.bucket_cap_mb = 50, or [settings.ddp]); both flatten to the dotted id.
void flatten(const toml::table& t, const std::string& prefix, std::vector<std::pair<std::string, const toml::node*>>& out) {
  for (auto&& [k, v] : t) {
    std::string id = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table()) flatten(*sub, id, out);
    else out.emplace_back(std::move(id), &v);
  }
}

template <std::size_t N>
int index_of(const std::string_view (&names)[N], std::string_view s) {
  const std::string l = lower(s);
  for (std::size_t i = 0; i < N; ++i)
    if (names[i] == l) return static_cast<int>(i);
  return -1;
}

template <std::size_t N>
std::string joined(const std::string_view (&names)[N]) {
  std::string s;
  for (auto n : names) s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

Result<NcclTableEntry> parse_table_entry(const toml::table& t) {
  static constexpr std::string_view kFields[] = {"collective", "min_bytes", "max_bytes", "algorithm",
                                                 "protocol",   "channels",  "nodes",     "ranks"};
  for (auto&& [k, v] : t)
    if (std::find(std::begin(kFields), std::end(kFields), k.str()) == std::end(kFields))
      return make_error(fmt::format("unknown field '{}' (fields: {})", k.str(), joined(kFields)));
  NcclTableEntry e;
  auto name = [&](std::string_view key, const auto& names, int& out) -> Status {
    const auto s = t[key].value<std::string>();
    if (!s) return make_error(fmt::format("'{}' must be a string, one of {}", key, joined(names)));
    out = index_of(names, *s);
    if (out < 0) return make_error(fmt::format("{} \"{}\" is not one of {}", key, *s, joined(names)));
    return {};
  };
  if (auto st = name("collective", kNcclCollectives, e.collective); !st) return make_error(st.error());
  if (auto st = name("algorithm", kNcclAlgorithms, e.algorithm); !st) return make_error(st.error());
  if (auto st = name("protocol", kNcclProtocols, e.protocol); !st) return make_error(st.error());
  auto integer = [&](std::string_view key, bool required, std::int64_t lo, std::int64_t hi, std::int64_t& out) -> Status {
    const toml::node* n = t.get(key);
    if (n == nullptr) return required ? Status(make_error(fmt::format("missing '{}'", key))) : Status();
    if (!n->is_integer()) return make_error(fmt::format("'{}' must be an integer", key));
    out = *n->value<std::int64_t>();
    if (out < lo || out > hi) return make_error(fmt::format("'{}' = {} is out of range ({} to {})", key, out, lo, hi));
    return {};
  };
  std::int64_t lo = 0, hi = 0, ch = 0, nodes = -1, ranks = -1;
  constexpr std::int64_t kMaxBytes = std::int64_t{1} << 50;
  if (auto st = integer("min_bytes", true, 0, kMaxBytes, lo); !st) return make_error(st.error());
  if (auto st = integer("max_bytes", true, 0, kMaxBytes, hi); !st) return make_error(st.error());
  if (auto st = integer("channels", false, 0, 64, ch); !st) return make_error(st.error());
  if (auto st = integer("nodes", false, 1, 1 << 20, nodes); !st) return make_error(st.error());
  if (auto st = integer("ranks", false, 1, 1 << 24, ranks); !st) return make_error(st.error());
  if (lo > hi) return make_error(fmt::format("min_bytes {} is above max_bytes {}", lo, hi));
  e.min_bytes = static_cast<std::uint64_t>(lo);
  e.max_bytes = static_cast<std::uint64_t>(hi);
  e.channels = static_cast<int>(ch);
  e.nodes = static_cast<int>(nodes);
  e.ranks = static_cast<int>(ranks);
  return e;
}

// The leading block of comment lines (blank lines allowed) up to the first other line.
std::vector<std::string> header_comments(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    const std::size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line.front() != '#') break;
    line.remove_prefix(1);
    if (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    out.emplace_back(line);
  }
  return out;
}

// toml++ parses nested tables and dotted keys recursively: a 50,000-level dotted key
// overflows the stack. A tuned config is a few levels deep, so anything deeper than
// kMaxTomlDepth (dots in a key plus brackets and braces open) or with a key longer than
// kMaxTomlKey characters is refused before toml++ sees it. A light scanner: it knows strings
// (so dots and brackets inside them do not count) and comments, nothing else.
constexpr int kMaxTomlDepth = 32;
constexpr std::size_t kMaxTomlKey = 1024;

// Where check_toml_shape is in the text.
enum class TomlIn { Code, Basic, Literal, MultiBasic, MultiLiteral, Comment };
struct TomlScan {
  TomlIn in = TomlIn::Code;
  std::string nest;  // the open '[' and '{', innermost last
  bool key_position = true;
  int line = 1, dots = 0;
  std::size_t key_len = 0;
};

// Inside a string or a comment: steps over text[i] (and the character a backslash escapes, or
// the rest of a closing triple quote); false in code.
bool skip_quoted(TomlScan& sc, std::string_view text, std::size_t& i) {
  const char c = text[i];
  switch (sc.in) {
    case TomlIn::Comment: return true;
    case TomlIn::Basic:
      if (c == '\\') ++i;
      else if (c == '"') sc.in = TomlIn::Code;
      return true;
    case TomlIn::Literal:
      if (c == '\'') sc.in = TomlIn::Code;
      return true;
    case TomlIn::MultiBasic:
      if (c == '\\') ++i;
      else if (text.substr(i, 3) == "\"\"\"") { sc.in = TomlIn::Code; i += 2; }
      return true;
    case TomlIn::MultiLiteral:
      if (text.substr(i, 3) == "'''") { sc.in = TomlIn::Code; i += 2; }
      return true;
    case TomlIn::Code: break;
  }
  return false;
}

// A character of code: opens a string or a comment, ends a key, opens or closes a table or
// array, or counts a dot of a dotted key.
void scan_code(TomlScan& sc, std::string_view text, std::size_t& i) {
  auto digit = [&](std::size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
  const char c = text[i];
  switch (c) {
    case '#': sc.in = TomlIn::Comment; break;
    case '"': if (text.substr(i, 3) == "\"\"\"") { sc.in = TomlIn::MultiBasic; i += 2; } else sc.in = TomlIn::Basic; break;
    case '\'': if (text.substr(i, 3) == "'''") { sc.in = TomlIn::MultiLiteral; i += 2; } else sc.in = TomlIn::Literal; break;
    case '=': sc.key_position = false; sc.key_len = 0; break;
    case '[': case '{':
      sc.nest.push_back(c);
      sc.key_position = c == '{' || sc.key_position;  // a table header's brackets hold a key
      break;
    case ']': case '}': if (!sc.nest.empty()) sc.nest.pop_back(); break;
    case ',': if (!sc.nest.empty() && sc.nest.back() == '{') { sc.key_position = true; sc.key_len = 0; } break;
    case '.':
      // a dot between digits in a value is a float's, not a nesting level
      if (sc.key_position || !(i > 0 && digit(i - 1) && digit(i + 1))) ++sc.dots;
      break;
    default: break;
  }
}

Status check_toml_shape(std::string_view text, std::string_view source) {
  TomlScan sc;
  auto too = [&](std::string_view what) {
    return make_error(fmt::format("{}: line {}: {}; not a tuned config", source, sc.line, what));
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++sc.line;
      if (sc.in == TomlIn::Comment || sc.in == TomlIn::Basic || sc.in == TomlIn::Literal) sc.in = TomlIn::Code;
      if (sc.in == TomlIn::Code) {
        sc.dots = 0;
        sc.key_len = 0;
        sc.key_position = sc.nest.empty();
      }
      continue;
    }
    if (sc.key_position && ++sc.key_len > kMaxTomlKey)
      return too(fmt::format("a key longer than {} characters", kMaxTomlKey));
    if (skip_quoted(sc, text, i)) continue;
    scan_code(sc, text, i);
    if (sc.dots + static_cast<int>(sc.nest.size()) > kMaxTomlDepth)
      return too(fmt::format("keys or tables nested deeper than {} levels", kMaxTomlDepth));
  }
  return {};
}

// Line `n` (1-based) of `text`, without its end of line.
std::string_view line_of(std::string_view text, std::int64_t n) {
  for (std::int64_t i = 1; i < n && !text.empty(); ++i) {
    const std::size_t eol = text.find('\n');
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
  }
  return text.substr(0, text.find('\n'));
}

// The key of a `key = value` line as the file spells it ("dataloader.num_workers" with its
// quotes, or ddp . bucket_cap_mb), shortened for messages.
std::string key_as_written(std::string_view text, std::int64_t line) {
  std::string_view l = line_of(text, line);
  l = l.substr(0, l.find('='));
  while (!l.empty() && (l.front() == ' ' || l.front() == '\t')) l.remove_prefix(1);
  while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.remove_suffix(1);
  return std::string(l.substr(0, 80));
}

const Setting* find_setting(const TunedConfig& c, std::string_view id) {
  for (const auto& s : c.settings)
    if (s.knob.id == id) return &s;
  return nullptr;
}

}  // namespace

namespace {

// "source: line N: msg" (without the line where `at` is null).
struct ConfigError {
  std::string_view source;
  Error operator()(const toml::node* at, const std::string& msg) const {
    return make_error(at != nullptr ? fmt::format("{}: {}: {}", source, detail::where(*at), msg)
                                    : fmt::format("{}: {}", source, msg));
  }
};

// The top-level keys: [meta], [settings] and [nccl] tables only; a knob or variable outside
// [settings] is refused with what to write instead.
Status check_top_keys(const toml::table& root, const Catalogue& cat, const ConfigError& err) {
  for (auto&& [k, v] : root) {
    const std::string_view key = k.str();
    if (key == "meta" || key == "settings" || key == "nccl") {
      if (!v.is_table()) return err(&v, fmt::format("'{}' must be a table ([{}])", key, key));
      continue;
    }
    if (key == "env" || key == "environment")
      return err(&v, "raw environment variables are not accepted ([env]); set knobs in [settings] (tracetune knobs lists them)");
    if (cat.find(key) != nullptr || looks_like_env_var(key))
      return err(&v, fmt::format("'{}' is outside [settings]; ", key) + refuse_unknown(key, cat));
    return err(&v, fmt::format("unknown key '{}' (a tuned config has [meta], [settings] and [[nccl.table]])", key));
  }
  return {};
}

// [meta]: numerics, trials, speedup, findings and command.
Status parse_meta(const toml::table& root, TunedConfig& cfg, const ConfigError& err) {
  if (const toml::table* meta = root["meta"].as_table()) {
    if (const toml::node* n = meta->get("numerics")) {
      if (!n->is_boolean()) return err(n, "meta.numerics must be true or false");
      cfg.numerics_allowed = *n->value<bool>();
    }
    if (const toml::node* n = meta->get("trials")) {
      if (!n->is_integer()) return err(n, "meta.trials must be an integer");
      cfg.trials = *n->value<std::int64_t>();
    }
    if (const toml::node* n = meta->get("speedup")) {
      if (!n->is_number()) return err(n, "meta.speedup must be a number");
      cfg.speedup = *n->value<double>();
    }
    if (const toml::node* n = meta->get("findings")) {
      const toml::array* a = n->as_array();
      // (toml++ calls an empty array not homogeneous; tune writes one when nothing was found)
      if (a == nullptr || (!a->empty() && !a->is_homogeneous(toml::node_type::string)))
        return err(n, "meta.findings must be an array of finding ids");
      for (const auto& f : *a) cfg.findings.push_back(*f.value<std::string>());
    }
    if (auto c = (*meta)["command"].value<std::string>()) cfg.command = *c;
  }
  return {};
}

// [settings]: each key a knob of the catalogue, set once, with a value of its type that keeps
// numerics unless [meta] allows it.
Status parse_settings(const toml::table& root, std::string_view text, const Catalogue& cat, TunedConfig& cfg,
                      const ConfigError& err) {
  const std::string_view source = err.source;
  if (const toml::table* settings = root["settings"].as_table()) {
    std::vector<std::pair<std::string, const toml::node*>> flat;
    flatten(*settings, "", flat);
    // "a.b" = 1 and a.b = 2 are different TOML keys but the same knob: refuse the second
    std::map<std::string, std::int64_t> first_line;
    for (const auto& [id, node] : flat) {
      const std::int64_t line = node->source().begin.line;
      if (auto [it, fresh] = first_line.try_emplace(id, line); !fresh)
        return make_error(fmt::format("{}: line {}: settings: {} sets {} again (first set at line {} as {}); keep one",
                                      source, std::max(line, it->second), key_as_written(text, std::max(line, it->second)),
                                      id, std::min(line, it->second), key_as_written(text, std::min(line, it->second))));
      const Knob* knob = cat.find(id);
      if (knob == nullptr) return err(node, "settings: " + refuse_unknown(id, cat));
      if (knob->type == KnobType::Table)
        return err(node, fmt::format("settings: {} is written as [[nccl.table]] entries, not a setting", id));
      auto value = detail::value_from_toml(*knob, *node);
      if (!value) return err(node, fmt::format("settings: {} = {}: {}", id, detail::display_node(*node), value.error()));
      if (!cfg.numerics_allowed && !numerics_safe(*knob, value.value()))
        return err(node, fmt::format("settings: {} = {} changes numerics; add 'numerics = true' to [meta] to allow it",
                                     id, display(value.value())));
      cfg.settings.push_back(Setting{*knob, std::move(value.value()), static_cast<int>(node->source().begin.line)});
    }
  }
  return {};
}

// [[nccl.table]] entries.
Status parse_nccl_table(const toml::table& root, TunedConfig& cfg, const ConfigError& err) {
  if (const toml::table* nccl = root["nccl"].as_table()) {
    for (auto&& [k, v] : *nccl)
      if (k.str() != "table") return err(&v, fmt::format("unknown key 'nccl.{}' (only [[nccl.table]] entries)", k.str()));
    if (const toml::node* tn = nccl->get("table")) {
      const toml::array* entries = tn->as_array();
      // toml++ calls an empty array not homogeneous: `table = []` is an empty table, not an error
      if (entries == nullptr || (!entries->empty() && !entries->is_homogeneous(toml::node_type::table)))
        return err(tn, "nccl.table must be [[nccl.table]] entries");
      if (entries->size() > kMaxNcclTableEntries)
        return err(tn, fmt::format("nccl.table has {} entries (at most {})", entries->size(), kMaxNcclTableEntries));
      for (const auto& node : *entries) {
        auto e = parse_table_entry(*node.as_table());
        if (!e) return err(&node, "nccl.table: " + e.error());
        cfg.nccl_table.push_back(e.value());
      }
    }
  }
  return {};
}

// The constraints between knobs (channels, sockets), on the sorted settings.
Status check_knob_constraints(const TunedConfig& cfg, std::string_view source) {
  // constraints between knobs
  const Setting* lo = find_setting(cfg, "nccl.min_nchannels");
  const Setting* hi = find_setting(cfg, "nccl.max_nchannels");
  if (lo != nullptr && hi != nullptr && std::get<std::int64_t>(lo->value) > std::get<std::int64_t>(hi->value))
    return make_error(fmt::format("{}: line {}: settings: nccl.min_nchannels ({}) is above nccl.max_nchannels ({})", source,
                                  lo->line, display(lo->value), display(hi->value)));
  const Setting* th = find_setting(cfg, "nccl.socket_nthreads");
  const Setting* so = find_setting(cfg, "nccl.nsocks_perthread");
  if (th != nullptr && so != nullptr && std::get<std::int64_t>(th->value) * std::get<std::int64_t>(so->value) > 64)
    return make_error(fmt::format("{}: line {}: settings: nccl.socket_nthreads x nccl.nsocks_perthread is {} (NCCL allows at most 64 sockets)",
                                  source, th->line, std::get<std::int64_t>(th->value) * std::get<std::int64_t>(so->value)));
  return {};
}

}  // namespace

Result<TunedConfig> parse_tuned_config(std::string_view text, std::string_view source, const Catalogue& cat) {
  const ConfigError err{source};
  if (auto st = check_toml_shape(text, source); !st) return make_error(st.error());
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    return make_error(fmt::format("{}: line {}: not valid TOML: {}", source, e.source().begin.line, e.description()));
  }
  TunedConfig cfg;
  if (auto st = check_top_keys(root, cat, err); !st) return make_error(st.error());
  if (auto st = parse_meta(root, cfg, err); !st) return make_error(st.error());
  cfg.header_comments = header_comments(text);
  if (auto st = parse_settings(root, text, cat, cfg, err); !st) return make_error(st.error());
  if (auto st = parse_nccl_table(root, cfg, err); !st) return make_error(st.error());
  std::sort(cfg.settings.begin(), cfg.settings.end(), [](const Setting& a, const Setting& b) { return a.knob.id < b.knob.id; });
  if (auto st = check_knob_constraints(cfg, source); !st) return make_error(st.error());
  return cfg;
}

Result<TunedConfig> load_tuned_config(const std::filesystem::path& path, const Catalogue& cat) {
  // Open first, then check what was opened (fstat), then read from the same descriptor: no
  // window in which the checked file and the read file differ.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return make_error(fmt::format("{}: cannot open: {}", path.string(), std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) return make_error(fmt::format("{}: {}", path.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) return make_error(fmt::format("{}: not a regular file", path.string()));
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return make_error(fmt::format("{}: owned by uid {}, not by you: refusing to apply it", path.string(), st.st_uid));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return make_error(fmt::format("{}: writable by {}: refusing to apply it (chmod go-w {})", path.string(),
                                  (st.st_mode & S_IWOTH) ? "others" : "group", path.string()));
  constexpr off_t kMaxSize = 1 << 20;
  if (st.st_size > kMaxSize) return make_error(fmt::format("{}: larger than 1 MiB; not a tuned config", path.string()));
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<std::size_t>(n);
  }
  text.resize(got);
  auto cfg = parse_tuned_config(text, path.string(), cat);
  // A private file in a world-writable directory can still be replaced or renamed by anyone
  // who can write there (unless the directory is sticky and the file is ours): warn.
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  struct stat ds {};
  if (cfg && ::stat(dir.c_str(), &ds) == 0 && (ds.st_mode & S_IWOTH) != 0)
    cfg->warnings.push_back(fmt::format("{}: its directory {} is writable by others{}: keep tuned configs in a private "
                                        "directory", path.string(), dir.string(),
                                        (ds.st_mode & S_ISVTX) != 0 ? " (sticky)" : ", so anyone can replace the file"));
  return cfg;
}

std::string toml_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7f) {
      out += fmt::format("\\u{:04X}", static_cast<unsigned>(u));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string value_toml(const Value& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return toml_string(*s);
  if (const auto* list = std::get_if<std::vector<std::string>>(&v)) {
    std::string out = "[";
    for (std::size_t i = 0; i < list->size(); ++i) out += (i ? ", " : "") + toml_string((*list)[i]);
    return out + "]";
  }
  if (const auto* d = std::get_if<double>(&v)) {
    std::string s = fmt::format("{}", *d);
    return s;  // an integer spelling is accepted for float knobs
  }
  return display(v);
}

std::string nccl_table_toml(const std::vector<NcclTableEntry>& table) {
  std::string out;
  for (const auto& e : table) {
    out += fmt::format("\n[[nccl.table]]\ncollective = \"{}\"\nmin_bytes = {}\nmax_bytes = {}\nalgorithm = \"{}\"\n"
                       "protocol = \"{}\"\nchannels = {}\n", kNcclCollectives[e.collective], e.min_bytes, e.max_bytes,
                       kNcclAlgorithms[e.algorithm], kNcclProtocols[e.protocol], e.channels);
    if (e.nodes > 0) out += fmt::format("nodes = {}\n", e.nodes);
    if (e.ranks > 0) out += fmt::format("ranks = {}\n", e.ranks);
  }
  return out;
}

std::string nccl_table_text(const std::vector<NcclTableEntry>& table) {
  std::string s = "tracetune-nccl-table 1\n# collective min_bytes max_bytes algorithm protocol channels nodes ranks\n";
  for (const auto& e : table)
    s += fmt::format("{} {} {} {} {} {} {} {}\n", kNcclCollectives[e.collective], e.min_bytes, e.max_bytes,
                     kNcclAlgorithms[e.algorithm], kNcclProtocols[e.protocol], e.channels, e.nodes, e.ranks);
  return s;
}

}  // namespace tt::tuner
