// The hand-over of CUPTI to another profiler in the job, between the preloaded collector (its
// interposers see the other profiler's CUPTI calls: collector/preload/gpu_api.cpp) and the CUDA
// injection library (it owns our CUPTI session: collector/cupti/session.h, Session::hand_over).
// The injection library registers its hand-over with tracetune_set_cupti_hand_over; the
// collector calls it once, with the settings the other profiler made itself, just before that
// profiler's buffer callbacks reach CUPTI.
#pragma once

#include <cstdint>

namespace tt::collector {

// What another profiler set in CUPTI itself before registering its buffer callbacks: the
// hand-over leaves these as it set them. Bits of the mask passed to the hand-over.
enum OthersSetting : std::uint32_t {
  kOtherSetTimestampCallback = 1u << 0,  // cuptiActivityRegisterTimestampCallback
  kOtherSetThreadIdType = 1u << 1,       // cuptiSetThreadIdType
  kOtherSetZeroedBuffers = 1u << 2,      // cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)
};

// The injection library's hand-over, given the OthersSetting mask.
using CuptiHandOverFn = void (*)(std::uint32_t others_set);

}  // namespace tt::collector
