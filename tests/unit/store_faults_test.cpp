// Fault injection into the trace store, the way SQLite's own tests do it: an I/O error at the
// Nth read, write, sync or truncate of any file SQLite opens (a VFS that wraps the default one),
// and an out-of-memory at the Nth allocation (SQLITE_CONFIG_MALLOC). For every N until the
// operation succeeds with no fault left to inject: writing a trace either succeeds with a
// complete, readable file or fails with one line and leaves neither the output nor a
// temporary behind (an existing output stays as it was); reading (the whole trace, and the
// outline the GUI reads first) fails with one line or returns all of it. Each TEST runs in its own process (gtest_discover_tests), so
// re-initialising SQLite with the failing allocator touches no other test.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "temp_dir.h"
#include "trace_fixture.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"

using namespace tt::trace;
namespace fs = std::filesystem;
using tt::testing::TempDir;

namespace {

// ---- the faulty VFS: every file's I/O methods forwarded, the Nth I/O call failing ----

struct Faults {
  long at = -1;     // the call that fails (0-based; one transient fault); -1: none
  long calls = 0;   // calls seen
  bool fired = false;
  bool hit() {
    if (calls++ != at) return false;
    fired = true;
    return true;
  }
};
Faults g_io;
sqlite3_vfs* g_real = nullptr;

struct FaultyFile {
  sqlite3_file base;  // first: SQLite sees this
  sqlite3_file* real; // the default VFS's file, allocated right after us
};

sqlite3_file* real(sqlite3_file* f) { return reinterpret_cast<FaultyFile*>(f)->real; }

int f_close(sqlite3_file* f) { return real(f)->pMethods->xClose(real(f)); }
int f_read(sqlite3_file* f, void* b, int n, sqlite3_int64 at) {
  return g_io.hit() ? SQLITE_IOERR_READ : real(f)->pMethods->xRead(real(f), b, n, at);
}
int f_write(sqlite3_file* f, const void* b, int n, sqlite3_int64 at) {
  return g_io.hit() ? SQLITE_IOERR_WRITE : real(f)->pMethods->xWrite(real(f), b, n, at);
}
int f_truncate(sqlite3_file* f, sqlite3_int64 size) {
  return g_io.hit() ? SQLITE_IOERR_TRUNCATE : real(f)->pMethods->xTruncate(real(f), size);
}
int f_sync(sqlite3_file* f, int flags) {
  return g_io.hit() ? SQLITE_IOERR_FSYNC : real(f)->pMethods->xSync(real(f), flags);
}
int f_size(sqlite3_file* f, sqlite3_int64* size) { return real(f)->pMethods->xFileSize(real(f), size); }
int f_lock(sqlite3_file* f, int l) { return real(f)->pMethods->xLock(real(f), l); }
int f_unlock(sqlite3_file* f, int l) { return real(f)->pMethods->xUnlock(real(f), l); }
int f_check(sqlite3_file* f, int* out) { return real(f)->pMethods->xCheckReservedLock(real(f), out); }
int f_control(sqlite3_file* f, int op, void* arg) { return real(f)->pMethods->xFileControl(real(f), op, arg); }
int f_sector(sqlite3_file* f) { return real(f)->pMethods->xSectorSize(real(f)); }
int f_caps(sqlite3_file* f) { return real(f)->pMethods->xDeviceCharacteristics(real(f)); }

// Version 1 methods: no shared memory or mmap, so SQLite uses plain reads for every page.
const sqlite3_io_methods kFaultyMethods = {1,      f_close, f_read,  f_write,   f_truncate, f_sync,   f_size,
                                           f_lock, f_unlock, f_check, f_control, f_sector,   f_caps};

int v_open(sqlite3_vfs* vfs, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  auto* ff = reinterpret_cast<FaultyFile*>(file);
  ff->real = reinterpret_cast<sqlite3_file*>(ff + 1);
  ff->base.pMethods = nullptr;
  const int rc = g_real->xOpen(g_real, name, ff->real, flags, out_flags);
  if (ff->real->pMethods != nullptr) ff->base.pMethods = &kFaultyMethods;
  (void)vfs;
  return rc;
}

sqlite3_vfs g_faulty;

void install_faulty_vfs() {
  if (g_real != nullptr) return;
  g_real = sqlite3_vfs_find(nullptr);
  g_faulty = *g_real;
  g_faulty.zName = "tt-faulty";
  g_faulty.szOsFile = static_cast<int>(sizeof(FaultyFile)) + g_real->szOsFile;
  g_faulty.xOpen = v_open;
  g_faulty.pAppData = nullptr;
  ASSERT_EQ(sqlite3_vfs_register(&g_faulty, 1), SQLITE_OK);  // the default from now on
}

// ---- the failing allocator ----

Faults g_mem;
sqlite3_mem_methods g_real_mem;

void* m_malloc(int n) { return g_mem.hit() ? nullptr : g_real_mem.xMalloc(n); }
void* m_realloc(void* p, int n) { return g_mem.hit() ? nullptr : g_real_mem.xRealloc(p, n); }

void install_failing_malloc() {
  sqlite3_shutdown();
  ASSERT_EQ(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &g_real_mem), SQLITE_OK);
  sqlite3_mem_methods m = g_real_mem;
  m.xMalloc = m_malloc;
  m.xRealloc = m_realloc;
  ASSERT_EQ(sqlite3_config(SQLITE_CONFIG_MALLOC, &m), SQLITE_OK);
  ASSERT_EQ(sqlite3_initialize(), SQLITE_OK);
}

