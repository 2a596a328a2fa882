// Exporters: a Trace as Chrome trace-event JSON (opens in the Perfetto UI and
// chrome://tracing). Every event keeps its table-specific fields in "args" (I/O calls carry
// path and bytes, copies direction and memory kinds, kernels launch configuration).
#pragma once

#include <filesystem>
#include <string>

#include "tracetune/trace/model.h"
#include "tracetune/trace/result.h"

namespace tt::trace {

std::string to_chrome_json(const Trace& t);
// Written atomically (0600 temporary, renamed when complete).
Status export_chrome(const Trace& t, const std::filesystem::path& path);

}  // namespace tt::trace
