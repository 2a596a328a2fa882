// Comparing two analysed traces (`tracetune diff BASE NEW`): step time and throughput, the
// per-step breakdown, kernels matched by name, I/O per file, the settings that differ and the
// findings resolved, new and remaining. Both sides are Analyses (same metrics, same rules), so
// the diff is a pure function of two analyses and the traces' metadata. The JSON document is
// versioned ("schema": "tracetune.diff", "version": 1) and documented in docs/analysis.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/trace/model.h"

namespace tt::analyzer {

inline constexpr int kDiffVersion = 1;

struct DiffOptions {
  int warmup = 1;       // first steps of each rank left out before aligning (kept when nothing else remains)
  int new_warmup = -1;  // the new trace's, when it differs (the tuner's trials: workers x prefetch); -1: warmup
};

// One side of a compared quantity: ns (or bytes, counts) per aligned step or in total.
struct Delta {
  double base = 0, next = 0;
  double change() const { return next - base; }
  // next / base - 1; 0 when base is 0
  double relative() const { return base != 0 ? next / base - 1 : 0; }
};

struct AlignedStep {
  std::size_t index = 0;  // position after warm-up
  std::int64_t base_number = 0, new_number = 0;
  Ns base_start = 0, base_end = 0, new_start = 0, new_end = 0;
};

// A component of the per-step breakdown, mean ns per aligned step.
struct ComponentDelta {
  std::string name;  // "compute", "data wait", ... (docs/analysis.md)
  bool gpu = false;  // a GPU-side component (shown when either side has a GPU)
  Delta ns;
};

struct KernelDelta {
  std::string name, kernel_class;
  enum class Status : std::uint8_t { Matched, New, Vanished } status = Status::Matched;
  Delta count, time;  // per analysed step
};
std::string_view to_string(KernelDelta::Status);

struct FileDelta {
  std::string path;
  Delta calls, bytes_read, bytes_written, time;  // per analysed step
};

struct RankDiff {
  std::int32_t base_rank = -1, new_rank = -1;
  std::string base_label, new_label;
  bool has_gpu = false;
  std::size_t base_steps = 0, new_steps = 0;  // analysed steps of each side
  std::size_t warmup = 0, new_warmup = 0;     // steps left out at the start of each side
  std::vector<AlignedStep> steps;
  Delta step_median, step_p90, step_mean;     // ns, over the aligned steps
  Delta throughput;                           // steps per second (1 / median step)
  std::vector<ComponentDelta> breakdown;
  std::vector<KernelDelta> kernels;           // matched, new and vanished; by |time change|, largest first
  std::vector<FileDelta> files;               // by |time change|, largest first
  Delta io_time;                              // all I/O call time per analysed step
};

struct SettingDelta {
  std::string key;   // "env.NAME", "command", "tuned.<knob>", or a trace metadata key
  std::string base, next;
  bool in_base = false, in_new = false;
};

struct FindingDelta {
  enum class Status : std::uint8_t { Resolved, New, Remaining } status = Status::Remaining;
  Category category{};
  std::int32_t rank = -1;  // the new trace's rank (the base's for resolved findings)
  std::string title;       // the new trace's title (the base's for resolved findings)
  Ns base_gain = 0, new_gain = 0;
};
std::string_view to_string(FindingDelta::Status);

struct Diff {
  std::string base_source, new_source;
  DiffOptions options;
  std::vector<RankDiff> ranks;   // rank pairs: by rank id when both have the same ids, else by position
  std::size_t headline = 0;      // the pair the summary speaks of: the base's slowest rank
  std::vector<SettingDelta> settings;
  std::vector<FindingDelta> findings;
  std::vector<std::string> notes;
  std::string summary;           // the plain-words first line(s)
};

Diff diff(const trace::Trace& base_trace, const Analysis& base, const trace::Trace& new_trace, const Analysis& next,
          const DiffOptions& opt = {});

std::string render_diff_json(const Diff& d);
// The keys render_diff_json can write, from its field tables, as dotted paths ("ranks.files.path").
std::vector<std::string> diff_json_fields();
std::string render_diff_text(const Diff& d, bool color);
std::string render_diff_markdown(const Diff& d);

}  // namespace tt::analyzer
