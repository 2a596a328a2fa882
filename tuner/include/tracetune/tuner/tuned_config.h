// tuned.toml: the settings `tracetune tune` chose (or a person wrote), checked against the
// knob catalogue's typed allow-list before anything is applied. Format: docs/tuning.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tracetune/trace/result.h"
#include "tracetune/tuner/knobs.h"

namespace tt::tuner {

struct Setting {
  Knob knob;    // the catalogue entry it was checked against
  Value value;
  int line = 0; // in the config file
};

// One [[nccl.table]] entry: collectives of `collective` with min_bytes <= size <= max_bytes
// (and, when given, exactly `nodes` nodes / `ranks` ranks) use `algorithm` and `protocol`,
// and `channels` channels (0: NCCL's choice). Numbering follows NCCL's enums.
struct NcclTableEntry {
  int collective = 0;  // ncclFunc_t: Broadcast 0, Reduce 1, AllGather 2, ReduceScatter 3, AllReduce 4
  std::uint64_t min_bytes = 0, max_bytes = 0;
  int algorithm = 0;   // Tree 0, Ring 1, CollNetDirect 2, CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6
  int protocol = 0;    // LL 0, LL128 1, Simple 2
  int channels = 0;
  int nodes = -1, ranks = -1;  // -1: any
};

inline constexpr std::string_view kNcclCollectives[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
inline constexpr std::string_view kNcclAlgorithms[] = {"tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
inline constexpr std::string_view kNcclProtocols[] = {"ll", "ll128", "simple"};
inline constexpr std::size_t kMaxNcclTableEntries = 1024;

struct TunedConfig {
  std::vector<Setting> settings;          // sorted by knob id
  std::vector<NcclTableEntry> nccl_table; // in file order (the first matching entry wins)
  bool numerics_allowed = false;          // [meta] numerics = true

  // What the tuner recorded in [meta] (absent from a hand-written config): shown to people,
  // never applied. `command` is kept only when it is a string.
  std::optional<double> speedup;       // meta.speedup: the tuned step time's speedup over the baseline
  std::optional<std::int64_t> trials;  // meta.trials: how many trials were run
  std::string command;                 // meta.command: the job that was tuned
  std::vector<std::string> findings;   // meta.findings: the finding ids behind the search
  // The comment lines above the first table, without their leading "# " (the tuner writes the
  // baseline and tuned step times and the knobs it did not search there): prose, kept verbatim.
  std::vector<std::string> header_comments;
  // What load_tuned_config accepted but a person should know ("its directory is writable by
  // others"): printed by `run`, not a refusal.
  std::vector<std::string> warnings;
};

// Parses and checks a config. Every error is one line: "SOURCE: line N: what is wrong".
Result<TunedConfig> parse_tuned_config(std::string_view text, std::string_view source, const Catalogue& catalogue);

// Reads `path` the way ssh reads its keys: a regular file owned by you (or root) that neither
// group nor others can write, else refused; then parses it.
Result<TunedConfig> load_tuned_config(const std::filesystem::path& path, const Catalogue& catalogue);

// Writing the format parse_tuned_config reads (tuned_writer.cpp's tuned.toml, trial.cpp's
// candidate configs): a TOML basic string with escapes (also a quoted dotted key); a value in
// the catalogue's own spelling (an integer spelling is accepted for float knobs); [[nccl.table]]
// entries as parse_tuned_config reads them.
std::string toml_string(std::string_view s);
std::string value_toml(const Value& v);
std::string nccl_table_toml(const std::vector<NcclTableEntry>& table);

// The table file the NCCL tuner plugin reads (one entry per line, documented in docs/tuning.md).
std::string nccl_table_text(const std::vector<NcclTableEntry>& table);

}  // namespace tt::tuner
