// NCCL profiler plugin ABI, versions 5 (NCCL 2.28) and 4 (NCCL 2.27), declared by us from the
// ABI facts in ../shared/research/nvidia.md §4 (NCCL core headers src/include/plugin/profiler/
// profiler_v{4,5}.h at v2.28.9; NCCL's own headers are not shipped with the toolkit).
//
// Traps this file follows on purpose:
//  - `graphCaptured` is `bool` as in NCCL's core headers (the ext-profiler example says `int`,
//    which would shift `groupDepth`);
//  - v5's `type` is uint64_t, v4's is uint8_t; v4's coll/p2p lack `parentGroup`;
//  - v4's init takes (ctx, mask, commName, commHash, ...), v5's (ctx, commId, mask, commName, ...).
// Only the layout matters: the plugin never calls into NCCL.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int ncclResult_t;  // enum in NCCL; 0 = ncclSuccess
inline constexpr ncclResult_t kNcclSuccess = 0;
typedef void (*ncclDebugLogger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);
typedef pid_t ncclPid_t;

// Event type bits (descriptor `type`, and the activation mask).
enum : std::uint64_t {
  kNcclProfileGroup = 1u << 0,
  kNcclProfileColl = 1u << 1,
  kNcclProfileP2p = 1u << 2,
  kNcclProfileProxyOp = 1u << 3,
  kNcclProfileProxyStep = 1u << 4,
  kNcclProfileProxyCtrl = 1u << 5,
  kNcclProfileKernelCh = 1u << 6,
  kNcclProfileNetPlugin = 1u << 7,
  kNcclProfileGroupApi = 1u << 8,
  kNcclProfileCollApi = 1u << 9,
  kNcclProfileP2pApi = 1u << 10,
  kNcclProfileKernelLaunch = 1u << 11,
};

// Event states (recordEventState); the ones this plugin reads.
typedef int ncclProfilerEventState_t;
inline constexpr ncclProfilerEventState_t kNcclProfilerKernelChStop = 22;

typedef struct {
  std::uint64_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      bool graphCaptured;
      int groupDepth;
    } groupApi;
    struct {
      const char* func;
      std::size_t count;
      const char* datatype;
      int root;
      void* stream;
      bool graphCaptured;
    } collApi;
    struct {
      const char* func;
      std::size_t count;
      const char* datatype;
      void* stream;
      bool graphCaptured;
    } p2pApi;
    struct {
      void* stream;
    } kernelLaunch;
    struct {
      std::uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char* algo;
      const char* proto;
      void* parentGroup;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
      void* parentGroup;
    } p2p;
    struct {
      ncclPid_t pid;
      std::uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      std::uint8_t channelId;
      std::uint64_t pTimer;  // GPU globaltimer at the channel's start
    } kernelCh;
    struct {
      std::int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v5_t;

typedef struct {
  std::uint8_t type;
  void* parentObj;
  int rank;
  union {
    struct {
      std::uint64_t seqNumber;
      const char* func;
      void const* sendBuff;
      void* recvBuff;
      std::size_t count;
      int root;
      const char* datatype;
      std::uint8_t nChannels;
      std::uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* func;
      void* buff;
      const char* datatype;
      std::size_t count;
      int peer;
      std::uint8_t nChannels;
    } p2p;
    struct {
      ncclPid_t pid;
      std::uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
    struct {
      std::uint8_t channelId;
      std::uint64_t pTimer;
    } kernelCh;
    struct {
      std::int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

// The state arguments are the same union in v4 and v5 (v5 at HEAD adds a member of the same size).
typedef union {
  struct {
    std::size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    std::uint64_t pTimer;  // GPU globaltimer at the channel's stop (KernelChStop)
  } kernelCh;
} ncclProfilerEventStateArgs_v5_t;
typedef ncclProfilerEventStateArgs_v5_t ncclProfilerEventStateArgs_v4_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, std::uint64_t commId, int* eActivationMask, const char* commName,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, std::uint64_t commHash,
                       int nNodes, int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

}  // extern "C"

// Layout checks against the core headers' field order (x86-64 / aarch64 LP64).
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll) == 24);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, groupApi.groupDepth) == 28);  // bool, not int
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.nChannels) == 24 + 56);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, coll.parentGroup) == 24 + 80);
static_assert(offsetof(ncclProfilerEventDescr_v5_t, kernelCh.pTimer) == 24 + 8);
static_assert(offsetof(ncclProfilerEventDescr_v4_t, coll) == 24);
static_assert(sizeof(ncclProfilerEventStateArgs_v5_t) == 8);
