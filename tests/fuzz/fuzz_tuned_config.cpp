// libFuzzer target: tuned.toml as `run --config`, `--check` and the GUI's Tuned config panel
// parse it (the shape check, toml++, then the catalogue checks). Deep nesting, long keys and
// duplicate spellings must give errors, not crashes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tracetune/tuner/knobs.h"
#include "tracetune/tuner/tuned_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const tt::tuner::Catalogue catalogue = [] {
    auto c = tt::tuner::builtin_catalogue();
    if (!c) std::abort();
    return c.value();
  }();
  auto r = tt::tuner::parse_tuned_config(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.toml", catalogue);
  (void)r;
  return 0;
}