Trace fixture() { return tt::testing::all_categories_trace(); }

std::string bytes_of(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

// Only the files a test expects in `dir`: no temporary left behind.
std::size_t files_in(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

void one_line(const std::string& error, long n) {
  EXPECT_FALSE(error.empty()) << "fault " << n;
  EXPECT_EQ(error.find('\n'), std::string::npos) << "fault " << n << ": " << error;
}

// Calls `read` with a fault at every call in turn: each either fails with one line or returns
// what `whole` accepts; ends with a read that ran with no fault left to inject.
template <class Read, class Whole>
void read_under(Faults& faults, Read read, Whole whole) {
  for (long r = 0;; ++r) {
    ASSERT_LT(r, 200000) << "no end to the faults";
    faults = Faults{r};
    auto got = read();
    const bool fired = faults.fired;
    faults = Faults{};
    if (!got) {
      one_line(got.error(), r);
      continue;
    }
    whole(*got, r);
    if (!fired) return;
  }
}

// Writes over an existing trace with a fault at every call in turn, then reads it back with one.
void write_and_read_under(Faults& faults) {
  TempDir dir;
  Trace t = fixture();
  const fs::path out = dir.path() / "t.db";
  ASSERT_TRUE(write_trace(t, out, "test").ok());
  const std::string before = bytes_of(out);
  long n = 0;
  for (;; ++n) {
    ASSERT_LT(n, 200000) << "no end to the faults";
    faults = Faults{n};
    const auto st = write_trace(t, out, "test");
    const bool fired = faults.fired;
    faults = Faults{};
    if (st.ok()) {
      auto back = read_trace(out);
      ASSERT_TRUE(back) << "fault " << n << ": written but unreadable: " << back.error();
      EXPECT_EQ(back->kernels.size(), t.kernels.size());
      if (!fired) break;  // the whole write ran with no fault left to inject
      continue;           // a fault SQLite recovered from (a retried read): the write is whole
    }
    one_line(st.error(), n);
    EXPECT_EQ(bytes_of(out), before) << "fault " << n << ": the existing output changed";
    EXPECT_EQ(files_in(dir.path()), 1u) << "fault " << n << ": a temporary was left behind";
  }
  EXPECT_GT(n, 10) << "the faults never reached the writer";
  read_under(faults, [&] { return read_trace(out); }, [&](const Trace& back, long r) {
    EXPECT_EQ(back.kernels.size(), t.kernels.size()) << "fault " << r << ": read, but not whole";
  });
  auto clean = read_trace_outline(out);
  ASSERT_TRUE(clean) << clean.error();
  read_under(faults, [&] { return read_trace_outline(out); }, [&](const TraceOutline& o, long r) {
    EXPECT_EQ(o.events, clean->events) << "fault " << r << ": outlined, but not whole";
  });
  EXPECT_EQ(bytes_of(out), before) << "reading changed the trace";
}

}  // namespace

TEST(StoreFaults, AnIoErrorAtAnyCallLosesNothing) {
  install_faulty_vfs();
  write_and_read_under(g_io);
}

TEST(StoreFaults, OutOfMemoryAtAnyAllocationLosesNothing) {
  install_failing_malloc();
  write_and_read_under(g_mem);
}
