// The collector's string interner: a process records each distinct string (a path, a
// function or range name) once, as a String record, and refers to it by a 32-bit id after.
// This unit is the deduplicating store behind that (writer.cpp emits the records and owns the
// two instances): lock-free lookup of known strings, a spinlock for new ones.
//
// Memory: an open-addressing table of (hash, Entry*) that doubles up to kMaxSlots, an arena of
// 1 MiB blocks up to kMaxArena, all anonymous mmap (no allocation: it runs inside the job, on
// record paths and in fork children). Past either limit strings are no longer remembered (the
// writer still gives them fresh ids). Old tables stay mapped (lock-free readers may still probe
// them) until reset_interner() frees everything.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "sys.h"

namespace tt::collector {

constexpr std::uint32_t kInitialSlots = 1u << 12;
constexpr std::uint32_t kMaxSlots = 1u << 20;
constexpr std::size_t kArenaBlock = 1u << 20;
constexpr std::size_t kMaxArena = 32u << 20;
constexpr std::uint32_t kIdBlockBits = 16;
constexpr std::uint32_t kIdBlocks = 64;  // ids < 4M can be looked up by id
constexpr int kMaxMappings = 256;

struct Entry {
  std::uint32_t id;
  std::uint32_t len;
  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
};

struct Slot {
  std::atomic<std::uint64_t> hash;  // 0 = empty; stored last
  std::atomic<const Entry*> entry;
};

struct Table {
  std::uint32_t mask;
  std::uint32_t used;
  Slot* slots() { return reinterpret_cast<Slot*>(this + 1); }
};

struct Interner {
  SpinLock lock;
  std::atomic<Table*> table{nullptr};
  std::uint32_t next_id = 1;
  char* arena = nullptr;
  std::size_t arena_left = 0;
  std::size_t arena_total = 0;
  bool dedup_full = false;
  std::atomic<std::atomic<const Entry*>*> id_blocks[kIdBlocks]{};
  struct Mapping {
    void* p;
    std::size_t n;
  };
  Mapping maps[kMaxMappings]{};
  int nmaps = 0;
};

// A string's hash for lookup(): never 0 (0 marks an empty slot).
std::uint64_t hash_bytes(const char* s, std::size_t n);
// The id of s[0, n) if remembered, else 0. Lock-free; safe against a concurrent remember().
std::uint32_t lookup(Interner& in, const char* s, std::size_t n, std::uint64_t h);
// The entry of `id` (ids below kIdBlocks << kIdBlockBits), nullptr when not remembered.
const Entry* find_id(Interner& in, std::uint32_t id);
// Remembers s[0, n) as `id`: best effort (memory limits), called with `in.lock` held.
void remember(Interner& in, const char* s, std::size_t n, std::uint64_t h, std::uint32_t id);
// Frees everything and empties the interner (a fork child's inherited one; no lock held).
void reset_interner(Interner& in);

}  // namespace tt::collector
