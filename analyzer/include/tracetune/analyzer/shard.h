// Sharded analysis (docs/scale.md): shard K of N analyses its share of the input's ranks one
// input file at a time and writes a part file; combining the N parts gives the report a single
// process would have made on the whole input. Shards run under any launcher (srun, mpirun,
// torchrun): each needs only its K, N and the input path.
#pragma once

#include <filesystem>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/trace/result.h"

namespace tt::analyzer {

struct Shard {
  unsigned index = 0, count = 1;  // K of N, 0 <= K < N
};

// "K/N" -> Shard, both whole numbers (strictly: 4294967297/3 is refused, not read as 1/3);
// errors name `what`, where the text came from ("--shard", "RANK/WORLD_SIZE").
Result<Shard> parse_shard(std::string_view spec, std::string_view what = "--shard");

// The shard a launcher gave this process (SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/SIZE,
// PMI_RANK/PMI_SIZE, RANK/WORLD_SIZE: the first pair that is set), with the variables it came
// from; none when no pair is set. A set pair that is not a shard is an error naming it, never
// skipped for the next launcher's.
struct LauncherShard {
  Shard shard;
  std::string variables;  // "RANK/WORLD_SIZE"
};
Result<std::optional<LauncherShard>> shard_from_environment();

struct ShardRun {
  std::size_t files = 0, ranks = 0, events = 0;  // what this shard read and analysed
};

// Analyses shard `s` of `input` (a Kineto directory, one file per rank or more; or one trace,
// whose ranks are then split) and writes the part file `output` (0600, atomically).
// `step_range` as analyze's --step-range. `progress` (may be empty) hears each file as it ends.
Result<ShardRun> analyze_shard(const std::filesystem::path& input, Shard s, const Options& opt,
                               const std::string& step_range, const std::filesystem::path& output,
                               const std::function<void(const std::string&)>& progress = {});

// The report from every part of one sharded run (all N of them, any order). Reads each rank's
// graph back from its part when the critical paths need it; `opt.threads` as analyze's.
Result<Analysis> combine_shards(std::span<const std::filesystem::path> parts, unsigned threads = 0);

// `analyze` of a tracetune trace DB larger than memory (docs/scale.md): when the model of its
// events would take more than `budget` bytes (75 per event, from the outline's counts), the
// shard pipeline runs in this process: the ranks cut into blocks that fit, each block's process
// trees read, analysed and written to a part in a private directory, then the parts combined.
// The report is the one an analysis in memory gives, byte for byte. None: analyse in memory (the
// trace fits; it is not a trace DB; its steps come from named ranges; it carries the collective
// calls a hang diagnosis reads; it has one rank; or `opt.hta_compat`).
Result<std::optional<Analysis>> analyze_in_blocks(const std::filesystem::path& input, const Options& opt,
                                                  std::uint64_t budget);
// Half of MemAvailable, or TRACETUNE_ANALYZE_BUDGET (bytes) when set (a malformed value is an
// error naming it).
Result<std::uint64_t> analyze_memory_budget();

// Rewrites the checksum in a part file's header (the bytes held in memory) to match the bytes:
// the fuzzer and the tests forge parts with it to reach the checks behind the checksum. False
// when the bytes are too short to hold a header.
bool reseal_part(std::span<unsigned char> bytes);

}  // namespace tt::analyzer
