// Small RAII wrappers over the SQLite C API, internal to the trace module.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "tracetune/trace/result.h"

namespace tt::trace::sql {

class Db {
 public:
  Db() = default;
  explicit Db(sqlite3* db) : db_(db) {}
  Db(Db&& o) noexcept : db_(o.db_) { o.db_ = nullptr; }
  Db& operator=(Db&& o) noexcept { std::swap(db_, o.db_); return *this; }
  ~Db() { if (db_ != nullptr) sqlite3_close_v2(db_); }
  sqlite3* get() const { return db_; }
  std::string errmsg() const { return db_ != nullptr ? sqlite3_errmsg(db_) : "out of memory"; }

 private:
  sqlite3* db_ = nullptr;
};

class Stmt {
 public:
  Stmt() = default;
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept { std::swap(s_, o.s_); return *this; }
  ~Stmt() { if (s_ != nullptr) sqlite3_finalize(s_); }
  static Result<Stmt> prepare(sqlite3* db, std::string_view sql) {
    Stmt st;
    if (sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()), SQLITE_PREPARE_PERSISTENT,
                           &st.s_, nullptr) != SQLITE_OK)
      return make_error(std::string(sqlite3_errmsg(db)));
    return st;
  }
  sqlite3_stmt* get() const { return s_; }
  int step() { return sqlite3_step(s_); }
  void reset() { sqlite3_reset(s_); }

  // binding; 1-based indices like SQLite
  void bind(int i, std::int64_t v) { sqlite3_bind_int64(s_, i, v); }
  void bind(int i, double v) { sqlite3_bind_double(s_, i, v); }
  void bind(int i, std::string_view v) {
    // an empty view may have a null data pointer, which SQLite would store as NULL
    sqlite3_bind_text64(s_, i, v.empty() ? "" : v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
  }
  void bind_null(int i) { sqlite3_bind_null(s_, i); }
  // Binds NULL where the value is the model's "unknown" sentinel.
  void bind_or_null(int i, std::int64_t v, std::int64_t unknown) {
    if (v == unknown) bind_null(i); else bind(i, v);
  }

  // reading; 0-based like SQLite
  std::int64_t i64(int c) const { return sqlite3_column_int64(s_, c); }
  std::int64_t i64_or(int c, std::int64_t null_value) const {
    return sqlite3_column_type(s_, c) == SQLITE_NULL ? null_value : sqlite3_column_int64(s_, c);
  }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  // sqlite3_column_int64 reads 1.5e300 as INT64_MAX, 'abc' and NULL as 0: columns that must
  // hold integers are checked with this first (store.cpp's integer_cell).
  int type(int c) const { return sqlite3_column_type(s_, c); }
  const char* column_name(int c) const {
    const char* n = sqlite3_column_name(s_, c);
    return n != nullptr ? n : "?";
  }
  std::string_view text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p == nullptr ? std::string_view() : std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(s_, c)));
  }

 private:
  sqlite3_stmt* s_ = nullptr;
};

inline Status exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err != nullptr ? err : "unknown SQLite error";
    sqlite3_free(err);
    return make_error(m);
  }
  return {};
}

// Process-wide SQLite settings for our use (no allocation statistics); call before opening.
void configure_sqlite();

// Opens an untrusted database read-only with SQLite's defensive settings: no triggers, no
// views, no untrusted schema functions, no memory mapping, and cell-size checks. Refuses a
// file that is not SQLite or that defines triggers or views (they can run code on read).
Result<Db> open_untrusted(const std::string& path);

}  // namespace tt::trace::sql
