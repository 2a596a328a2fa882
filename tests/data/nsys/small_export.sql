-- A small Nsight Systems SQLite export, written by hand.
--
-- No public .sqlite export was available to use as a fixture, so this script reproduces a subset
-- of the documented schema: NVIDIA Nsight Systems Post-Collection Analysis Guide, "SQLite Schema
-- Reference" (sqlite-schema-reference.rst, 2026.4 release, schema version 3.28.1) and "SQLite
-- Schema Event Values" (enum numbering). Table names, column names, types and NOT NULL constraints
-- follow that reference exactly; only a subset of the tables is created (nsys creates tables lazily
-- too), and the rows were invented to be mutually consistent. tests/unit/nsys_import_test.cpp
-- builds a database from it at test time.
--
-- The story: process python3 (pid 4242) on GPU 0 of a 2-GPU machine. The main thread copies a
-- batch in from pageable memory (cudaMemcpy) and one from pinned memory (cudaMemcpyAsync), clears
-- a buffer, launches 4 kernels on streams 7 and 13 plus a graph (kernel 5), synchronizes a stream
-- and an event, copies a result back, and waits on a condition variable. A data-loader thread
-- (tid 4250) opens and reads a file. NVTX: a push/pop range, a start/end range in the "NCCL"
-- domain, a mark, and a category-naming row. One kernel row is deliberately broken (end before
-- start) so the importer's diagnostics can be checked.
--
-- Serialized GlobalIds: globalTid = (pid << 24) | tid, globalPid = pid << 24 (hardware and VM
-- ids 0):  globalPid 71168950272, main thread 71168954514, loader thread 71168954522.

