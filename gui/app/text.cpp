#include "text.h"

namespace tt::gui {

QString display_text(std::string_view s, std::size_t max_bytes) {
  if (s.size() <= max_bytes) return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(cut)) + QChar(0x2026);
}

}  // namespace tt::gui
