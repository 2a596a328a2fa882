// The C API through which the GPU components write into this process's record file.
//
// Place in the collector: the CUPTI injection library (libtracetune_cupti.so, loaded by the
// CUDA driver from CUDA_INJECTION64_PATH) and the NCCL profiler plugin
// (libtracetune_nccl_profiler.so, loaded by NCCL from NCCL_PROFILER_PLUGIN) are separate
// libraries: they are dlopen'ed RTLD_LOCAL by someone else, and must not drag libcupti or
// NCCL into every process we preload into. They find these two functions with
// dlsym(RTLD_DEFAULT, ...) in the preloaded collector and do nothing when they are absent
// (a job not started by `tracetune record`).
#include <cstddef>
#include <cstdint>

#include "writer.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

using namespace tt::collector;

// Appends one GPU record (types 100..199, or a Dropped record with a reason) for the calling
// thread. Returns 1 when the process is recording (the record was written or counted as
// dropped), 0 when it is not or the type is refused: callers stay no-ops then.
TT_EXPORT int tracetune_emit_gpu_record(std::uint32_t type, const void* payload, std::uint32_t size) {
  const bool gpu = type >= kFirstGpuRecordType && type <= kLastGpuRecordType;
  if ((!gpu && type != static_cast<std::uint32_t>(RecordType::Dropped)) || payload == nullptr ||
      size > kMaxRecordSize - sizeof(RecordHeader) || !recording())
    return 0;
  ReentryGuard guard;
  emit(static_cast<RecordType>(type), payload, size);
  return 1;
}

// Interns a string for this process's file (String record on first use) and returns its id;
// 0 for empty strings or when not recording.
TT_EXPORT std::uint32_t tracetune_intern_string(const char* s, std::size_t n) {
  if (s == nullptr || n == 0 || !recording()) return 0;
  ReentryGuard guard;
  return intern(s, n);
}
