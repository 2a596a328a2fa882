// libFuzzer target: a sharded analysis' part file as `analyze --combine` reads it (the index,
// then each rank's graph when the critical paths need it). Truncated, corrupt or hostile parts
// must give an error or a note, never a crash or an out-of-bounds read.
#include <cstddef>
#include <cstdint>
#include <filesystem>

#include "fuzz_file.h"
#include "tracetune/analyzer/shard.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const tt::fuzz::MemFile file(data, size);
  if (file.fd < 0) return 0;
  const std::filesystem::path part[] = {file.path};
  auto r = tt::analyzer::combine_shards(part, 1);
  (void)r;
  return 0;
}