CREATE TABLE StringIds (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    value                       TEXT      NOT NULL
);
CREATE TABLE ThreadNames (
    nameId                      INTEGER   NOT NULL,
    priority                    INTEGER,
    globalTid                   INTEGER
);
CREATE TABLE PROCESSES (
    globalPid                   INTEGER,
    pid                         INTEGER,
    name                        TEXT
);
CREATE TABLE TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,
    id                          INTEGER   NOT NULL,
    name                        TEXT,
    busLocation                 TEXT,
    isDiscrete                  INTEGER,
    l2CacheSize                 INTEGER,
    totalMemory                 INTEGER,
    memoryBandwidth             INTEGER,
    clockRate                   INTEGER,
    smCount                     INTEGER,
    pwGpuId                     INTEGER,
    uuid                        TEXT,
    luid                        INTEGER,
    chipName                    TEXT,
    cuDevice                    INTEGER,
    ctxswDevPath                TEXT,
    ctrlDevPath                 TEXT,
    revision                    INTEGER,
    nodeMask                    INTEGER,
    constantMemory              INTEGER,
    maxIPC                      INTEGER,
    maxRegistersPerBlock        INTEGER,
    maxShmemPerBlock            INTEGER,
    maxShmemPerBlockOptin       INTEGER,
    maxShmemPerSm               INTEGER,
    maxRegistersPerSm           INTEGER,
    threadsPerWarp              INTEGER,
    asyncEngines                INTEGER,
    maxWarpsPerSm               INTEGER,
    maxBlocksPerSm              INTEGER,
    maxThreadsPerBlock          INTEGER,
    maxBlockDimX                INTEGER,
    maxBlockDimY                INTEGER,
    maxBlockDimZ                INTEGER,
    maxGridDimX                 INTEGER,
    maxGridDimY                 INTEGER,
    maxGridDimZ                 INTEGER,
    computeMajor                INTEGER,
    computeMinor                INTEGER,
    smMajor                     INTEGER,
    smMinor                     INTEGER,
    numaNodeId                  INTEGER
);
CREATE TABLE META_DATA_EXPORT (
    name                        TEXT      NOT NULL,
    value                       TEXT
);
CREATE TABLE ENUM_NSYS_EVENT_TYPE (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    name                        TEXT,
    label                       TEXT
);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    name                        TEXT,
    label                       TEXT
);
CREATE TABLE ENUM_CUDA_MEM_KIND (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    name                        TEXT,
    label                       TEXT
);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (
    id                          INTEGER   NOT NULL   PRIMARY KEY,
    name                        TEXT,
    label                       TEXT
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    bytes                       INTEGER   NOT NULL,
    copyKind                    INTEGER   NOT NULL,
    deprecatedSrcId             INTEGER,
    srcKind                     INTEGER,
    dstKind                     INTEGER,
    srcDeviceId                 INTEGER,
    srcContextId                INTEGER,
    dstDeviceId                 INTEGER,
    dstContextId                INTEGER,
    migrationCause              INTEGER,
    graphNodeId                 INTEGER,
    virtualAddress              INTEGER,
    copyCount                   INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    value                       INTEGER   NOT NULL,
    bytes                       INTEGER   NOT NULL,
    graphNodeId                 INTEGER,
    memKind                     INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    demangledName               INTEGER   NOT NULL,
    shortName                   INTEGER   NOT NULL,
    mangledName                 INTEGER,
    launchType                  INTEGER,
    cacheConfig                 INTEGER,
    registersPerThread          INTEGER   NOT NULL,
    gridX                       INTEGER   NOT NULL,
    gridY                       INTEGER   NOT NULL,
    gridZ                       INTEGER   NOT NULL,
    blockX                      INTEGER   NOT NULL,
    blockY                      INTEGER   NOT NULL,
    blockZ                      INTEGER   NOT NULL,
    staticSharedMemory          INTEGER   NOT NULL,
    dynamicSharedMemory         INTEGER   NOT NULL,
    localMemoryPerThread        INTEGER   NOT NULL,
    localMemoryTotal            INTEGER   NOT NULL,
    gridId                      INTEGER   NOT NULL,
    sharedMemoryExecuted        INTEGER,
    graphNodeId                 INTEGER,
    sharedMemoryLimitConfig     INTEGER,
    qmdBulkReleaseDone          INTEGER,
    qmdPreexitDone              INTEGER,
    qmdLastCtaDone              INTEGER,
    graphId                     INTEGER,
    clusterX                    INTEGER,
    clusterY                    INTEGER,
    clusterZ                    INTEGER,
    clusterSchedulingPolicy     INTEGER,
    maxPotentialClusterSize     INTEGER,
    maxActiveClusters           INTEGER,
    sharedMemoryRequestedPercentage   INTEGER,
    tensorSizeMinusOneElements  TEXT      NOT NULL
);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    deviceId                    INTEGER   NOT NULL,
    contextId                   INTEGER   NOT NULL,
    greenContextId              INTEGER,
    streamId                    INTEGER   NOT NULL,
    correlationId               INTEGER,
    globalPid                   INTEGER,
    deprecatedSyncType          INTEGER,
    syncType                    INTEGER   NOT NULL,
    eventId                     INTEGER   NOT NULL,
    eventSyncId                 INTEGER
);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    correlationId               INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL,
    callchainId                 INTEGER
);
CREATE TABLE NVTX_EVENTS (
    start                       INTEGER   NOT NULL,
    end                         INTEGER,
    eventType                   INTEGER   NOT NULL,
    rangeId                     INTEGER,
    category                    INTEGER,
    color                       INTEGER,
    text                        TEXT,
    globalTid                   INTEGER,
    endGlobalTid                INTEGER,
    textId                      INTEGER,
    domainId                    INTEGER,
    uint64Value                 INTEGER,
    int64Value                  INTEGER,
    doubleValue                 REAL,
    uint32Value                 INTEGER,
    int32Value                  INTEGER,
    floatValue                  REAL,
    jsonTextId                  INTEGER,
    jsonText                    TEXT,
    binaryData                  TEXT,
    eventId                     INTEGER   NOT NULL   PRIMARY KEY
);
CREATE TABLE OSRT_API (
    start                       INTEGER   NOT NULL,
    end                         INTEGER   NOT NULL,
    eventClass                  INTEGER   NOT NULL,
    globalTid                   INTEGER,
    nameId                      INTEGER   NOT NULL,
    returnValue                 INTEGER   NOT NULL,
    nestingLevel                INTEGER,
    callchainId                 INTEGER   NOT NULL,
    argumentsId                 INTEGER   NOT NULL
);

