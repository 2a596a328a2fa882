// NVTX injection: records NVTX marks and ranges (and NCCL's NVTX ranges) without CUPTI.
//
// How it is reached. NVTX3 is header-only: every library that uses it (the program, torch,
// NCCL, ...) embeds its own NVTX instance. On its first NVTX call an instance reads
// NVTX_INJECTION64_PATH, dlopen()s that library (ours; the launcher also LD_PRELOADs it, so
// the dlopen returns the already loaded copy) and calls InitializeInjectionNvtx2 with its
// own export-table getter. We are therefore initialized once per NVTX instance: each call
// only writes our handler addresses into that instance's function table, so it is
// idempotent, needs no GPU and no CUDA library, and keeps no per-instance state. Slots we
// leave empty become no-ops inside NVTX. The payload extension (nvToolsExtPayload.h) is
// loaded the same way through InitializeInjectionNvtxExtension.
//
// Handlers are always installed, whether or not the collector is recording: while
// recording() is false (or this thread is already inside the collector) they only keep the
// push/pop stacks balanced, so NVTX return values stay right and a range pushed while not
// recording is never emitted with a wrong name.
//
// vfork children. in_vfork_child() reads a thread-local mark the vfork hook sets (and asks
// the kernel for the pid only on a marked thread); only the rare handlers check it
// (domain creation, string and schema registration, category and thread naming): there they
// touch nothing and return a null handle. The per-event handlers do not: a vfork child may
// only call async-signal-safe functions before exec/_exit, which NVTX calls are not, and if
// one did anyway the writer keeps it memory-safe (its events land in the parent's file).
//
// fork children. String ids are per record file and the writer starts a new string table in a
// fork child, so no string id is kept across fork: domain handles and registered-string
// handles index our own copy of the text (a fixed table), whose string id is cached per
// "generation" (bumped by our pthread_atfork child handler) and re-interned on first use in
// the child. Ranges open across the fork are not recorded by the child, and the category
// names given so far are recorded again in the child's file at its first NVTX event.
// (_Fork() runs no atfork handlers; its children are meant to exec at once.)
//
// What is recorded (record_format.h), all with source = RangeSource::Nvtx:
//  - push/pop ranges: one RangeRecord at pop. depth = the number of NVTX ranges (all domains)
//    open on the thread when it was pushed, as record_format.h defines it. The values NVTX
//    returns to the caller follow the NVTX docs instead: push returns the 0-based level of the
//    new range and pop the level of the range it closed, both scoped to the (thread, domain)
//    pair, and pop returns -1 when nothing of that domain is open on the thread. A pop in
//    domain D closes the innermost open range of D on this thread, even when ranges of other
//    domains were pushed after it (depth and level differ when several domains are open).
//    The per-thread stack holds kStackCapacity (256) open ranges over all domains; deeper
//    pushes are not recorded (their pops still balance) and one Dropped record
//    "nvtx: push/pop stack overflow" with the count is emitted when the stack drains below
//    the capacity again. Ranges still open when a thread or the process ends are not
//    recorded.
//  - start/end ranges: one RangeRecord at nvtxRangeEnd, with flags bit 0 set and depth 0.
//    The record is written by the thread that ends the range (RecordHeader.tid); the format
//    has no field for the starting thread. Ids are process-wide, increasing, never 0. At most
//    kPendingLimit (3072) ranges may be open at once (more are dropped and counted, Dropped record
//    "nvtx: too many open start/end ranges" at the next end); ranges never ended are dropped
//    silently at exit.
//  - marks: one MarkRecord (ts, name, domain, category). Marks carry no color or payload.
//  - nvtxNameOsThread*: a ThreadNameRecord{tid = the thread id given, name}.
//  - name = string id of the message (ASCII as is; wide strings converted to UTF-8;
//    registered strings: the registered text). domain = string id of the domain name, 0 for
//    the default domain. color = ARGB when colorType is ARGB, else 0.
//  - payload (flags bit 1 set when present): the NVTX scalar payload widened to 64 bits
//    (uint32 zero-extended, int32 sign-extended to int64, float converted to double; 64-bit
//    types stored bit for bit). The record has no payload-type field, so a reader cannot tell
//    an integer from a double; NCCL summaries (below) are always unsigned byte counts.
//
// Category names (the merger's convention). NVTX categories are numbers; their names are
// given once by nvtxNameCategory* / nvtxDomainNameCategory*. We keep RangeRecord.category and
// MarkRecord.category numeric and record each naming as a MarkRecord:
//     name     = "nvtx.category <id> <name>"   (decimal id, one space each side, the name as
//                                               given, UTF-8, may contain spaces)
//     domain   = the domain's string id (0 = default domain)
//     category = <id>
//     ts       = when the name was given
// The merger should turn these marks into a (domain, category) -> name table and not show them
// as user marks. Naming the same category again with the same name emits nothing; a new name
// emits a new mark (the latest one wins).
//
// NCCL and the payload extension. NCCL (checked with 2.28.9) pushes its ranges in domain "NCCL" with
// nvtxDomainRangePushEx: the message is a registered string (the API name, e.g.
// "ncclAllReduce") and the payload is NVTX_PAYLOAD_TYPE_EXT, an array of nvtxPayloadData_t
// {schemaId, size, pointer} whose schemas NCCL registers with nvtxPayloadSchemaRegister.
// We export InitializeInjectionNvtxExtension and implement, for the payload module (module id
// 2, compatibility ids 0x0102..0x01ff): PayloadSchemaRegister (the schema's layout is kept:
// the offset/size of its byte-count field, i.e. the first integer entry whose name contains
// "byte", else the first size_t entry), PayloadEnumRegister (accepted, returns a valid id),
// DomainIsEnabled (always 1) and, where the slot exists, MarkPayload / RangePushPayload /
// RangePopPayload / RangeStartPayload / RangeEndPayload. Schema ids returned are the static id
// the caller asked for, else a dynamic id >= 1<<32. An event with an extended payload is
// recorded with its message as the name (the schema's name when there is no message) and,
// when one of its payloads has a known schema with a byte-count field, payload = that byte
// count (flags bit 1). If NCCL's schemas were never registered through us (an NVTX copy whose
// extension did not load us), NCCL's static schema ids (1<<24) + 4..10 and 16..18 are decoded
// with NCCL's fixed layout {uint64 comm; size_t bytes; ...}. Other extended payloads are
// recorded without a payload. Unknown extension modules are accepted with no handler (their
// functions stay no-ops).
//
// Hot path rules: no allocation, no exceptions, no locks of ours for push/pop/mark (a
// thread-local stack of 256 entries, ~10 KiB of static TLS per thread; the writer's intern()
// locks only for strings it has not seen). Start/end ranges, category names and schema
// registrations use small fixed tables under a bounded spinlock (an event is dropped rather
// than waiting forever).
#if defined(TT_WITH_NVTX)

#define NVTX_NO_IMPL 1
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>

#include "window.h"
#include "writer.h"

