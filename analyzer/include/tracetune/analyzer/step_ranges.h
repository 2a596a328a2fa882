// Steps from named ranges, for traces that carry no step markers: nsys exports, Kineto traces
// without ProfilerStep#N, jobs that mark their iterations with NVTX or user annotations.
// Runs on a finalized Trace before analysis and replaces its steps table (steps are not part of
// the per-track slices, so nothing else needs recomputing). Definitions: docs/analysis.md.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::analyzer {

struct StepRangeResult {
  std::string pattern;          // the regex the steps came from
  std::size_t steps = 0;        // steps made
  std::size_t processes = 0;    // processes that got steps
  bool chosen = false;          // the pattern came from --step-range (else a convention)
  std::string note;             // one line for the report (step_range_note())
};

std::string step_range_note(const StepRangeResult& r);

// One step per range whose name matches `pattern` (ECMAScript, case-insensitive, searched
// anywhere in the name), on each process's thread track with the most matches; a match
// inside another kept match is skipped. Steps are numbered by the last integer in their names
// when those are distinct within the process, else 0, 1, 2... Replaces every existing step.
// Fails on a bad regex or when nothing matches (the message names the pattern).
Result<StepRangeResult> steps_from_ranges(trace::Trace& t, std::string_view pattern);

// The error steps_from_ranges() gives for a pattern that is not a valid regular expression.
Status check_step_range(std::string_view pattern);

// For a trace with no steps: the first common convention (ProfilerStep#N, step N / train_step,
// iteration N) that at least two ranges of a process match becomes its steps. Ranges of the
// kinds a user or profiler names (NVTX, user annotations, B/E ranges, profiler spans) only,
// never ops or Python functions. Nothing when the trace has steps or no convention matches.
std::optional<StepRangeResult> detect_step_ranges(trace::Trace& t);

// What a command that analyses a trace does before analyze(): steps_from_ranges when
// `step_range` is given, else detect_step_ranges. The report note, if steps were made.
Result<std::optional<std::string>> choose_step_source(trace::Trace& t, const std::string& step_range);

}  // namespace tt::analyzer