-- ---- reference data ----

INSERT INTO StringIds VALUES (1, 'cudaMemcpy_v3020');
INSERT INTO StringIds VALUES (2, 'cudaMemcpyAsync_v3020');
INSERT INTO StringIds VALUES (3, 'cudaMemsetAsync_v3020');
INSERT INTO StringIds VALUES (4, 'cudaLaunchKernel_v7000');
INSERT INTO StringIds VALUES (5, 'cudaGraphLaunch_v10000');
INSERT INTO StringIds VALUES (6, 'cudaStreamSynchronize_v3020');
INSERT INTO StringIds VALUES (7, 'cudaEventSynchronize_v3020');
INSERT INTO StringIds VALUES (8, 'cuMemGetInfo_v2');
INSERT INTO StringIds VALUES (9, 'void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)');
INSERT INTO StringIds VALUES (10, 'vectorized_elementwise_kernel');
INSERT INTO StringIds VALUES (11, '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_');
INSERT INTO StringIds VALUES (12, 'ampere_sgemm_128x64_nn');
INSERT INTO StringIds VALUES (13, 'python3');
INSERT INTO StringIds VALUES (14, 'pt_data_worker');
INSERT INTO StringIds VALUES (15, 'forward');
INSERT INTO StringIds VALUES (16, 'open64');
INSERT INTO StringIds VALUES (17, 'read');
INSERT INTO StringIds VALUES (18, 'pthread_cond_wait');

INSERT INTO ThreadNames VALUES (13, 0, 71168954514);
INSERT INTO ThreadNames VALUES (14, 0, 71168954522);
INSERT INTO PROCESSES VALUES (71168950272, 4242, 'python3');

-- Two GPUs; the workload runs on id 0 only.
INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, l2CacheSize, totalMemory,
    memoryBandwidth, clockRate, smCount, uuid, chipName, cuDevice, threadsPerWarp, asyncEngines,
    maxThreadsPerBlock, computeMajor, computeMinor, smMajor, smMinor, numaNodeId)
  VALUES (0, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 1, 52428800, 85520809984,
    3352320000000, 1980000000, 132, 'GPU-4c1d7a2e-90b3-5f6c-8e21-3a7d9b0c5e14', 'GH100', 0, 32, 3,
    1024, 9, 0, 9, 0, 0);
INSERT INTO TARGET_INFO_GPU (vmId, id, name, busLocation, isDiscrete, l2CacheSize, totalMemory,
    memoryBandwidth, clockRate, smCount, uuid, chipName, cuDevice, threadsPerWarp, asyncEngines,
    maxThreadsPerBlock, computeMajor, computeMinor, smMajor, smMinor, numaNodeId)
  VALUES (0, 1, 'NVIDIA H100 80GB HBM3', '0000:2a:00.0', 1, 52428800, 85520809984,
    3352320000000, 1980000000, 132, 'GPU-b83f0e51-2c47-6a9d-1f03-e5c2847a6d90', 'GH100', 1, 32, 3,
    1024, 9, 0, 9, 0, 0);

INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.28.1');

-- Enum tables with the values documented in "SQLite Schema Event Values".
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (33, 'NvtxCategory', 'NvtxCategory');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (34, 'NvtxMark', 'NvtxMark');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (59, 'NvtxPushPopRange', 'NvtxPushPopRange');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (60, 'NvtxStartEndRange', 'NvtxStartEndRange');
INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (75, 'NvtxDomainCreate', 'NvtxDomainCreate');

INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0, 'CUDA_MEMCPY_KIND_UNKNOWN', 'Unknown');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'Host-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (2, 'CUDA_MEMCPY_KIND_DTOH', 'Device-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (3, 'CUDA_MEMCPY_KIND_HTOA', 'Host-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (4, 'CUDA_MEMCPY_KIND_ATOH', 'Array-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (5, 'CUDA_MEMCPY_KIND_ATOA', 'Array-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (6, 'CUDA_MEMCPY_KIND_ATOD', 'Array-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (7, 'CUDA_MEMCPY_KIND_DTOA', 'Device-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (8, 'CUDA_MEMCPY_KIND_DTOD', 'Device-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (9, 'CUDA_MEMCPY_KIND_HTOH', 'Host-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (10, 'CUDA_MEMCPY_KIND_PTOP', 'Peer-to-Peer');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (11, 'CUDA_MEMCPY_KIND_UVM_HTOD', 'Unified Host-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (12, 'CUDA_MEMCPY_KIND_UVM_DTOH', 'Unified Device-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (13, 'CUDA_MEMCPY_KIND_UVM_DTOD', 'Unified Device-to-Device');

-- nsys numbering (Pageable = 0, Pinned = 1), NOT CUPTI's (Pageable = 1, Pinned = 2).
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0, 'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE', 'Pageable');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (1, 'CUDA_MEMOPR_MEMORY_KIND_PINNED', 'Pinned');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (2, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE', 'Device');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (3, 'CUDA_MEMOPR_MEMORY_KIND_ARRAY', 'Array');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (4, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED', 'Managed');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (5, 'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC', 'Device Static');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (6, 'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC', 'Managed Static');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (7, 'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN', 'Unknown');

INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (0, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN', 'Unknown');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (1, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE', 'Event sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (2, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT', 'Stream wait sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (3, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE', 'Stream sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (4, 'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE', 'Context sync');

-- ---- host: CUDA API calls on the main thread (eventClass 0 runtime, 1 driver) ----
-- columns: start, end, eventClass, globalTid, correlationId, nameId, returnValue, callchainId

INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (3000, 9000, 0, 71168954514, 110, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (9500, 10500, 0, 71168954514, 111, 2, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (11000, 11800, 0, 71168954514, 113, 3, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (12000, 12600, 0, 71168954514, 101, 4, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (13000, 13600, 0, 71168954514, 102, 4, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (14000, 14600, 0, 71168954514, 103, 4, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (15000, 15600, 0, 71168954514, 104, 4, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (16000, 17000, 0, 71168954514, 105, 5, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (17500, 40000, 0, 71168954514, 120, 6, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (40500, 45000, 0, 71168954514, 121, 7, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (45500, 52000, 0, 71168954514, 112, 1, 0, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (52500, 53000, 1, 71168954514, 130, 8, 0, NULL);

-- ---- device: GPU 0, streams 7 and 13 ----

-- columns: start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid,
--          bytes, copyKind, deprecatedSrcId, srcKind, dstKind, srcDeviceId, srcContextId,
--          dstDeviceId, dstContextId, migrationCause, graphNodeId, virtualAddress, copyCount
-- pageable HtoD (cudaMemcpy), pinned HtoD (cudaMemcpyAsync), DtoH into pageable (cudaMemcpy)
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (4000, 8500, 0, 1, NULL, 7, 110, 71168950272,
    4194304, 1, NULL, 0, 2, 0, 1, 0, 1, NULL, NULL, NULL, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (10000, 11000, 0, 1, NULL, 13, 111, 71168950272,
    4194304, 1, NULL, 1, 2, 0, 1, 0, 1, NULL, NULL, NULL, 1);
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (46000, 51000, 0, 1, NULL, 7, 112, 71168950272,
    1024, 2, NULL, 2, 0, 0, 1, 0, 1, NULL, NULL, NULL, 1);

-- columns: start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid,
--          value, bytes, graphNodeId, memKind
INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (11900, 12100, 0, 1, NULL, 13, 113, 71168950272,
    0, 1048576, NULL, 2);

INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId,
    globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread,
    gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory,
    localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, graphId,
    tensorSizeMinusOneElements) VALUES
  (12500, 20000, 0, 1, 7, 101, 71168950272, 9, 10, 11, 0, 0, 16,
    1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 11, 0, NULL, NULL, ''),
  (20000, 30000, 0, 1, 7, 102, 71168950272, 12, 12, NULL, 0, 0, 128,
    8, 16, 1, 256, 1, 1, 16384, 0, 0, 0, 12, 16384, NULL, NULL, ''),
  (14500, 25000, 0, 1, 13, 103, 71168950272, 12, 12, NULL, 0, 0, 128,
    8, 16, 1, 256, 1, 1, 16384, 0, 0, 0, 13, 16384, NULL, NULL, ''),
  (25000, 28000, 0, 1, 13, 104, 71168950272, 9, 10, 11, 0, 0, 16,
    1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 14, 0, NULL, NULL, ''),
  -- launched by cudaGraphLaunch: graph 3, node 77
  (30000, 35000, 0, 1, 7, 105, 71168950272, 9, 10, 11, 0, 0, 16,
    1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 15, 0, 77, 3, ''),
  -- deliberately broken row (end before start): must be counted as skipped, not imported
  (36000, 35000, 0, 1, 7, 106, 71168950272, 9, 10, 11, 0, 0, 16,
    1024, 1, 1, 128, 1, 1, 0, 0, 0, 0, 16, 0, NULL, NULL, '');

-- columns: start, end, deviceId, contextId, greenContextId, streamId, correlationId, globalPid,
--          deprecatedSyncType, syncType, eventId, eventSyncId
-- stream sync (3) on stream 7, no event (CUPTI's invalid id); event sync (1) on event 42
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (17600, 39900, 0, 1, NULL, 7, 120,
    71168950272, NULL, 3, 4294967295, NULL);
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (40600, 44900, 0, 1, NULL, 13, 121,
    71168950272, NULL, 1, 42, NULL);

-- ---- NVTX (eventType 33 category, 34 mark, 59 push/pop, 60 start/end, 75 domain create) ----

INSERT INTO NVTX_EVENTS (eventId, start, end, eventType, category, text, globalTid)
  VALUES (1, 400, NULL, 33, 1, 'compute', 71168954514);
INSERT INTO NVTX_EVENTS (eventId, start, end, eventType, text, globalTid, domainId)
  VALUES (2, 500, NULL, 75, 'NCCL', 71168954514, 1);
INSERT INTO NVTX_EVENTS (eventId, start, end, eventType, color, text, globalTid, domainId)
  VALUES (3, 1000, 90000, 59, 4278255360, 'train_step', 71168954514, 0);
INSERT INTO NVTX_EVENTS (eventId, start, end, eventType, rangeId, globalTid, endGlobalTid, textId, domainId)
  VALUES (4, 2000, 50000, 60, 1, 71168954514, 71168954514, 15, 1);
INSERT INTO NVTX_EVENTS (eventId, start, end, eventType, text, globalTid, domainId)
  VALUES (5, 60000, NULL, 34, 'checkpoint', 71168954514, 0);
-- PyTorch's emit_nvtx names: the op, then per-call arguments (imported as name + args)
INSERT INTO NVTX_EVENTS (eventId, start, end, eventType, text, globalTid, domainId)
  VALUES (6, 70000, 71000, 59, 'aten::mm, seq = 7, sizes = [[2, 3], [3, 4]]', 71168954514, 0);

-- ---- OS runtime (eventClass 27 = TRACE_PROCESS_EVENT_OS_RUNTIME) ----
-- columns: start, end, eventClass, globalTid, nameId, returnValue, nestingLevel, callchainId,
--          argumentsId
INSERT INTO OSRT_API VALUES (3000, 3400, 27, 71168954522, 16, 5, 0, 0, 0);
INSERT INTO OSRT_API VALUES (4000, 6000, 27, 71168954522, 17, 65536, 0, 0, 0);
INSERT INTO OSRT_API VALUES (6500, 7000, 27, 71168954522, 17, 4096, 0, 0, 0);
INSERT INTO OSRT_API VALUES (53500, 80000, 27, 71168954514, 18, 0, 0, 0, 0);