namespace tt::collector {
namespace {

// ---------------------------------------------------------------------------------------
// Limits and flags

constexpr int kStackCapacity = 256;                 // open push/pop ranges per thread
constexpr std::uint32_t kPendingCapacity = 4096;    // start/end table slots (power of two)
constexpr std::uint32_t kPendingLimit = kPendingCapacity * 3 / 4;
constexpr std::uint32_t kMaxTexts = 4096;           // domain names, registered strings, labels
constexpr std::uint32_t kTextSlots = 2 * kMaxTexts;  // their hash index (power of two)
constexpr std::size_t kTextArena = 512 * 1024;      // their bytes
constexpr std::size_t kTextBuffer = 1024;           // longest text kept / converted, in bytes
constexpr std::uint32_t kMaxSchemas = 256;
constexpr std::uint32_t kMaxCategoryNames = 512;
constexpr std::uint8_t kFlagStartEnd = 1u << 0;     // RangeRecord.flags
constexpr std::uint8_t kFlagPayload = 1u << 1;

// ---------------------------------------------------------------------------------------
// Small helpers

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// A spinlock for the rare paths. lock_bounded() gives up after a bounded wait, so a lock that
// is never released costs an event, not a hang; the fork child handler resets every lock.
class SpinLock {
 public:
  bool lock_bounded() {
    for (int i = 0; i < 4096; ++i) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return true;
      cpu_relax();
    }
    for (int i = 0; i < 20000; ++i) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return true;
      sched_yield();
    }
    return false;
  }
  void unlock() { locked_.store(false, std::memory_order_release); }
  void reset() { locked_.store(false, std::memory_order_relaxed); }

 private:
  std::atomic<bool> locked_{false};
};

class SpinGuard {
 public:
  explicit SpinGuard(SpinLock& l) : l_(l), held_(l.lock_bounded()) {}
  ~SpinGuard() {
    if (held_) l_.unlock();
  }
  SpinGuard(const SpinGuard&) = delete;
  SpinGuard& operator=(const SpinGuard&) = delete;
  bool held() const { return held_; }

 private:
  SpinLock& l_;
  bool held_;
};

