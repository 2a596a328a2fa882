// The traces a recording window writes while the job runs (window_traces.h).
#include "tracetune/collector/window_traces.h"

#include "tracetune/trace/store.h"

namespace tt::collector {
namespace fs = std::filesystem;

namespace {
Result<fs::path> write_trace_kept(const fs::path& raw_dir, const fs::path& output, const std::string& suffix,
                                  const MergeOptions& options, std::vector<std::pair<std::string, std::string>> metadata) {
  MergeReport report;
  const fs::path dirs[] = {raw_dir};
  auto merged = merge_raw(dirs, options, report);
  if (!merged) return make_error(merged.error());
  trace::Trace& t = merged.value();
  for (auto& kv : metadata) t.metadata.push_back(std::move(kv));
  fs::path out = output;
  out.replace_extension();
  out += suffix + output.extension().string();
  if (auto st = trace::write_trace(t, out, "tracetune record " + suffix.substr(1)); !st) return make_error(st.error());
  return out;
}
}  // namespace

Result<fs::path> write_partial_trace(const fs::path& raw_dir, const fs::path& output, const std::string& suffix,
                                     std::int64_t from_ns, std::int64_t to_ns,
                                     std::vector<std::pair<std::string, std::string>> metadata) {
  MergeOptions options;
  options.keep_from_ns = from_ns;
  options.keep_to_ns = to_ns;
  return write_trace_kept(raw_dir, output, suffix, options, std::move(metadata));
}

MergeOptions ring_span(const WindowRequest& ring, std::int64_t at_ns) {
  MergeOptions options;
  options.keep_to_ns = at_ns;
  if (ring.ring_steps > 0)
    options.keep_last_steps = ring.ring_steps;
  else
    options.keep_from_ns = at_ns - static_cast<std::int64_t>(ring.ring_s * 1e9);
  return options;
}

Result<fs::path> write_ring_dump(const fs::path& raw_dir, const fs::path& output, const std::string& suffix,
                                 const WindowRequest& ring, std::int64_t at_ns,
                                 std::vector<std::pair<std::string, std::string>> metadata) {
  return write_trace_kept(raw_dir, output, suffix, ring_span(ring, at_ns), std::move(metadata));
}

}  // namespace tt::collector
