#include "sqlite_util.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

namespace tt::trace::sql {

void configure_sqlite() {
  // Memory statistics take a process-wide mutex on every allocation, which serializes the
  // parallel table readers; we never read the statistics. Must precede sqlite3_initialize;
  // if the host program already initialized SQLite this is refused, harmlessly.
  static std::once_flag once;
  std::call_once(once, [] {
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_initialize();
  });
}

Result<Db> open_untrusted(const std::string& path) {
  configure_sqlite();
  // Check the magic first: SQLite would happily "open" any file and fail later with a vague
  // "file is not a database".
  {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return make_error(path + ": " + std::strerror(errno));
    char magic[16] = {};
    const ssize_t n = ::read(fd, magic, sizeof magic);
    ::close(fd);
    if (n != 16 || std::memcmp(magic, "SQLite format 3", 16) != 0)
      return make_error(path + ": not an SQLite database");
  }
  sqlite3* raw = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) return make_error(path + ": cannot open: " + db.errmsg());
  int dummy = 0;
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_DEFENSIVE, 1, &dummy);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, &dummy);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &dummy);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_ENABLE_VIEW, 0, &dummy);
  sqlite3_db_config(db.get(), SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &dummy);
  sqlite3_limit(db.get(), SQLITE_LIMIT_LENGTH, 64 << 20);
  if (auto st = exec(db.get(), "PRAGMA cell_size_check=ON; PRAGMA mmap_size=0;"); !st)
    return make_error(path + ": " + st.error());
  auto q = Stmt::prepare(db.get(), "SELECT type, name FROM sqlite_schema WHERE type IN ('trigger','view') LIMIT 1");
  if (!q) return make_error(path + ": not a readable SQLite database (" + q.error() + ")");
  if (q->step() == SQLITE_ROW)
    return make_error(path + ": refusing a database that defines a " + std::string(q->text(0)) +
                      " ('" + std::string(q->text(1)) + "'); traces never contain them");
  return db;
}

}  // namespace tt::trace::sql
