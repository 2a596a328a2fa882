// Sharded analysis (shard.h, docs/scale.md).
//
// A shard loads one input file at a time, analyses its ranks on their own (analyze_ranks()),
// and writes to its part file each rank's metrics, its collective arrivals and the parts of
// its critical-path graph (graph_parts()); then the file is dropped. Combining reads every
// part's ranks without their steps (small), matches collectives across all of them
// (cross_rank()), then takes each rank whole (its steps read back from its part) for a moment:
// its critical paths over its graph, its findings, its summaries for the job, then into a spill
// file that the report reads back one rank at a time. The job path follows collectives from
// rank to rank over graphs read on demand (a bounded cache). Everything the report holds is
// computed by the same functions as in one process, so the reports are equal.
#include "tracetune/analyzer/shard.h"

#include <fcntl.h>
#include <libdeflate.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "archive.h"
#include "critical_path.h"
#include "stage.h"
#include "parallel.h"
#include "tracetune/analyzer/attribution.h"
#include "tracetune/analyzer/rules.h"
#include "tracetune/analyzer/step_ranges.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/units.h"

namespace tt::analyzer {

namespace fs = std::filesystem;
using archive::ByteReader;
using archive::ByteWriter;

// ---- field lists (archive.h): every member, in declaration order ----

template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, ProcessIo> {
  a(o.process, o.pid, o.name, o.calls, o.bytes_read, o.bytes_written, o.time);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, FileIo> {
  a(o.path, o.calls, o.bytes_read, o.bytes_written, o.time);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, IoStats> {
  a(o.calls, o.read_calls, o.write_calls, o.errors, o.bytes_read, o.bytes_written, o.time, o.main_thread, o.per_process,
    o.per_file);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, GemmStats> {
  a(o.fp32_simt, o.tensor_core, o.fp64, o.unknown, o.by_format, o.fp32_simt_kernels, o.top_fp32_kernel);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, KernelTotal> {
  a(o.name, o.count, o.total, o.kernel_class);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, MemoryDevice> {
  a(o.device, o.capacity, o.step_peak, o.step_reserved, o.peak, o.reserved_peak, o.growth_per_step, o.growth_fit,
    o.late_growth_per_step, o.alloc_retries, o.ooms);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, OpRoofline> {
  a(o.op, o.dtype, o.calls, o.flops, o.bytes, o.gpu_time, o.achieved_tflops, o.bound_tflops);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, Efficiency> {
  a(o.flops_per_step, o.achieved_tflops, o.mfu, o.peak, o.flops_by_dtype, o.flops_by_kind, o.ops, o.bandwidth_tbs,
    o.roofline);
}
// paths are left out: the combine step computes them
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, RankMetrics> {
  a(o.rank, o.rank_from_trace, o.process, o.pid, o.label, o.has_gpu, o.device, o.compute_major, o.compute_minor,
    o.has_steps, o.hta_filtered, o.window_start, o.window_end, o.gpu, o.streams, o.launch, o.transfers, o.io, o.gemm,
    o.memory_bound_kernels, o.data_wait, o.sync_wait, o.sync_calls, o.top_sync_call, o.collectives, o.top_kernels,
    o.kernels, o.steps, o.step_median, o.step_p90, o.step_min, o.step_max, o.main_track, o.memory, o.efficiency, o.notes);
}
// The combine's spill file (SpillFile below) holds each rank's paths too.
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, HotFunction> {
  a(o.function, o.file, o.line, o.samples, o.share);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, HotSpots> {
  a(o.scope, o.samples, o.top);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, PathSegment> {
  a(o.start, o.end, o.kind, o.rank, o.what, o.hot);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, StepPath> {
  a(o.step, o.rank, o.start, o.end, o.length, o.complete, o.by_kind, o.by_rank, o.top, o.pieces);
}
static_assert(sizeof(StepPath) == 192 && sizeof(PathSegment) == 120 && sizeof(HotSpots) == 64,
              "StepPath changed: update shard.cpp's field lists of the spill file");

template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, RankArrival> {
  a(o.by_kernel, o.communicator, o.op, o.ordinal, o.start, o.end, o.track, o.host);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, RankGraph> {
  a(o.rank, o.main_track, o.ops, o.by_end, o.by_start, o.launches, o.names, o.track_labels);  // threads: made by finish_graph
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, GraphParts> {
  a(o.graph, o.marks, o.busy_ranges, o.busy_calls);
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, Options> {
  bool has_steps = o.steps.has_value();
  std::pair<std::int64_t, std::int64_t> steps = o.steps.value_or(std::pair<std::int64_t, std::int64_t>{});
  a(o.hta_compat, o.rank, has_steps, steps, o.kernel_wait_threshold, o.threads, o.path_pieces);
  if constexpr (!std::is_const_v<T>) o.steps = has_steps ? std::optional(steps) : std::nullopt;
}
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, StepRangeResult> {
  a(o.pattern, o.steps, o.processes, o.chosen, o.note);
}
static_assert(sizeof(StepMetrics) == 240, "StepMetrics changed: check repair(StepMetrics&)'s list of durations");
// Times within 2^62 ns of the clock's zero, lengths and durations within 2^53 ns (104 days):
// what a writer produces, and small enough that the sums and differences the analysis takes of
// them cannot overflow (a part is believed only after its checksum, but a forged one has a
// valid checksum too).
constexpr Ns kPlausibleTime = Ns{1} << 62, kPlausibleSpan = Ns{1} << 53;
bool plausible_span(Ns start, Ns end) {
  return start >= -kPlausibleTime && end <= kPlausibleTime && start <= end && end - start <= kPlausibleSpan;
}
bool repair(Interval& i) { return plausible_span(i.start, i.end); }
bool repair(PathOp& o) { return plausible_span(o.s, o.e); }
bool repair(HostMark& m) { return plausible_span(m.s, m.e); }
bool repair(LaunchRef& l) { return plausible_span(l.start, l.end); }

bool repair(StepMetrics& s) {
  archive::repair_bool(s.replayed);
  const auto span = [](Ns v) { return v >= 0 && v <= kPlausibleSpan; };
  if (!plausible_span(s.start, s.end)) return false;
  for (const Ns StepMetrics::*d :
       {&StepMetrics::gpu_busy, &StepMetrics::gpu_idle, &StepMetrics::compute, &StepMetrics::communication,
        &StepMetrics::memory, &StepMetrics::comm_compute_overlap, &StepMetrics::exposed_communication,
        &StepMetrics::data_wait, &StepMetrics::sync_wait, &StepMetrics::io_main, &StepMetrics::collective_host,
        &StepMetrics::h2d, &StepMetrics::h2d_exposed, &StepMetrics::h2d_pageable, &StepMetrics::idle_data,
        &StepMetrics::idle_sync, &StepMetrics::idle_launch, &StepMetrics::idle_other,
        &StepMetrics::memory_bound_kernels, &StepMetrics::fp32_gemm})
    if (!span(s.*d)) return false;
  return std::all_of(std::begin(s.what_if), std::end(s.what_if), span);
}
bool repair(CollectiveStats& c) {
  archive::repair_bool(c.device_side);
  return true;
}
// A new member in these needs its field list above (and kPartVersion raised).
static_assert(sizeof(RankMetrics) == 1192 && sizeof(Efficiency) == 144 && sizeof(MemoryDevice) == 144,
              "RankMetrics changed: update shard.cpp's field lists");
static_assert(archive::Bytes<StepMetrics> && archive::Bytes<GpuBreakdown> && archive::Bytes<PathOp> &&
              archive::Bytes<HostMark> && archive::Bytes<LaunchRef> && archive::Bytes<CollectiveStats>);

namespace {

// Version 2 added the header's lengths and checksum and the job's identity, version 3 the ops'
// cross-stream waits (PathOp::wait), version 4 moved each rank's metrics and arrivals out of
// the index into a record beside its graph and added the rank's Python stack samples
// (RankSamples) to it; the last byte of the magic is the version (version 1 had 1 there).
constexpr std::uint8_t kPartVersion = 4;
constexpr char kMagic[8] = {'T', 'T', 'P', 'A', 'R', 'T', '\0', static_cast<char>(kPartVersion)};
constexpr std::int32_t kMaxRank = 1 << 24;  // far above any job's rank count; refuses forged ranks

// The first bytes of a part file. `checksum` is a CRC-32 (gzip's) over the body (every byte
// after the header), then over this header with `checksum` read as 0: any single-bit flip
// anywhere in the file is caught before a byte of it is believed.
struct PartHeader {
  char magic[8];
  std::uint64_t index_at = 0;    // where the index starts; 0 while the shard runs
  std::uint64_t index_size = 0;  // the index runs to the end of the file
  std::uint32_t checksum = 0;
  std::uint32_t zero = 0;
};
static_assert(sizeof(PartHeader) == 32 && std::is_trivially_copyable_v<PartHeader>);

std::uint32_t crc32(std::uint32_t crc, const void* p, std::size_t n) { return libdeflate_crc32(crc, p, n); }

// The checksum's last step: the header with its checksum field as 0.
std::uint32_t seal(std::uint32_t body_crc, PartHeader h) {
  h.checksum = 0;
  return crc32(body_crc, &h, sizeof h);
}

// A rank's Python stack samples and what attributing them reads (attribution.h), so that the
// combine gives the hot_functions one process gives: the samples taken on the rank's threads
// (its process tree's and its graph's host threads), the frames and stack nodes they use
// (renumbered, with their strings), and RankThreads. Track ids are the shard's trace's, as in
// the rank's graph and so in its path pieces. Empty for a trace without samples.
struct RankSamples {
  std::vector<std::string> strings;        // PyFrame::function and ::file index these
  std::vector<trace::PyFrame> frames;
  std::vector<trace::PyStackNode> stacks;  // a node's parent comes before it
  std::vector<Ns> ts;                      // the samples, in (track, ts) order
  std::vector<std::uint32_t> track, stack;
  std::vector<std::uint32_t> threads;      // the thread tracks sampled here, sorted
  std::vector<std::uint32_t> rank_tracks;  // RankThreads::tracks
  std::vector<std::pair<Ns, Ns>> data_waits;
};
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, RankSamples> {
  a(o.strings, o.frames, o.stacks, o.ts, o.track, o.stack, o.threads, o.rank_tracks, o.data_waits);
}

// One rank's results, written to the part's body as soon as the rank is analysed (a shard
// holds one file's ranks at a time) and read back one at a time by the combine.
struct RankRecord {
  RankMetrics metrics;
  std::vector<RankArrival> arrivals;
  RankSamples samples;
};
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, RankRecord> {
  a(o.metrics, o.arrivals, o.samples);
}

// The index's entry for one rank: where its record and its graph are (40 bytes).
struct PartRank {
  std::uint64_t unit = 0;          // the input file's index among all of the input's files
  std::uint64_t record_offset = 0, record_size = 0;
  std::uint64_t graph_offset = 0, graph_size = 0;  // graph_size 0: none (no host thread)
};
static_assert(archive::Bytes<PartRank> && sizeof(PartRank) == 40);

struct PartIndex {
  std::string job;  // the input's identity (job_identity()): parts of other inputs are refused
  std::string source, clock_domain;
  Shard shard;
  Options options;
  std::string step_range;
  bool split_ranks = false;                // one input file whose ranks the shards split
  std::uint64_t files = 0;                 // the input's files, all shards
  std::vector<std::pair<std::uint64_t, std::uint64_t>> unit_processes;  // (unit, its process count)
  std::uint64_t events = 0;
  std::vector<StepRangeResult> step_notes;  // per file that took steps from ranges
  std::vector<PartRank> ranks;
};
template <class A, class T> void fields(A& a, T& o) requires std::is_same_v<std::remove_const_t<T>, PartIndex> {
  a(o.job, o.source, o.clock_domain, o.shard, o.options, o.step_range, o.split_ranks, o.files, o.unit_processes,
    o.events, o.step_notes, o.ranks);
}

}  // namespace

Result<Shard> parse_shard(std::string_view spec, std::string_view what) {
  constexpr std::uint64_t kMaxShards = 1'000'000;
  const auto slash = spec.find('/');
  auto k = trace::parse_unsigned(spec.substr(0, slash), what, kMaxShards);
  auto n = trace::parse_unsigned(slash == std::string_view::npos ? std::string_view() : spec.substr(slash + 1), what, kMaxShards);
  if (!k || !n || n.value() == 0 || k.value() >= n.value())
    return make_error(fmt::format("{}: '{}' is not K/N with 0 <= K < N <= {}", what, spec, kMaxShards));
  return Shard{static_cast<unsigned>(k.value()), static_cast<unsigned>(n.value())};
}

Result<std::optional<LauncherShard>> shard_from_environment() {
  static constexpr std::pair<const char*, const char*> kVars[] = {
      {"SLURM_PROCID", "SLURM_NTASKS"}, {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
      {"PMI_RANK", "PMI_SIZE"}, {"RANK", "WORLD_SIZE"}};
  for (const auto& [rank, size] : kVars) {
    const char* k = std::getenv(rank);
    const char* n = std::getenv(size);
    if (!k || !n) continue;
    const std::string variables = fmt::format("{}/{}", rank, size);
    auto s = parse_shard(fmt::format("{}/{}", k, n), variables);
    if (!s) return make_error(s.error());
    return std::optional<LauncherShard>(LauncherShard{s.value(), variables});
  }
  return std::optional<LauncherShard>();
}


namespace {

// The part file: the header (PartHeader), each rank's graph parts, then the index. The header
// is written last, once the lengths and the checksum are known: until then the file reads as
// unfinished (index_at 0), and it is renamed into place only after that.
class PartWriter {
 public:
  static Result<PartWriter> open(const fs::path& path) {
    auto out = trace::AtomicOutput::create(path);
    if (!out) return make_error(out.error());
    // a stream over our own descriptor of the temporary: never reopened by name
    const int fd = ::fcntl(out->fd(), F_DUPFD_CLOEXEC, 0);
    std::FILE* f = fd >= 0 ? ::fdopen(fd, "r+b") : nullptr;
    if (!f) {
      if (fd >= 0) ::close(fd);
      return make_error(fmt::format("{}: cannot write", path.string()));
    }
    PartWriter w(path, std::move(out.value()), f);
    PartHeader unfinished;
    std::memcpy(unfinished.magic, kMagic, sizeof kMagic);
    w.ok_ = std::fwrite(&unfinished, sizeof unfinished, 1, f) == 1;
    w.at_ = sizeof unfinished;
    return w;
  }
  PartWriter(PartWriter&& o) noexcept : path_(std::move(o.path_)), out_(std::move(o.out_)), f_(std::exchange(o.f_, nullptr)),
                                        at_(o.at_), crc_(o.crc_), ok_(o.ok_) {}
  ~PartWriter() { if (f_) std::fclose(f_); }

  // Appends one rank's graph or record; returns (offset, size).
  template <class T>
  std::pair<std::uint64_t, std::uint64_t> add(const T& v) {
    ByteWriter w;
    w(v);
    const std::uint64_t offset = at_;
    write(w.data().data(), w.data().size());
    return {offset, w.data().size()};
  }

  Status finish(const PartIndex& index) {
    ByteWriter w;
    w(index);
    PartHeader h;
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.index_at = at_;
    h.index_size = w.data().size();
    write(w.data().data(), w.data().size());
    h.checksum = seal(crc_, h);
    ok_ = ok_ && std::fseek(f_, 0, SEEK_SET) == 0 && std::fwrite(&h, sizeof h, 1, f_) == 1;
    ok_ = ok_ && std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
    ok_ = std::fclose(std::exchange(f_, nullptr)) == 0 && ok_;
    if (!ok_) return make_error(fmt::format("{}: cannot write (disk full?)", path_.string()));
    return out_.commit();
  }

 private:
  PartWriter(fs::path path, trace::AtomicOutput out, std::FILE* f) : path_(std::move(path)), out_(std::move(out)), f_(f) {}
  void write(const void* p, std::size_t n) {
    ok_ = ok_ && std::fwrite(p, 1, n, f_) == n;
    crc_ = crc32(crc_, p, n);
    at_ += n;
  }
  fs::path path_;
  trace::AtomicOutput out_;
  std::FILE* f_ = nullptr;
  std::uint64_t at_ = 0;
  std::uint32_t crc_ = 0;  // of the body written so far
  bool ok_ = true;
};

// The input's identity, from its contents rather than its path: two jobs traced to the same
// directory one after the other must not combine. Reading every byte of a job's traces in
// every shard would cost what sharding saves, so each file is sampled: its size and a CRC-32
// of its first and last 64 KiB, folded with FNV-1a into 64 bits. Files are taken in the
// order analyze lists them, so every shard computes the same value.
Result<std::string> job_identity(const std::vector<fs::path>& files) {
  constexpr std::size_t kSample = 64 << 10;
  std::uint64_t h = 14695981039346656037ull;
  const auto fold = [&h](std::uint64_t v) {
    for (int i = 0; i < 8; ++i, v >>= 8) h = (h ^ (v & 0xff)) * 1099511628211ull;
  };
  std::string buf(kSample, '\0');
  fold(files.size());
  for (const auto& file : files) {
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      if (fd >= 0) ::close(fd);
      return make_error(fmt::format("{}: cannot read", file.string()));
    }
    const auto size = static_cast<std::uint64_t>(st.st_size);
    std::uint32_t crc = 0;
    for (const std::uint64_t at : {std::uint64_t{0}, size > kSample ? size - kSample : 0}) {
      const ssize_t got = ::pread(fd, buf.data(), kSample, static_cast<off_t>(at));
      if (got > 0) crc = crc32(crc, buf.data(), static_cast<std::size_t>(got));
    }
    ::close(fd);
    fold(size);
    fold(crc);
  }
  return fmt::format("{:016x}", h);
}

// Steps from ranges, per file: as choose_step_source() does on a whole trace, except that a
// file where --step-range matches nothing gets no steps (the whole trace would have failed
// only if no file matched).
std::optional<StepRangeResult> step_source(trace::Trace& t, const std::string& step_range) {
  if (step_range.empty()) return detect_step_ranges(t);
  auto r = steps_from_ranges(t, step_range);
  if (r) return r.value();
  t.steps = trace::StepTable{};
  return std::nullopt;
}

// The trace's ranks (as analyze picks them, and --rank keeps them), and this shard's block of
// them when the shards split one trace's ranks (part = {K, N}; {0, 1}: all).
struct RankShare {
  std::vector<std::uint32_t> all, mine;
};
RankShare rank_share(const trace::Trace& t, std::vector<std::uint32_t> ranks, const Options& opt,
                     std::pair<std::size_t, std::size_t> part) {
  keep_rank(t, ranks, opt.rank);
  const std::size_t lo = ranks.size() * part.first / part.second, hi = ranks.size() * (part.first + 1) / part.second;
  RankShare share{ranks, {}};
  share.mine.assign(ranks.begin() + static_cast<std::ptrdiff_t>(lo), ranks.begin() + static_cast<std::ptrdiff_t>(hi));
  return share;
}

// The samples on `threads` (the rank's process tree's and graph's host threads) and on
// th.tracks, with the frames, stack nodes and strings they use.
RankSamples rank_samples(const trace::Trace& t, RankThreads th, std::vector<std::uint32_t> threads) {
  RankSamples out;
  threads.insert(threads.end(), th.tracks.begin(), th.tracks.end());
  std::erase_if(threads, [&](std::uint32_t k) { return k >= t.tracks.size() || t.tracks[k].type != trace::TrackType::Thread; });
  std::sort(threads.begin(), threads.end());
  threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
  std::unordered_map<trace::StringId, std::uint32_t> strings;
  std::unordered_map<std::uint32_t, std::uint32_t> frames, nodes;
  auto string = [&](trace::StringId id) {
    const auto [it, added] = strings.try_emplace(id, static_cast<std::uint32_t>(out.strings.size()));
    if (added) out.strings.emplace_back(t.strings.get(id));
    return it->second;
  };
  auto frame = [&](std::uint32_t f) {
    const auto [it, added] = frames.try_emplace(f, static_cast<std::uint32_t>(out.frames.size()));
    if (added) out.frames.push_back({string(t.py_frames[f].function), string(t.py_frames[f].file), t.py_frames[f].line});
    return it->second;
  };
  // a node after its parent: the chain up to the first node already kept, then down from it
  auto node = [&](std::uint32_t n) {
    std::vector<std::uint32_t> chain;
    for (std::uint32_t k = n; k < t.py_stacks.size() && !nodes.contains(k) && chain.size() <= t.py_stacks.size();
         k = t.py_stacks[k].parent)
      chain.push_back(k);
    for (auto k = chain.rbegin(); k != chain.rend(); ++k) {
      const std::uint32_t parent = t.py_stacks[*k].parent;
      const auto p = nodes.find(parent);
      out.stacks.push_back({p == nodes.end() ? trace::kNone : p->second, frame(t.py_stacks[*k].frame)});
      nodes.emplace(*k, static_cast<std::uint32_t>(out.stacks.size() - 1));
    }
    const auto it = nodes.find(n);
    return it == nodes.end() ? trace::kNone : it->second;
  };
  for (std::size_t i = 0; i < t.py_samples.size(); ++i)
    if (std::binary_search(threads.begin(), threads.end(), t.py_samples.track[i])) {
      out.ts.push_back(t.py_samples.ts[i]);
      out.track.push_back(t.py_samples.track[i]);
      out.stack.push_back(node(t.py_samples.stack[i]));
    }
  out.threads = std::move(threads);
  out.rank_tracks = std::move(th.tracks);
  out.data_waits = std::move(th.data_waits);
  return out;
}

// Analyses the ranks `share.mine` of a loaded file into the part file.
void analyze_unit(const trace::Trace& t, std::uint64_t unit, const Options& opt, const RankShare& share, PartWriter& w,
                  PartIndex& index) {
  LocalRanks local = analyze_ranks(t, opt, share.mine, share.all);
  for (std::size_t i = 0; i < local.ranks.size(); ++i) {
    PartRank r{.unit = unit};
    RankRecord record{std::move(local.ranks[i]), std::move(local.arrivals[i]), {}};
    if (record.metrics.main_track != trace::kNone) {
      std::vector<std::uint32_t> host_tracks{record.metrics.main_track};
      if (!opt.hta_compat) {
        const GraphParts g = graph_parts(t, record.metrics);
        std::tie(r.graph_offset, r.graph_size) = w.add(g);
        for (const auto* per_track : {&g.busy_ranges, &g.busy_calls})
          for (const auto& [track, _] : *per_track) host_tracks.push_back(track);
        for (const auto& [track, _] : g.marks) host_tracks.push_back(track);
      }
      if (t.py_samples.size() > 0)
        record.samples = rank_samples(t, rank_threads(t, share.all, record.metrics), std::move(host_tracks));
    }
    std::tie(r.record_offset, r.record_size) = w.add(record);
    index.ranks.push_back(r);
  }
  index.unit_processes.push_back({unit, t.processes.size()});
}

// This shard's share of a trace DB whose ranks the shards split, when it marks its steps: only
// its ranks' events are read (their process trees' tracks).
struct TraceShare {
  trace::Trace trace;
  RankShare ranks;
  std::uint64_t events = 0;  // the whole trace's
};
// Empty when the whole trace must be loaded (steps to be taken from ranges need every range).
Result<std::optional<TraceShare>> read_trace_share(const fs::path& file, const Options& opt, const std::string& step_range,
                                                   Shard s) {
  using MaybeShare = std::optional<TraceShare>;
  if (trace::detect_format(file) != trace::InputFormat::TracetuneDb || !step_range.empty()) return MaybeShare();
  auto outline = trace::read_trace_outline(file);
  if (!outline) return make_error(outline.error());
  const trace::Trace& o = outline->trace;
  if (o.steps.size() == 0) return MaybeShare();
  RankShare share = rank_share(o, pick_ranks(o, outline->per_track), opt, {s.index, s.count});
  const std::unordered_set<std::uint32_t> ranks(share.all.begin(), share.all.end());
  std::vector<char> mine(o.processes.size(), 0);
  const ChildrenByPid children = children_by_pid(o);
  for (std::uint32_t p : share.mine)
    for (std::uint32_t q : tree_of(o, children, p, ranks)) mine[q] = 1;
  trace::TrackFilter keep(o.tracks.size(), 0);
  for (std::uint32_t tr = 0; tr < o.tracks.size(); ++tr) {
    const auto p = o.process_of_track(tr);
    keep[tr] = p != trace::kNone && mine[p];
  }
  auto t = trace::read_trace(file, keep);
  if (!t) return make_error(t.error());
  return MaybeShare(TraceShare{std::move(t.value()), std::move(share), outline->events});
}

}  // namespace

Result<ShardRun> analyze_shard(const fs::path& input, Shard s, const Options& opt, const std::string& step_range,
                               const fs::path& output, const std::function<void(const std::string&)>& progress) {
  if (!step_range.empty())
    if (auto st = check_step_range(step_range); !st) return make_error(st.error());
  auto files = trace::kineto_files(input);
  if (!files) return make_error(files.error());
  auto job = job_identity(files.value());
  if (!job) return make_error(job.error());
  auto w = PartWriter::open(output);
  if (!w) return make_error(w.error());
  PartIndex index;
  index.job = std::move(job.value());
  index.source = input.string();
  index.shard = s;
  index.options = opt;
  index.step_range = step_range;
  index.files = files->size();
  index.split_ranks = files->size() == 1;
  // several files: this shard's contiguous block of them; one file: its block of the ranks
  const std::size_t first = index.split_ranks ? 0 : files->size() * s.index / s.count;
  const std::size_t last = index.split_ranks ? 1 : files->size() * (s.index + 1) / s.count;
  ShardRun run;
  for (std::size_t u = first; u < last; ++u) {
    const fs::path& file = (*files)[u];
    const std::size_t before = index.ranks.size();
    auto share = index.split_ranks ? read_trace_share(file, opt, step_range, s) : Result(std::optional<TraceShare>());
    if (!share) return make_error(share.error());
    if (share.value()) {
      const TraceShare& sh = *share.value();
      analyze_unit(sh.trace, u, opt, sh.ranks, w.value(), index);
      if (s.index == 0) index.events += sh.events;
      run.events += sh.trace.event_count();
      if (index.clock_domain.empty()) index.clock_domain = sh.trace.clock_domain;
    } else {
      auto t = trace::load_any(file);
      if (!t) return make_error(t.error());
      if (auto note = step_source(t.value(), step_range)) index.step_notes.push_back(std::move(*note));
      const auto part = index.split_ranks ? std::pair<std::size_t, std::size_t>{s.index, s.count} : std::pair<std::size_t, std::size_t>{0, 1};
      analyze_unit(t.value(), u, opt, rank_share(t.value(), pick_ranks(t.value()), opt, part), w.value(), index);
      if (!index.split_ranks || s.index == 0) index.events += t->event_count();
      run.events += t->event_count();
      if (index.clock_domain.empty()) index.clock_domain = t->clock_domain;
    }
    ++run.files;
    run.ranks += index.ranks.size() - before;
    if (progress) progress(fmt::format("{}: {} rank(s)", file.string(), index.ranks.size() - before));
  }
  if (auto st = w->finish(index); !st) return make_error(st.error());
  return run;
}


namespace {

// An open part file: its index, and its graphs read on demand.
struct Part {
  fs::path path;
  int fd = -1;
  PartIndex index;
  Part() = default;
  Part(Part&& o) noexcept : path(std::move(o.path)), fd(std::exchange(o.fd, -1)), index(std::move(o.index)) {}
  ~Part() { if (fd >= 0) ::close(fd); }
};

Status read_exact(int fd, void* out, std::uint64_t n, std::uint64_t at) {
  auto* p = static_cast<char*>(out);
  while (n) {
    const ssize_t got = ::pread(fd, p, n, static_cast<off_t>(at));
    if (got <= 0) return make_error("truncated");
    p += got, n -= static_cast<std::uint64_t>(got), at += static_cast<std::uint64_t>(got);
  }
  return {};
}

// Streams the whole file through the checksum: a part is believed only once every byte is
// known to be the shard's. A file with holes was not written by a shard (and would make us
// read gigabytes of zeros), so it is refused first, with one lseek.
Status check_checksum(int fd, std::uint64_t size, const PartHeader& h) {
  const off_t hole = ::lseek(fd, 0, SEEK_HOLE);
  if (hole >= 0 && static_cast<std::uint64_t>(hole) < size) return make_error("it has holes");
  std::string buf(std::min<std::uint64_t>(size, 1 << 20), '\0');
  std::uint32_t crc = 0;
  for (std::uint64_t at = sizeof h; at < size;) {
    const std::uint64_t n = std::min<std::uint64_t>(buf.size(), size - at);
    if (!read_exact(fd, buf.data(), n, at)) return make_error("truncated");
    crc = crc32(crc, buf.data(), n);
    at += n;
  }
  if (seal(crc, h) != h.checksum) return make_error("checksum mismatch: the file is damaged");
  return {};
}

// Track ids a part's samples may name: far above a real trace's track count, and the most the
// combine allocates a track table for (32 MiB).
constexpr std::uint32_t kMaxSampleTrack = 1u << 22;

// Every index a rank's samples hold points inside them, the samples are in (track, ts) order on
// the threads listed, and the times are ones a writer produces.
bool valid_samples(const RankSamples& s) {
  const auto index_ok = [](std::uint32_t i, std::size_t size) { return i == trace::kNone || i < size; };
  for (const trace::PyFrame& f : s.frames)
    if (f.function >= s.strings.size() || f.file >= s.strings.size()) return false;
  for (std::size_t i = 0; i < s.stacks.size(); ++i)
    if (!index_ok(s.stacks[i].parent, i) || s.stacks[i].frame >= s.frames.size()) return false;
  if (s.track.size() != s.ts.size() || s.stack.size() != s.ts.size()) return false;
  if (!std::is_sorted(s.threads.begin(), s.threads.end()) || (!s.threads.empty() && s.threads.back() >= kMaxSampleTrack))
    return false;
  for (std::size_t i = 0; i < s.ts.size(); ++i) {
    if (!std::binary_search(s.threads.begin(), s.threads.end(), s.track[i]) || !index_ok(s.stack[i], s.stacks.size()) ||
        !plausible_span(s.ts[i], s.ts[i]))
      return false;
    if (i > 0 && std::pair(s.track[i], s.ts[i]) < std::pair(s.track[i - 1], s.ts[i - 1])) return false;
  }
  return std::all_of(s.rank_tracks.begin(), s.rank_tracks.end(), [](std::uint32_t k) { return k < kMaxSampleTrack; }) &&
         std::all_of(s.data_waits.begin(), s.data_waits.end(), [](const auto& w) { return plausible_span(w.first, w.second); });
}

// [offset, offset + size) lies in the body, before the index; compared without sums that
// could wrap past 2^64.
bool in_body(std::uint64_t offset, std::uint64_t size, std::uint64_t index_at) {
  return size <= index_at && offset <= index_at - size && (!size || offset >= sizeof(PartHeader));
}

// Every rank entry of an index points inside the file and names an input file that exists.
Status check_entries(const PartIndex& x, std::uint64_t index_at) {
  for (const auto& rk : x.ranks) {
    if (!in_body(rk.graph_offset, rk.graph_size, index_at)) return make_error("corrupt graph offsets");
    if (!rk.record_size || !in_body(rk.record_offset, rk.record_size, index_at)) return make_error("corrupt rank record offsets");
    if (rk.unit >= x.files) return make_error("corrupt rank entry (file out of range)");
  }
  return {};
}

// A rank's record names a rank and a process that can exist (`processes`: unit -> its process
// count), plausible arrival times and Python samples whose every index holds (valid_samples).
Status check_record(const std::map<std::uint64_t, std::uint64_t>& processes, const PartRank& rk, const RankRecord& record) {
  const RankMetrics& m = record.metrics;
  const auto n = processes.find(rk.unit);
  if (n == processes.end() || m.process >= n->second) return make_error("corrupt rank entry (file or process out of range)");
  if (m.rank_from_trace ? m.rank < 0 || m.rank >= kMaxRank : m.rank != static_cast<std::int32_t>(m.process))
    return make_error(fmt::format("rank {} out of range", m.rank));
  for (const RankArrival& a : record.arrivals)
    if (!plausible_span(a.start, a.end)) return make_error("corrupt collective arrival times");
  if (!valid_samples(record.samples)) return make_error("corrupt Python stack samples");
  return {};
}

Error not_a_part(const fs::path& path, std::string_view why) {
  return make_error(fmt::format("{}: not a tracetune part file ({})", path.string(), why));
}

Result<Part> open_part(const fs::path& path) {
  if (auto st = trace::check_input_path(path); !st) return make_error(st.error());
  Part part;
  part.path = path;
  part.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (part.fd < 0) return make_error(fmt::format("{}: cannot open", path.string()));
  const auto bad = [&](std::string_view why) { return not_a_part(path, why); };
  struct stat st {};
  if (::fstat(part.fd, &st) != 0 || !S_ISREG(st.st_mode)) return bad("not a regular file");
  const auto size = static_cast<std::uint64_t>(st.st_size);
  PartHeader h;
  if (size < sizeof h || !read_exact(part.fd, &h, sizeof h, 0) || std::memcmp(h.magic, kMagic, 7) != 0) return bad("no header");
  if (static_cast<std::uint8_t>(h.magic[7]) != kPartVersion)
    return make_error(fmt::format("{}: part file version {}, this tracetune reads {}: run the shards and the combine with one version",
                                  path.string(), static_cast<unsigned>(static_cast<std::uint8_t>(h.magic[7])), kPartVersion));
  if (h.index_at == 0) return bad("incomplete: its shard did not finish");
  if (h.index_at < sizeof h || h.index_at > size || h.index_size != size - h.index_at) return bad("truncated or corrupt lengths");
  if (auto sum = check_checksum(part.fd, size, h); !sum) return bad(sum.error());
  std::string bytes(static_cast<std::size_t>(h.index_size), '\0');  // <= the bytes checked just now
  if (!read_exact(part.fd, bytes.data(), bytes.size(), h.index_at)) return bad("truncated");
  ByteReader r(bytes);
  r(part.index);
  if (!r.ok() || !r.at_end()) return bad("corrupt index");
  if (part.index.shard.count == 0 || part.index.shard.count > 1'000'000 || part.index.shard.index >= part.index.shard.count)
    return bad("corrupt shard number");
  if (auto ranks = check_entries(part.index, h.index_at); !ranks) return bad(ranks.error());
  return part;
}

// The parts of one run: all N shards, same input and options.
Status check_parts(const std::vector<Part>& parts) {
  const PartIndex& first = parts.front().index;
  std::vector<char> seen(first.shard.count, 0);
  for (const auto& p : parts) {
    const PartIndex& x = p.index;
    const auto& a = x.options;
    const auto& b = first.options;
    if (x.job != first.job)
      return make_error(fmt::format("{} and {} come from different jobs (their inputs' contents differ)",
                                    parts.front().path.string(), p.path.string()));
    if (x.source != first.source || x.shard.count != first.shard.count || x.files != first.files ||
        x.step_range != first.step_range || a.rank != b.rank || a.steps != b.steps || a.hta_compat != b.hta_compat ||
        a.kernel_wait_threshold != b.kernel_wait_threshold)
      return make_error(fmt::format("{} and {} come from different runs (input, shard count or options differ)",
                                    parts.front().path.string(), p.path.string()));
    if (seen[x.shard.index]++) return make_error(fmt::format("{}: shard {}/{} given twice", p.path.string(), x.shard.index, x.shard.count));
  }
  for (unsigned k = 0; k < first.shard.count; ++k)
    if (!seen[k])
      return make_error(fmt::format("shard {}/{} is missing: give every part of the run ({} of {} given)", k,
                                    first.shard.count, parts.size(), first.shard.count));
  return {};
}

// Graphs read back from the parts; finished with the matched collectives. A bounded cache
// serves the job path, which comes back to the ranks that arrive last.
class PartGraphs : public GraphSource {
 public:
  struct Where {
    const Part* part;
    std::uint64_t offset, size;
    bool has_gpu;
    std::int32_t rank;
  };
  PartGraphs(std::vector<Where> where, const CollectiveGroups& groups)
      : where_(std::move(where)), mine_(groups_by_rank(groups, where_.size())) {}

  std::shared_ptr<const RankGraph> graph(std::size_t r) override {
    {
      std::lock_guard lock(mu_);
      for (auto it = cache_.begin(); it != cache_.end(); ++it)
        if (it->first == r) {
          cache_.splice(cache_.begin(), cache_, it);
          return it->second;
        }
    }
    auto g = std::make_shared<const RankGraph>(load(r));
    std::lock_guard lock(mu_);
    cache_.emplace_front(r, g);
    if (cache_.size() > kCached) cache_.pop_back();
    return g;
  }
  void release(std::size_t r) override {
    std::lock_guard lock(mu_);
    cache_.remove_if([r](const auto& e) { return e.first == r; });
  }
  // "PART: rank N's graph is corrupt ..." for each graph that could not be read back
  const std::vector<std::string>& corrupt_notes() const { return corrupt_; }

 private:
  static constexpr std::size_t kCached = 64;
  std::vector<Where> where_;
  std::vector<RankGroups> mine_;
  std::mutex mu_;
  std::list<std::pair<std::size_t, std::shared_ptr<const RankGraph>>> cache_;
  std::vector<std::string> corrupt_;

  RankGraph load(std::size_t r) {
    const Where& w = where_[r];
    if (!w.size) return RankGraph{.rank = w.rank};
    std::string bytes(w.size, '\0');
    GraphParts parts;
    bool ok = static_cast<bool>(read_exact(w.part->fd, bytes.data(), w.size, w.offset));
    if (ok) {
      ByteReader rd(bytes);
      rd(parts);
      ok = rd.ok() && rd.at_end() && valid_graph(parts);
    }
    if (!ok) {
      std::lock_guard lock(mu_);
      corrupt_.push_back(fmt::format("{}: rank {}'s graph is corrupt: its critical paths are left out", w.part->path.string(), w.rank));
      return RankGraph{.rank = w.rank};
    }
    return finish_graph(std::move(parts), mine_[r], w.has_gpu);
  }

  // Every index a graph holds points inside it (a part file is input like any other); the
  // groups are the combine's to set.
  static bool valid_graph(GraphParts& p) {
    RankGraph& g = p.graph;
    const std::size_t n = g.ops.size(), names = g.names.size();
    const auto index_ok = [](std::uint32_t i, std::size_t size) { return i == trace::kNone || i < size; };
    const auto kind_ok = [](PathKind k) { return static_cast<std::size_t>(k) < kPathKinds; };
    for (auto& o : g.ops) {
      if (!index_ok(o.pred, n) || !index_ok(o.wait, n) || !index_ok(o.name, names) || !kind_ok(o.kind) || o.e < o.s) return false;
      o.group = kNoGroup;
    }
    for (const auto* order : {&g.by_end, &g.by_start}) {
      if (order->size() != n) return false;
      for (auto i : *order)
        if (i >= n) return false;
    }
    for (const auto& [corr, l] : g.launches)
      if (!index_ok(l.op, n)) return false;
    for (auto& [track, marks] : p.marks)
      for (auto& m : marks) {
        if (!index_ok(m.name, names) || !kind_ok(m.kind)) return false;
        m.group = kNoGroup;
      }
    return true;
  }
};

// A rank read back from its part: its entry and its metrics without their per-step data (its
// arrivals went to the matcher; its steps, memory per step and samples stay in the part).
struct LoadedRank {
  const Part* part;
  PartRank entry;
  RankMetrics metrics;
  bool has_samples = false;
};

// One rank's record, read back from its part and decoded.
Result<RankRecord> read_record(const Part& p, const PartRank& e) {
  std::string bytes(static_cast<std::size_t>(e.record_size), '\0');  // within the file, whose every byte was checked
  if (!read_exact(p.fd, bytes.data(), bytes.size(), e.record_offset)) return not_a_part(p.path, "truncated");
  RankRecord record;
  ByteReader r(bytes);
  r(record);
  if (!r.ok() || !r.at_end()) return not_a_part(p.path, "corrupt rank record");
  return record;
}

// What the combine keeps of a rank for all ranks at once: everything but what grows with its
// steps (the steps, the memory per step), which is read back from the part one rank at a time.
// (Assigning {} would keep a vector's capacity: each is swapped with an empty one.)
void drop_steps(RankMetrics& m) {
  std::vector<StepMetrics>().swap(m.steps);
  for (auto& d : m.memory) std::vector<std::int64_t>().swap(d.step_peak), std::vector<std::int64_t>().swap(d.step_reserved);
}

// Every rank's record, read from the parts one at a time: the metrics are kept without their
// steps, the arrivals go to `matcher` (as rank i, the i-th rank read) and are dropped.
Result<std::vector<LoadedRank>> load_ranks(const std::vector<Part>& parts, ArrivalMatcher& matcher) {
  std::vector<LoadedRank> out;
  for (const auto& p : parts) {
    const std::map<std::uint64_t, std::uint64_t> processes(p.index.unit_processes.begin(), p.index.unit_processes.end());
    for (const PartRank& e : p.index.ranks) {
      auto record = read_record(p, e);
      if (!record) return make_error(record.error());
      if (auto st = check_record(processes, e, record.value()); !st) return not_a_part(p.path, st.error());
      matcher.add(out.size(), record->arrivals);
      drop_steps(record->metrics);
      out.push_back({&p, e, std::move(record->metrics), !record->samples.ts.empty()});
    }
  }
  return out;
}

// A rank is analysed by one shard: the same process of the same file, or the same job rank,
// twice means a forged or mixed-up part.
Status check_unique_ranks(const std::vector<LoadedRank>& ranks) {
  std::set<std::pair<std::uint64_t, std::uint32_t>> processes;
  std::set<std::int32_t> numbers;
  for (const auto& r : ranks)
    if (!processes.insert({r.entry.unit, r.metrics.process}).second ||
        (r.metrics.rank_from_trace && !numbers.insert(r.metrics.rank).second))
      return make_error(fmt::format("{}: rank {} appears twice among the parts", r.part->path.string(), r.metrics.rank));
  return {};
}

// The ranks in one process's order (rank, then input file and process), as indices into
// `ranks`; ranks the trace did not number get the process index they would have had in one
// merged trace.
std::vector<std::size_t> rank_order(const std::vector<Part>& parts, std::vector<LoadedRank>& ranks) {
  std::map<std::uint64_t, std::uint64_t> processes_before;  // unit -> processes of the units before it
  for (const auto& p : parts)
    for (const auto& [unit, n] : p.index.unit_processes) processes_before[unit] = n;
  std::uint64_t sum = 0;
  for (auto& [unit, n] : processes_before) sum += std::exchange(n, sum);
  for (auto& r : ranks)
    if (!r.metrics.rank_from_trace && !r.part->index.split_ranks) {
      r.metrics.process += static_cast<std::uint32_t>(processes_before[r.entry.unit]);
      r.metrics.rank = static_cast<std::int32_t>(r.metrics.process);
    }
  std::vector<std::size_t> order(ranks.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const RankMetrics &x = ranks[a].metrics, &y = ranks[b].metrics;
    const std::int32_t rx = x.rank_from_trace ? x.rank : INT32_MAX, ry = y.rank_from_trace ? y.rank : INT32_MAX;
    return std::tie(rx, ranks[a].entry.unit, x.process) < std::tie(ry, ranks[b].entry.unit, y.process);
  });
  return order;
}

// What the attribution reads of a rank's trace, rebuilt from its part (valid_samples): the
// samples, their frames and stacks, and which tracks are threads (a path piece's track must be
// one to count).
trace::Trace sample_trace(const RankSamples& s) {
  trace::Trace t;
  std::vector<trace::StringId> ids;
  for (const std::string& str : s.strings) ids.push_back(t.strings.intern(str));
  for (const trace::PyFrame& f : s.frames) t.py_frames.push_back({ids[f.function], ids[f.file], f.line});
  t.py_stacks = s.stacks;
  t.py_samples.ts = s.ts;
  t.py_samples.track = s.track;
  t.py_samples.stack = s.stack;
  const std::uint32_t tracks = s.threads.empty() ? 0 : s.threads.back() + 1;
  t.tracks.assign(tracks, trace::Track{trace::TrackType::Stream, trace::kNone});
  for (std::uint32_t k : s.threads) t.tracks[k].type = trace::TrackType::Thread;
  return t;
}

// Each rank whole (its steps, critical paths and per-step memory), kept in an unlinked file
// in $TMPDIR (default /tmp) from its paths' walk to the report, which reads the ranks back one
// at a time (RankStore). put() may be called from several threads, for different ranks.
class SpillFile : public RankStore {
 public:
  static Result<std::shared_ptr<SpillFile>> create(std::size_t ranks) {
    const char* dir = std::getenv("TMPDIR");
    std::string name = fmt::format("{}/tracetune-combine-XXXXXX", dir && *dir ? dir : "/tmp");
    const int fd = ::mkostemp(name.data(), O_CLOEXEC);
    if (fd < 0) return make_error(fmt::format("{}: cannot create the combine's spill file", name));
    ::unlink(name.c_str());  // gone with the process, however it ends
    return std::make_shared<SpillFile>(fd, ranks);
  }
  SpillFile(int fd, std::size_t ranks) : fd_(fd), where_(ranks), steps_(ranks, 0) {}
  ~SpillFile() override { ::close(fd_); }

  // Writes rank i whole (again, after its attribution: the later copy is read).
  Status put(std::size_t i, const RankMetrics& whole) {
    ByteWriter w;
    w(whole, whole.paths);  // RankMetrics' field list leaves the paths out
    std::uint64_t at = 0;
    {
      std::lock_guard lock(mu_);
      at = end_;
      end_ += w.data().size();
    }
    const char* p = w.data().data();
    for (std::size_t left = w.data().size(); left;) {
      const ssize_t n = ::pwrite(fd_, p, left, static_cast<off_t>(at));
      if (n <= 0) return make_error("the combine's spill file: cannot write (disk full? set TMPDIR)");
      p += n, left -= static_cast<std::size_t>(n), at += static_cast<std::uint64_t>(n);
    }
    where_[i] = {at - w.data().size(), w.data().size()};
    steps_[i] = whole.steps.size();
    return {};
  }

  const RankMetrics& rank(std::size_t i) override {
    std::string bytes(where_[i].second, '\0');
    RankMetrics r;
    std::vector<StepPath> paths;
    bool ok = static_cast<bool>(read_exact(fd_, bytes.data(), bytes.size(), where_[i].first));
    if (ok) {
      ByteReader rd(bytes);
      rd(r, paths);
      ok = rd.ok() && rd.at_end();
    }
    if (!ok) {  // our own file, written moments ago: only a failing disk can do this
      std::fprintf(stderr, "tracetune: the combine's spill file cannot be read back (I/O error)\n");
      std::exit(1);
    }
    current_ = std::move(r);
    current_.paths = std::move(paths);
    return current_;
  }
  std::size_t steps(std::size_t i) const override { return steps_[i]; }

 private:
  int fd_;
  std::mutex mu_;
  std::uint64_t end_ = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> where_;  // rank -> (offset, size)
  std::vector<std::size_t> steps_;
  RankMetrics current_;
};

// The step-source note a whole trace would have had, from each file's.
std::optional<std::string> combined_step_note(const std::vector<Part>& parts) {
  std::optional<StepRangeResult> sum;
  for (const auto& p : parts)
    for (const auto& n : p.index.step_notes) {
      if (!sum) { sum = n; continue; }
      sum->steps += n.steps;
      sum->processes += p.index.split_ranks ? 0 : n.processes;
    }
  if (sum && parts.front().index.split_ranks) sum->steps /= parts.size();  // every shard saw the same file
  if (!sum) return std::nullopt;
  return step_range_note(*sum);
}

}  // namespace

bool reseal_part(std::span<unsigned char> bytes) {
  PartHeader h;
  if (bytes.size() < sizeof h) return false;
  std::memcpy(&h, bytes.data(), sizeof h);
  h.checksum = seal(crc32(0, bytes.data() + sizeof h, bytes.size() - sizeof h), h);
  std::memcpy(bytes.data(), &h, sizeof h);
  return true;
}

namespace {

// What the combine computes rank by rank, each rank whole for a moment: its paths, its findings,
// the median of its paths' waits for other ranks and its steps for the job path (run_rules and
// compute_critical_paths in their parts).
struct PerRank {
  std::vector<std::vector<Finding>> findings;  // per rank
  std::vector<std::optional<Ns>> rank_waits;
  JobSteps job_steps;
};

// Each rank whole (its steps and memory read back from its part), in parallel: its own critical
// paths over its graph, its findings; then into the spill file. `ranks[i]` keep its notes.
Result<PerRank> walk_ranks(Analysis& a, const std::vector<LoadedRank*>& loaded, const CollectiveGroups& groups,
                           PartGraphs& graphs, SpillFile& spill) {
  Metrics& M = a.metrics;
  const Thresholds th = job_thresholds(M, default_thresholds());
  std::vector<std::int32_t> rank_numbers;
  for (const auto& r : M.ranks) rank_numbers.push_back(r.rank);
  PerRank out{std::vector<std::vector<Finding>>(M.ranks.size()), std::vector<std::optional<Ns>>(M.ranks.size()), {}};
  std::mutex mu;
  Status failed;
  parallel_items(M.ranks.size(), a.options.threads, [&](auto take) {
    std::optional<RankPathWalker> walker;
    if (!a.options.hta_compat) walker.emplace(graphs, rank_numbers, groups, a.options);
    JobSteps job_steps;
    for (std::size_t i; take(i);) {
      auto record = read_record(*loaded[i]->part, loaded[i]->entry);
      if (!record) {
        std::lock_guard lock(mu);
        failed = make_error(record.error());
        continue;
      }
      RankMetrics whole = M.ranks[i];
      whole.steps = std::move(record->metrics.steps);
      whole.memory = std::move(record->metrics.memory);
      if (walker) walker->walk(i, whole);
      out.findings[i] = rank_findings(whole, th);
      out.rank_waits[i] = rank_wait_median(whole);
      job_steps.add(i, whole);
      M.ranks[i].notes = whole.notes;
      if (auto st = spill.put(i, whole); !st) {
        std::lock_guard lock(mu);
        failed = st;
      }
    }
    std::lock_guard lock(mu);
    out.job_steps.merge(job_steps);
  });
  if (!failed) return make_error(failed.error());
  return out;
}

// The Python attribution of the ranks that have samples (read back from their parts), as
// attribute_findings gives it in one process: each rank whole from the spill, attributed, then
// written to it again.
Status attribute_ranks(Metrics& M, const std::vector<LoadedRank*>& loaded, SpillFile& spill,
                       std::vector<Finding>& findings) {
  for (std::size_t i = 0; i < M.ranks.size(); ++i) {
    if (!loaded[i]->has_samples) continue;
    auto record = read_record(*loaded[i]->part, loaded[i]->entry);
    if (!record) return make_error(record.error());
    const RankSamples& s = record->samples;
    RankMetrics whole = spill.rank(i);
    attribute_rank(sample_trace(s), RankThreads{s.rank_tracks, s.data_waits}, whole, findings_of(M, M.ranks[i], findings));
    if (auto st = spill.put(i, whole); !st) return st;
  }
  return {};
}

}  // namespace

// combine_shards; with `job_path_left_out`, the job path is left out with that note, as one
// process leaves it out of a trace with too many GPU ops (analyze_in_blocks).
Result<Analysis> combine_parts(std::span<const fs::path> paths, unsigned threads,
                               const std::optional<std::string>& job_path_left_out) {
  if (paths.empty()) return make_error("--combine: no part files given");
  std::vector<Part> parts;
  for (const auto& path : paths) {
    auto p = open_part(path);
    if (!p) return make_error(p.error());
    parts.push_back(std::move(p.value()));
  }
  if (auto st = check_parts(parts); !st) return make_error(st.error());
  Analysis a;
  a.options = parts.front().index.options;
  a.options.threads = threads;
  a.source = parts.front().index.source;
  Metrics& M = a.metrics;
  ArrivalMatcher matcher;
  auto loaded = load_ranks(parts, matcher);
  if (!loaded) return make_error(loaded.error());
  if (auto st = check_unique_ranks(loaded.value()); !st) return make_error(st.error());
  const std::vector<std::size_t> order = rank_order(parts, loaded.value());
  std::vector<std::size_t> position(order.size());  // loaded index -> index in M.ranks
  std::vector<PartGraphs::Where> where;
  std::vector<LoadedRank*> in_order;
  for (std::size_t i = 0; i < order.size(); ++i) {
    LoadedRank& r = loaded.value()[order[i]];
    position[order[i]] = i;
    where.push_back({r.part, r.entry.graph_offset, r.entry.graph_size, r.metrics.has_gpu, r.metrics.rank});
    M.ranks.push_back(std::move(r.metrics));
    in_order.push_back(&r);
  }
  matcher.renumber(position);
  // no report shows the pieces (their tracks are the shards' traces'), but the Python
  // attribution of host segments reads them, as in one process
  a.options.path_pieces = std::any_of(in_order.begin(), in_order.end(), [](const LoadedRank* r) { return r->has_samples; });
  for (auto& p : parts) {
    a.events += p.index.events;
    if (a.clock_domain.empty()) a.clock_domain = p.index.clock_domain;
    std::vector<PartRank>().swap(p.index.ranks);
  }
  if (M.ranks.empty()) M.notes.push_back(no_ranks_note(a.options.rank));
  const CollectiveGroups groups = matcher.match(M);
  auto spill = SpillFile::create(M.ranks.size());
  if (!spill) return make_error(spill.error());
  PartGraphs graphs(std::move(where), groups);
  auto per_rank = walk_ranks(a, in_order, groups, graphs, *spill.value());
  if (!per_rank) return make_error(per_rank.error());
  if (job_path_left_out && M.ranks.size() >= 2) M.notes.push_back(*job_path_left_out);
  if (!a.options.hta_compat) {
    if (M.ranks.size() >= 2 && !job_path_left_out) {
      std::vector<std::int32_t> rank_numbers;
      for (const auto& r : M.ranks) rank_numbers.push_back(r.rank);
      walk_job_paths(a.options, groups, graphs, std::move(rank_numbers), per_rank->job_steps, M);
    }
    M.notes.insert(M.notes.end(), graphs.corrupt_notes().begin(), graphs.corrupt_notes().end());
  }
  if (a.options.rank < 0) missing_rank_notes(M);
  if (auto note = combined_step_note(parts)) M.notes.insert(M.notes.begin(), *note);
  for (auto& f : per_rank->findings)
    for (auto& x : f) a.findings.push_back(std::move(x));
  job_findings(M, job_thresholds(M, default_thresholds()), per_rank->rank_waits, a.findings);
  if (auto st = attribute_ranks(M, in_order, *spill.value(), a.findings); !st) return make_error(st.error());
  a.rank_store = std::move(spill.value());
  return a;
}

Result<Analysis> combine_shards(std::span<const fs::path> paths, unsigned threads) {
  return combine_parts(paths, threads, std::nullopt);
}

namespace {

// A private directory (0700) in $TMPDIR (default /tmp), removed with its files when it goes.
class PrivateDir {
 public:
  static Result<PrivateDir> create() {
    const char* dir = std::getenv("TMPDIR");
    std::string name = fmt::format("{}/tracetune-blocks-XXXXXX", dir && *dir ? dir : "/tmp");
    if (!::mkdtemp(name.data())) return make_error(fmt::format("{}: cannot create a private directory (set TMPDIR)", name));
    return PrivateDir(name);
  }
  PrivateDir(PrivateDir&& o) noexcept : path_(std::exchange(o.path_, {})) {}
  ~PrivateDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  explicit PrivateDir(fs::path p) : path_(std::move(p)) {}
  fs::path path_;
};

// The model of a trace in memory takes 45 to 75 bytes per event (bench/scale_figures.md).
constexpr std::uint64_t kModelBytesPerEvent = 75;

// Why a trace DB must be analysed in memory, even past the budget; empty: it may go in blocks.
// Steps from named ranges need every range of the trace, the hang diagnosis every process's
// collective calls (the "tracetune.collective.enter" ranges), and a lone rank has no blocks.
bool needs_whole_trace(const trace::TraceOutline& outline, const Options& opt) {
  const trace::Trace& o = outline.trace;
  if (o.steps.size() == 0) return true;
  auto ranks = pick_ranks(o, outline.per_track);
  keep_rank(o, ranks, opt.rank);
  if (ranks.size() < 2) return true;
  for (trace::StringId id = 0; id < o.strings.size(); ++id)
    if (o.strings.get(id).starts_with("tracetune.collective.enter ")) return true;
  return false;
}

}  // namespace

Result<std::uint64_t> analyze_memory_budget() {
  if (const char* v = std::getenv("TRACETUNE_ANALYZE_BUDGET"))
    return trace::parse_unsigned(v, "TRACETUNE_ANALYZE_BUDGET", UINT64_MAX);
  std::FILE* f = std::fopen("/proc/meminfo", "re");
  std::uint64_t kb = 0;
  if (f) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lu kB", &kb) == 1) break;
    std::fclose(f);
  }
  return kb ? kb * 1024 / 2 : UINT64_MAX;
}

Result<std::optional<Analysis>> analyze_in_blocks(const fs::path& input, const Options& opt, std::uint64_t budget) {
  using Maybe = std::optional<Analysis>;
  if (opt.hta_compat || trace::detect_format(input) != trace::InputFormat::TracetuneDb) return Maybe();
  auto outline = trace::read_trace_outline(input);
  if (!outline) return Maybe();  // the analysis in memory says what is wrong with it, as always
  const std::uint64_t model = outline->events * kModelBytesPerEvent;
  if (model <= budget || needs_whole_trace(outline.value(), opt)) return Maybe();
  auto ranks = pick_ranks(outline->trace, outline->per_track);
  keep_rank(outline->trace, ranks, opt.rank);
  const std::uint64_t blocks = std::min<std::uint64_t>(ranks.size(), model / std::max<std::uint64_t>(budget, 1) + 1);
  std::uint64_t gpu_ops = 0;
  for (const auto& c : outline->per_track) gpu_ops += c.gpu_ops;
  outline = trace::TraceOutline{};
  auto dir = PrivateDir::create();
  if (!dir) return make_error(dir.error());
  std::vector<fs::path> parts;
  for (std::uint64_t k = 0; k < blocks; ++k) {
    parts.push_back(dir->path() / fmt::format("part-{}.ttpart", k));
    const Shard block{static_cast<unsigned>(k), static_cast<unsigned>(blocks)};
    if (auto run = analyze_shard(input, block, opt, "", parts.back()); !run) return make_error(run.error());
  }
  auto a = combine_parts(parts, opt.threads,
                         gpu_ops > kJobPathMaxOps ? std::optional(job_path_left_out(gpu_ops)) : std::nullopt);
  if (!a) return make_error(a.error());
  return Maybe(std::move(a.value()));
}

}  // namespace tt::analyzer
