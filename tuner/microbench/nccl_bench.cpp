// `tracetune bench nccl`: all-reduce / all-gather / reduce-scatter over all local GPUs in one
// process, per NCCL algorithm x protocol, timed with CUDA events, in nccl-tests' terms. NCCL
// and the CUDA runtime are loaded with dlopen. Our declarations (nccl.h, NCCL 2.28):
// ncclResult_t int (ncclSuccess 0), ncclComm_t an opaque pointer, ncclFloat32 7, ncclSum 0.
// NCCL reads NCCL_ALGO and NCCL_PROTO (ncclGetEnv, i.e. getenv) while it initialises a
// communicator, so each combination sets them and then creates fresh communicators with
// ncclCommInitAll; the previous values are put back at the end.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "cuda_dl.h"
#include "tracetune/tuner/gpu_bench.h"

namespace tt::tuner {
namespace {

constexpr int kNcclFloat32 = 7, kNcclSum = 0;

struct Nccl {
  detail::DlLib lib{"libnccl.so.2", "libnccl.so"};
  int (*GetVersion)(int*) = nullptr;
  int (*CommInitAll)(void**, int, const int*) = nullptr;
  int (*CommDestroy)(void*) = nullptr;
  const char* (*GetErrorString)(int) = nullptr;
  int (*GroupStart)() = nullptr;
  int (*GroupEnd)() = nullptr;
  int (*AllReduce)(const void*, void*, std::size_t, int, int, void*, void*) = nullptr;
  int (*AllGather)(const void*, void*, std::size_t, int, void*, void*) = nullptr;
  int (*ReduceScatter)(const void*, void*, std::size_t, int, int, void*, void*) = nullptr;
  std::string error;
  Nccl() {
    lib.sym(GetVersion, "ncclGetVersion");
    lib.sym(CommInitAll, "ncclCommInitAll");
    lib.sym(CommDestroy, "ncclCommDestroy");
    lib.sym(GetErrorString, "ncclGetErrorString");
    lib.sym(GroupStart, "ncclGroupStart");
    lib.sym(GroupEnd, "ncclGroupEnd");
    lib.sym(AllReduce, "ncclAllReduce");
    lib.sym(AllGather, "ncclAllGather");
    lib.sym(ReduceScatter, "ncclReduceScatter");
    error = lib.problem("NCCL (libnccl.so.2)");
  }
  std::string why(int rc) const {
    return GetErrorString != nullptr ? std::string(GetErrorString(rc)) : fmt::format("NCCL error {}", rc);
  }
};

// Sets an environment variable for a while and puts the old value back.
class EnvOverride {
 public:
  explicit EnvOverride(const char* name) : name_(name) {
    if (const char* v = std::getenv(name)) old_ = v;
  }
  ~EnvOverride() {
    if (old_) ::setenv(name_, old_->c_str(), 1);
    else ::unsetenv(name_);
  }
  void set(const std::string& v) { ::setenv(name_, v.c_str(), 1); }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One rank's (GPU's) buffers, stream and timing events.
struct Rank {
  void *send = nullptr, *recv = nullptr, *stream = nullptr, *ev0 = nullptr, *ev1 = nullptr;
};

// The bench's state over a sweep: the libraries, the ranks, and the first CUDA failure (which
// ends the bench; an NCCL refusal only skips a combination).
struct NcclBench {
  detail::CudaRuntime& rt;
  Nccl& nccl;
  const NcclBenchOptions& opt;
  int n = 0;
  std::vector<Rank> ranks;
  std::vector<void*> comms;
  std::string failure;

  bool cuda(int rc, const char* what) {
    if (rc != 0 && failure.empty()) failure = fmt::format("{}: {}", what, rt.why(rc));
    return failure.empty();
  }

  void allocate(std::uint64_t max_bytes) {
    ranks.assign(static_cast<std::size_t>(n), {});
    comms.assign(static_cast<std::size_t>(n), nullptr);
    for (int i = 0; i < n && failure.empty(); ++i) {
      Rank& r = ranks[static_cast<std::size_t>(i)];
      cuda(rt.SetDevice(i), "cudaSetDevice") && cuda(rt.Malloc(&r.send, max_bytes), "cudaMalloc") &&
          cuda(rt.Malloc(&r.recv, max_bytes), "cudaMalloc") && cuda(rt.Memset(r.send, 0, max_bytes), "cudaMemset") &&
          cuda(rt.StreamCreateWithFlags(&r.stream, 1), "cudaStreamCreateWithFlags") &&
          cuda(rt.EventCreate(&r.ev0), "cudaEventCreate") && cuda(rt.EventCreate(&r.ev1), "cudaEventCreate");
    }
  }

  void release() {
    for (int i = 0; i < n; ++i) {
      const Rank& r = ranks[static_cast<std::size_t>(i)];
      rt.SetDevice(i);
      for (void* p : {r.send, r.recv})
        if (p != nullptr) rt.Free(p);
      for (void* e : {r.ev0, r.ev1})
        if (e != nullptr) rt.EventDestroy(e);
      if (r.stream != nullptr) rt.StreamDestroy(r.stream);
    }
  }

  void destroy_comms() {
    for (auto& comm : comms)
      if (comm != nullptr) {
        nccl.CommDestroy(comm);
        comm = nullptr;
      }
  }

