// The knob catalogue: every setting the tuner may try and `tracetune run --config` may apply,
// with its type, range, how it reaches the job and which findings it addresses. The
// catalogue is data (tuner/knobs/knobs.toml, compiled into the CLI); this is its typed form
// and the loader that checks it. A tuned config is accepted only through this allow-list.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tracetune/trace/result.h"

namespace tt::tuner {

enum class Apply { Env, Python, NcclTuner };
enum class KnobType { Bool, Int, Float, Enum, EnumList, Table };
enum class Risk { None, Numerics };

// A knob's value. Float knobs hold double; EnumList holds the chosen subset in the user's order.
using Value = std::variant<bool, std::int64_t, double, std::string, std::vector<std::string>>;

struct Knob {
  std::string id;       // dotted, e.g. "dataloader.num_workers"
  std::string changes;  // one line: what it changes
  Apply apply = Apply::Python;
  std::string env;      // the variable, for Apply::Env
  KnobType type = KnobType::Bool;
  std::optional<double> min, max;     // Int / Float
  std::vector<std::string> choices;   // Enum / EnumList
  std::vector<Value> values;          // candidates the tuner tries
  std::vector<Value> safe;            // Risk::Numerics: values that keep numerics unchanged
  // The value the Python integration applies as nothing at all (compile.mode = "none": the
  // model is left as the job has it): never a search candidate, since its trial would measure
  // only noise and a lucky one would be kept as a gain.
  std::optional<Value> as_written;
  // A trial pays a one-off cost before its steps (compile.mode: the compilation, a minute on a
  // small CPU): among groups predicted alike, the search tries such a knob last.
  bool slow_trial = false;
  // The op family the knob changes (kOpFamilies: "convolution", "attention"; empty: any job):
  // not tried when the job's sampled autograd graphs hold none (a CNN's sdpa.backend trial would
  // measure only noise, and a lucky one would be kept).
  std::string acts_on;
  std::vector<std::string> addresses; // finding categories
  Risk risk = Risk::None;
  std::string doc;
};

// The op families a knob can act on (`acts_on`), as the Python integration counts them in the
// job's autograd graphs ("graph.ops.<family>" counters, plugins/python/tracetune/_shapes.py).
inline constexpr std::string_view kOpFamilies[] = {"convolution", "attention"};

struct Catalogue {
  std::vector<Knob> knobs;
  const Knob* find(std::string_view id) const;
};

// The finding categories the analyzer emits; `addresses` must use these.
inline constexpr std::string_view kFindingIds[] = {
    "data_loading", "h2d_copy",       "launch_bound", "sync_stall", "exposed_communication",
    "precision",    "memory_bound",   "load_imbalance", "cpu_bound", "memory"};

// Parses and checks a catalogue; `source` names it in errors ("knobs.toml: knob 3 (x.y): ...").
Result<Catalogue> parse_catalogue(std::string_view toml_text, std::string_view source);
Result<Catalogue> load_catalogue(const std::filesystem::path& path);
// The catalogue compiled into this build (tuner/knobs/knobs.toml).
Result<Catalogue> builtin_catalogue();

// Whether `value` is allowed for `knob` (type, range, choices): an empty status or why not.
Status check_value(const Knob& knob, const Value& value);
// True when `value` is one of the knob's numerics-safe values (or the knob has no such risk).
bool numerics_safe(const Knob& knob, const Value& value);
// True when the catalogue's knob `id` exists and `v` changes numerics (not numerics_safe).
bool changes_numerics(const Catalogue& catalogue, const std::string& id, const Value& v);

// Environment variables that make a process load or run code chosen by whoever sets them
// (LD_PRELOAD, PYTHONPATH, CUDA_INJECTION64_PATH, NCCL_*_PLUGIN, anything ending in _PATH...).
// Neither the catalogue nor a config may set them.
bool is_code_loading_env(std::string_view name);

// How a value is written into the environment / shown to users: true -> "1", lists -> "a,b".
std::string env_string(const Value& value);
// As TOML would spell it (for messages): true, 4, 2.5, "fp16", ["Ring", "Tree"].
std::string display(const Value& value);
// A value as JSON text: strings quoted and escaped, lists as arrays of strings, numbers as their
// shortest exact text (the trials file's settings, the Python settings file `run` writes).
std::string json_value(const Value& value);

std::string_view to_string(Apply a);
std::string_view to_string(KnobType t);
std::string_view to_string(Risk r);

}  // namespace tt::tuner