// wchar_t (UTF-32 on Linux) -> UTF-8, truncated at a character boundary; returns the length.
std::size_t to_utf8(const wchar_t* w, char* out, std::size_t cap) {
  std::size_t n = 0;
  if (w == nullptr) return 0;
  for (; *w != 0; ++w) {
    std::uint32_t c = static_cast<std::uint32_t>(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    char b[4];
    std::size_t k;
    if (c < 0x80) {
      b[0] = static_cast<char>(c);
      k = 1;
    } else if (c < 0x800) {
      b[0] = static_cast<char>(0xC0 | (c >> 6));
      b[1] = static_cast<char>(0x80 | (c & 0x3F));
      k = 2;
    } else if (c < 0x10000) {
      b[0] = static_cast<char>(0xE0 | (c >> 12));
      b[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      b[2] = static_cast<char>(0x80 | (c & 0x3F));
      k = 3;
    } else {
      b[0] = static_cast<char>(0xF0 | (c >> 18));
      b[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      b[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      b[3] = static_cast<char>(0x80 | (c & 0x3F));
      k = 4;
    }
    if (n + k > cap) break;
    std::memcpy(out + n, b, k);
    n += k;
  }
  return n;
}

std::uint32_t intern_wide(const wchar_t* w) {
  char buf[kTextBuffer];
  return intern(buf, to_utf8(w, buf, sizeof buf));
}

// Appends decimal `v` / bytes at out[n..cap); returns the new length.
std::size_t append_u32(char* out, std::size_t n, std::size_t cap, std::uint32_t v) {
  char tmp[10];
  std::size_t k = 0;
  do {
    tmp[k++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  while (k > 0 && n < cap) out[n++] = tmp[--k];
  return n;
}
std::size_t append_bytes(char* out, std::size_t n, std::size_t cap, const char* s, std::size_t len) {
  const std::size_t k = len < cap - n ? len : cap - n;
  std::memcpy(out + n, s, k);
  return n + k;
}

// ---------------------------------------------------------------------------------------
// Generations: bumped in every fork child (string ids from before the fork are invalid there).

constinit std::atomic<std::uint32_t> g_generation{1};

std::uint32_t generation() { return g_generation.load(std::memory_order_relaxed); }

// ---------------------------------------------------------------------------------------
// Texts: our own copy of every domain name, registered string, schema name and category label,
// so that their string ids can be re-interned after fork. A text is named by a Key:
//   0                   nothing (the default domain, a null string)
//   (index + 1) << 1    entry `index` of the table (even)
//   (string id << 1)|1  the table was full: a plain string id (not valid after a fork)
// The same text always gets the same key. Domain and string handles given to NVTX are keys.

using Key = std::uint32_t;

struct Text {
  std::uint32_t offset{};               // in g_text_bytes
  std::uint32_t length{};
  std::uint64_t hash{};
  std::atomic<std::uint64_t> cached{};  // (generation << 32) | string id
};

constinit Text g_texts[kMaxTexts];
constinit char g_text_bytes[kTextArena];
constinit std::uint32_t g_text_index[kTextSlots];  // entry index + 1, 0 = empty
constinit std::uint32_t g_text_count = 0;
constinit std::size_t g_text_used = 0;
constinit SpinLock g_text_lock;

std::uint64_t hash_text(const char* s, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(s[i])) * 1099511628211ull;
  return h;
}

// Not for the per-event path (takes the text lock). May intern when the table is full.
Key text_key(const char* s, std::size_t n) {
  if (s == nullptr || n == 0) return 0;
  if (n > kTextBuffer) n = kTextBuffer;
  const std::uint64_t h = hash_text(s, n);
  {
    SpinGuard g(g_text_lock);
    if (g.held()) {
      std::uint32_t slot = static_cast<std::uint32_t>(h) & (kTextSlots - 1);
      for (; g_text_index[slot] != 0; slot = (slot + 1) & (kTextSlots - 1)) {
        const std::uint32_t i = g_text_index[slot] - 1;
        const Text& t = g_texts[i];
        if (t.hash == h && t.length == n && std::memcmp(g_text_bytes + t.offset, s, n) == 0) return (i + 1) << 1;
      }
      if (g_text_count < kMaxTexts && g_text_used + n <= kTextArena) {
        const std::uint32_t i = g_text_count++;
        Text& t = g_texts[i];
        t.offset = static_cast<std::uint32_t>(g_text_used);
        t.length = static_cast<std::uint32_t>(n);
        t.hash = h;
        t.cached.store(0, std::memory_order_relaxed);
        std::memcpy(g_text_bytes + g_text_used, s, n);
        g_text_used += n;
        g_text_index[slot] = i + 1;
        return (i + 1) << 1;
      }
    }
  }
  const std::uint32_t id = intern(s, n);
  return id == 0 ? 0 : ((id << 1) | 1u);
}

Key text_key(const char* s) { return s == nullptr ? 0 : text_key(s, std::strlen(s)); }

Key text_key_wide(const wchar_t* w) {
  char buf[kTextBuffer];
  return text_key(buf, to_utf8(w, buf, sizeof buf));
}

// The string id of a text in this process's record file (interned on first use after each
// fork). Lock-free when cached; 0 when not recording.
std::uint32_t text_id(Key k) {
  if (k == 0) return 0;
  if ((k & 1u) != 0) return k >> 1;
  const std::uint32_t i = (k >> 1) - 1;
  if (i >= kMaxTexts) return 0;
  Text& t = g_texts[i];
  const std::uint64_t gen = generation();
  const std::uint64_t c = t.cached.load(std::memory_order_relaxed);
  if ((c >> 32) == gen) return static_cast<std::uint32_t>(c);
  const std::uint32_t id = intern(g_text_bytes + t.offset, t.length);
  if (id != 0) t.cached.store((gen << 32) | id, std::memory_order_relaxed);
  return id;
}

Key domain_key(nvtxDomainHandle_t h) { return static_cast<Key>(reinterpret_cast<std::uintptr_t>(h)); }
nvtxDomainHandle_t domain_handle(Key k) { return reinterpret_cast<nvtxDomainHandle_t>(static_cast<std::uintptr_t>(k)); }
Key string_key(nvtxStringHandle_t h) { return static_cast<Key>(reinterpret_cast<std::uintptr_t>(h)); }
nvtxStringHandle_t string_handle(Key k) { return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(k)); }

// Key of the "NCCL" domain once created (0 until then).
constinit std::atomic<Key> g_nccl_domain{0};

// ---------------------------------------------------------------------------------------
// Records

void emit_mark(std::int64_t ts, std::uint32_t name, std::uint32_t domain, std::uint32_t category) {
  MarkRecord m{};
  m.ts_ns = ts;
  m.name = name;
  m.domain = domain;
  m.category = category;
  m.source = RangeSource::Nvtx;
  emit(RecordType::Mark, m);
}

void emit_dropped(std::uint64_t count, const char* reason) {
  DroppedRecord d{};
  d.count = count;
  d.reason = intern(reason);
  emit(RecordType::Dropped, d);
}

// ---------------------------------------------------------------------------------------
// Category names: (domain, category) -> label text, each naming recorded once per file.

struct CategoryName {
  Key domain{};
  std::uint32_t category{};
  Key label{};  // "nvtx.category <id> <name>"
};

constinit CategoryName g_categories[kMaxCategoryNames];
constinit std::uint32_t g_category_count = 0;
constinit std::atomic<std::uint32_t> g_category_generation{1};  // generation whose file has all names
constinit SpinLock g_category_lock;

void name_category(Key domain, std::uint32_t category, const char* name, std::size_t len) {
  char buf[kTextBuffer];
  static constexpr char kPrefix[] = "nvtx.category ";
  std::size_t n = append_bytes(buf, 0, sizeof buf, kPrefix, sizeof kPrefix - 1);
  n = append_u32(buf, n, sizeof buf, category);
  n = append_bytes(buf, n, sizeof buf, " ", 1);
  n = append_bytes(buf, n, sizeof buf, name, len);
  const Key label = text_key(buf, n);
  bool fresh = true;
  {
    SpinGuard g(g_category_lock);
    if (g.held()) {
      std::uint32_t i = 0;
      while (i < g_category_count && !(g_categories[i].domain == domain && g_categories[i].category == category)) ++i;
      if (i < g_category_count) {
        fresh = g_categories[i].label != label;
        g_categories[i].label = label;
      } else if (i < kMaxCategoryNames) {
        g_categories[i] = {domain, category, label};
        ++g_category_count;
      }
    }
  }
  if (fresh) emit_mark(now_ns(), text_id(label), text_id(domain), category);
}

// First NVTX event of a fork child: its file gets the category names given so far.
void category_names_after_fork(std::uint32_t gen) {
  SpinGuard g(g_category_lock);
  if (!g.held() || g_category_generation.load(std::memory_order_relaxed) == gen) return;
  g_category_generation.store(gen, std::memory_order_relaxed);
  const std::int64_t ts = now_ns();
  for (std::uint32_t i = 0; i < g_category_count; ++i) {
    const CategoryName& c = g_categories[i];
    emit_mark(ts, text_id(c.label), text_id(c.domain), c.category);
  }
}

// Collector state for one handler call: the re-entrancy guard plus "are we recording".
class Scope {
 public:
  Scope() : live_(guard_.active() && recording()) {
    if (live_) {
      const std::uint32_t gen = generation();
      if (g_category_generation.load(std::memory_order_relaxed) != gen) category_names_after_fork(gen);
    }
  }
  bool live() const { return live_; }
  bool active() const { return guard_.active(); }  // not re-entered from inside the collector

 private:
  ReentryGuard guard_;
  bool live_;
};

// ---------------------------------------------------------------------------------------
// Extended payloads: registered schemas (where their byte-count field is).

struct Schema {
  std::uint64_t id{};
  Key domain{};
  Key name{};                  // schema name text, 0 none
  std::uint32_t bytes_off{};   // offset of the byte-count field in the payload
  std::uint8_t bytes_size{};   // its size (1, 2, 4 or 8); 0 = the schema has none
};

constinit Schema g_schemas[kMaxSchemas];
constinit std::atomic<std::uint32_t> g_schema_count{0};
constinit SpinLock g_schema_lock;
constinit std::atomic<std::uint64_t> g_next_dynamic_schema{0};

const Schema* find_schema(Key domain, std::uint64_t id) {
  const std::uint32_t n = g_schema_count.load(std::memory_order_acquire);
  for (std::uint32_t i = 0; i < n; ++i) {
    if (g_schemas[i].id == id && g_schemas[i].domain == domain) return &g_schemas[i];
  }
  return nullptr;
}

// Size (= alignment) of the predefined scalar entry types on 64-bit Linux; 0 = not a scalar
// we can place (nested schema, string, array, long double...).
std::uint32_t entry_type_size(std::uint64_t t) {
  switch (t) {
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR: case NVTX_PAYLOAD_ENTRY_TYPE_UCHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT8: case NVTX_PAYLOAD_ENTRY_TYPE_UINT8:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR8: case NVTX_PAYLOAD_ENTRY_TYPE_BYTE:
      return 1;
    case NVTX_PAYLOAD_ENTRY_TYPE_SHORT: case NVTX_PAYLOAD_ENTRY_TYPE_USHORT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT16: case NVTX_PAYLOAD_ENTRY_TYPE_UINT16:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR16:
      return 2;
    case NVTX_PAYLOAD_ENTRY_TYPE_INT: case NVTX_PAYLOAD_ENTRY_TYPE_UINT:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT32: case NVTX_PAYLOAD_ENTRY_TYPE_UINT32:
    case NVTX_PAYLOAD_ENTRY_TYPE_FLOAT: case NVTX_PAYLOAD_ENTRY_TYPE_WCHAR:
    case NVTX_PAYLOAD_ENTRY_TYPE_CHAR32:
      return 4;
    case NVTX_PAYLOAD_ENTRY_TYPE_LONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_LONGLONG: case NVTX_PAYLOAD_ENTRY_TYPE_ULONGLONG:
    case NVTX_PAYLOAD_ENTRY_TYPE_INT64: case NVTX_PAYLOAD_ENTRY_TYPE_UINT64:
    case NVTX_PAYLOAD_ENTRY_TYPE_DOUBLE: case NVTX_PAYLOAD_ENTRY_TYPE_SIZE:
    case NVTX_PAYLOAD_ENTRY_TYPE_ADDRESS:
      return 8;
    default:
      return 0;
  }
}

bool entry_is_integer(std::uint64_t t) {
  return (t >= NVTX_PAYLOAD_ENTRY_TYPE_CHAR && t <= NVTX_PAYLOAD_ENTRY_TYPE_UINT64) ||
         t == NVTX_PAYLOAD_ENTRY_TYPE_SIZE;
}

bool name_mentions_bytes(const char* s) {
  if (s == nullptr) return false;
  for (; s[0] != 0 && s[1] != 0 && s[2] != 0 && s[3] != 0; ++s) {
    if ((s[0] | 0x20) == 'b' && (s[1] | 0x20) == 'y' && (s[2] | 0x20) == 't' && (s[3] | 0x20) == 'e') return true;
  }
  return false;
}

// Finds the byte-count field of a schema: the first integer entry whose name mentions
// "byte", else the first size_t entry. Offsets come from the entries; an entry with offset 0
// after the first is placed by natural alignment, as the extension specifies.
void locate_bytes_field(const nvtxPayloadSchemaEntry_t* entries, std::size_t count, Schema& s) {
  constexpr std::size_t kMaxEntries = 256;
  if (entries == nullptr) return;
  if (count > kMaxEntries) count = kMaxEntries;
  std::uint64_t next = 0;  // natural offset after the previous entry
  bool placeable = true;   // false once an entry of unknown size breaks automatic placement
  std::int64_t by_name = -1, by_type = -1;
  std::uint64_t off_name = 0, off_type = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const nvtxPayloadSchemaEntry_t& e = entries[i];
    const std::uint32_t size = entry_type_size(e.type);
    const bool simple =
        size != 0 && (e.flags & (NVTX_PAYLOAD_ENTRY_FLAG_POINTER | NVTX_PAYLOAD_ENTRY_FLAG_IS_ARRAY)) == 0;
    std::uint64_t off = 0;
    bool known = true;
    if (e.offset != 0 || i == 0) {
      off = e.offset;
    } else if (placeable && size != 0) {
      off = (next + size - 1) / size * size;
    } else {
      known = false;
    }
    placeable = known && simple;
    if (placeable) next = off + size;
    if (!placeable || !entry_is_integer(e.type)) continue;
    if (by_name < 0 && name_mentions_bytes(e.name)) {
      by_name = static_cast<std::int64_t>(i);
      off_name = off;
    }
    if (by_type < 0 && e.type == NVTX_PAYLOAD_ENTRY_TYPE_SIZE) {
      by_type = static_cast<std::int64_t>(i);
      off_type = off;
    }
  }
  const std::int64_t pick = by_name >= 0 ? by_name : by_type;
  const std::uint64_t off = by_name >= 0 ? off_name : off_type;
  if (pick < 0 || off > 0xFFFFFFFFull) return;
  s.bytes_off = static_cast<std::uint32_t>(off);
  s.bytes_size = static_cast<std::uint8_t>(entry_type_size(entries[pick].type));
}

std::uint64_t read_unsigned(const void* base, std::uint32_t off, std::uint8_t size) {
  const auto* p = static_cast<const unsigned char*>(base) + off;
  switch (size) {
    case 1: return *p;
    case 2: { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
    case 8: { std::uint64_t v; std::memcpy(&v, p, 8); return v; }
    default: return 0;
  }
}

// NCCL's static schemas with {uint64_t comm; size_t bytes; ...}: AllGather 4, AllReduce 5,
// Broadcast 6, ReduceScatter 7, Reduce 8, Send 9, Recv 10, AlltoAll 16, Gather 17, Scatter 18.
bool nccl_static_schema(std::uint64_t id) {
  const std::uint64_t base = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START;
  return (id >= base + 4 && id <= base + 10) || (id >= base + 16 && id <= base + 18);
}

struct ExtSummary {
  std::uint64_t bytes = 0;
  Key schema_name = 0;
  bool has_bytes = false;
};

// Decodes an array of extended payloads: the first byte count found wins.
ExtSummary summarize_ext(Key domain, const nvtxPayloadData_t* data, std::size_t count) {
  ExtSummary out;
  if (data == nullptr) return out;
  if (count > 16) count = 16;
  for (std::size_t i = 0; i < count && !out.has_bytes; ++i) {
    const nvtxPayloadData_t& d = data[i];
    if (d.payload == nullptr) continue;
    std::uint32_t off = 0;
    std::uint8_t size = 0;
    if (const Schema* s = find_schema(domain, d.schemaId); s != nullptr) {
      if (out.schema_name == 0) out.schema_name = s->name;
      off = s->bytes_off;
      size = s->bytes_size;
    } else if (domain != 0 && domain == g_nccl_domain.load(std::memory_order_relaxed) &&
               nccl_static_schema(d.schemaId)) {
      off = 8;
      size = 8;
    }
    if (size == 0) continue;
    if (d.size != SIZE_MAX && static_cast<std::uint64_t>(off) + size > d.size) continue;
    out.bytes = read_unsigned(d.payload, off, size);
    out.has_bytes = true;
  }
  return out;
}

// ---------------------------------------------------------------------------------------
// Event attributes -> record fields.

struct Event {
  std::uint32_t name = 0;
  std::uint32_t category = 0;
  std::uint32_t color = 0;
  std::uint64_t payload = 0;
  std::uint8_t flags = 0;  // kFlagPayload when payload is set
};

constexpr std::size_t kAttrCategoryEnd = offsetof(nvtxEventAttributes_t, category) + sizeof(std::uint32_t);
constexpr std::size_t kAttrColorEnd = offsetof(nvtxEventAttributes_t, color) + sizeof(std::uint32_t);
constexpr std::size_t kAttrPayloadEnd = offsetof(nvtxEventAttributes_t, payload) + sizeof(std::uint64_t);
constexpr std::size_t kAttrMessageEnd = offsetof(nvtxEventAttributes_t, message) + sizeof(void*);

void decode_attributes(const nvtxEventAttributes_t* a, Key domain, Event& ev) {
  if (a == nullptr) return;
  const std::size_t size = a->size;  // fields past `size` are absent (older attribute versions)
  if (size >= kAttrCategoryEnd) ev.category = a->category;
  if (size >= kAttrColorEnd && a->colorType == NVTX_COLOR_ARGB) ev.color = a->color;
  Key fallback_name = 0;
  if (size >= kAttrPayloadEnd) {
    switch (a->payloadType) {
      case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      case NVTX_PAYLOAD_TYPE_INT64:
      case NVTX_PAYLOAD_TYPE_DOUBLE:
        ev.payload = a->payload.ullValue;
        ev.flags |= kFlagPayload;
        break;
      case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
        ev.payload = a->payload.uiValue;
        ev.flags |= kFlagPayload;
        break;
      case NVTX_PAYLOAD_TYPE_INT32:
        ev.payload = static_cast<std::uint64_t>(static_cast<std::int64_t>(a->payload.iValue));
        ev.flags |= kFlagPayload;
        break;
      case NVTX_PAYLOAD_TYPE_FLOAT: {
        const double d = a->payload.fValue;
        std::memcpy(&ev.payload, &d, sizeof d);
        ev.flags |= kFlagPayload;
        break;
      }
      case NVTX_PAYLOAD_TYPE_EXT: {
        const auto* data = reinterpret_cast<const nvtxPayloadData_t*>(static_cast<std::uintptr_t>(a->payload.ullValue));
        const ExtSummary s = summarize_ext(domain, data, a->reserved0 > 0 ? static_cast<std::size_t>(a->reserved0) : 0);
        if (s.has_bytes) {
          ev.payload = s.bytes;
          ev.flags |= kFlagPayload;
        }
        fallback_name = s.schema_name;
        break;
      }
      default:
        break;
    }
  }
  if (size >= kAttrMessageEnd) {
    switch (a->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII:
        ev.name = intern(a->message.ascii);
        break;
      case NVTX_MESSAGE_TYPE_UNICODE:
        ev.name = intern_wide(a->message.unicode);
        break;
      case NVTX_MESSAGE_TYPE_REGISTERED:
        ev.name = text_id(string_key(a->message.registered));
        break;
      default:
        break;
    }
  }
  if (ev.name == 0) ev.name = text_id(fallback_name);
}

void emit_range(std::int64_t start, std::int64_t end, Key domain, const Event& ev, std::uint16_t depth,
                std::uint8_t flags) {
  RangeRecord r{};
  r.start_ns = start;
  r.end_ns = end;
  r.name = ev.name;
  r.domain = text_id(domain);
  r.category = ev.category;
  r.color = ev.color;
  r.payload = ev.payload;
  r.depth = depth;
  r.source = RangeSource::Nvtx;
  r.flags = static_cast<std::uint8_t>(flags | ev.flags);
  emit(RecordType::Range, r);
}

// ---------------------------------------------------------------------------------------
// Push/pop: one stack per thread over all domains (thread_local, zero-initialized, trivially
// destructible: no TLS constructor or destructor runs).

struct OpenRange {
  std::int64_t start;
  std::uint64_t payload;
  Key domain;
  std::uint32_t name;
  std::uint32_t category;
  std::uint32_t color;
  std::uint16_t level;  // NVTX level within (thread, domain): what push/pop return
  std::uint16_t depth;  // ranges open on this thread (all domains) when pushed: the record's depth
  std::uint8_t flags;   // kFlagPayload
  std::uint8_t record;  // 1: emit at pop (pushed while recording, in this generation)
};

struct ThreadStack {
  std::uint32_t count;
  std::uint32_t overflow;          // pushes beyond capacity not popped yet
  std::uint64_t overflow_dropped;  // ranges not recorded since the stack last overflowed
  std::uint32_t generation;        // generation of the ids in open[]
  OpenRange open[kStackCapacity];
};

// The stack (about 10 KiB) lives in an mmap'd block per thread, reached through one TLS
// pointer: initial-exec TLS must stay tiny, or the library cannot be dlopen'ed (e.g. as
// CUDA_INJECTION64_PATH without LD_PRELOAD: "cannot allocate memory in static TLS block").
constinit thread_local ThreadStack* t_stack = nullptr;
pthread_key_t g_stack_key;
pthread_once_t g_stack_key_once = PTHREAD_ONCE_INIT;

void release_stack(void* p) { ::munmap(p, sizeof(ThreadStack)); }

// nullptr only when the thread's first NVTX call cannot get 10 KiB of memory: its ranges
// are then not recorded (push/pop still return plausible levels).
ThreadStack* thread_stack() {
  ThreadStack* st = t_stack;
  if (st == nullptr) {
    void* m = ::mmap(nullptr, sizeof(ThreadStack), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return nullptr;
    st = static_cast<ThreadStack*>(m);  // zero-filled: an empty stack of generation 0
    t_stack = st;
    pthread_once(&g_stack_key_once, [] { pthread_key_create(&g_stack_key, release_stack); });
    pthread_setspecific(g_stack_key, st);
  }
  const std::uint32_t gen = generation();
  if (st->generation != gen) {  // a new thread, or the thread that forked, in the child
    for (std::uint32_t i = 0; i < st->count; ++i) st->open[i].record = 0;
    st->generation = gen;
  }
  return st;
}

int push_range(Key domain, bool live, std::int64_t start, const Event& ev) {
  ThreadStack* stack = thread_stack();
  if (stack == nullptr) return 0;
  ThreadStack& st = *stack;
  if (st.count >= static_cast<std::uint32_t>(kStackCapacity)) {
    ++st.overflow;
    ++st.overflow_dropped;
    return static_cast<int>(st.count + st.overflow - 1);  // approximate level
  }
  int level = 0;
  for (std::uint32_t i = st.count; i > 0; --i) {
    if (st.open[i - 1].domain == domain) {
      level = st.open[i - 1].level + 1;
      break;
    }
  }
  OpenRange& o = st.open[st.count];
  o.start = start;
  o.payload = ev.payload;
  o.domain = domain;
  o.name = ev.name;
  o.category = ev.category;
  o.color = ev.color;
  o.level = static_cast<std::uint16_t>(level);
  o.depth = static_cast<std::uint16_t>(st.count);
  o.flags = ev.flags;
  o.record = live ? 1 : 0;
  ++st.count;
  return level;
}

int pop_range(Key domain, bool live, std::int64_t end) {
  ThreadStack* stack = thread_stack();
  if (stack == nullptr) return -1;
  ThreadStack& st = *stack;
  if (st.overflow > 0) {
    // Overflowed pushes are unwound first, whatever their domain (approximate levels).
    --st.overflow;
    const int level = static_cast<int>(st.count + st.overflow);
    if (st.overflow == 0 && st.overflow_dropped != 0) {
      if (live) emit_dropped(st.overflow_dropped, "nvtx: push/pop stack overflow");
      st.overflow_dropped = 0;
    }
    return level;
  }
  std::uint32_t i = st.count;
  while (i > 0 && st.open[i - 1].domain != domain) --i;
  if (i == 0) return -1;  // nothing open in this domain on this thread
  const OpenRange o = st.open[i - 1];
  for (std::uint32_t k = i; k < st.count; ++k) st.open[k - 1] = st.open[k];
  --st.count;
  if (live && o.record != 0) {
    Event ev;
    ev.name = o.name;
    ev.category = o.category;
    ev.color = o.color;
    ev.payload = o.payload;
    ev.flags = o.flags;
    emit_range(o.start, end, o.domain, ev, o.depth, 0);
  }
  return o.level;
}

// ---------------------------------------------------------------------------------------
// Start/end: open ranges keyed by id in an open-addressing table (linear probing, backward
// shift deletion) under a spinlock.

struct Pending {
  std::uint64_t id{};  // 0 = empty slot
  std::int64_t start{};
  std::uint64_t payload{};
  Key domain{};
  std::uint32_t name{};
  std::uint32_t category{};
  std::uint32_t color{};
  std::uint8_t flags{};
};

constinit Pending g_pending[kPendingCapacity];
constinit std::uint32_t g_pending_count = 0;
constinit std::uint32_t g_pending_generation = 1;
constinit SpinLock g_pending_lock;
constinit std::atomic<std::uint64_t> g_next_range_id{1};
constinit std::atomic<std::uint64_t> g_pending_dropped{0};

std::uint32_t pending_slot(std::uint64_t id) {
  return static_cast<std::uint32_t>((id * 0x9E3779B97F4A7C15ull) >> 40) & (kPendingCapacity - 1);
}

// Under g_pending_lock: forget ranges started before a fork (their ids belong to the parent).
void pending_sync_generation() {
  const std::uint32_t gen = generation();
  if (g_pending_generation == gen) return;
  if (g_pending_count != 0) std::memset(static_cast<void*>(g_pending), 0, sizeof g_pending);
  g_pending_count = 0;
  g_pending_generation = gen;
  g_pending_dropped.store(0, std::memory_order_relaxed);
}

nvtxRangeId_t start_range(Key domain, bool live, std::int64_t start, const Event& ev) {
  const nvtxRangeId_t id = g_next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (!live) return id;
  bool stored = false;
  {
    SpinGuard g(g_pending_lock);
    if (g.held()) {
      pending_sync_generation();
      if (g_pending_count < kPendingLimit) {
        std::uint32_t s = pending_slot(id);
        while (g_pending[s].id != 0) s = (s + 1) & (kPendingCapacity - 1);
        Pending& p = g_pending[s];
        p.id = id;
        p.start = start;
        p.payload = ev.payload;
        p.domain = domain;
        p.name = ev.name;
        p.category = ev.category;
        p.color = ev.color;
        p.flags = ev.flags;
        ++g_pending_count;
        stored = true;
      }
    }
  }
  if (!stored) g_pending_dropped.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void end_range(nvtxRangeId_t id, bool live, std::int64_t end) {
  if (id == 0) return;
  Pending found{};
  {
    SpinGuard g(g_pending_lock);
    if (!g.held()) return;
    pending_sync_generation();
    std::uint32_t s = pending_slot(id);
    while (g_pending[s].id != 0 && g_pending[s].id != id) s = (s + 1) & (kPendingCapacity - 1);
    if (g_pending[s].id == 0) return;  // never stored (not recording, table full) or ended twice
    found = g_pending[s];
    // Backward-shift deletion keeps every probe chain intact without tombstones.
    std::uint32_t hole = s;
    for (std::uint32_t j = (s + 1) & (kPendingCapacity - 1); g_pending[j].id != 0; j = (j + 1) & (kPendingCapacity - 1)) {
      const std::uint32_t home = pending_slot(g_pending[j].id);
      // Entry j may move into the hole unless its home slot lies cyclically in (hole, j].
      const bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
      if (!stays) {
        g_pending[hole] = g_pending[j];
        hole = j;
      }
    }
    g_pending[hole].id = 0;
    --g_pending_count;
  }
  if (!live) return;
  Event ev;
  ev.name = found.name;
  ev.category = found.category;
  ev.color = found.color;
  ev.payload = found.payload;
  ev.flags = found.flags;
  emit_range(found.start, end, found.domain, ev, 0, kFlagStartEnd);
  if (const std::uint64_t dropped = g_pending_dropped.exchange(0, std::memory_order_relaxed); dropped != 0) {
    emit_dropped(dropped, "nvtx: too many open start/end ranges");
  }
}

// ---------------------------------------------------------------------------------------
// Shared handler bodies (per-event paths: no vfork check, see the file comment).

void do_mark(Key domain, const nvtxEventAttributes_t* a) {
  Scope sc;
  if (!sc.live()) return;
  const std::int64_t ts = now_ns();
  Event ev;
  decode_attributes(a, domain, ev);
  emit_mark(ts, ev.name, text_id(domain), ev.category);
}

// record --start-on: the window opens at the first range whose name matches (window.cpp).
void note_range_start(const Event& ev) {
  if (g_window_control == nullptr || ev.name == 0) return;
  char text[1024];
  window_range_started(text, copy_string(ev.name, text, sizeof text));
}

int do_push(Key domain, const nvtxEventAttributes_t* a) {
  Scope sc;
  Event ev;
  std::int64_t ts = 0;
  if (sc.live()) {
    ts = now_ns();
    decode_attributes(a, domain, ev);
    note_range_start(ev);
  }
  return push_range(domain, sc.live(), ts, ev);
}

int do_pop(Key domain) {
  Scope sc;
  const std::int64_t ts = sc.live() ? now_ns() : 0;
  return pop_range(domain, sc.live(), ts);
}

nvtxRangeId_t do_start(Key domain, const nvtxEventAttributes_t* a) {
  Scope sc;
  Event ev;
  std::int64_t ts = 0;
  if (sc.live()) {
    ts = now_ns();
    decode_attributes(a, domain, ev);
    note_range_start(ev);
  }
  return start_range(domain, sc.live(), ts, ev);
}

void do_end(nvtxRangeId_t id) {
  Scope sc;
  const std::int64_t ts = sc.live() ? now_ns() : 0;
  end_range(id, sc.live(), ts);
}

// Message-only variants build a minimal attribute struct.
nvtxEventAttributes_t ascii_attr(const char* m) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = m;
  return a;
}
nvtxEventAttributes_t wide_attr(const wchar_t* m) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = m;
  return a;
}

// ---------------------------------------------------------------------------------------
// The handlers (the NVTX calling convention is the C one on Linux: NVTX_API is empty).

// CORE
void h_MarkEx(const nvtxEventAttributes_t* a) { do_mark(0, a); }
void h_MarkA(const char* m) { const auto a = ascii_attr(m); do_mark(0, &a); }
void h_MarkW(const wchar_t* m) { const auto a = wide_attr(m); do_mark(0, &a); }
nvtxRangeId_t h_RangeStartEx(const nvtxEventAttributes_t* a) { return do_start(0, a); }
nvtxRangeId_t h_RangeStartA(const char* m) { const auto a = ascii_attr(m); return do_start(0, &a); }
nvtxRangeId_t h_RangeStartW(const wchar_t* m) { const auto a = wide_attr(m); return do_start(0, &a); }
void h_RangeEnd(nvtxRangeId_t id) { do_end(id); }
int h_RangePushEx(const nvtxEventAttributes_t* a) { return do_push(0, a); }
int h_RangePushA(const char* m) { const auto a = ascii_attr(m); return do_push(0, &a); }
int h_RangePushW(const wchar_t* m) { const auto a = wide_attr(m); return do_push(0, &a); }
int h_RangePop() { return do_pop(0); }

void h_DomainNameCategoryA(nvtxDomainHandle_t d, std::uint32_t category, const char* name) {
  if (name == nullptr || in_vfork_child()) return;
  Scope sc;
  if (sc.live()) name_category(domain_key(d), category, name, std::strlen(name));
}
void h_DomainNameCategoryW(nvtxDomainHandle_t d, std::uint32_t category, const wchar_t* name) {
  if (name == nullptr || in_vfork_child()) return;
  Scope sc;
  if (!sc.live()) return;
  char buf[kTextBuffer];
  name_category(domain_key(d), category, buf, to_utf8(name, buf, sizeof buf));
}
void h_NameCategoryA(std::uint32_t category, const char* name) { h_DomainNameCategoryA(nullptr, category, name); }
void h_NameCategoryW(std::uint32_t category, const wchar_t* name) { h_DomainNameCategoryW(nullptr, category, name); }

void name_thread(std::uint32_t tid, std::uint32_t name) {
  ThreadNameRecord t{};
  t.tid = tid;
  t.name = name;
  emit(RecordType::ThreadName, t);
}
void h_NameOsThreadA(std::uint32_t tid, const char* name) {
  if (name == nullptr || in_vfork_child()) return;
  Scope sc;
  if (sc.live()) name_thread(tid, intern(name));
}
void h_NameOsThreadW(std::uint32_t tid, const wchar_t* name) {
  if (name == nullptr || in_vfork_child()) return;
  Scope sc;
  if (sc.live()) name_thread(tid, intern_wide(name));
}

// CORE2
void h_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { do_mark(domain_key(d), a); }
nvtxRangeId_t h_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return do_start(domain_key(d), a);
}
void h_DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { do_end(id); }
int h_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { return do_push(domain_key(d), a); }
int h_DomainRangePop(nvtxDomainHandle_t d) { return do_pop(domain_key(d)); }

constinit std::atomic<std::uintptr_t> g_next_resource{1};
nvtxResourceHandle_t h_DomainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t*) {
  return reinterpret_cast<nvtxResourceHandle_t>(g_next_resource.fetch_add(1, std::memory_order_relaxed));
}
void h_DomainResourceDestroy(nvtxResourceHandle_t) {}

// Registration and domain creation keep the text whether or not we are recording, so a name
// given before recording starts is still known. (Re-entered from inside the collector: null.)
nvtxStringHandle_t h_DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  if (in_vfork_child()) return nullptr;
  Scope sc;
  return sc.active() ? string_handle(text_key(s)) : nullptr;
}
nvtxStringHandle_t h_DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  if (in_vfork_child()) return nullptr;
  Scope sc;
  return sc.active() ? string_handle(text_key_wide(s)) : nullptr;
}
nvtxDomainHandle_t create_domain(const char* name, std::size_t n) {
  const Key k = text_key(name, n);
  if (k != 0 && n == 4 && std::memcmp(name, "NCCL", 4) == 0) g_nccl_domain.store(k, std::memory_order_relaxed);
  return domain_handle(k);
}
nvtxDomainHandle_t h_DomainCreateA(const char* name) {
  if (name == nullptr || in_vfork_child()) return nullptr;
  Scope sc;
  return sc.active() ? create_domain(name, std::strlen(name)) : nullptr;
}
nvtxDomainHandle_t h_DomainCreateW(const wchar_t* name) {
  if (name == nullptr || in_vfork_child()) return nullptr;
  Scope sc;
  if (!sc.active()) return nullptr;
  char buf[kTextBuffer];
  return create_domain(buf, to_utf8(name, buf, sizeof buf));
}
void h_DomainDestroy(nvtxDomainHandle_t) {}
void h_Initialize(const void*) {}

