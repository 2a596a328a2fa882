// Inside the analyzer's metrics stage: the names of host calls and ranges that the metrics and
// the later stages (the critical path) classify by (not a public header).
#pragma once

#include <string_view>

namespace tt::analyzer {

// A range or span in which the main thread waits for the next batch (our integration's, or
// the PyTorch profiler's DataLoader __next__).
bool is_data_wait_name(std::string_view n);
// A call that blocks the host until the GPU drains (cuda/cu/hip*Synchronize, synchronous copies).
bool is_sync_call_name(std::string_view n);
// A CUDA runtime call's name without CUPTI's callback version ("cudaMemcpy_v3020" -> "cudaMemcpy").
std::string_view api_base_name(std::string_view n);

}  // namespace tt::analyzer
