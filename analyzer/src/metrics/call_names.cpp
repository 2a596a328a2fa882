// Names of host calls and ranges the metrics and the critical path both classify by
// (call_names.h).
#include "call_names.h"

namespace tt::analyzer {

bool is_data_wait_name(std::string_view n) {
  if (n == "DataLoader: waiting for batch") return true;  // our Python integration
  // PyTorch profiler: "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
  return n.find("DataLoader") != std::string_view::npos && n.find("__next__") != std::string_view::npos;
}

std::string_view api_base_name(std::string_view n) {
  // CUPTI names runtime calls with the version of their callback id: "cudaMemcpy_v3020",
  // "cudaLaunchKernel_v7000" (CUDA 12 and 13, so do nsys's exports). Driver names keep their
  // suffix: "cuMemcpyDtoH_v2" is the symbol's own name.
  if (!n.starts_with("cuda")) return n;
  const std::size_t v = n.rfind("_v");
  if (v == std::string_view::npos || v + 2 == n.size()) return n;
  for (std::size_t i = v + 2; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return n;
  return n.substr(0, v);
}

bool is_sync_call_name(std::string_view name) {
  const std::string_view n = api_base_name(name);
  if (n.find("Synchronize") != std::string_view::npos) return true;  // cuda/cu/hip*Synchronize
  // synchronous copies block the host until the GPU has drained the stream
  return n == "cudaMemcpy" || n == "cudaMemcpy2D" || n == "hipMemcpy" || n == "cuMemcpyDtoH_v2" ||
         n == "cuMemcpyDtoH" || n == "cudaMemcpyFromSymbol";
}

}  // namespace tt::analyzer
