// Input dispatch: which importer reads a path.
#include <fcntl.h>
#include <unistd.h>

#include <cstring>

#include "sqlite_util.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

namespace tt::trace {
namespace fs = std::filesystem;

InputFormat detect_format(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return InputFormat::KinetoJson;
  if (!check_input_path(path)) return InputFormat::Unknown;  // never open() a FIFO: it blocks
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) return InputFormat::Unknown;
  unsigned char head[16] = {};
  const ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b) return InputFormat::KinetoJson;
  if (n == 16 && std::memcmp(head, "SQLite format 3", 16) == 0) {
    auto db = sql::open_untrusted(path.string());
    if (!db) return InputFormat::OtherSqlite;
    auto q = sql::Stmt::prepare(db->get(), "SELECT name FROM sqlite_schema WHERE type='table' AND name IN ('meta','StringIds')");
    if (!q) return InputFormat::OtherSqlite;
    InputFormat f = InputFormat::OtherSqlite;
    while (q->step() == SQLITE_ROW) {
      if (q->text(0) == "meta") f = InputFormat::TracetuneDb;
      else if (f == InputFormat::OtherSqlite) f = InputFormat::NsysSqlite;
    }
    return f;
  }
  for (ssize_t i = 0; i < n; ++i) {
    if (head[i] == '{' || head[i] == '[') return InputFormat::KinetoJson;
    if (head[i] != ' ' && head[i] != '\n' && head[i] != '\r' && head[i] != '\t' && head[i] != 0xef &&
        head[i] != 0xbb && head[i] != 0xbf)
      break;
  }
  return InputFormat::Unknown;
}

Status import_any(std::span<const fs::path> inputs, Trace& out, const ImportProgress& progress) {
  for (const auto& in : inputs) {
    if (auto st = check_input_path(in); !st) return st;
    const std::string before = out.clock_domain;
    Status st;
    switch (detect_format(in)) {
      case InputFormat::KinetoJson: st = import_kineto(in, out, progress); break;
      case InputFormat::NsysSqlite: st = import_nsys(in, out); break;
      case InputFormat::TracetuneDb:
        return make_error(in.string() + ": already a tracetune trace: use it directly (info, export, analyze)");
      case InputFormat::OtherSqlite: {
        // say what is wrong with it: unreadable, refused (triggers/views), or foreign
        auto db = sql::open_untrusted(in.string());
        if (!db) return make_error(db.error());
        return make_error(in.string() + ": an SQLite database that is neither a tracetune trace nor an Nsight Systems export");
      }
      case InputFormat::Unknown:
        return make_error(in.string() + ": unrecognised input (expected Kineto JSON, an nsys SQLite export or a tracetune trace)");
    }
    if (!st) return st;
    if (before != "unknown" && out.clock_domain != before)
      out.add_diagnostic(DiagnosticKind::Note, in.string(), "inputs come from different clock domains; times are not aligned");
  }
  return {};
}

Result<Trace> load_any(const fs::path& input) {
  if (auto st = check_input_path(input); !st) return make_error(st.error());
  if (detect_format(input) == InputFormat::TracetuneDb) return read_trace(input);
  Trace t;
  const fs::path inputs[] = {input};
  if (auto st = import_any(inputs, t); !st) return make_error(st.error());
  t.finalize();
  return t;
}

}  // namespace tt::trace