// Payload extension
std::uint64_t h_PayloadSchemaRegister(nvtxDomainHandle_t d, const nvtxPayloadSchemaAttr_t* attr) {
  if (attr == nullptr) return 0;
  const std::uint64_t mask = attr->fieldMask;
  std::uint64_t id;
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_SCHEMA_ID) != 0 && attr->schemaId >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START &&
      attr->schemaId < NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START) {
    id = attr->schemaId;
  } else {
    id = NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START + g_next_dynamic_schema.fetch_add(1, std::memory_order_relaxed);
  }
  if (in_vfork_child()) return id;
  Scope sc;
  if (!sc.active()) return id;
  Schema s{};
  s.id = id;
  s.domain = domain_key(d);
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NAME) != 0) s.name = text_key(attr->name);
  if ((mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_ENTRIES) != 0 && (mask & NVTX_PAYLOAD_SCHEMA_ATTR_FIELD_NUM_ENTRIES) != 0) {
    locate_bytes_field(attr->entries, attr->numEntries, s);
  }
  SpinGuard g(g_schema_lock);
  if (!g.held() || find_schema(s.domain, id) != nullptr) return id;  // the first registration wins
  const std::uint32_t n = g_schema_count.load(std::memory_order_relaxed);
  if (n < kMaxSchemas) {
    g_schemas[n] = s;
    g_schema_count.store(n + 1, std::memory_order_release);
  }
  return id;
}

