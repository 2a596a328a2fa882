// Diff reports: JSON (schema tracetune.diff, for tools and the GUI), text (plain words first,
// then tables) and Markdown.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tracetune/analyzer/diff.h"

#include "escape.h"
#include "format.h"
#include "json_fields.h"

namespace tt::analyzer {

namespace {

// The tracetune.diff document's tables (docs/analysis.md, "The JSON diff").
constexpr auto kDeltaFields =
    std::tuple(field("base", [](const Delta& d) { return Exact{d.base}; }),
               field("new", [](const Delta& d) { return Exact{d.next}; }),
               field("change", [](const Delta& d) { return Exact{d.change()}; }), field("relative", &Delta::relative));

constexpr auto kComponentFields =
    std::tuple(field("component", &ComponentDelta::name), field("gpu", &ComponentDelta::gpu),
               field("base", [](const ComponentDelta& c) { return Exact{c.ns.base}; }),
               field("new", [](const ComponentDelta& c) { return Exact{c.ns.next}; }),
               field("change", [](const ComponentDelta& c) { return Exact{c.ns.change()}; }));

using AS = AlignedStep;
constexpr auto kAlignedStepFields =
    std::tuple(field("index", &AS::index), field("base_number", &AS::base_number), field("new_number", &AS::new_number),
               field("base_start_ns", &AS::base_start), field("base_end_ns", &AS::base_end),
               field("new_start_ns", &AS::new_start), field("new_end_ns", &AS::new_end));

constexpr auto kKernelDeltaFields =
    std::tuple(field("name", &KernelDelta::name), field("class", &KernelDelta::kernel_class),
               field("status", [](const KernelDelta& k) { return to_string(k.status); }),
               object("count_per_step", &KernelDelta::count, kDeltaFields),
               object("time_ns_per_step", &KernelDelta::time, kDeltaFields));

constexpr auto kFileDeltaFields =
    std::tuple(field("path", &FileDelta::path), object("calls_per_step", &FileDelta::calls, kDeltaFields),
               object("bytes_read_per_step", &FileDelta::bytes_read, kDeltaFields),
               object("bytes_written_per_step", &FileDelta::bytes_written, kDeltaFields),
               object("time_ns_per_step", &FileDelta::time, kDeltaFields));

using RD = RankDiff;
constexpr auto kRankDiffFields = std::tuple(
    field("base_rank", &RD::base_rank), field("new_rank", &RD::new_rank), field("base_label", &RD::base_label),
    field("new_label", &RD::new_label), field("has_gpu", &RD::has_gpu), field("base_steps", &RD::base_steps),
    field("new_steps", &RD::new_steps), field("warmup", &RD::warmup), field("new_warmup", &RD::new_warmup),
    field("aligned_steps", [](const RD& r) { return r.steps.size(); }),
    object("step_median_ns", &RD::step_median, kDeltaFields), object("step_p90_ns", &RD::step_p90, kDeltaFields),
    object("step_mean_ns", &RD::step_mean, kDeltaFields),
    object("throughput_steps_per_s", &RD::throughput, kDeltaFields),
    array("breakdown_ns_per_step", &RD::breakdown, kComponentFields), array("steps", &RD::steps, kAlignedStepFields),
    array("kernels", &RD::kernels, kKernelDeltaFields), object("io_time_ns_per_step", &RD::io_time, kDeltaFields),
    array("files", &RD::files, kFileDeltaFields));

// A setting's value on one side; null where that side does not set it.
constexpr auto kSettingFields = std::tuple(
    field("key", &SettingDelta::key),
    field("base", [](const SettingDelta& s) { return s.in_base ? std::optional<std::string_view>(s.base) : std::nullopt; }),
    field("new", [](const SettingDelta& s) { return s.in_new ? std::optional<std::string_view>(s.next) : std::nullopt; }));

using FD = FindingDelta;
constexpr auto kFindingDeltaFields =
    std::tuple(field("status", [](const FD& f) { return to_string(f.status); }),
               field("category", [](const FD& f) { return to_string(f.category); }), field("rank", rank_or_null<FD>),
               field("title", &FD::title), field("base_gain_ns", &FD::base_gain), field("new_gain_ns", &FD::new_gain));

constexpr auto kDiffOptionFields = std::tuple(
    field("warmup", &DiffOptions::warmup),
    field("new_warmup", [](const DiffOptions& o) { return o.new_warmup >= 0 ? o.new_warmup : o.warmup; }));

constexpr auto kDiffFields = std::tuple(
    field("schema", [](const Diff&) { return std::string_view("tracetune.diff"); }),
    field("version", [](const Diff&) { return kDiffVersion; }), field("base", &Diff::base_source),
    field("new", &Diff::new_source), object("options", &Diff::options, kDiffOptionFields),
    field("summary", &Diff::summary), field("headline", &Diff::headline), array("ranks", &Diff::ranks, kRankDiffFields),
    array("settings", &Diff::settings, kSettingFields), array("findings", &Diff::findings, kFindingDeltaFields),
    field("notes", &Diff::notes));

std::string pct_change(const Delta& d) {
  if (d.base == 0) return d.next == 0 ? "0%" : "new";
  return fmt::format("{:+.0f}%", 100 * d.relative());
}

std::string ms(double ns) { return fmt::format("{:.2f}", ns / 1e6); }

// A setting's value as shown: whole when short; else around where the two values first differ
// (a long command line differs in one argument).
std::string setting_value(const SettingDelta& s, bool next) {
  if (!(next ? s.in_new : s.in_base)) return "(unset)";
  const std::string& v = next ? s.next : s.base;
  constexpr std::size_t kWidth = 60;
  if (v.size() <= kWidth) return v;
  std::size_t at = 0;
  if (s.in_base && s.in_new)
    while (at < s.base.size() && at < s.next.size() && s.base[at] == s.next[at]) ++at;
  const std::size_t from = at > kWidth / 2 ? at - kWidth / 2 : 0;
  return (from > 0 ? "..." : "") + v.substr(from, kWidth) + (from + kWidth < v.size() ? "..." : "");
}

std::string rank_of(std::int32_t r) { return r >= 0 ? fmt::format("rank {}", r) : std::string("all ranks"); }

constexpr std::size_t kRows = 12;  // rows per text/Markdown table; JSON has them all

}  // namespace

std::string render_diff_json(const Diff& d) { return document_json(d, kDiffFields); }

std::vector<std::string> diff_json_fields() { return document_paths(kDiffFields); }

std::string render_diff_text(const Diff& d, bool color) {
  auto bold = [&](std::string_view s) { return color ? fmt::format("\x1b[1m{}\x1b[0m", s) : std::string(s); };
  std::string o = bold(fmt::format("tracetune diff: {} -> {}", visible(d.base_source), visible(d.new_source))) + "\n";
  o += visible(d.summary) + "\n";
  const std::size_t resolved = static_cast<std::size_t>(std::count_if(d.findings.begin(), d.findings.end(), [](const auto& f) {
    return f.status == FindingDelta::Status::Resolved; }));
  const std::size_t added = static_cast<std::size_t>(std::count_if(d.findings.begin(), d.findings.end(), [](const auto& f) {
    return f.status == FindingDelta::Status::New; }));
  o += fmt::format("findings: {} resolved, {} new, {} remaining; {} setting(s) differ\n", resolved, added,
                   d.findings.size() - resolved - added, d.settings.size());
  for (const auto& r : d.ranks) {
    o += "\n" + bold(visible(r.base_label == r.new_label ? r.base_label : fmt::format("{} -> {}", r.base_label, r.new_label))) + "\n";
    o += fmt::format("  {} aligned steps (warm-up {} left out; {} and {} analysed)\n", r.steps.size(),
                     r.warmup == r.new_warmup ? fmt::format("{}", r.warmup) : fmt::format("{} and {}", r.warmup, r.new_warmup),
                     r.base_steps, r.new_steps);
    o += fmt::format("  {:<24} {:>11} {:>11} {:>11} {:>7}\n", "per step (ms)", "base", "new", "change", "");
    auto row = [&](std::string_view name, const Delta& v) {
      o += fmt::format("  {:<24} {:>11} {:>11} {:>+11.2f} {:>7}\n", name, ms(v.base), ms(v.next), v.change() / 1e6, pct_change(v));
    };
    row("step time (median)", r.step_median);
    row("step time (p90)", r.step_p90);
    row("step time (mean)", r.step_mean);
    for (const auto& c : r.breakdown)
      if (c.ns.base != 0 || c.ns.next != 0) row(c.name, c.ns);
    if (r.io_time.base != 0 || r.io_time.next != 0) row("I/O calls (all threads)", r.io_time);
    o += fmt::format("  throughput: {:.2f} -> {:.2f} steps/s ({})\n", r.throughput.base, r.throughput.next, pct_change(r.throughput));
    if (!r.kernels.empty()) {
      o += fmt::format("  kernels by time change (per step; {} names):\n", r.kernels.size());
      for (std::size_t i = 0; i < std::min(kRows, r.kernels.size()); ++i) {
        const auto& k = r.kernels[i];
        o += fmt::format("    {:<9} {:>7.1f} -> {:<7.1f} calls {:>10} -> {:<10} {}\n", to_string(k.status), k.count.base,
                         k.count.next, dur(std::llround(k.time.base)), dur(std::llround(k.time.next)), visible(clip(k.name, 60)));
      }
    }
    if (!r.files.empty()) {
      o += fmt::format("  I/O by file (per step; {} files):\n", r.files.size());
      for (std::size_t i = 0; i < std::min(kRows, r.files.size()); ++i) {
        const auto& f = r.files[i];
        o += fmt::format("    {:>10} -> {:<10} {:>8.1f} -> {:<8.1f} calls {:>9.2f} -> {:<9.2f} MB read  {}\n",
                         dur(std::llround(f.time.base)), dur(std::llround(f.time.next)), f.calls.base, f.calls.next,
                         f.bytes_read.base / 1e6, f.bytes_read.next / 1e6, f.path.empty() ? "(no path)" : visible(clip(f.path, 60)));
      }
    }
  }
  if (!d.settings.empty()) {
    o += "\n" + bold("Settings that differ") + "\n";
    for (const auto& s : d.settings)
      o += fmt::format("  {}: {} -> {}\n", visible(s.key), visible(setting_value(s, false)), visible(setting_value(s, true)));
  }
  if (!d.findings.empty()) {
    o += "\n" + bold("Findings") + "\n";
    for (const auto& f : d.findings)
      o += fmt::format("  {:<9} {} · {} (est. gain {} -> {}): {}\n", to_string(f.status), to_string(f.category),
                       rank_of(f.rank), dur(f.base_gain), dur(f.new_gain), visible(f.title));
  }
  for (const auto& n : d.notes) o += fmt::format("note: {}\n", visible(n));
  return o;
}

// Every trace-derived string goes through md_text or md_code (escape.h); the rest is ours.
std::string render_diff_markdown(const Diff& d) {
  std::string o = fmt::format("# tracetune diff: {} → {}\n\n{}\n", md_code(d.base_source, MdPlace::Inline),
                              md_code(d.new_source, MdPlace::Inline), md_text(d.summary));
  for (const auto& r : d.ranks) {
    o += fmt::format("\n## {}\n\n{} aligned steps (warm-up {} left out).\n\n| per step (ms) | base | new | change |\n|---|---|---|---|\n",
                     r.base_label == r.new_label ? md_text(r.base_label)
                                                 : fmt::format("{} → {}", md_text(r.base_label), md_text(r.new_label)),
                     r.steps.size(), r.warmup);
    auto row = [&](std::string_view name, const Delta& v) {
      o += fmt::format("| {} | {} | {} | {} |\n", md_text(name), ms(v.base), ms(v.next), pct_change(v));
    };
    row("step time (median)", r.step_median);
    row("step time (p90)", r.step_p90);
    for (const auto& c : r.breakdown)
      if (c.ns.base != 0 || c.ns.next != 0) row(c.name, c.ns);
    if (!r.kernels.empty()) {
      o += "\n| kernel | status | count/step | time/step |\n|---|---|---|---|\n";
      for (std::size_t i = 0; i < std::min(kRows, r.kernels.size()); ++i) {
        const auto& k = r.kernels[i];
        o += fmt::format("| {} | {} | {:.1f} → {:.1f} | {} → {} |\n", md_code(clip(k.name, 80), MdPlace::TableCell),
                         to_string(k.status), k.count.base, k.count.next, dur(std::llround(k.time.base)),
                         dur(std::llround(k.time.next)));
      }
    }
    if (!r.files.empty()) {
      o += "\n| file | calls/step | MB read/step | time/step |\n|---|---|---|---|\n";
      for (std::size_t i = 0; i < std::min(kRows, r.files.size()); ++i) {
        const auto& f = r.files[i];
        o += fmt::format("| {} | {:.1f} → {:.1f} | {:.2f} → {:.2f} | {} → {} |\n",
                         f.path.empty() ? std::string("(no path)") : md_code(f.path, MdPlace::TableCell), f.calls.base,
                         f.calls.next, f.bytes_read.base / 1e6, f.bytes_read.next / 1e6, dur(std::llround(f.time.base)),
                         dur(std::llround(f.time.next)));
      }
    }
  }
  if (!d.settings.empty()) {
    o += "\n## Settings that differ\n\n| setting | base | new |\n|---|---|---|\n";
    for (const auto& s : d.settings)
      o += fmt::format("| {} | {} | {} |\n", md_code(s.key, MdPlace::TableCell), md_text(setting_value(s, false)),
                       md_text(setting_value(s, true)));
  }
  if (!d.findings.empty()) {
    o += "\n## Findings\n\n| status | category | rank | est. gain (base → new) | title |\n|---|---|---|---|---|\n";
    for (const auto& f : d.findings)
      o += fmt::format("| {} | {} | {} | {} → {} | {} |\n", to_string(f.status), to_string(f.category), rank_of(f.rank),
                       dur(f.base_gain), dur(f.new_gain), md_text(f.title));
  }
  if (!d.notes.empty()) {
    o += "\n## Notes\n\n";
    for (const auto& n : d.notes) o += fmt::format("- {}\n", md_text(n));
  }
  return o;
}

}  // namespace tt::analyzer
