// CUPTI behind an interface: the CUPTI entry points the GPU capture uses, as a table of
// function pointers with the real signatures (cupti_activity.h / cupti_callbacks.h, CUDA 13).
//
// The injection library fills it from libcupti at run time (load_cupti(): dlopen + dlsym, so a
// missing or old libcupti is a one-line warning, not a failed load of the injection library);
// unit tests fill it with fakes, so the session logic (what is enabled in which order, what
// happens when another profiler owns CUPTI) and the record decoding are tested without a GPU.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

#include "tracetune/collector/record_format.h"

namespace tt::cupti {

struct CuptiApi {
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*set_thread_id_type)(CUpti_ActivityThreadIdType) = nullptr;
  CUptiResult (*register_timestamp_callback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;  // optional
  CUptiResult (*get_next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult (*flush_all)(uint32_t) = nullptr;
  CUptiResult (*get_num_dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult (*get_callback_name)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult (*get_result_string)(CUptiResult, const char**) = nullptr;
  CUptiResult (*finalize)() = nullptr;  // optional
  CUptiResult (*set_attribute)(CUpti_ActivityAttribute, size_t*, void*) = nullptr;  // optional
  // Per-call control of RUNTIME / DRIVER records (CUPTI 12.6+); optional: without them
  // TRACETUNE_CUDA_API=lean records every call
  CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t) = nullptr;
  CUptiResult (*enable_driver_api)(CUpti_CallbackId, uint8_t) = nullptr;

  bool complete() const {
    return subscribe && unsubscribe && set_thread_id_type && register_timestamp_callback && register_callbacks &&
           enable && get_next_record && flush_all && get_num_dropped_records && get_callback_name;
  }
};

// Loads libcupti (already loaded copy first, e.g. the one PyTorch ships) and fills `api`.
// Returns false with `why` set when it cannot.
bool load_cupti(CuptiApi& api, const char*& why);

// Where decoded records go: the collector's file in the job, a vector in tests.
class RecordSink {
 public:
  virtual void emit(collector::RecordType type, const void* payload, std::uint32_t size) = 0;
  virtual std::uint32_t intern(const char* s, std::size_t n) = 0;

 protected:
  ~RecordSink() = default;
};

// Decodes one CUPTI activity record into our GPU record (record_format.h, types 110..117) and
// emits it. Returns false for kinds we do not record (counted by the caller).
// Correlation ids, CUPTI enum values and times are kept as CUPTI gives them: with our
// timestamp callback registered CUPTI's times are already CLOCK_MONOTONIC ns.
bool decode_activity(const CuptiApi& api, const CUpti_Activity* record, RecordSink& sink);

// Walks a completed activity buffer; returns the number of records decoded, `skipped` counts
// records of other kinds.
std::size_t decode_buffer(const CuptiApi& api, std::uint8_t* buffer, std::size_t valid, RecordSink& sink,
                          std::size_t& skipped);

}  // namespace tt::cupti
