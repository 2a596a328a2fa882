// The collector's string interner (interner.h).
#include "interner.h"

#include <cstring>

namespace tt::collector {
namespace {

void* interner_map(Interner& in, std::size_t n) {
  if (in.nmaps == kMaxMappings) return nullptr;
  void* p = map_anonymous(n);
  if (p != nullptr) in.maps[in.nmaps++] = {p, n};
  return p;
}

void table_put(Table* tb, std::uint64_t h, const Entry* e) {
  Slot* slots = tb->slots();
  std::uint32_t i = static_cast<std::uint32_t>(h) & tb->mask;
  while (slots[i].hash.load(std::memory_order_relaxed) != 0) i = (i + 1) & tb->mask;
  slots[i].entry.store(e, std::memory_order_relaxed);
  slots[i].hash.store(h, std::memory_order_release);
  ++tb->used;
}

Table* new_table(Interner& in, std::uint32_t nslots) {
  auto* tb = static_cast<Table*>(interner_map(in, sizeof(Table) + nslots * sizeof(Slot)));
  if (tb != nullptr) {
    tb->mask = nslots - 1;
    tb->used = 0;
  }
  return tb;
}

// A table with room for one more entry (load <= 0.7), growing it if needed; nullptr = full.
Table* table_with_room(Interner& in) {
  Table* tb = in.table.load(std::memory_order_relaxed);
  if (tb == nullptr) {
    tb = new_table(in, kInitialSlots);
    if (tb != nullptr) in.table.store(tb, std::memory_order_release);
    return tb;
  }
  const std::uint64_t nslots = std::uint64_t{tb->mask} + 1;
  if ((tb->used + 1) * 10ull <= nslots * 7) return tb;
  if (nslots >= kMaxSlots) return nullptr;
  Table* bigger = new_table(in, static_cast<std::uint32_t>(nslots * 2));
  if (bigger == nullptr) return nullptr;
  Slot* old = tb->slots();
  for (std::uint64_t i = 0; i < nslots; ++i) {
    const std::uint64_t h = old[i].hash.load(std::memory_order_relaxed);
    if (h != 0) table_put(bigger, h, old[i].entry.load(std::memory_order_relaxed));
  }
  in.table.store(bigger, std::memory_order_release);  // the old one stays mapped for readers
  return bigger;
}

Entry* arena_alloc(Interner& in, std::size_t n) {
  n = (n + 7) & ~std::size_t{7};
  if (in.arena_left < n) {
    const std::size_t block = n > kArenaBlock ? n : kArenaBlock;
    if (in.arena_total + block > kMaxArena) return nullptr;
    in.arena = static_cast<char*>(interner_map(in, block));
    if (in.arena == nullptr) return nullptr;
    in.arena_left = block;
    in.arena_total += block;
  }
  auto* e = reinterpret_cast<Entry*>(in.arena);
  in.arena += n;
  in.arena_left -= n;
  return e;
}

void set_id_entry(Interner& in, std::uint32_t id, const Entry* e) {
  const std::uint32_t block = id >> kIdBlockBits;
  if (block >= kIdBlocks) return;
  auto* entries = in.id_blocks[block].load(std::memory_order_relaxed);
  if (entries == nullptr) {
    entries = static_cast<std::atomic<const Entry*>*>(
        interner_map(in, sizeof(std::atomic<const Entry*>) << kIdBlockBits));
    if (entries == nullptr) return;
    in.id_blocks[block].store(entries, std::memory_order_release);
  }
  entries[id & ((1u << kIdBlockBits) - 1)].store(e, std::memory_order_release);
}

}  // namespace

std::uint64_t hash_bytes(const char* s, std::size_t n) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (n * 0xFF51AFD7ED558CCDull);
  while (n >= 8) {
    std::uint64_t w;
    std::memcpy(&w, s, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
    s += 8;
    n -= 8;
  }
  if (n != 0) {
    std::uint64_t w = 0;
    std::memcpy(&w, s, n);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 29;
  }
  h *= 0x94D049BB133111EBull;
  h ^= h >> 32;
  return h | 1;  // never 0: that marks an empty slot
}

void reset_interner(Interner& in) {
  for (int i = 0; i < in.nmaps; ++i) sys_munmap(in.maps[i].p, in.maps[i].n);
  in.nmaps = 0;
  in.lock.reset();
  in.table.store(nullptr, std::memory_order_relaxed);
  in.next_id = 1;
  in.arena = nullptr;
  in.arena_left = 0;
  in.arena_total = 0;
  in.dedup_full = false;
  for (auto& b : in.id_blocks) b.store(nullptr, std::memory_order_relaxed);
}

std::uint32_t lookup(Interner& in, const char* s, std::size_t n, std::uint64_t h) {
  Table* tb = in.table.load(std::memory_order_acquire);
  if (tb == nullptr) return 0;
  Slot* slots = tb->slots();
  for (std::uint32_t i = static_cast<std::uint32_t>(h) & tb->mask, probes = 0; probes <= tb->mask;
       i = (i + 1) & tb->mask, ++probes) {
    const std::uint64_t v = slots[i].hash.load(std::memory_order_acquire);
    if (v == 0) return 0;
    if (v != h) continue;
    const Entry* e = slots[i].entry.load(std::memory_order_relaxed);
    if (e->len == n && std::memcmp(e->bytes(), s, n) == 0) return e->id;
  }
  return 0;
}

const Entry* find_id(Interner& in, std::uint32_t id) {
  const std::uint32_t block = id >> kIdBlockBits;
  if (id == 0 || block >= kIdBlocks) return nullptr;
  auto* entries = in.id_blocks[block].load(std::memory_order_acquire);
  return entries ? entries[id & ((1u << kIdBlockBits) - 1)].load(std::memory_order_acquire)
                 : nullptr;
}

// Keeps the string for deduplication; best effort (memory limits), under the lock.
void remember(Interner& in, const char* s, std::size_t n, std::uint64_t h, std::uint32_t id) {
  if (in.dedup_full) return;
  Table* tb = table_with_room(in);
  Entry* e = tb != nullptr ? arena_alloc(in, sizeof(Entry) + n) : nullptr;
  if (e == nullptr) {
    in.dedup_full = true;
    return;
  }
  e->id = id;
  e->len = static_cast<std::uint32_t>(n);
  std::memcpy(e + 1, s, n);
  set_id_entry(in, id, e);
  table_put(tb, h, e);
}

}  // namespace tt::collector
