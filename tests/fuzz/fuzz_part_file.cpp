// libFuzzer target: a sharded analysis' part file as `analyze --combine` reads it (the header,
// the checksum over every byte, the index, then each rank's graph when the critical paths need
// it). Truncated, corrupt or hostile parts must give an error or a note, never a crash or an
// out-of-bounds read.
// Nearly every mutation fails the checksum, so each input is also combined resealed (its
// checksum made to match: the index, ranks and graphs are then read), and resealed beside a
// copy that claims another job (the identity check across parts).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <list>
#include <vector>

#include "fuzz_file.h"
#include "tracetune/analyzer/shard.h"

namespace {

void combine(const std::vector<const std::vector<std::uint8_t>*>& parts) {
  std::list<tt::fuzz::MemFile> files;  // not movable: a list never moves them
  std::vector<std::filesystem::path> paths;
  for (const auto* p : parts) {
    files.emplace_back(p->data(), p->size());
    if (files.back().fd < 0) return;
    paths.push_back(files.back().path);
  }
  auto r = tt::analyzer::combine_shards(paths, 1);
  (void)r;
}

// The copy with the last character of the job identity changed (the index starts with it: a
// 64-bit length, then the text), resealed; empty when the bytes hold no such place.
std::vector<std::uint8_t> other_job(const std::vector<std::uint8_t>& sealed) {
  std::uint64_t index_at = 0, len = 0;
  if (sealed.size() < 32) return {};
  std::memcpy(&index_at, sealed.data() + 8, 8);
  if (index_at > sealed.size() || sealed.size() - index_at < 8) return {};
  std::memcpy(&len, sealed.data() + index_at, 8);
  if (len == 0 || len > sealed.size() - index_at - 8) return {};
  std::vector<std::uint8_t> copy = sealed;
  copy[index_at + 8 + len - 1] ^= 1;
  tt::analyzer::reseal_part(copy);
  return copy;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::vector<std::uint8_t> given(data, data + size);
  combine({&given});
  std::vector<std::uint8_t> sealed = given;
  if (!tt::analyzer::reseal_part(sealed)) return 0;
  combine({&sealed});
  const std::vector<std::uint8_t> other = other_job(sealed);
  if (!other.empty()) combine({&sealed, &other});
  return 0;
}
