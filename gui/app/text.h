// Text from a trace, for display. Names reach the GUI at any length (a 100 MB kernel name once
// took 50 s and 2.2 GB to draw: Qt measured every glyph before eliding), so every string shown
// is cut to a display length before it becomes a QString. Searching and matching use the full
// names from the Document, never these.
#pragma once

#include <cstddef>
#include <string_view>

#include <QString>

namespace tt::gui {

inline constexpr std::size_t kDisplayBytes = 2048;  // far more than a label, a cell or a tooltip shows

// The first `max_bytes` of `s` (cut between UTF-8 characters) with "…" when cut.
QString display_text(std::string_view s, std::size_t max_bytes = kDisplayBytes);

// Shorthand used across the GUI for any trace- or report-derived string.
inline QString qs(std::string_view s) { return display_text(s); }

}  // namespace tt::gui
