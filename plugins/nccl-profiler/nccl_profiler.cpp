// libtracetune_nccl_profiler.so: an NCCL profiler plugin (API v5 for NCCL 2.28, v4 for 2.27)
// that writes NCCL collectives and point-to-point operations into the tracetune record file
// of the process it runs in.
//
// Place in the data flow: `tracetune record` sets NCCL_PROFILER_PLUGIN to this library; NCCL
// dlopens it (RTLD_LOCAL) and calls init per communicator, then startEvent/stopEvent/
// recordEventState for the events we ask for. Records go to the preloaded collector through
// tracetune_emit_gpu_record(), found with dlsym(RTLD_DEFAULT); without it (no `record`), init
// asks NCCL for no events at all and the plugin costs nothing.
//
// What is recorded (record_format.h, NcclCommRecord / NcclCollRecord):
//  - per communicator: commHash, rank, nranks, nnodes, name;
//  - per collective / p2p operation, at NCCL's stopEvent (= enqueued): a host-side record
//    with the enqueue span and everything NCCL's descriptor says (func, count, dtype, algo,
//    proto, channels, warps, seq, root/peer);
//  - once every channel of that operation stopped on the GPU (KernelCh events, GPU
//    globaltimer), a device-side record with the first channel start and last channel stop,
//    plus the host time at which the last stop was seen (the merger maps clocks with it).
//
// Rules (it runs inside NCCL, inside the job): never block, never throw (built with
// -fno-exceptions, nothing here throws), always return ncclSuccess from event calls, no
// allocation per event: events live in a fixed pool claimed with one compare-and-swap; when the
// pool is exhausted the event is not recorded and counted (a Dropped record at finalize).
#include <dlfcn.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>

#include "nccl_profiler_abi.h"
#include "tracetune/collector/record_format.h"

#define TT_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using tt::collector::NcclCollRecord;
using tt::collector::NcclCommRecord;
using tt::collector::NcclOpKind;
using tt::collector::NcclSide;
using tt::collector::RecordType;

using EmitFn = int (*)(std::uint32_t, const void*, std::uint32_t);
using InternFn = std::uint32_t (*)(const char*, std::size_t);
using RecordingFn = int (*)();

std::atomic<EmitFn> g_emit{nullptr};
std::atomic<InternFn> g_intern{nullptr};

// The collector's C API in this process, or false (then the plugin asks for no events).
bool bind_collector() {
  if (g_emit.load(std::memory_order_acquire) != nullptr) return true;
  auto emit = reinterpret_cast<EmitFn>(dlsym(RTLD_DEFAULT, "tracetune_emit_gpu_record"));
  auto intern = reinterpret_cast<InternFn>(dlsym(RTLD_DEFAULT, "tracetune_intern_string"));
  auto recording = reinterpret_cast<RecordingFn>(dlsym(RTLD_DEFAULT, "tracetune_is_recording"));
  if (emit == nullptr || intern == nullptr || recording == nullptr || recording() == 0) return false;
  g_intern.store(intern, std::memory_order_release);
  g_emit.store(emit, std::memory_order_release);
  return true;
}

std::int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::uint32_t intern(const char* s) {
  const InternFn f = g_intern.load(std::memory_order_acquire);
  return f == nullptr || s == nullptr ? 0 : f(s, std::strlen(s));
}

template <class T>
void emit(RecordType type, const T& rec) {
  if (const EmitFn f = g_emit.load(std::memory_order_acquire); f != nullptr)
    f(static_cast<std::uint32_t>(type), &rec, sizeof rec);
}

struct Context {
  std::uint64_t comm_id;
  int rank;
};

enum class EventType : std::uint8_t { Op, Channel };

// One pool slot: an operation (collective or p2p) or one of its channels on the GPU.
struct Event {
  std::atomic<std::uint32_t> used;  // 0 free, 1 claimed
  EventType type;
  Event* parent;                    // Channel: its operation
  std::atomic<std::int32_t> refs;   // Op: 1 until NCCL stops it, +1 per channel expected
  std::atomic<std::int32_t> channels_left;  // Op: channel events expected and not yet started
  NcclCollRecord rec;               // Op: the host-side record being built
  std::atomic<std::uint64_t> gpu_start;    // Op: earliest channel start (GPU ns), UINT64_MAX none
  std::atomic<std::uint64_t> gpu_stop;     // Op: latest channel stop, 0 none
  std::atomic<std::int64_t> observed;      // Op: host time the latest channel stop was seen
  std::uint64_t ch_start;                  // Channel: its start (GPU ns)
  std::uint64_t ch_stop;                   // Channel: its stop, 0 until KernelChStop
  std::int64_t ch_seen;                    // Channel: host time of KernelChStop
};

constexpr std::uint32_t kPoolSize = 8192;
constexpr std::uint32_t kMaxProbes = 256;
Event g_pool[kPoolSize];
std::atomic<std::uint32_t> g_next{0};
std::atomic<std::uint64_t> g_dropped{0};
std::atomic<std::uint32_t> g_status_written{0};

