// CUPTI activity records -> tracetune GPU records. No CUDA call, no allocation: used on CUPTI's
// buffer-completion thread in the job, and in unit tests on hand-built CUpti_Activity* structs
// from the same headers. CUPTI fills only the newest struct version of each kind (CUDA 13.0:
// Kernel10, Memcpy6, Memset4, Synchronization2, Device5, GraphTrace2, Overhead3, Memory4, CudaEvent2), so records
// are decoded by kind against the header this file is compiled with.
#include <atomic>
#include <cstring>

#include "cupti_api.h"

namespace tt::cupti {
namespace {

using namespace collector;

// API names by callback id, interned once per (domain, cbid) and process.
constexpr std::uint32_t kMaxCbid = 4096;
std::atomic<std::uint32_t> g_api_names[2][kMaxCbid];

std::uint32_t api_name(const CuptiApi& api, RecordSink& sink, bool driver, std::uint32_t cbid) {
  if (cbid >= kMaxCbid) return 0;
  auto& slot = g_api_names[driver ? 1 : 0][cbid];
  if (const std::uint32_t id = slot.load(std::memory_order_relaxed); id != 0) return id;
  const char* name = nullptr;
  if (api.get_callback_name == nullptr ||
      api.get_callback_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, cbid, &name) !=
          CUPTI_SUCCESS ||
      name == nullptr)
    return 0;
  const std::uint32_t id = sink.intern(name, std::strlen(name));
  slot.store(id, std::memory_order_relaxed);
  return id;
}

std::uint32_t intern_cstr(RecordSink& sink, const char* s) {
  return s == nullptr ? 0 : sink.intern(s, std::strlen(s));
}

template <class T>
void put(RecordSink& sink, RecordType type, const T& rec) {
  sink.emit(type, &rec, sizeof rec);
}

std::uint32_t u32(std::int32_t v) { return v < 0 ? 0 : static_cast<std::uint32_t>(v); }

// The fields every GPU span record shares, from the activity record of any kind that has them.
template <class Record, class Activity>
void span_fields(Record& r, const Activity* a) {
  r.start_ns = static_cast<std::int64_t>(a->start);
  r.end_ns = static_cast<std::int64_t>(a->end);
  r.device = a->deviceId;
  r.context = a->contextId;
  r.stream = a->streamId;
  r.correlation = a->correlationId;
}

// A kernel (CONCURRENT_KERNEL, Kernel10).
bool decode_kernel(const CUpti_Activity* a, RecordSink& sink) {
  const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(a);
  GpuKernelRecord r{};
  span_fields(r, k);
  r.name = intern_cstr(sink, k->name);
  r.grid_x = u32(k->gridX);
  r.grid_y = u32(k->gridY);
  r.grid_z = u32(k->gridZ);
  r.block_x = u32(k->blockX);
  r.block_y = u32(k->blockY);
  r.block_z = u32(k->blockZ);
  r.registers = k->registersPerThread;
  r.shared_static = u32(k->staticSharedMemory);
  r.shared_dynamic = u32(k->dynamicSharedMemory);
  r.graph_id = k->graphId;
  put(sink, RecordType::GpuKernel, r);
  return true;
}

// A copy (MEMCPY, Memcpy6).
bool decode_memcpy(const CUpti_Activity* a, RecordSink& sink) {
  const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(a);
  GpuMemcpyRecord r{};
  span_fields(r, m);
  r.bytes = m->bytes;
  r.copy_kind = m->copyKind;
  r.src_kind = m->srcKind;
  r.dst_kind = m->dstKind;
  r.flags = m->flags;
  r.graph_id = m->graphId;
  put(sink, RecordType::GpuMemcpy, r);
  return true;
}

// A memset (MEMSET, Memset4).
bool decode_memset(const CUpti_Activity* a, RecordSink& sink) {
  const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(a);
  GpuMemsetRecord r{};
  span_fields(r, m);
  r.bytes = m->bytes;
  r.value = m->value;
  r.mem_kind = static_cast<std::uint8_t>(m->memoryKind);
  r.flags = (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) != 0 ? 1 : 0;
  r.graph_id = m->graphId;
  put(sink, RecordType::GpuMemset, r);
  return true;
}

// A device-memory allocation or release (MEMORY2, Memory4); other operations are not decoded.
bool decode_memory(const CUpti_Activity* a, RecordSink& sink) {
  const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(a);
  if (m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
      m->memoryOperationType != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
    return false;
  GpuMemoryRecord r{};
  r.ts_ns = static_cast<std::int64_t>(m->timestamp);
  r.address = m->address;
  r.bytes = m->bytes;
  r.device = m->deviceId;
  r.correlation = m->correlationId;
  r.op = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? GpuMemoryOp::Allocate
                                                                                    : GpuMemoryOp::Release;
  r.mem_kind = static_cast<std::uint8_t>(m->memoryKind);
  put(sink, RecordType::GpuMemory, r);
  return true;
}

// A synchronisation (SYNCHRONIZATION, Synchronization2). A stream wait (type 2) keeps the
// waiting stream and the event id it waits on, which names the event's records (decode_cuda_event).
bool decode_sync(const CUpti_Activity* a, RecordSink& sink) {
  const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(a);
  GpuSyncRecord r{};
  r.start_ns = static_cast<std::int64_t>(s->start);
  r.end_ns = static_cast<std::int64_t>(s->end);
  r.context = s->contextId;
  r.stream = s->streamId;
  r.correlation = s->correlationId;
  r.type = static_cast<std::uint32_t>(s->type);
  r.event = s->cudaEventId;
  put(sink, RecordType::GpuSync, r);
  return true;
}

// Where a CUDA event was recorded (CUDA_EVENT, CudaEvent2): its stream and record call.
bool decode_cuda_event(const CUpti_Activity* a, RecordSink& sink) {
  const auto* e = reinterpret_cast<const CUpti_ActivityCudaEvent2*>(a);
  GpuCudaEventRecord r{};
  r.device = e->deviceId;
  r.context = e->contextId;
  r.stream = e->streamId;
  r.correlation = e->correlationId;
  r.event = e->eventId;
  put(sink, RecordType::GpuCudaEvent, r);
  return true;
}

// A runtime or driver API call (RUNTIME / DRIVER, API).
bool decode_api_call(const CuptiApi& api, const CUpti_Activity* a, RecordSink& sink) {
  const auto* p = reinterpret_cast<const CUpti_ActivityAPI*>(a);
  const bool driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
  GpuApiRecord r{};
  r.start_ns = static_cast<std::int64_t>(p->start);
  r.end_ns = static_cast<std::int64_t>(p->end);
  r.correlation = p->correlationId;
  r.cbid = p->cbid;
  r.name = api_name(api, sink, driver, p->cbid);
  r.return_value = static_cast<std::int32_t>(p->returnValue);
  r.tid = p->threadId;  // a system tid: the session sets CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM
  r.kind = driver ? 1 : 0;
  put(sink, RecordType::GpuApi, r);
  return true;
}

// A device (DEVICE, Device5), its UUID as nvidia-smi prints it.
bool decode_device(const CUpti_Activity* a, RecordSink& sink) {
  const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(a);
  GpuDeviceRecord r{};
  r.index = static_cast<std::int32_t>(d->id);
  r.sm_count = static_cast<std::int32_t>(d->numMultiprocessors);
  r.total_memory = static_cast<std::int64_t>(d->globalMemorySize);
  r.compute_major = static_cast<std::int32_t>(d->computeCapabilityMajor);
  r.compute_minor = static_cast<std::int32_t>(d->computeCapabilityMinor);
  r.name = intern_cstr(sink, d->name);
  // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as nvidia-smi prints it
  char uuid[41] = "GPU-";
  static constexpr char kHex[] = "0123456789abcdef";
  std::size_t pos = 4;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) uuid[pos++] = '-';
    const auto b = static_cast<unsigned char>(d->uuid.bytes[i]);
    uuid[pos++] = kHex[b >> 4];
    uuid[pos++] = kHex[b & 15];
  }
  r.uuid = sink.intern(uuid, pos);
  put(sink, RecordType::GpuDevice, r);
  return true;
}

