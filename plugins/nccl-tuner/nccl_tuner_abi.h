/* The NCCL tuner plugin interface, versions 5 (NCCL 2.28) and 4 (2.24-2.27), declared from the
 * documented ABI (../shared/research/nvidia.md, section 4, checked against NCCL 2.28.9's core
 * headers src/include/plugin/tuner/tuner_v{4,5}.h). Written by us; nothing here comes from
 * NCCL's sources. Only layouts and values matter: NCCL finds the exported structs by name
 * (ncclTunerPlugin_v5, then _v4) and calls through their function pointers. */
#ifndef TRACETUNE_NCCL_TUNER_ABI_H
#define TRACETUNE_NCCL_TUNER_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclResult_t (nccl.h): success is 0; we only ever return success or an internal error. */
typedef enum { tt_ncclSuccess = 0, tt_ncclInternalError = 3 } tt_ncclResult_t;

/* ncclFunc_t, as passed to getCollInfo. */
enum { TT_NCCL_BROADCAST = 0, TT_NCCL_REDUCE = 1, TT_NCCL_ALLGATHER = 2, TT_NCCL_REDUCESCATTER = 3, TT_NCCL_ALLREDUCE = 4 };
#define TT_NCCL_NUM_FUNCS 5

/* Cost-table dimensions in NCCL 2.28: algorithms Tree 0, Ring 1, CollNetDirect 2,
 * CollNetChain 3, NVLS 4, NVLSTree 5, PAT 6; protocols LL 0, LL128 1, Simple 2. The table is a
 * float[numAlgo][numProto] block passed as float**; -1.0 marks an unavailable combination. */
#define TT_NCCL_NUM_ALGORITHMS 7
#define TT_NCCL_NUM_PROTOCOLS 3
#define TT_NCCL_ALGO_PROTO_IGNORE -1.0f

typedef enum { TT_NCCL_LOG_NONE = 0, TT_NCCL_LOG_VERSION = 1, TT_NCCL_LOG_WARN = 2, TT_NCCL_LOG_INFO = 3 } tt_ncclDebugLogLevel;
#define TT_NCCL_TUNING_SUBSYS 64 /* ncclDebugLogSubSys NCCL_TUNING */
typedef void (*tt_ncclDebugLogger_t)(tt_ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                     const char* fmt, ...);

/* v5 */
typedef struct {
  int nNvlDomains;
  int minRanksPerNvlDomain;
  int maxRanksPerNvlDomain;
} tt_ncclNvlDomainInfo_v5_t;

typedef struct {
  double baseLatencies[7][3];
  double hwLatencies[3][7][3];
  double llMaxBws[4][3];
  double perChMaxRingLL128Bws[4][3];
  double perChMaxTreeLL128Bws[4][3];
  double perChMaxTreeBws[4][3];
  double perChMaxNVLSTreeBws[4][3];
} tt_ncclTunerConstants_v5_t;

typedef struct {
  const char* name;
  tt_ncclResult_t (*init)(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, tt_ncclDebugLogger_t logFunction,
                          tt_ncclNvlDomainInfo_v5_t* nvlDomainInfo, tt_ncclTunerConstants_v5_t* constants);
  tt_ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                 int numAlgo, int numProto, int regBuff, int* nChannels);
  tt_ncclResult_t (*finalize)(void* ctx);
} tt_ncclTuner_v5_t;

/* v4: init without commId/NVL info/constants, context last; `destroy` instead of `finalize`. */
typedef struct {
  const char* name;
  tt_ncclResult_t (*init)(size_t nRanks, size_t nNodes, tt_ncclDebugLogger_t logFunction, void** ctx);
  tt_ncclResult_t (*getCollInfo)(void* ctx, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                 int numAlgo, int numProto, int regBuff, int* nChannels);
  tt_ncclResult_t (*destroy)(void* ctx);
} tt_ncclTuner_v4_t;

#endif
