// libFuzzer target: hostile names through the reports (issue 32). The input is cut into names
// (at each "\xff\xff") that fill every trace-derived field an analysis and a diff show: the
// source, rank labels, devices (also as quoted in the MFU peak), kernel, op, process and file
// names, critical-path segments, finding text, settings, notes.
// Whatever they hold, the text, Markdown and HTML reports must
//   - carry no character a terminal or viewer acts on: C0 controls but the newline, DEL, C1, bidi
//     embeddings/overrides/isolates, line separators, bytes that are not UTF-8;
//   - keep the markup skeleton the same report has when each name is replaced by as many 'x':
//     the same lines, and on each line the same Markdown tokens outside code spans (| < > [ ] (
//     ) ! * _ # ~ and the code spans themselves), the same HTML < > " ' characters. A name can
//     add no line, table cell, heading, link, image, tag or attribute.
// The checks below are written independently of analyzer/src/report/escape.cpp, which they judge.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "tracetune/analyzer/analyze.h"
#include "tracetune/analyzer/diff.h"

namespace {

using namespace tt::analyzer;

// Twelve names from the input (fewer pieces are reused in turn).
std::vector<std::string> names_from(std::string_view in) {
  std::vector<std::string> pieces;
  for (std::size_t at; (at = in.find("\xff\xff")) != std::string_view::npos; in.remove_prefix(at + 2))
    pieces.emplace_back(in.substr(0, at));
  pieces.emplace_back(in);
  std::vector<std::string> names(12);
  for (std::size_t i = 0; i < names.size(); ++i) names[i] = pieces[i % pieces.size()];
  return names;
}

Analysis analysis_of(const std::vector<std::string>& n) {
  Analysis a;
  a.source = n[0];
  a.clock_domain = n[1];
  RankMetrics r;
  r.rank = 0;
  r.label = n[2];
  r.has_gpu = true;
  r.device = n[3];
  r.top_kernels.push_back({n[4], 3, 1'000'000, "gemm"});
  r.io.calls = 4;
  r.io.per_process = {{0, 1, n[5], 2, 10, 0, 5}, {1, 2, n[6], 2, 10, 0, 5}};
  MemoryDevice m;
  m.device = n[7];
  m.peak = 1 << 20;
  r.memory.push_back(m);
  r.efficiency.ops = 1;  // the MFU line quotes the device in `peak`; the roofline names ops and dtypes
  r.efficiency.mfu = 0.5;
  r.efficiency.peak = n[3];
  r.efficiency.flops_by_kind = {{"gemm", 1e9}};
  r.efficiency.roofline.push_back({n[9], n[10], 1, 1e9, 1e6, 1000, 1.0, 2.0});
  StepPath path;  // its longest segment names a kernel
  path.length = path.end = 1000;
  path.by_kind[0] = 1000;
  path.top.push_back({0, 1000, PathKind::HostCompute, 0, n[11]});
  r.paths.push_back(path);
  r.notes.push_back(n[8]);
  a.metrics.ranks.push_back(r);
  a.metrics.notes.push_back(n[9]);
  Finding f;
  f.rank = 0;
  f.title = n[10];
  f.detail = n[11];
  f.gain_model = n[4];
  f.evidence.push_back({n[5]});
  f.knobs = {"dataloader.num_workers"};
  a.findings.push_back(f);
  return a;
}

Diff diff_of(const std::vector<std::string>& n) {
  Diff d;
  d.base_source = n[0];
  d.new_source = n[1];
  d.summary = n[2];
  RankDiff r;
  r.base_label = n[3];
  r.new_label = n[4];
  r.kernels.push_back({n[5], "gemm"});
  r.files.push_back({n[6]});
  d.ranks.push_back(r);
  d.settings.push_back({n[7], n[8], n[9], true, true});
  d.findings.push_back({FindingDelta::Status::New, Category{}, 0, n[10]});
  d.notes.push_back(n[11]);
  return d;
}

// The code point at s[i] and its length; 0 when s[i] starts no valid UTF-8 sequence.
std::size_t utf8_at(std::string_view s, std::size_t i, char32_t& cp) {
  const auto c = static_cast<unsigned char>(s[i]);
  const std::size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  cp = n == 1 ? c : c & (0x7F >> n);
  for (std::size_t k = 1; k < n; ++k) {
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  }
  static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void require_inert(std::string_view out) {
  for (std::size_t i = 0; i < out.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8_at(out, i, cp);
    if (n == 0) std::abort();  // a raw byte that is not UTF-8
    const bool acts = (cp < 0x20 && cp != '\n') || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
                      (cp >= 0x2066 && cp <= 0x2069) || cp == 0x2028 || cp == 0x2029;
    if (acts) std::abort();
    i += n;
  }
}

// Per line, the Markdown tokens a renderer acts on: backslash escapes skipped, a code span
// (a backtick run and the next run of the same length on the line) one token, its content skipped.
std::vector<std::string> md_skeleton(std::string_view md) {
  std::vector<std::string> lines(1);
  for (std::size_t i = 0; i < md.size(); ++i) {
    const char c = md[i];
    std::string& t = lines.back();
    if (c == '\n') lines.emplace_back();
    else if (c == '\\') ++i;
    else if (c == '`') {
      std::size_t run = 0;
      while (i + run < md.size() && md[i + run] == '`') ++run;
      std::size_t close = i + run, end = std::string_view::npos;
      for (; close < md.size() && md[close] != '\n'; ++close) {
        std::size_t r = 0;
        while (close + r < md.size() && md[close + r] == '`') ++r;
        if (r == run) { end = close + r; break; }
        close += r > 0 ? r - 1 : 0;
      }
      t += end == std::string_view::npos ? "U" : "C";
      i = (end == std::string_view::npos ? i + run : end) - 1;
    } else if (std::string_view("|<>[]()!*_#~").find(c) != std::string_view::npos) {
      t += c;
    }
  }
  return lines;
}

std::string html_skeleton(std::string_view html) {
  std::string t;
  for (char c : html)
    if (c == '<' || c == '>' || c == '"' || c == '\'' || c == '\n') t += c;
  return t;
}

std::size_t lines(std::string_view s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')); }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto hostile = names_from(std::string_view(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> benign;
  for (const auto& n : hostile) benign.emplace_back(n.size(), 'x');
  const Analysis a = analysis_of(hostile), b = analysis_of(benign);
  const Diff d = diff_of(hostile), e = diff_of(benign);

  for (const std::string& out : {render_markdown(a), render_text(a, false), render_html(a), render_diff_markdown(d),
                                 render_diff_text(d, false)})
    require_inert(out);
  if (md_skeleton(render_markdown(a)) != md_skeleton(render_markdown(b))) std::abort();
  if (md_skeleton(render_diff_markdown(d)) != md_skeleton(render_diff_markdown(e))) std::abort();
  if (lines(render_text(a, false)) != lines(render_text(b, false))) std::abort();
  if (lines(render_diff_text(d, false)) != lines(render_diff_text(e, false))) std::abort();
  if (html_skeleton(render_html(a)) != html_skeleton(render_html(b))) std::abort();
  return 0;
}
