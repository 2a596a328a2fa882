// `tracetune bench kernels`: the substitution catalogue's candidates against the stock ops,
// measured and parity-checked inside PyTorch by the Python integration
// (plugins/python/tracetune/_kernel_bench.py). This side writes the catalogues compiled into
// tracetune to a private directory and starts the interpreter with the kernel pack's path.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "tracetune/tuner/knobs.h"

namespace tt::tuner {

extern const char kBuiltinSubstitutionsToml[];  // tuner/knobs/substitutions.toml

struct KernelBenchOptions {
  std::string python = "python3";   // the job's interpreter (the one with its PyTorch)
  std::vector<std::string> args;     // passed on: --only, --shapes, --device, --json, ...
};

// Runs the benchmark; returns its exit code (2 with one line on stderr when it cannot start).
// With `kept` set, the candidates it keeps (parity passed, faster than stock beyond noise)
// are also written there, one "knob=value" per line.
int run_kernel_bench(const KernelBenchOptions& opt, const std::filesystem::path& kept = {});

// The kept candidates of a `kept` file as (knob, value), each checked against the catalogue
// (a knob it names must exist and list the value among its candidates).
Result<std::vector<std::pair<std::string, Value>>> read_kept_kernels(const std::filesystem::path& kept,
                                                                     const Catalogue& catalogue);

}  // namespace tt::tuner