Event* claim() {
  std::uint32_t i = g_next.fetch_add(1, std::memory_order_relaxed);
  for (std::uint32_t probe = 0; probe < kMaxProbes; ++probe, ++i) {
    Event& e = g_pool[i % kPoolSize];
    std::uint32_t expected = 0;
    if (e.used.load(std::memory_order_relaxed) == 0 &&
        e.used.compare_exchange_strong(expected, 1, std::memory_order_acquire))
      return &e;
  }
  g_dropped.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void release_slot(Event* e) { e->used.store(0, std::memory_order_release); }

// A handle NCCL gives back, if it is one of ours and in use (NCCL may pass a handle we set to
// nullptr, or a parent we never created).
Event* as_event(void* h) {
  const auto p = reinterpret_cast<std::uintptr_t>(h);
  const auto base = reinterpret_cast<std::uintptr_t>(&g_pool[0]);
  if (p < base || p >= base + sizeof g_pool || (p - base) % sizeof(Event) != 0) return nullptr;
  Event* e = static_cast<Event*>(h);
  return e->used.load(std::memory_order_acquire) != 0 ? e : nullptr;
}

// Drops one reference of an operation; the last one writes its device-side record (when any
// channel reported its stop) and frees the slot.
void unref_op(Event* op) {
  if (op->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  const std::uint64_t stop = op->gpu_stop.load(std::memory_order_acquire);
  const std::uint64_t start = op->gpu_start.load(std::memory_order_acquire);
  if (stop != 0 && start != UINT64_MAX) {
    NcclCollRecord r = op->rec;
    r.side = NcclSide::Device;
    r.start_ns = static_cast<std::int64_t>(start);
    r.end_ns = static_cast<std::int64_t>(stop);
    r.observed_ns = op->observed.load(std::memory_order_acquire);
    emit(RecordType::NcclColl, r);
  }
  release_slot(op);
}

void atomic_min(std::atomic<std::uint64_t>& a, std::uint64_t v) {
  std::uint64_t cur = a.load(std::memory_order_relaxed);
  while (v < cur && !a.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
  }
}
template <class T>
void atomic_max(std::atomic<T>& a, T v) {
  T cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v, std::memory_order_acq_rel)) {
  }
}

// NCCL starts the KernelCh events of an operation from its proxy thread after the operation
// was enqueued (stopEvent), one per channel the operation uses: the slot lives until NCCL
// stopped it and every one of its `channels` channels stopped.
Event* start_op(const Context* ctx, int rank, std::uint8_t channels) {
  Event* e = claim();
  if (e == nullptr) return nullptr;
  e->type = EventType::Op;
  e->parent = nullptr;
  e->refs.store(1 + channels, std::memory_order_relaxed);
  e->channels_left.store(channels, std::memory_order_relaxed);
  e->gpu_start.store(UINT64_MAX, std::memory_order_relaxed);
  e->gpu_stop.store(0, std::memory_order_relaxed);
  e->observed.store(0, std::memory_order_relaxed);
  e->rec = NcclCollRecord{};
  e->rec.comm_id = ctx->comm_id;
  e->rec.rank = rank;
  e->rec.root = -1;
  e->rec.peer = -1;
  e->rec.seq = -1;
  e->rec.side = NcclSide::Host;
  return e;
}

// One of the channel events an operation expects, if any is left: a channel it was not counted
// for (more than nChannels, or a send/recv to oneself) gets no handle and cannot unbalance it.
bool take_channel(Event* op) {
  std::int32_t left = op->channels_left.load(std::memory_order_relaxed);
  while (left > 0 && !op->channels_left.compare_exchange_weak(left, left - 1, std::memory_order_acq_rel)) {
  }
  return left > 0;
}

template <class Descr>
ncclResult_t start_event(void* context, void** handle, Descr* d) {
  if (handle == nullptr) return kNcclSuccess;
  *handle = nullptr;
  const auto* ctx = static_cast<const Context*>(context);
  if (ctx == nullptr || d == nullptr) return kNcclSuccess;
  const std::uint64_t type = d->type;
  if (type == kNcclProfileColl) {
    Event* e = start_op(ctx, d->rank, d->coll.nChannels);
    if (e == nullptr) return kNcclSuccess;
    NcclCollRecord& r = e->rec;
    r.kind = NcclOpKind::Collective;
    r.seq = static_cast<std::int64_t>(d->coll.seqNumber);
    r.func = intern(d->coll.func);
    r.count = d->coll.count;
    r.root = d->coll.root;
    r.dtype = intern(d->coll.datatype);
    r.channels = d->coll.nChannels;
    r.warps = d->coll.nWarps;
    r.algo = intern(d->coll.algo);
    r.proto = intern(d->coll.proto);
    r.start_ns = now_ns();
    *handle = e;
  } else if (type == kNcclProfileP2p) {
    // A send/recv to oneself runs without proxy ops, so no KernelCh event ever comes (NCCL
    // 2.28 on an H100, 2026-11-26): expecting its nChannels would hold the slot for good.
    Event* e = start_op(ctx, d->rank, d->p2p.peer == d->rank ? 0 : d->p2p.nChannels);
    if (e == nullptr) return kNcclSuccess;
    NcclCollRecord& r = e->rec;
    r.kind = NcclOpKind::P2p;
    r.func = intern(d->p2p.func);
    r.dtype = intern(d->p2p.datatype);
    r.count = d->p2p.count;
    r.peer = d->p2p.peer;
    r.channels = d->p2p.nChannels;
    r.start_ns = now_ns();
    *handle = e;
  } else if (type == kNcclProfileKernelCh) {
    Event* op = as_event(d->parentObj);
    if (op == nullptr || op->type != EventType::Op || !take_channel(op)) return kNcclSuccess;
    Event* e = claim();
    if (e == nullptr) {  // pool full: the operation stops waiting for this channel
      unref_op(op);
      return kNcclSuccess;
    }
    e->type = EventType::Channel;
    e->parent = op;
    e->ch_start = d->kernelCh.pTimer;
    e->ch_stop = 0;
    e->ch_seen = 0;
    *handle = e;
  }
  // Other types (groups, API events, proxy events: NCCL starts parents of what we asked for)
  // get no handle; NCCL skips the calls for a null handle.
  return kNcclSuccess;
}