std::uint64_t h_PayloadEnumRegister(nvtxDomainHandle_t, const nvtxPayloadEnumAttr_t* attr) {
  if (attr == nullptr) return 0;
  if ((attr->fieldMask & NVTX_PAYLOAD_ENUM_ATTR_FIELD_SCHEMA_ID) != 0 &&
      attr->schemaId >= NVTX_PAYLOAD_SCHEMA_ID_STATIC_START && attr->schemaId < NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START) {
    return attr->schemaId;
  }
  return NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START + g_next_dynamic_schema.fetch_add(1, std::memory_order_relaxed);
}

std::uint8_t h_DomainIsEnabled(nvtxDomainHandle_t) { return 1; }

// Payload-only events have no message: their name is the schema's name.
void payload_event(Key domain, const nvtxPayloadData_t* data, std::size_t count, Event& ev) {
  const ExtSummary s = summarize_ext(domain, data, count);
  ev.name = text_id(s.schema_name);
  if (s.has_bytes) {
    ev.payload = s.bytes;
    ev.flags |= kFlagPayload;
  }
}

void h_MarkPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* data, std::size_t count) {
  Scope sc;
  if (!sc.live()) return;
  const std::int64_t ts = now_ns();
  Event ev;
  payload_event(domain_key(d), data, count, ev);
  emit_mark(ts, ev.name, text_id(domain_key(d)), 0);
}
int h_RangePushPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* data, std::size_t count) {
  Scope sc;
  Event ev;
  std::int64_t ts = 0;
  if (sc.live()) {
    ts = now_ns();
    payload_event(domain_key(d), data, count, ev);
  }
  return push_range(domain_key(d), sc.live(), ts, ev);
}
int h_RangePopPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t*, std::size_t) { return do_pop(domain_key(d)); }
nvtxRangeId_t h_RangeStartPayload(nvtxDomainHandle_t d, const nvtxPayloadData_t* data, std::size_t count) {
  Scope sc;
  Event ev;
  std::int64_t ts = 0;
  if (sc.live()) {
    ts = now_ns();
    payload_event(domain_key(d), data, count, ev);
  }
  return start_range(domain_key(d), sc.live(), ts, ev);
}
void h_RangeEndPayload(nvtxDomainHandle_t, nvtxRangeId_t id, const nvtxPayloadData_t*, std::size_t) { do_end(id); }