  // One operation on every rank, as one group (one thread drives all GPUs).
  int op(const std::string& coll, std::size_t count) {
    if (int rc = nccl.GroupStart(); rc != 0) return rc;
    int first = 0;
    for (int i = 0; i < n; ++i) {
      const Rank& r = ranks[static_cast<std::size_t>(i)];
      void* comm = comms[static_cast<std::size_t>(i)];
      int rc = 0;
      if (coll == "allreduce") rc = nccl.AllReduce(r.send, r.recv, count, kNcclFloat32, kNcclSum, comm, r.stream);
      else if (coll == "allgather") rc = nccl.AllGather(r.send, r.recv, count, kNcclFloat32, comm, r.stream);
      else rc = nccl.ReduceScatter(r.send, r.recv, count, kNcclFloat32, kNcclSum, comm, r.stream);
      if (rc != 0 && first == 0) first = rc;
    }
    const int end = nccl.GroupEnd();
    return first != 0 ? first : end;
  }

  void sync_all() {
    for (int i = 0; i < n; ++i) {
      cuda(rt.SetDevice(i), "cudaSetDevice");
      cuda(rt.StreamSynchronize(ranks[static_cast<std::size_t>(i)].stream), "cudaStreamSynchronize");
    }
  }

  // Records each rank's `ev0` (start) or `ev1` (end) event on its stream.
  void record_events(bool end) {
    for (int i = 0; i < n; ++i) {
      const Rank& r = ranks[static_cast<std::size_t>(i)];
      cuda(rt.SetDevice(i), "cudaSetDevice");
      cuda(rt.EventRecord(end ? r.ev1 : r.ev0, r.stream), "cudaEventRecord");
    }
  }

  // The operation's time: the slowest rank's, over the timed iterations (ms).
  double slowest_rank_ms() {
    double worst_ms = 0;
    for (int i = 0; i < n && failure.empty(); ++i) {
      const Rank& r = ranks[static_cast<std::size_t>(i)];
      float ms = 0;
      cuda(rt.SetDevice(i), "cudaSetDevice") && cuda(rt.EventSynchronize(r.ev1), "cudaEventSynchronize") &&
          cuda(rt.EventElapsedTime(&ms, r.ev0, r.ev1), "cudaEventElapsedTime");
      worst_ms = std::max(worst_ms, static_cast<double>(ms));
    }
    return worst_ms;
  }

  // One collective at every size on the communicators of (algo, proto). False when NCCL
  // refused it (recorded in the sweep's skipped list) or CUDA failed.
  bool measure(const std::string& coll, const std::string& algo, const std::string& proto, NcclSweep& sweep) {
    for (std::uint64_t size : opt.sizes) {
      if (!failure.empty()) return false;
      const NcclCounts c = nccl_counts(coll, size, n);
      if (c.count == 0) continue;  // smaller than one float per rank
      int rc = 0;
      for (int w = 0; w < opt.warmup && rc == 0; ++w) rc = op(coll, c.count);
      if (rc == 0) sync_all();
      if (rc == 0) record_events(false);
      for (int it = 0; it < opt.iters && rc == 0; ++it) rc = op(coll, c.count);
      if (rc == 0) record_events(true);
      if (rc != 0) {  // NCCL refused this combination for this collective (e.g. no such algorithm here)
        sweep.skipped.push_back({coll, algo, proto, c.bytes, nccl.why(rc)});
        sync_all();
        return false;
      }
      const double worst_ms = slowest_rank_ms();
      if (failure.empty() && worst_ms > 0)
        sweep.points.push_back({coll, lower(algo), lower(proto), c.bytes, n, worst_ms * 1e3 / opt.iters});
    }
    return true;
  }

  // Every algorithm x protocol: fresh communicators with NCCL_ALGO / NCCL_PROTO set, each
  // collective measured, the communicators destroyed.
  void sweep_all(NcclSweep& sweep) {
    EnvOverride env_algo("NCCL_ALGO"), env_proto("NCCL_PROTO");
    for (const auto& algo : opt.algos)
      for (const auto& proto : opt.protos) {
        if (!failure.empty()) return;
        env_algo.set(algo);
        env_proto.set(proto);
        if (int rc = nccl.CommInitAll(comms.data(), n, nullptr); rc != 0) {
          sweep.skipped.push_back({"", algo, proto, 0, fmt::format("ncclCommInitAll: {}", nccl.why(rc))});
          continue;
        }
        for (const auto& coll : opt.collectives) measure(coll, algo, proto, sweep);
        destroy_comms();
      }
  }
};

}  // namespace

Result<NcclSweep> run_nccl_bench(const NcclBenchOptions& opt) {
  if (opt.sizes.empty() || opt.algos.empty() || opt.protos.empty() || opt.collectives.empty())
    return make_error("nothing to measure (empty sizes, algorithms, protocols or collectives)");
  if (opt.iters < 1 || opt.warmup < 0) return make_error("iters must be at least 1");
  detail::CudaRuntime rt;
  if (!rt.error.empty()) return make_error(rt.error);
  Nccl nccl;
  if (!nccl.error.empty()) return make_error(nccl.error);
  int visible = 0;
  if (int rc = rt.GetDeviceCount(&visible); rc != 0) return make_error(fmt::format("cudaGetDeviceCount: {}", rt.why(rc)));
  const int n = opt.gpus > 0 ? opt.gpus : visible;
  if (n < 1 || n > visible) return make_error(fmt::format("{} GPUs asked for, {} visible", n, visible));

  NcclSweep sweep;
  sweep.ranks = n;
  nccl.GetVersion(&sweep.nccl_version);
  std::uint64_t max_bytes = 0;
  for (auto b : opt.sizes) max_bytes = std::max(max_bytes, b);
  NcclBench bench{rt, nccl, opt, n, {}, {}, {}};
  bench.allocate(max_bytes);
  bench.sweep_all(sweep);
  bench.release();
  if (!bench.failure.empty()) return make_error(bench.failure);
  return sweep;
}

}  // namespace tt::tuner
