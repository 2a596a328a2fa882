// Drives an NCCL profiler plugin the way NCCL 2.28's core does (src/misc/profiler.cc): init
// per communicator, then per operation startEvent(Coll|P2p) on the user thread, stopEvent at
// enqueue, and later, from the proxy thread, one KernelCh event per channel whose parent is
// the operation's handle: startEvent(KernelCh, pTimer start), recordEventState(KernelChStop,
// pTimer stop), stopEvent. Shared by the unit test and the integration driver program.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "../../plugins/nccl-profiler/nccl_profiler_abi.h"

namespace tt::testing {

struct SimChannel {
  std::uint8_t id;
  std::uint64_t gpu_start, gpu_stop;  // GPU globaltimer ns
};

// One collective with its channels; returns the handle NCCL got (nullptr: not recorded).
inline void* sim_collective(const ncclProfiler_v5_t* p, void* ctx, int rank, const char* func, std::uint64_t seq,
                            std::size_t count, const char* dtype, const char* algo, const char* proto, int root,
                            const std::vector<SimChannel>& channels, bool proxy_thread = true) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = kNcclProfileColl;
  d.rank = rank;
  d.coll.seqNumber = seq;
  d.coll.func = func;
  d.coll.count = count;
  d.coll.root = root;
  d.coll.datatype = dtype;
  d.coll.nChannels = static_cast<std::uint8_t>(channels.size());
  d.coll.nWarps = 16;
  d.coll.algo = algo;
  d.coll.proto = proto;
  void* h = nullptr;
  p->startEvent(ctx, &h, &d);
  p->stopEvent(h);  // enqueued
  auto run_channels = [&] {
    for (const auto& c : channels) {
      ncclProfilerEventDescr_v5_t k{};
      k.type = kNcclProfileKernelCh;
      k.parentObj = h;
      k.rank = rank;
      k.kernelCh.channelId = c.id;
      k.kernelCh.pTimer = c.gpu_start;
      void* kh = nullptr;
      p->startEvent(ctx, &kh, &k);
      ncclProfilerEventStateArgs_v5_t a{};
      a.kernelCh.pTimer = c.gpu_stop;
      if (kh != nullptr) {
        p->recordEventState(kh, kNcclProfilerKernelChStop, &a);
        p->stopEvent(kh);
      }
    }
  };
  if (proxy_thread)
    std::thread(run_channels).join();
  else
    run_channels();
  return h;
}

inline void* sim_p2p(const ncclProfiler_v5_t* p, void* ctx, int rank, const char* func, std::size_t count,
                     const char* dtype, int peer, const std::vector<SimChannel>& channels) {
  ncclProfilerEventDescr_v5_t d{};
  d.type = kNcclProfileP2p;
  d.rank = rank;
  d.p2p.func = func;
  d.p2p.count = count;
  d.p2p.datatype = dtype;
  d.p2p.peer = peer;
  d.p2p.nChannels = static_cast<std::uint8_t>(channels.size());
  void* h = nullptr;
  p->startEvent(ctx, &h, &d);
  p->stopEvent(h);
  std::thread([&] {
    for (const auto& c : channels) {
      ncclProfilerEventDescr_v5_t k{};
      k.type = kNcclProfileKernelCh;
      k.parentObj = h;
      k.kernelCh.channelId = c.id;
      k.kernelCh.pTimer = c.gpu_start;
      void* kh = nullptr;
      p->startEvent(ctx, &kh, &k);
      ncclProfilerEventStateArgs_v5_t a{};
      a.kernelCh.pTimer = c.gpu_stop;
      if (kh != nullptr) {
        p->recordEventState(kh, kNcclProfilerKernelChStop, &a);
        p->stopEvent(kh);
      }
    }
  }).join();
  return h;
}

}  // namespace tt::testing
