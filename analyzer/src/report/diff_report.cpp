// Diff reports: JSON (schema tracetune.diff, for tools and the GUI), text (plain words first,
// then tables) and Markdown.
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "tracetune/analyzer/diff.h"

#include "escape.h"
#include "format.h"
#include "json_writer.h"

namespace tt::analyzer {

namespace {

void write_delta(Json& j, std::string_view key, const Delta& d) {
  j.key(key).begin_object();
  j.key("base").dbl_exact(d.base);
  j.key("new").dbl_exact(d.next);
  j.key("change").dbl_exact(d.change());
  j.kv("relative", d.relative());
  j.end_object();
}

void write_rank_diff(Json& j, const RankDiff& r) {
  j.begin_object();
  j.kv("base_rank", r.base_rank);
  j.kv("new_rank", r.new_rank);
  j.kv("base_label", r.base_label);
  j.kv("new_label", r.new_label);
  j.kv("has_gpu", r.has_gpu);
  j.kv("base_steps", r.base_steps);
  j.kv("new_steps", r.new_steps);
  j.kv("warmup", r.warmup);
  j.kv("new_warmup", r.new_warmup);
  j.kv("aligned_steps", r.steps.size());
  write_delta(j, "step_median_ns", r.step_median);
  write_delta(j, "step_p90_ns", r.step_p90);
  write_delta(j, "step_mean_ns", r.step_mean);
  write_delta(j, "throughput_steps_per_s", r.throughput);
  j.key("breakdown_ns_per_step").begin_array();
  for (const auto& c : r.breakdown) {
    j.begin_object();
    j.kv("component", c.name);
    j.kv("gpu", c.gpu);
    j.key("base").dbl_exact(c.ns.base);
    j.key("new").dbl_exact(c.ns.next);
    j.key("change").dbl_exact(c.ns.change());
    j.end_object();
  }
  j.end_array();
  j.key("steps").begin_array();
  for (const auto& s : r.steps) {
    j.begin_object();
    j.kv("index", s.index);
    j.kv("base_number", s.base_number);
    j.kv("new_number", s.new_number);
    j.kv("base_start_ns", s.base_start);
    j.kv("base_end_ns", s.base_end);
    j.kv("new_start_ns", s.new_start);
    j.kv("new_end_ns", s.new_end);
    j.end_object();
  }
  j.end_array();
  j.key("kernels").begin_array();
  for (const auto& k : r.kernels) {
    j.begin_object();
    j.kv("name", k.name);
    j.kv("class", k.kernel_class);
    j.kv("status", to_string(k.status));
    write_delta(j, "count_per_step", k.count);
    write_delta(j, "time_ns_per_step", k.time);
    j.end_object();
  }
  j.end_array();
  write_delta(j, "io_time_ns_per_step", r.io_time);
  j.key("files").begin_array();
  for (const auto& f : r.files) {
    j.begin_object();
    j.kv("path", f.path);
    write_delta(j, "calls_per_step", f.calls);
    write_delta(j, "bytes_read_per_step", f.bytes_read);
    write_delta(j, "bytes_written_per_step", f.bytes_written);
    write_delta(j, "time_ns_per_step", f.time);
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

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

std::string render_diff_json(const Diff& d) {
  Json j;
  j.begin_object();
  j.kv("schema", std::string_view("tracetune.diff"));
  j.kv("version", kDiffVersion);
  j.kv("base", d.base_source);
  j.kv("new", d.new_source);
  j.key("options").begin_object();
  j.kv("warmup", d.options.warmup);
  j.kv("new_warmup", d.options.new_warmup >= 0 ? d.options.new_warmup : d.options.warmup);
  j.end_object();
  j.kv("summary", d.summary);
  j.kv("headline", d.headline);
  j.key("ranks").begin_array();
  for (const auto& r : d.ranks) write_rank_diff(j, r);
  j.end_array();
  j.key("settings").begin_array();
  for (const auto& s : d.settings) {
    j.begin_object();
    j.kv("key", s.key);
    if (s.in_base) j.kv("base", s.base); else { j.key("base"); j.null(); }
    if (s.in_new) j.kv("new", s.next); else { j.key("new"); j.null(); }
    j.end_object();
  }
  j.end_array();
  j.key("findings").begin_array();
  for (const auto& f : d.findings) {
    j.begin_object();
    j.kv("status", to_string(f.status));
    j.kv("category", to_string(f.category));
    if (f.rank >= 0) j.kv("rank", f.rank); else { j.key("rank"); j.null(); }
    j.kv("title", f.title);
    j.kv("base_gain_ns", f.base_gain);
    j.kv("new_gain_ns", f.new_gain);
    j.end_object();
  }
  j.end_array();
  j.key("notes").begin_array();
  for (const auto& n : d.notes) j.str(n);
  j.end_array();
  j.end_object();
  j.out += '\n';
  return j.out;
}

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
