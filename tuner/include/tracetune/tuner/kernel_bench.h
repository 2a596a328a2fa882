// `tracetune bench kernels`: the substitution catalogue's candidates against the stock ops,
// measured and parity-checked inside PyTorch by the Python integration
// (plugins/python/tracetune/_kernel_bench.py). This side writes the catalogues compiled into
// tracetune to a private directory and starts the interpreter with the kernel pack's path.
#pragma once

#include <string>
#include <vector>

namespace tt::tuner {

extern const char kBuiltinSubstitutionsToml[];  // tuner/knobs/substitutions.toml

struct KernelBenchOptions {
  std::string python = "python3";   // the job's interpreter (the one with its PyTorch)
  std::vector<std::string> args;     // passed on: --only, --shapes, --device, --json, ...
};

// Runs the benchmark; returns its exit code (2 with one line on stderr when it cannot start).
int run_kernel_bench(const KernelBenchOptions& opt);

}  // namespace tt::tuner