// A whole CUDA graph launch (GRAPH_TRACE, GraphTrace2).
bool decode_graph_launch(const CUpti_Activity* a, RecordSink& sink) {
  const auto* g = reinterpret_cast<const CUpti_ActivityGraphTrace2*>(a);
  GpuGraphLaunchRecord r{};
  span_fields(r, g);
  r.graph_id = g->graphId;
  put(sink, RecordType::GpuGraphLaunch, r);
  return true;
}

// CUPTI's own overhead (OVERHEAD, Overhead3).
bool decode_overhead(const CUpti_Activity* a, RecordSink& sink) {
  const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(a);
  GpuOverheadRecord r{};
  r.start_ns = static_cast<std::int64_t>(o->start);
  r.end_ns = static_cast<std::int64_t>(o->end);
  r.kind = static_cast<std::uint32_t>(o->overheadKind);
  r.object_kind = static_cast<std::uint32_t>(o->objectKind);
  if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
    r.object_id = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : o->objectId.pt.processId;
  else if (o->objectKind == CUPTI_ACTIVITY_OBJECT_DEVICE)
    r.object_id = o->objectId.dcs.deviceId;
  r.correlation = o->correlationId;
  put(sink, RecordType::GpuOverhead, r);
  return true;
}

}  // namespace

bool decode_activity(const CuptiApi& api, const CUpti_Activity* a, RecordSink& sink) {
  switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return decode_kernel(a, sink);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return decode_memcpy(a, sink);
    case CUPTI_ACTIVITY_KIND_MEMSET: return decode_memset(a, sink);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return decode_memory(a, sink);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return decode_sync(a, sink);
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: return decode_cuda_event(a, sink);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return decode_api_call(api, a, sink);
    case CUPTI_ACTIVITY_KIND_DEVICE: return decode_device(a, sink);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: return decode_graph_launch(a, sink);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return decode_overhead(a, sink);
    default: return false;
  }
}

std::size_t decode_buffer(const CuptiApi& api, std::uint8_t* buffer, std::size_t valid, RecordSink& sink,
                          std::size_t& skipped) {
  std::size_t decoded = 0;
  if (buffer == nullptr || valid == 0 || api.get_next_record == nullptr) return 0;
  CUpti_Activity* record = nullptr;
  while (api.get_next_record(buffer, valid, &record) == CUPTI_SUCCESS && record != nullptr) {
    if (decode_activity(api, record, sink))
      ++decoded;
    else
      ++skipped;
  }
  return decoded;
}

}  // namespace tt::cupti