ncclResult_t stop_event(void* handle) {
  Event* e = as_event(handle);
  if (e == nullptr) return kNcclSuccess;
  if (e->type == EventType::Op) {
    e->rec.end_ns = now_ns();
    emit(RecordType::NcclColl, e->rec);  // host side: enqueued
    unref_op(e);
    return kNcclSuccess;
  }
  Event* op = e->parent;
  if (op != nullptr) {
    if (e->ch_start != 0) atomic_min(op->gpu_start, e->ch_start);
    if (e->ch_stop != 0) {
      atomic_max(op->gpu_stop, e->ch_stop);
      atomic_max(op->observed, e->ch_seen);
    }
  }
  release_slot(e);
  if (op != nullptr) unref_op(op);
  return kNcclSuccess;
}

ncclResult_t record_state(void* handle, ncclProfilerEventState_t state, ncclProfilerEventStateArgs_v5_t* args) {
  Event* e = as_event(handle);
  if (e == nullptr || e->type != EventType::Channel || state != kNcclProfilerKernelChStop || args == nullptr)
    return kNcclSuccess;
  e->ch_stop = args->kernelCh.pTimer;
  e->ch_seen = now_ns();
  return kNcclSuccess;
}

ncclResult_t init_common(void** context, int* mask, const char* comm_name, std::uint64_t comm_id, int nnodes,
                         int nranks, int rank) {
  if (context != nullptr) *context = nullptr;
  if (mask != nullptr) *mask = 0;
  if (context == nullptr || mask == nullptr || !bind_collector()) return kNcclSuccess;  // not recording
  auto* ctx = new (std::nothrow) Context{comm_id, rank};
  if (ctx == nullptr) return kNcclSuccess;
  *context = ctx;
  *mask = static_cast<int>(kNcclProfileColl | kNcclProfileP2p | kNcclProfileKernelCh);
  if (g_status_written.exchange(1) == 0) {
    tt::collector::GpuStatusRecord s{};
    s.ts_ns = now_ns();
    s.component = tt::collector::GpuComponent::NcclProfiler;
    s.status = tt::collector::GpuStatus::Active;
    s.device_count = -1;
    s.message = intern("NCCL profiler plugin active (collectives, p2p, GPU channel times)");
    emit(RecordType::GpuStatus, s);
  }
  NcclCommRecord c{};
  c.comm_id = comm_id;
  c.rank = rank;
  c.nranks = nranks;
  c.nnodes = nnodes;
  c.name = intern(comm_name);
  emit(RecordType::NcclComm, c);
  return kNcclSuccess;
}

ncclResult_t finalize(void* context) {
  delete static_cast<Context*>(context);
  if (const std::uint64_t n = g_dropped.exchange(0); n > 0) {
    tt::collector::DroppedRecord d{};
    d.count = n;
    d.reason = intern("nccl profiler: event pool full (operations not recorded)");
    emit(RecordType::Dropped, d);
  }
  return kNcclSuccess;
}

ncclResult_t init_v5(void** context, std::uint64_t comm_id, int* mask, const char* comm_name, int nnodes,
                     int nranks, int rank, ncclDebugLogger_t) {
  return init_common(context, mask, comm_name, comm_id, nnodes, nranks, rank);
}
ncclResult_t init_v4(void** context, int* mask, const char* comm_name, std::uint64_t comm_hash, int nnodes,
                     int nranks, int rank, ncclDebugLogger_t) {
  return init_common(context, mask, comm_name, comm_hash, nnodes, nranks, rank);
}
ncclResult_t start_v5(void* c, void** h, ncclProfilerEventDescr_v5_t* d) { return start_event(c, h, d); }
ncclResult_t start_v4(void* c, void** h, ncclProfilerEventDescr_v4_t* d) { return start_event(c, h, d); }

}  // namespace

TT_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {"tracetune", init_v5, start_v5, stop_event, record_state, finalize};
TT_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {"tracetune", init_v4, start_v4, stop_event, record_state, finalize};
