// What every verb of the `tracetune` command shares: how it is registered (a subcommand and
// the action run when it was chosen) and how it fails (one line on stderr, exit 1 or 2).
#pragma once

#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tracetune/trace/units.h"

namespace tt::cli {

// One verb: its subcommand, whose options fill the state the action captured, and the action.
struct Verb {
  CLI::App* cmd = nullptr;
  std::function<int()> run;
};
using Verbs = std::vector<Verb>;

// A failed verb: "tracetune: message" on stderr, exit code 1.
inline int fail(const std::string& msg) {
  std::fprintf(stderr, "tracetune: %s\n", msg.c_str());
  return 1;
}

// A usage error of a verb: "tracetune: VERB: message" on stderr, exit code 2.
inline int usage_error(std::string_view verb, const std::string& msg) {
  std::fprintf(stderr, "tracetune: %.*s: %s\n", static_cast<int>(verb.size()), verb.data(), msg.c_str());
  return 2;
}

// A number flag that must be finite and within [lo, hi] (above lo when `above`): CLI11's Range
// and PositiveNumber let nan through (every comparison with it is false), and a nan or inf
// timeout or threshold would silently switch it off. Parsed by the one strict parser.
inline CLI::Validator finite_number(double lo, double hi, bool above = false) {
  const std::string want = hi < 1e300 ? fmt::format("a finite number from {} to {}", lo, hi)
                                      : fmt::format("a finite number {} {}", above ? "above" : "from", lo);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        auto v = trace::parse_finite(text, "");
        if (v && (above ? v.value() > lo : v.value() >= lo) && v.value() <= hi) return {};
        return fmt::format("'{}' is not {}", text, want);
      },
      "FLOAT");
}
inline CLI::Validator positive_number() { return finite_number(0, 1e308, true); }

// `tracetune bench ...`: the micro-benchmarks (storage, h2d, gemm, launch, nccl, model, kernels).
void add_bench_verbs(CLI::App& app, Verbs& verbs);

}  // namespace tt::cli