// ---------------------------------------------------------------------------------------
// Installation.

// The fork child handler: a new generation (string ids re-interned lazily) and no lock may be
// held by a thread that does not exist in the child. Async-signal-safe.
void after_fork_child() {
  g_generation.fetch_add(1, std::memory_order_relaxed);
  g_text_lock.reset();
  g_category_lock.reset();
  g_schema_lock.reset();
  g_pending_lock.reset();
}

constinit std::atomic<bool> g_atfork_installed{false};

void install_fork_handler() {
  if (!g_atfork_installed.exchange(true)) pthread_atfork(nullptr, nullptr, &after_fork_child);
}

template <class F>
NvtxFunctionPointer fp(F* f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

struct Slot {
  unsigned index;
  NvtxFunctionPointer fn;
};

bool install(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, const Slot* slots, std::size_t n) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (cb->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  for (std::size_t i = 0; i < n; ++i) {
    // `size` is the module's callback-id count: valid indices are 1 .. size-1.
    if (slots[i].index < size && table[slots[i].index] != nullptr) *table[slots[i].index] = slots[i].fn;
  }
  return true;
}

}  // namespace
}  // namespace tt::collector

using namespace tt::collector;

// Called by every NVTX instance on its first NVTX call (NVTX_INJECTION64_PATH). Returns 1 when
// the handlers are installed, 0 (NVTX then makes all of its calls no-ops) when the export
// table is unusable.
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable) {
  if (getExportTable == nullptr) return 0;
  const auto* cb = static_cast<const NvtxExportTableCallbacks*>(getExportTable(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->struct_size < sizeof(NvtxExportTableCallbacks) || cb->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  install_fork_handler();
  const Slot core[] = {
      {NVTX_CBID_CORE_MarkEx, fp(&h_MarkEx)},
      {NVTX_CBID_CORE_MarkA, fp(&h_MarkA)},
      {NVTX_CBID_CORE_MarkW, fp(&h_MarkW)},
      {NVTX_CBID_CORE_RangeStartEx, fp(&h_RangeStartEx)},
      {NVTX_CBID_CORE_RangeStartA, fp(&h_RangeStartA)},
      {NVTX_CBID_CORE_RangeStartW, fp(&h_RangeStartW)},
      {NVTX_CBID_CORE_RangeEnd, fp(&h_RangeEnd)},
      {NVTX_CBID_CORE_RangePushEx, fp(&h_RangePushEx)},
      {NVTX_CBID_CORE_RangePushA, fp(&h_RangePushA)},
      {NVTX_CBID_CORE_RangePushW, fp(&h_RangePushW)},
      {NVTX_CBID_CORE_RangePop, fp(&h_RangePop)},
      {NVTX_CBID_CORE_NameCategoryA, fp(&h_NameCategoryA)},
      {NVTX_CBID_CORE_NameCategoryW, fp(&h_NameCategoryW)},
      {NVTX_CBID_CORE_NameOsThreadA, fp(&h_NameOsThreadA)},
      {NVTX_CBID_CORE_NameOsThreadW, fp(&h_NameOsThreadW)},
  };
  const Slot core2[] = {
      {NVTX_CBID_CORE2_DomainMarkEx, fp(&h_DomainMarkEx)},
      {NVTX_CBID_CORE2_DomainRangeStartEx, fp(&h_DomainRangeStartEx)},
      {NVTX_CBID_CORE2_DomainRangeEnd, fp(&h_DomainRangeEnd)},
      {NVTX_CBID_CORE2_DomainRangePushEx, fp(&h_DomainRangePushEx)},
      {NVTX_CBID_CORE2_DomainRangePop, fp(&h_DomainRangePop)},
      {NVTX_CBID_CORE2_DomainResourceCreate, fp(&h_DomainResourceCreate)},
      {NVTX_CBID_CORE2_DomainResourceDestroy, fp(&h_DomainResourceDestroy)},
      {NVTX_CBID_CORE2_DomainNameCategoryA, fp(&h_DomainNameCategoryA)},
      {NVTX_CBID_CORE2_DomainNameCategoryW, fp(&h_DomainNameCategoryW)},
      {NVTX_CBID_CORE2_DomainRegisterStringA, fp(&h_DomainRegisterStringA)},
      {NVTX_CBID_CORE2_DomainRegisterStringW, fp(&h_DomainRegisterStringW)},
      {NVTX_CBID_CORE2_DomainCreateA, fp(&h_DomainCreateA)},
      {NVTX_CBID_CORE2_DomainCreateW, fp(&h_DomainCreateW)},
      {NVTX_CBID_CORE2_DomainDestroy, fp(&h_DomainDestroy)},
      {NVTX_CBID_CORE2_Initialize, fp(&h_Initialize)},
  };
  const bool ok_core = install(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof core[0]);
  const bool ok_core2 = install(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]);
  // CUDA, CUDART, OPENCL (resource naming) and SYNC modules: not handled (no-ops in NVTX).
  if (const auto* vi = static_cast<const NvtxExportTableVersionInfo*>(getExportTable(NVTX_ETID_VERSIONINFO));
      vi != nullptr && vi->struct_size >= sizeof(NvtxExportTableVersionInfo) && vi->SetInjectionNvtxVersion != nullptr) {
    vi->SetInjectionNvtxVersion(NVTX_VERSION);
  }
  return (ok_core || ok_core2) ? 1 : 0;
}

// Called by every NVTX instance's extension modules on their first call. Only the payload
// module is handled; other modules are accepted with no handler (their calls stay no-ops).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* info) {
  if (info == nullptr) return 0;
  if (info->moduleId != NVTX_EXT_PAYLOAD_MODULEID || info->compatId < 0x0102 || info->compatId > 0x01FF) return 1;
  if (info->structSize < offsetof(nvtxExtModuleInfo_t, segments) + sizeof(void*)) return 1;
  if (info->segmentsCount < 1 || info->segments == nullptr || info->segments[0].functionSlots == nullptr) return 1;
  install_fork_handler();
  intptr_t* slots = info->segments[0].functionSlots;
  const std::size_t n = info->segments[0].slotCount;
  auto set = [&](std::size_t index, auto* fn) {
    if (index < n) slots[index] = reinterpret_cast<intptr_t>(fn);
  };
  set(NVTX3EXT_CBID_nvtxPayloadSchemaRegister, &h_PayloadSchemaRegister);
  set(NVTX3EXT_CBID_nvtxPayloadEnumRegister, &h_PayloadEnumRegister);
  set(NVTX3EXT_CBID_nvtxMarkPayload, &h_MarkPayload);
  set(NVTX3EXT_CBID_nvtxRangePushPayload, &h_RangePushPayload);
  set(NVTX3EXT_CBID_nvtxRangePopPayload, &h_RangePopPayload);
  set(NVTX3EXT_CBID_nvtxRangeStartPayload, &h_RangeStartPayload);
  set(NVTX3EXT_CBID_nvtxRangeEndPayload, &h_RangeEndPayload);
  set(NVTX3EXT_CBID_nvtxDomainIsEnabled, &h_DomainIsEnabled);
  return 1;
}

#endif  // TT_WITH_NVTX
