// Import speed, measured side by side in one run (medians of N repetitions):
//   zcat FILE > /dev/null            the floor: just decompressing
//   import into the columnar model   target <= 2x zcat
//   import + write the SQLite trace  target <= 4x zcat
//   load the SQLite trace back       target >= 5 M events/s
// and the resident bytes per event of the columnar model (target <= 48).
// Prints figures and ratios; asserts nothing (timings on shared machines are noisy).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"
#include "bench_util.h"
#include "synthetic_trace.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

using tt::bench::median_seconds;

int main(int argc, char** argv) {
  const fs::path input = argc > 1 ? argv[1] : "tests/data/corpus/kineto/hta/mtia_rank_0.json.gz";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  if (!fs::exists(input)) {
    std::fprintf(stderr, "import_bench: %s: no such file\n", input.c_str());
    return 1;
  }
  const fs::path db = fs::temp_directory_path() / "tracetune_import_bench.db";
  const std::string zcat = "zcat '" + input.string() + "' > /dev/null";

  std::size_t events = 0, bytes = 0;
  const double t_zcat = median_seconds(reps, [&] {
    if (std::system(zcat.c_str()) != 0) std::fprintf(stderr, "zcat failed\n");
  });
  const double t_columnar = median_seconds(reps, [&] {
    tt::trace::Trace t;
    const fs::path in[] = {input};
    if (auto st = tt::trace::import_any(in, t); !st) { std::fprintf(stderr, "%s\n", st.error().c_str()); std::exit(1); }
    t.finalize();
    events = t.event_count();
    bytes = t.event_bytes();
  });
  const double t_sqlite = median_seconds(reps, [&] {
    tt::trace::Trace t;
    const fs::path in[] = {input};
    if (auto st = tt::trace::import_any(in, t); !st) std::exit(1);
    if (auto st = tt::trace::write_trace(t, db, "import_bench"); !st) { std::fprintf(stderr, "%s\n", st.error().c_str()); std::exit(1); }
  });
  std::size_t loaded = 0;
  const double t_load = median_seconds(reps, [&] {
    auto t = tt::trace::read_trace(db);
    if (!t) { std::fprintf(stderr, "%s\n", t.error().c_str()); std::exit(1); }
    loaded = t->event_count();
  });
  fs::remove(db);

  std::printf("input                    %s\n", input.c_str());
  std::printf("events (imported)        %zu\n", events);
  std::printf("zcat > /dev/null         %8.3f s\n", t_zcat);
  std::printf("import -> columnar       %8.3f s  %6.2f M events/s  %5.2fx zcat (target <= 2x)\n", t_columnar,
              events / t_columnar / 1e6, t_columnar / t_zcat);
  std::printf("import -> SQLite file    %8.3f s  %6.2f M events/s  %5.2fx zcat (target <= 4x)\n", t_sqlite,
              events / t_sqlite / 1e6, t_sqlite / t_zcat);
  std::printf("load SQLite -> columnar  %8.3f s  %6.2f M events/s (target >= 5 M/s)\n", t_load,
              loaded / t_load / 1e6);
  std::printf("columnar bytes/event     %8.1f (target <= 48)\n", static_cast<double>(bytes) / static_cast<double>(events));
  std::printf("repetitions              %d (medians)\n", reps);

  // Loading at scale: a generated trace, so fixed per-file costs do not hide the per-event rate.
  {
    const std::size_t n = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 4'000'000;
    auto big = tt::bench::make_synthetic_trace(n);
    if (auto st = tt::trace::write_trace(big, db, "import_bench"); !st) { std::fprintf(stderr, "%s\n", st.error().c_str()); return 1; }
    std::size_t got = 0, gbytes = 0;
    const double t_big = median_seconds(reps, [&] {
      auto t = tt::trace::read_trace(db);
      if (!t) { std::fprintf(stderr, "%s\n", t.error().c_str()); std::exit(1); }
      got = t->event_count();
      gbytes = t->event_bytes();
    });
    fs::remove(db);
    std::printf("generated trace          %zu events\n", got);
    std::printf("load SQLite -> columnar  %8.3f s  %6.2f M events/s (target >= 5 M/s)\n", t_big, got / t_big / 1e6);
    std::printf("columnar bytes/event     %8.1f (target <= 48)\n", static_cast<double>(gbytes) / static_cast<double>(got));
  }
  return 0;
}
