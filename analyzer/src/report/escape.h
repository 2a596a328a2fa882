// Trace-derived strings in reports. Kernel, process and file names, a job's argv and
// environment values, even the input's file name, come from whoever produced the trace and can
// hold anything: terminal escapes, bidi overrides that reorder what is shown, NUL, HTML, Markdown
// that a viewer would turn into headings, images or links. A report shows such text; it never
// lets the terminal or viewer act on it. Every trace-derived string in the text, Markdown and
// HTML reports goes through one of these (docs/analysis.md, "What reports escape").
#pragma once

#include <string>
#include <string_view>

namespace tt::analyzer {

// Terminal-safe text: C0 controls (newline and tab included), DEL, C1 controls, the bidi
// embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), the line and paragraph
// separators (U+2028, U+2029) and bytes that are not UTF-8 become visible escapes: \n, \x1b,
// \u009b, \u202e, \xff. Everything else, backslashes included, is unchanged.
std::string visible(std::string_view s);

// Markdown text (paragraphs, list items, headings, table cells): visible(), then & < > as
// entities, every character Markdown gives a meaning to (\ ` * _ [ ] ( ) ! | ~ $ { }) and a
// leading heading, list or quote marker backslash-escaped. Rendered, it reads as the original.
std::string md_text(std::string_view s);

// A Markdown code span holding visible(s): a backtick fence longer than any run of backticks
// inside, padded when the text starts or ends with one. In a table cell a | and a \ are escaped
// as the table parser needs (\| and \\), so a cell is never split.
enum class MdPlace { Inline, TableCell };
std::string md_code(std::string_view s, MdPlace place);

// The longest prefix of `s` of at most `max_bytes` that ends on a whole UTF-8 character: where
// reports cut a long name before escaping it.
std::string_view utf8_prefix(std::string_view s, std::size_t max_bytes);
// At most `max_bytes` of `s` (more than 3), "..." in place of what was cut; still raw text.
std::string clip(std::string_view s, std::size_t max_bytes);

// HTML text and attribute values: visible(), then & < > " ' as entities.
std::string html_text(std::string_view s);

}  // namespace tt::analyzer
