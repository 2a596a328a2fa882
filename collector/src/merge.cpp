// Raw record files (one per process, one directory per host) -> one Trace.
//
// Place in the data flow: collector ──▶ <dir>/<host>/proc-*.ttr ──record_reader──▶ RawProcess
// ──this──▶ Trace ──(caller)──▶ finalize / write_trace (merge_raw: windows of a running job), or
// ──this──▶ each file's events ──TraceFileWriter──▶ trace file (merge_raw_to_file: `tracetune
// record` once the job has ended, `tracetune merge DIR...` for outputs gathered from several
// nodes), where memory holds one file's events at a time, not every host's.
//
// Three passes:
//  1. find every *.ttr (sorted, duplicates removed: the trace must not depend on directory
//     order or on a directory being named twice);
//  2. read every header (4 KiB each) and derive one clock offset per host, so that events
//     are placed on the trace clock as they are converted, with no second pass over tables;
//  3. read the files in parallel, convert them on this thread in file order (deterministic
//     string ids and track numbers), and free each one before the next: the readers run at
//     most a small window ahead, which bounds memory for jobs with hundreds of large files.
//     merge_raw_to_file then hands each file's converted events to the trace file and frees
//     them too (EventSink): every file's tracks follow those of the files before, so appending
//     file by file gives the rows, and the ids, of the whole trace sorted at once.
//
// Clocks: every record carries CLOCK_MONOTONIC, which is only comparable within one boot of
// one host. With one host the trace clock is that host's monotonic clock (offset 0). With
// several, each host gets offset = median over its files of (start_real - start_mono): the
// median shrugs off a file whose realtime anchor was taken across an NTP step. Realtime
// clocks of different hosts still disagree by up to milliseconds (NTP), so once every file is
// converted, each host's offset is corrected from collectives matched across hosts
// (collective_clocks.h) and that host's processes are moved by the correction: one pass over
// the tables, only when a correction applies (the collectives are known only after reading).
//
// Each file is its own Process row, including the two files of a pid that called exec (the
// old image's file is flagged kExecReplaced): their command lines and threads differ.
// Damage never fails the merge: it becomes diagnostics, counts in the MergeReport and, for
// things a user should act on, warnings.
#include "tracetune/collector/merge.h"
#include "tracetune/collector/window.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <thread>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "tracetune/collector/collective_clocks.h"
#include "tracetune/collector/record_reader.h"
#include "tracetune/trace/py_stacks.h"
#include "tracetune/trace/store.h"
#include "tracetune/trace/summary.h"

namespace tt::collector {
namespace fs = std::filesystem;
using trace::Ns;
using trace::StringId;

namespace {

// Marks the NVTX handler emits to carry nvtxNameCategory(): "nvtx.category <id> <name>".
constexpr std::string_view kNvtxCategoryPrefix = "nvtx.category ";
constexpr std::string_view kAlignedClock = "CLOCK_REALTIME (aligned from per-host monotonic clocks)";

// A flat, exhaustive mapping (-Wswitch names a missing IoFunc): its complexity is its case
// count, which a table would hide from the compiler's check.
trace::IoOp io_op(IoFunc f) {  // #lizard forgives
  using trace::IoOp;
  switch (f) {
    case IoFunc::Open:
    case IoFunc::Open64:
    case IoFunc::OpenAt:
    case IoFunc::OpenAt64:
    case IoFunc::Creat:
    case IoFunc::Creat64:
    case IoFunc::Open2:
    case IoFunc::Open64_2:
    case IoFunc::OpenAt2:
    case IoFunc::Fopen:
    case IoFunc::Fopen64:
      return IoOp::Open;
    case IoFunc::Read:
    case IoFunc::Pread:
    case IoFunc::Pread64:
    case IoFunc::Readv:
    case IoFunc::Preadv:
    case IoFunc::Preadv64:
    case IoFunc::Preadv2:
    case IoFunc::Fread:
      return IoOp::Read;
    case IoFunc::Write:
    case IoFunc::Pwrite:
    case IoFunc::Pwrite64:
    case IoFunc::Writev:
    case IoFunc::Fwrite:
      return IoOp::Write;
    case IoFunc::Close:
    case IoFunc::Fclose:
      return IoOp::Close;
    case IoFunc::Lseek:
    case IoFunc::Lseek64:
      return IoOp::Seek;
    case IoFunc::Stat:
    case IoFunc::Fstat:
    case IoFunc::Lstat:
    case IoFunc::Fstatat:
    case IoFunc::Statx:
    case IoFunc::Stat64:
    case IoFunc::Fstat64:
    case IoFunc::Lstat64:
    case IoFunc::Fstatat64:
      return IoOp::Stat;
    case IoFunc::Mmap:
    case IoFunc::Mmap64:
      return IoOp::Mmap;
    case IoFunc::Count:
      break;
  }
  return IoOp::Other;
}

// ---- CUPTI numbers kept in the GPU records (cupti_activity.h, CUDA 13.0) ----
constexpr std::uint32_t kCuptiInvalid = 0xffffffffu;  // CUPTI_SYNCHRONIZATION_INVALID_VALUE
constexpr std::uint32_t kCuptiObjectThread = 2;       // CUPTI_ACTIVITY_OBJECT_THREAD
constexpr std::uint8_t kCuptiFlagAsync = 1;           // CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC / MEMSET_ASYNC
constexpr std::uint8_t kCuptiMemoryKindDevice = 3;    // CUPTI_ACTIVITY_MEMORY_KIND_DEVICE

// CUpti_ActivityMemcpyKind -> direction; array copies count as the device side they touch.
trace::MemcpyDirection memcpy_direction(std::uint8_t k) {
  using trace::MemcpyDirection;
  switch (k) {
    case 1: case 3: return MemcpyDirection::HtoD;            // HTOD, HTOA
    case 2: case 4: return MemcpyDirection::DtoH;            // DTOH, ATOH
    case 5: case 6: case 7: case 8: return MemcpyDirection::DtoD;  // ATOA, ATOD, DTOA, DTOD
    case 9: return MemcpyDirection::HtoH;
    case 10: return MemcpyDirection::PtoP;
    default: return MemcpyDirection::Unknown;
  }
}

// CUpti_ActivityMemoryKind -> memory kind (CUPTI's numbering, not nsys's: see nsys_import.cpp).
trace::MemoryKind memory_kind(std::uint8_t k) {
  using trace::MemoryKind;
  switch (k) {
    case 1: return MemoryKind::Pageable;
    case 2: return MemoryKind::Pinned;
    case 3: case 6: return MemoryKind::Device;   // DEVICE, DEVICE_STATIC
    case 4: return MemoryKind::Array;
    case 5: case 7: return MemoryKind::Managed;  // MANAGED, MANAGED_STATIC
    default: return MemoryKind::Unknown;
  }
}

// CUpti_ActivityOverheadKind (bit values).
std::string_view overhead_name(std::uint32_t k) {
  switch (k) {
    case 1: return "driver compiler";
    case 1u << 16: return "buffer flush";
    case 2u << 16: return "instrumentation";
    case 3u << 16: return "resource";
    case 4u << 16: return "runtime trigger";
    case 5u << 16: return "driver trigger";
    case 6u << 16: return "OS trigger";
    case 7u << 16: return "COMMAND_BUFFER_FULL";
    case 8u << 16: return "activity buffer request";
    case 9u << 16: return "UVM activity init";
    default: return "other";
  }
}

// "c10d:gloo:0" -> "gloo": the backend of a torch.distributed process group whose collectives
// the Python integration wrote as NCCL records (plugins/python/tracetune/_distributed.py);
// empty for other names (NCCL's own communicators).
std::string_view c10d_backend(std::string_view comm_name) {
  constexpr std::string_view kPrefix = "c10d:";
  if (!comm_name.starts_with(kPrefix)) return {};
  const std::string_view rest = comm_name.substr(kPrefix.size());
  const std::string_view backend = rest.substr(0, rest.find(':'));
  const bool word = !backend.empty() && backend.size() <= 16 &&
                    std::all_of(backend.begin(), backend.end(), [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; });
  return word ? backend : std::string_view();
}

// Bytes per element of NCCL's datatype names (ncclDatatypeToString); 0 when unknown.
std::uint64_t nccl_dtype_size(std::string_view t) {
  if (t == "ncclInt8" || t == "ncclUint8" || t == "ncclChar" || t == "ncclFloat8e4m3" || t == "ncclFloat8e5m2")
    return 1;
  if (t == "ncclFloat16" || t == "ncclHalf" || t == "ncclBfloat16") return 2;
  if (t == "ncclInt32" || t == "ncclUint32" || t == "ncclInt" || t == "ncclFloat32" || t == "ncclFloat") return 4;
  if (t == "ncclInt64" || t == "ncclUint64" || t == "ncclFloat64" || t == "ncclDouble") return 8;
  return 0;
}

// Saturating arithmetic: times are checksummed writer output, but a crafted file (realtime
// anchors of +-2^63, a span from INT64_MIN to INT64_MAX) must reach neither signed-overflow
// UB nor wrapped nonsense ("duration -4611686018427387803 ns"): it stops at the ends of time.
constexpr Ns kMaxNs = std::numeric_limits<Ns>::max(), kMinNs = std::numeric_limits<Ns>::min();
Ns sat_add(Ns a, Ns b) {
  Ns r = 0;
  return __builtin_add_overflow(a, b, &r) ? (b > 0 ? kMaxNs : kMinNs) : r;
}
Ns sat_sub(Ns a, Ns b) {
  Ns r = 0;
  return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? kMaxNs : kMinNs) : r;
}

std::string_view basename_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// ---- pass 1: files ----

Result<std::vector<fs::path>> find_record_files(std::span<const fs::path> dirs) {
  std::vector<std::pair<fs::path, fs::path>> found;  // (identity, path as found)
  for (const auto& dir : dirs) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      return make_error(dir.string() + ": " +
                        (ec ? "cannot read: " + ec.message() : std::string("not a directory")));
    fs::recursive_directory_iterator it(dir, fs::directory_options::none, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code fec;
      if (it->path().extension() != ".ttr" || !it->is_regular_file(fec)) continue;
      const fs::path id = fs::weakly_canonical(it->path(), fec);
      found.emplace_back(fec ? it->path() : id, it->path());
    }
    if (ec) return make_error(dir.string() + ": cannot read directory: " + ec.message());
  }
  if (found.empty()) {
    std::string names;
    for (const auto& d : dirs) names += (names.empty() ? "" : ", ") + d.string();
    return make_error("no raw record files (*.ttr) under " +
                      (names.empty() ? std::string("(no directory given)") : names));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  std::set<fs::path> seen;
  std::vector<fs::path> files;
  for (auto& [id, path] : found)
    if (seen.insert(id).second) files.push_back(std::move(path));
  return files;
}

// ---- pass 2: clocks ----

// Fills report.hosts and returns the offset of each host.
std::map<std::string, Ns> align_clocks(const std::vector<std::optional<RecordFileHeader>>& headers,
                                       trace::Trace& t, MergeReport& report) {
  std::map<std::string, std::vector<Ns>> anchors;  // host -> (realtime - monotonic) per file
  for (const auto& h : headers)
    if (h) anchors[h->host].push_back(sat_sub(h->start_real_ns, h->start_mono_ns));
  std::map<std::string, Ns> offsets;
  for (auto& [host, deltas] : anchors) {
    Ns offset = 0;
    if (anchors.size() > 1) {
      const auto mid = deltas.begin() + static_cast<std::ptrdiff_t>(deltas.size() / 2);
      std::nth_element(deltas.begin(), mid, deltas.end());
      offset = *mid;  // upper median: always one file's real anchor
    }
    offsets[host] = offset;
    HostClock& clock = report.hosts.emplace_back();
    clock.host = host;
    clock.offset_ns = clock.anchor_offset_ns = offset;
    clock.files = deltas.size();
    t.metadata.emplace_back("clock_offset_ns:" + host, std::to_string(offset));
  }
  t.clock_domain = anchors.size() > 1 ? std::string(kAlignedClock) : std::string("CLOCK_MONOTONIC");
  return offsets;
}

// A diagnostic whose text names a time on the trace clock ("... at <ns> ns"): rewritten, as is
// the same line among the report's GPU notes, when its process's host clock is corrected.
struct TimedText {
  std::size_t diagnostic = 0;  // index into Trace::diagnostics
  std::uint32_t process = 0;
  Ns time = 0;
};

void shift_timed_texts(trace::Trace& t, MergeReport& report, const std::vector<TimedText>& texts,
                       std::span<const Ns> shift_by_process) {
  for (const TimedText& x : texts) {
    const Ns shift = x.process < shift_by_process.size() ? shift_by_process[x.process] : 0;
    std::string& reason = t.diagnostics[x.diagnostic].reason;
    const std::string old_at = fmt::format("at {} ns", x.time);
    const auto pos = reason.rfind(old_at);
    if (shift == 0 || pos == std::string::npos) continue;  // npos: a repeat, already rewritten
    const std::string old_reason = reason;
    reason.replace(pos, old_at.size(), fmt::format("at {} ns", sat_add(x.time, shift)));
    std::replace(report.gpu_notes.begin(), report.gpu_notes.end(), old_reason, reason);
  }
}

void set_metadata(trace::Trace& t, const std::string& key, const std::string& value) {
  for (auto& [k, v] : t.metadata)
    if (k == key) {
      v = value;
      return;
    }
  t.metadata.emplace_back(key, value);
}

// After conversion, with several hosts: corrects each host's offset from collectives matched
// across hosts and moves that host's processes (every table of `t`, the timed texts) by it.
// Returns the shift of each process, empty when none moves.
std::vector<Ns> refine_clocks_from_collectives(trace::Trace& t, MergeReport& report, const std::vector<TimedText>& texts) {
  const std::map<std::string, Ns> corrections = collective_clock_corrections(t, report.hosts);
  std::vector<Ns> shift_by_process(t.processes.size(), 0);
  bool any = false;
  for (std::size_t p = 0; p < t.processes.size(); ++p) {
    const auto it = corrections.find(t.processes[p].host);
    shift_by_process[p] = it == corrections.end() ? 0 : it->second;
    any |= shift_by_process[p] != 0;
  }
  if (any) {
    trace::shift_process_times(t, shift_by_process);
    shift_timed_texts(t, report, texts, shift_by_process);
  }
  for (const HostClock& clock : report.hosts) {
    set_metadata(t, "clock_offset_ns:" + clock.host, std::to_string(clock.offset_ns));
    if (clock.residual_ns < 0) continue;
    set_metadata(t, "clock_correction_ns:" + clock.host, std::to_string(clock.correction_ns));
    set_metadata(t, "clock_correction_collectives:" + clock.host, std::to_string(clock.collectives));
    set_metadata(t, "clock_residual_ns:" + clock.host, std::to_string(clock.residual_ns));
  }
  if (!any) shift_by_process.clear();
  return shift_by_process;
}

// ---- pass 3: reading, in parallel, handed over in order ----

// Calls consume(i, result) for i = 0..n-1 on the calling thread, in order; result is nullptr
// where wanted[i] is false. Reading runs at most `window` files ahead of consumption.
template <class Consume>
void read_in_order(const std::vector<fs::path>& files, const std::vector<char>& wanted, Consume&& consume) {
  const std::size_t n = files.size();
  auto read_one = [&](std::size_t i) -> Result<RawProcess> {
    try {
      return read_record_file(files[i]);
    } catch (const std::exception& e) {  // bad_alloc on a huge file: skip the file, not the merge
      return make_error(files[i].string() + ": " + e.what());
    }
  };
  const std::size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t workers = n < 4 ? 0 : std::min<std::size_t>({hw, 8, n});
  if (workers <= 1) {
    for (std::size_t i = 0; i < n; ++i) {
      std::optional<Result<RawProcess>> r;
      if (wanted[i]) r.emplace(read_one(i));
      consume(i, r ? &*r : nullptr);
    }
    return;
  }

  const std::size_t window = 2 * workers;
  std::mutex m;
  std::condition_variable_any cv;
  std::vector<std::optional<Result<RawProcess>>> ready(n);
  std::size_t next = 0, consumed = 0;
  std::vector<std::jthread> pool;  // joined (after a stop request) even if consume throws
  pool.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w)
    pool.emplace_back([&](std::stop_token stop) {
      for (;;) {
        std::size_t i = 0;
        {
          std::unique_lock lock(m);
          cv.wait(lock, stop, [&] { return next >= n || next < consumed + window; });
          while (next < n && !wanted[next]) ++next;
          if (stop.stop_requested() || next >= n) return;
          i = next++;
        }
        auto r = read_one(i);
        {
          const std::lock_guard lock(m);
          ready[i].emplace(std::move(r));
        }
        cv.notify_all();
      }
    });
  for (std::size_t i = 0; i < n; ++i) {
    std::optional<Result<RawProcess>> r;
    {
      std::unique_lock lock(m);
      if (wanted[i]) {
        cv.wait(lock, [&] { return ready[i].has_value(); });
        r = std::move(ready[i]);
        ready[i].reset();
      }
      consumed = i + 1;
    }
    cv.notify_all();
    consume(i, r ? &*r : nullptr);
  }
}

// ---- conversion of one file ----

class ProcessConverter {
 public:
  // `environments`: keys of the environments already stored, shared by all files.
  // `timed_texts`: where diagnostics naming a trace time are noted (see TimedText).
  ProcessConverter(trace::Trace& t, MergeReport& report, const RawProcess& raw, Ns offset,
                   std::set<std::string>& environments, std::vector<TimedText>& timed_texts)
      : t_(t), report_(report), raw_(raw), offset_(offset), source_(raw.path.string()),
        environments_(environments), timed_texts_(timed_texts) {}

  void run() {
    add_process_and_threads();
    add_io();
    add_ranges();
    add_marks();
    add_steps();
    add_counters();
    add_gpu_status();
    add_gpu_activity();
    add_cuda_event_records();
    add_gpu_memory();
    add_nccl();
    add_py_samples();
    add_diagnostics();
  }

 private:
  Ns at(Ns mono) const { return sat_add(mono, offset_); }
  // A diagnostic whose reason names `time` (on the trace clock) as "at <time> ns".
  void add_timed_diagnostic(trace::DiagnosticKind kind, const std::string& reason, Ns time) {
    t_.add_diagnostic(kind, source_, reason);
    for (std::size_t i = t_.diagnostics.size(); i-- > 0;)
      if (const auto& d = t_.diagnostics[i]; d.kind == kind && d.source == source_ && d.reason == reason) {
        timed_texts_.push_back({i, process_, time});
        return;
      }
  }
  // end - start, clamped (and counted) to 0 when negative and so that the event's end, on
  // the trace clock, stays within 64 bits: the store's rule, which the reader enforces.
  Ns dur(Ns start, Ns end) {
    const Ns d = sat_sub(end, start), begin = at(start);
    if (d < 0) {
      ++clamped_;
      return 0;
    }
    if (begin > 0 && d > kMaxNs - begin) {
      ++clamped_;
      return kMaxNs - begin;
    }
    return d;
  }

  // Per-file string id -> trace string id, interned on first use only: most files carry
  // strings no event refers to (the environment), which must not bloat the trace.
  StringId sid(std::uint32_t id) {
    if (id == 0) return 0;
    const auto it = sids_.find(id);
    if (it != sids_.end()) return it->second;
    const std::string* s = raw_.find_string(id);
    if (s == nullptr) ++unresolved_;
    const StringId out = s == nullptr ? 0 : t_.strings.intern(*s);
    sids_.emplace(id, out);
    return out;
  }
  std::string_view text(std::uint32_t id) const {
    const std::string* s = raw_.find_string(id);
    return s == nullptr ? std::string_view() : std::string_view(*s);
  }

  std::uint32_t track(std::uint32_t tid) const { return tracks_.at(tid); }

  std::string process_name() const {
    if (raw_.process_info) {
      if (const auto exe = basename_of(text(raw_.process_info->executable)); !exe.empty())
        return std::string(exe);
      const std::string_view cmd = text(raw_.process_info->command_line);
      if (const auto arg0 = basename_of(cmd.substr(0, cmd.find(' '))); !arg0.empty())
        return std::string(arg0);
    }
    return {};
  }

  // The recorded environment (secrets already redacted by the collector) and working
  // directory go into `meta`: each distinct environment once, as "environment:<hash>", and
  // per process "process.<row>.environment" = <hash>, "process.<row>.cwd" = the directory.
  void record_environment() {
    if (!raw_.process_info) return;
    const std::string prefix = "process." + std::to_string(process_) + ".";
    if (const auto cwd = text(raw_.process_info->cwd); !cwd.empty()) t_.metadata.emplace_back(prefix + "cwd", cwd);
    const std::string_view env = text(raw_.process_info->environment);
    if (env.empty()) return;
    const std::string key = fmt::format("{:016x}", std::hash<std::string_view>{}(env));
    if (environments_.insert(key).second) t_.metadata.emplace_back("environment:" + key, env);
    t_.metadata.emplace_back(prefix + "environment", key);
  }

  void add_process_and_threads() { add_threads(add_process()); }

  // The process, from the file's header and its exit and exec records; returns its name.
  std::string add_process() {
    const RecordFileHeader& h = raw_.header;
    // An Exit record is written on the way out, before the header is updated: a process
    // killed between the two still ended on its own. An Exec record counts only when
    // nothing came after it (exec can fail, and the process then goes on).
    const bool exited = h.has(kExited) || !raw_.exits.empty();
    Ns exec_ts = 0;
    for (const auto& r : raw_.execs) exec_ts = std::max(exec_ts, r.rec.ts_ns);
    const bool exec_replaced = h.has(kExecReplaced) || (!raw_.execs.empty() && exec_ts >= raw_.last_ts_ns);

    trace::Process p;
    p.pid = h.pid;
    p.parent_pid = h.ppid;
    p.rank = h.rank;
    p.local_rank = h.local_rank;
    p.host = h.host;
    p.name = process_name();
    if (raw_.process_info) p.command_line = text(raw_.process_info->command_line);
    p.start = at(h.start_mono_ns);
    Ns end = 0;
    if ((exited || exec_replaced) && h.end_mono_ns != 0)
      end = h.end_mono_ns;
    else if (!raw_.exits.empty())
      end = raw_.exits.back().rec.ts_ns;
    else if (exec_replaced && exec_ts != 0)
      end = exec_ts;
    else
      end = std::max(raw_.last_ts_ns, h.start_mono_ns);
    p.end = at(end);
    if (h.has(kExited))
      p.exit_status = h.exit_status;
    else if (!raw_.exits.empty())
      p.exit_status = raw_.exits.back().rec.status;
    p.truncated = !(exited || exec_replaced);
    const std::string name = p.name;
    process_ = t_.add_process(std::move(p));
    ++report_.processes;
    record_environment();

    if (!raw_.exits.empty() && raw_.exits.back().rec.how == 2)
      t_.add_diagnostic(
          trace::DiagnosticKind::Note, source_,
          fmt::format("process {} ended by signal {}", h.pid, raw_.exits.back().rec.status - 128));
    if (!(exited || exec_replaced)) {
      ++report_.truncated;
      const Ns last = at(std::max(raw_.last_ts_ns, h.start_mono_ns));
      add_timed_diagnostic(
          trace::DiagnosticKind::Truncated,
          fmt::format("process {} has no exit record (killed or crashed); its last event is at {} ns", h.pid, last),
          last);
    }
    return name;
  }

  // Every thread that wrote an event (for GPU API and overhead records, the CUDA thread, not
  // CUPTI's), by tid, once each.
  std::vector<std::uint32_t> event_tids() const {
    std::vector<std::uint32_t> tids;
    auto collect = [&](const auto& records) {
      for (const auto& r : records) tids.push_back(r.tid);
    };
    collect(raw_.io);
    collect(raw_.ranges);
    collect(raw_.marks);
    collect(raw_.steps);
    collect(raw_.counters);
    collect(raw_.nccl_colls);
    for (const auto& s : raw_.py_samples) tids.push_back(s.tid);  // the sampled thread, not the sampler
    for (const auto& r : raw_.gpu_apis) tids.push_back(r.rec.tid);  // the CUDA thread, not CUPTI's
    for (const auto& r : raw_.gpu_overheads)
      if (r.rec.object_kind == kCuptiObjectThread && r.rec.object_id != 0) tids.push_back(r.rec.object_id);
    std::sort(tids.begin(), tids.end());
    tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
    return tids;
  }

  // Threads: the main thread always (the process's own track, named after the process when it
  // has no name of its own), then every thread that wrote an event, by tid.
  void add_threads(const std::string& name) {
    const auto main_tid = static_cast<std::uint32_t>(raw_.header.pid);
    std::unordered_map<std::uint32_t, std::uint32_t> names;  // tid -> string id, last wins
    for (const auto& r : raw_.thread_names) names[r.rec.tid] = r.rec.name;
    auto add_thread = [&](std::uint32_t tid) {
      trace::Thread th;
      th.process = process_;
      th.tid = tid;
      if (const auto it = names.find(tid); it != names.end()) th.name = text(it->second);
      if (th.name.empty() && tid == main_tid) th.name = name;
      tracks_.emplace(tid, t_.add_thread(std::move(th)));
    };
    add_thread(main_tid);
    for (const auto tid : event_tids())
      if (tid != main_tid) add_thread(tid);
  }

  void add_io() {
    StringId func_names[static_cast<std::size_t>(IoFunc::Count) + 1] = {};
    bool interned[static_cast<std::size_t>(IoFunc::Count) + 1] = {};
    auto& io = t_.io_calls;
    for (const auto& [tid, r] : raw_.io) {
      const auto f = std::min(static_cast<std::size_t>(r.func), static_cast<std::size_t>(IoFunc::Count));
      if (!interned[f]) {
        func_names[f] = t_.strings.intern(io_func_name(static_cast<IoFunc>(f)));
        interned[f] = true;
      }
      io.start.push_back(at(r.start_ns));
      io.dur.push_back(dur(r.start_ns, r.end_ns));
      io.track.push_back(track(tid));
      io.name.push_back(func_names[f]);
      io.op.push_back(io_op(r.func));
      io.fd.push_back(r.fd);
      io.path.push_back(sid(r.path));
      io.bytes.push_back(r.bytes);
      io.offset.push_back(r.offset);
      io.result.push_back(r.result);
      io.err.push_back(static_cast<std::int16_t>(r.err));  // an errno: below 4096
    }
  }

  void push_range(std::uint32_t tid, Ns start, Ns d, StringId name, trace::RangeKind kind, StringId domain,
                  StringId args = 0) {
    t_.ranges.push(start, d, track(tid), name, kind, domain, 0, args);  // finalize() computes the depth
  }

  // The name and args of a range or mark: an NVTX name that carries per-call arguments
  // (PyTorch's "aten::mm, seq = 12, sizes = [...]") is split into the op and its args.
  std::pair<StringId, StringId> name_and_args(RangeSource source, std::uint32_t name) {
    if (source != RangeSource::Nvtx) return {sid(name), 0};
    const auto [op, args] = trace::split_annotation_name(text(name));
    if (args.empty()) return {sid(name), 0};
    return {t_.strings.intern(op), t_.strings.intern(args)};
  }

  // Kind and domain of an NVTX / Python / user range or mark.
  std::pair<trace::RangeKind, StringId> classify(RangeSource source, std::uint32_t domain) {
    switch (source) {
      case RangeSource::Nvtx:
        return {trace::RangeKind::Nvtx, sid(domain)};
      case RangeSource::Python:
        return {trace::RangeKind::UserAnnotation, domain != 0 ? sid(domain) : t_.strings.intern("python")};
      case RangeSource::User:
        return {trace::RangeKind::UserAnnotation, sid(domain)};
    }
    return {trace::RangeKind::Other, sid(domain)};
  }

  void add_ranges() {
    for (const auto& [tid, r] : raw_.ranges) {
      const auto [kind, domain] = classify(r.source, r.domain);
      const auto [name, args] = name_and_args(r.source, r.name);
      push_range(tid, at(r.start_ns), dur(r.start_ns, r.end_ns), name, kind, domain, args);
      add_nccl_collective(tid, r);
    }
  }

  // NCCL's own NVTX ranges (domain "NCCL", named after the API call, e.g. "ncclAllReduce")
  // carry the per-rank byte count in their payload (the NVTX handler decodes NCCL's payload
  // schemas): they become host-side collectives, so every trace with NCCL NVTX has its
  // collective calls in one table. Communicator, root/peer and dtype are not in the records.
  void add_nccl_collective(std::uint32_t tid, const RangeRecord& r) {
    constexpr std::uint8_t kPayloadValid = 1u << 1;
    if (r.source != RangeSource::Nvtx || (r.flags & kPayloadValid) == 0 || text(r.domain) != "NCCL") return;
    const std::string_view name = text(r.name);
    if (!name.starts_with("nccl") || name.size() <= 4) return;
    std::string op(name.substr(4));  // "AllReduce" -> "allreduce", as Kineto names ops
    for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    t_.collectives.push(at(r.start_ns), dur(r.start_ns, r.end_ns), track(tid), sid(r.name),
                        t_.strings.intern(op), r.payload, 0, 0, -1, 0, trace::CollectiveSide::Host, 0);
  }

  void add_marks() {
    for (const auto& [tid, r] : raw_.marks) {
      if (text(r.name).starts_with(kNvtxCategoryPrefix)) {
        ++nvtx_categories_;
        continue;
      }
      const auto domain = classify(r.source, r.domain).second;
      const auto [name, args] = name_and_args(r.source, r.name);
      push_range(tid, at(r.ts_ns), 0, name, trace::RangeKind::Instant, domain, args);
    }
  }

  void add_steps() {
    const StringId step = t_.strings.intern("step");
    const StringId tracetune = t_.strings.intern("tracetune");
    for (const auto& [tid, r] : raw_.steps) {
      switch (r.kind) {
        case StepKind::Step:
          // On the thread that ran the step (the main thread in practice), as the Kineto
          // importer does for ProfilerStep#N.
          t_.steps.start.push_back(at(r.start_ns));
          t_.steps.dur.push_back(dur(r.start_ns, r.end_ns));
          t_.steps.track.push_back(track(tid));
          t_.steps.name.push_back(step);
          t_.steps.number.push_back(r.number);
          break;
        case StepKind::BatchWait:
          push_range(tid, at(r.start_ns), dur(r.start_ns, r.end_ns),
                     t_.strings.intern("DataLoader: waiting for batch"), trace::RangeKind::UserAnnotation,
                     tracetune);
          break;
        case StepKind::OptimizerStep:
          push_range(tid, at(r.start_ns), dur(r.start_ns, r.end_ns), t_.strings.intern("optimizer.step"),
                     trace::RangeKind::UserAnnotation, tracetune);
          break;
        default:
          ++unknown_steps_;
          break;
      }
    }
  }

  void add_counters() {
    auto& c = t_.counters;
    for (const auto& [tid, r] : raw_.counters) {
      c.ts.push_back(at(r.ts_ns));
      c.track.push_back(track(tid));
      c.name.push_back(sid(r.name));
      c.value.push_back(r.value);
    }
  }

  // Python stack samples: the file's frame ids become the trace's interned frames (the first
  // definition of an id wins; an id never defined is an unknown frame), each sample's stack an
  // interned node chain.
  void add_py_samples() {
    if (raw_.py_samples.empty()) return;
    trace::PyStackBuilder stacks(t_);
    std::unordered_map<std::uint32_t, std::uint32_t> frames;  // file frame id -> trace frame
    for (const PyFrameRecord& f : raw_.py_frames)
      if (!frames.contains(f.id)) frames.emplace(f.id, stacks.frame({sid(f.function), sid(f.file), f.line}));
    std::vector<std::uint32_t> chain;
    for (const auto& s : raw_.py_samples) {
      chain.clear();
      for (std::uint32_t i = 0; i < s.depth; ++i) {
        const auto it = frames.find(raw_.py_sample_frames[s.first + i]);
        if (it == frames.end()) ++undefined_py_frames_;
        chain.push_back(it != frames.end() ? it->second : stacks.frame({}));
      }
      t_.py_samples.ts.push_back(at(s.ts_ns));
      t_.py_samples.track.push_back(track(s.tid));
      t_.py_samples.stack.push_back(stacks.stack(chain));
    }
  }

  // ---- GPU capture ----

  void add_gpu_status() {
    bool cuda = false, active = false, nccl = false;
    for (const auto& [tid, r] : raw_.gpu_status) {
      const std::string_view msg = text(r.message);
      if (r.component == GpuComponent::NcclProfiler) {
        nccl |= r.status == GpuStatus::Active;
        continue;
      }
      cuda = true;
      switch (r.status) {
        case GpuStatus::Active:
          active = true;
          break;
        case GpuStatus::Flushed:
          break;
        case GpuStatus::NoDevice:
        case GpuStatus::CuptiUnavailable:
        case GpuStatus::CuptiInUse:
        case GpuStatus::CuptiError:
        case GpuStatus::TakenOver: {
          std::string line = msg.empty() ? fmt::format("GPU capture status {}", static_cast<int>(r.status))
                                         : std::string(msg);
          if (r.status == GpuStatus::TakenOver) {
            line += fmt::format(" (at {} ns)", at(r.ts_ns));
            add_timed_diagnostic(trace::DiagnosticKind::Truncated, line, at(r.ts_ns));
          } else {
            t_.add_diagnostic(trace::DiagnosticKind::Note, source_, line);
          }
          if (std::find(report_.gpu_notes.begin(), report_.gpu_notes.end(), line) == report_.gpu_notes.end())
            report_.gpu_notes.push_back(line);
          break;
        }
      }
    }
    report_.cuda_processes += cuda ? 1 : 0;
    report_.cupti_active += active ? 1 : 0;
    report_.nccl_processes += nccl ? 1 : 0;
    if (cuda || nccl)
      t_.metadata.emplace_back("process." + std::to_string(process_) + ".gpu_capture",
                               std::string(active ? "cupti" : cuda ? "cupti-unavailable" : "") +
                                   (nccl ? (active || cuda ? ",nccl" : "nccl") : ""));
  }

  // The trace device of a CUDA ordinal in this process (created on first use).
  std::uint32_t device(std::uint32_t index) {
    if (const auto it = devices_.find(index); it != devices_.end()) return it->second;
    trace::Device d;
    d.process = process_;
    d.index = static_cast<std::int32_t>(index);
    d.vendor = "NVIDIA";
    const std::uint32_t id = t_.add_device(std::move(d));
    devices_.emplace(index, id);
    return id;
  }
  // The track of a (device, stream) pair (created on first use).
  std::uint32_t stream_track(std::uint32_t dev, std::uint32_t stream) {
    const std::uint64_t key = (std::uint64_t{dev} << 32) | stream;
    if (const auto it = streams_.find(key); it != streams_.end()) return it->second;
    trace::Stream st;
    st.device = device(dev);
    st.stream = stream;
    const std::uint32_t track = t_.add_stream(std::move(st));
    streams_.emplace(key, track);
    return track;
  }

  void add_gpu_activity() {
    for (const auto& [tid, r] : raw_.gpu_devices) {
      const std::uint32_t id = device(static_cast<std::uint32_t>(r.index));
      trace::Device& d = t_.devices[id];
      d.name = text(r.name);
      d.uuid = text(r.uuid);
      d.sm_count = r.sm_count;
      d.total_memory = r.total_memory;
      d.compute_major = r.compute_major;
      d.compute_minor = r.compute_minor;
      ++report_.gpu_devices;
    }
    for (const auto& [tid, r] : raw_.gpu_kernels) {
      auto& k = t_.kernels;
      k.push_span(at(r.start_ns), dur(r.start_ns, r.end_ns), stream_track(r.device, r.stream), sid(r.name));
      k.correlation.push_back(r.correlation);
      k.external_id.push_back(0);
      trace::LaunchConfig c;
      c.grid_x = r.grid_x;
      c.grid_y = r.grid_y;
      c.grid_z = r.grid_z;
      c.block_x = r.block_x;
      c.block_y = r.block_y;
      c.block_z = r.block_z;
      c.registers = r.registers;
      c.shared_static = r.shared_static;
      c.shared_dynamic = r.shared_dynamic;
      k.config.push_back(t_.intern_config(c));
      k.graph_id.push_back(r.graph_id);
    }
    for (const auto& [tid, r] : raw_.gpu_memcpys) {
      auto& m = t_.memcpys;
      const auto dir = memcpy_direction(r.copy_kind);
      const auto src = memory_kind(r.src_kind), dst = memory_kind(r.dst_kind);
      m.push_span(at(r.start_ns), dur(r.start_ns, r.end_ns), stream_track(r.device, r.stream),
                  t_.strings.intern(fmt::format("Memcpy {} ({} -> {})", trace::to_string(dir),
                                                trace::to_string(src), trace::to_string(dst))));
      m.bytes.push_back(r.bytes);
      m.correlation.push_back(r.correlation);
      m.direction.push_back(dir);
      m.src_kind.push_back(src);
      m.dst_kind.push_back(dst);
      m.async.push_back((r.flags & kCuptiFlagAsync) != 0 ? 1 : 0);
    }
    for (const auto& [tid, r] : raw_.gpu_memsets) {
      auto& m = t_.memsets;
      const auto kind = memory_kind(r.mem_kind);
      m.push_span(at(r.start_ns), dur(r.start_ns, r.end_ns), stream_track(r.device, r.stream),
                  t_.strings.intern(fmt::format("Memset ({})", trace::to_string(kind))));
      m.bytes.push_back(r.bytes);
      m.correlation.push_back(r.correlation);
      m.mem_kind.push_back(kind);
      m.value.push_back(r.value);
    }
    report_.gpu_activities += raw_.gpu_kernels.size() + raw_.gpu_memcpys.size() + raw_.gpu_memsets.size();

    // API calls sit on the thread that made them; a sync record (which CUPTI gives no thread)
    // sits on the thread of the API call with its correlation id.
    std::unordered_map<std::uint32_t, std::uint32_t> api_thread;  // correlation -> tid
    for (const auto& [tid, r] : raw_.gpu_apis) {
      auto& a = t_.api_calls;
      a.push_span(at(r.start_ns), dur(r.start_ns, r.end_ns), track(r.tid), sid(r.name));
      a.correlation.push_back(r.correlation);
      a.external_id.push_back(0);
      a.cbid.push_back(r.cbid);
      a.return_value.push_back(r.return_value);
      a.api.push_back(r.kind == 0 ? trace::ApiKind::Runtime : r.kind == 1 ? trace::ApiKind::Driver
                                                                           : trace::ApiKind::Other);
      if (r.correlation != 0) api_thread.emplace(r.correlation, r.tid);
    }
    const std::uint32_t main_track = track(static_cast<std::uint32_t>(raw_.header.pid));
    for (const auto& [tid, r] : raw_.gpu_syncs) {
      auto& y = t_.syncs;
      const auto type = r.type >= 1 && r.type <= 4 ? static_cast<trace::SyncType>(r.type) : trace::SyncType::Unknown;
      const auto it = api_thread.find(r.correlation);
      const std::uint32_t tr = it != api_thread.end() ? track(it->second) : main_track;
      if (it == api_thread.end()) ++unmatched_syncs_;
      y.push_span(at(r.start_ns), dur(r.start_ns, r.end_ns), tr,
                  t_.strings.intern(fmt::format("Sync ({})", trace::to_string(type))));
      y.correlation.push_back(r.correlation);
      y.type.push_back(type);
      y.stream.push_back(r.stream == kCuptiInvalid ? -1 : static_cast<std::int64_t>(r.stream));
      y.event.push_back(r.event == kCuptiInvalid ? -1 : static_cast<std::int64_t>(r.event));
    }
    // Whole-graph launches (GRAPH_TRACE) are spans on their stream; their kernels, when traced
    // node by node, carry the graph id in `kernels.graph_id` instead.
    const StringId cuda = t_.strings.intern("cuda");
    for (const auto& [tid, r] : raw_.gpu_graph_launches)
      t_.ranges.push(at(r.start_ns), dur(r.start_ns, r.end_ns), stream_track(r.device, r.stream),
                     t_.strings.intern(fmt::format("CUDA graph {}", r.graph_id)), trace::RangeKind::GpuAnnotation,
                     cuda, r.correlation);
    const StringId cupti = t_.strings.intern("cupti");
    for (const auto& [tid, r] : raw_.gpu_overheads) {
      const std::uint32_t tr =
          r.object_kind == kCuptiObjectThread && r.object_id != 0 ? track(r.object_id) : main_track;
      t_.ranges.push(at(r.start_ns), dur(r.start_ns, r.end_ns), tr,
                     t_.strings.intern(fmt::format("CUPTI overhead: {}", overhead_name(r.kind))),
                     trace::RangeKind::ProfilerSpan, cupti);
    }
  }

  // Where CUDA events were recorded (CUPTI CUDA_EVENT): an event_record row on the recording
  // stream, with the record call's correlation id, at that call's start (CUPTI gives the record
  // no time); the stream waits on the same event id (syncs, stream_wait_event) then depend on
  // it, as from the Kineto importer (docs/trace-format.md, "syncs").
  void add_cuda_event_records() {
    if (raw_.gpu_cuda_events.empty()) return;
    std::unordered_map<std::uint32_t, Ns> call_start;  // record call's correlation -> its start
    for (const auto& [tid, r] : raw_.gpu_cuda_events) call_start.emplace(r.correlation, -1);
    for (const auto& [tid, r] : raw_.gpu_apis)
      if (auto it = call_start.find(r.correlation); it != call_start.end() && it->second < 0) it->second = r.start_ns;
    const StringId name = t_.strings.intern("Event Record");
    for (const auto& [tid, r] : raw_.gpu_cuda_events) {
      const Ns start = call_start[r.correlation];
      if (r.correlation == 0 || start < 0 || r.stream == kCuptiInvalid || r.event == kCuptiInvalid) {
        ++unplaced_event_records_;
        continue;
      }
      auto& y = t_.syncs;
      y.push_span(at(start), 0, stream_track(r.device, r.stream), name);
      y.correlation.push_back(r.correlation);
      y.type.push_back(trace::SyncType::EventRecord);
      y.stream.push_back(static_cast<std::int64_t>(r.stream));
      y.event.push_back(static_cast<std::int64_t>(r.event));
    }
  }

  // CUPTI's device-memory allocations and releases become, per device, the bytes the job's
  // allocators hold after each: "cuda:N memory.reserved" (what the memory analysis reads, as
  // from nsys), or "cuda:N memory.cuda_malloc" when the Python integration already samples
  // PyTorch's reserved bytes in this process (CUPTI's count also holds other libraries').
  void add_gpu_memory() {
    if (raw_.gpu_memory.empty()) return;
    std::set<std::string_view> python_counters;
    for (const auto& [tid, r] : raw_.counters) python_counters.insert(text(r.name));
    std::vector<GpuMemoryRecord> events;
    for (const auto& [tid, r] : raw_.gpu_memory)
      if (r.mem_kind == kCuptiMemoryKindDevice) events.push_back(r);
    std::stable_sort(events.begin(), events.end(), [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
    struct Device {
      std::int64_t held = 0;  // bytes
      StringId counter = 0;
    };
    std::map<std::uint32_t, Device> devices;
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::int64_t> live;  // (device, address) -> bytes
    const std::uint32_t main_track = track(static_cast<std::uint32_t>(raw_.header.pid));
    constexpr std::uint64_t kMaxBytes = std::numeric_limits<std::int64_t>::max();
    for (const GpuMemoryRecord& r : events) {
      Device& d = devices[r.device];
      if (d.counter == 0) {
        const std::string reserved = fmt::format("cuda:{} memory.reserved", r.device);
        d.counter = t_.strings.intern(python_counters.contains(reserved) ? fmt::format("cuda:{} memory.cuda_malloc", r.device)
                                                                          : reserved);
      }
      const auto bytes = static_cast<std::int64_t>(std::min(r.bytes, kMaxBytes));
      if (r.op == GpuMemoryOp::Allocate) {
        live[{r.device, r.address}] = bytes;
        d.held += bytes;
      } else {  // a release frees what its allocation took (a release we never saw allocated: its own size)
        const auto it = live.find({r.device, r.address});
        d.held = std::max<std::int64_t>(0, d.held - (it != live.end() ? it->second : bytes));
        if (it != live.end()) live.erase(it);
      }
      auto& c = t_.counters;
      c.ts.push_back(at(r.ts_ns));
      c.track.push_back(main_track);
      c.name.push_back(d.counter);
      c.value.push_back(static_cast<double>(d.held));
    }
  }

  void add_nccl() {
    struct Comm {
      std::int32_t nranks = -1;
      StringId id = 0;
      Ns offset = 0;  // GPU globaltimer -> CLOCK_MONOTONIC
      bool offset_known = false;
      std::string library = "nccl";  // what ran it: the name's prefix ("ncclAllReduce", "glooAllReduce")
    };
    std::unordered_map<std::uint64_t, Comm> comms;
    auto comm = [&](std::uint64_t id) -> Comm& {
      auto [it, fresh] = comms.try_emplace(id);
      if (fresh) it->second.id = t_.strings.intern(fmt::format("{:016x}", id));
      return it->second;
    };
    for (const auto& [tid, r] : raw_.nccl_comms) {
      Comm& c = comm(r.comm_id);
      c.nranks = r.nranks;
      const std::string_view name = text(r.name);
      if (const auto backend = c10d_backend(name); !backend.empty()) c.library = backend;
      // every rank's process names the communicator: one entry per communicator in the trace
      if (!name.empty()) set_metadata(t_, fmt::format("nccl_comm:{:016x}", r.comm_id), std::string(name));
    }
    // The GPU's globaltimer is not our clock. Each device-side record pairs its last channel
    // stop (GPU) with the host time the plugin saw it, which is later by the proxy thread's
    // polling delay: the smallest difference per communicator is the best offset estimate.
    for (const auto& [tid, r] : raw_.nccl_colls) {
      if (r.side != NcclSide::Device || r.observed_ns == 0) continue;
      Comm& c = comm(r.comm_id);
      const Ns d = sat_sub(r.observed_ns, r.end_ns);
      if (!c.offset_known || d < c.offset) c.offset = d;
      c.offset_known = true;
    }
    for (const auto& [tid, r] : raw_.nccl_colls) {
      Comm& c = comm(r.comm_id);
      const bool device_side = r.side == NcclSide::Device;
      if (device_side && !c.offset_known) continue;
      const Ns start = device_side ? sat_add(r.start_ns, c.offset) : r.start_ns;
      const Ns end = device_side ? sat_add(r.end_ns, c.offset) : r.end_ns;
      const std::string_view func = text(r.func);
      std::string op(func);
      for (char& ch : op) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      auto& col = t_.collectives;
      col.push(at(start), dur(start, end), track(tid), t_.strings.intern(fmt::format("{}{}", c.library, func)),
               t_.strings.intern(op), r.count * nccl_dtype_size(text(r.dtype)), r.count, sid(r.dtype), c.nranks,
               c.id, device_side ? trace::CollectiveSide::Device : trace::CollectiveSide::Host, 0);
      col.algorithm.back() = sid(r.algo);
      col.protocol.back() = sid(r.proto);
      col.channels.back() = r.channels;
      col.seq.back() = r.seq;
      col.peer.back() = r.peer;
      col.root.back() = r.kind == NcclOpKind::Collective ? r.root : -1;
      ++report_.nccl_operations;
    }
  }

  // Statically linked programs this process (or a vfork child of it) exec'd ran unrecorded:
  // LD_PRELOAD cannot reach them. The header keeps the count and the first one's path.
  void note_static_execs() {
    const RecordFileHeader& h = raw_.header;
    if (h.static_execs == 0) return;
    const std::string program = h.static_program.empty() ? "a program" : h.static_program;
    t_.add_diagnostic(trace::DiagnosticKind::Skipped, source_,
                      "I/O of " + program + (h.static_execs > 1 ? " and other programs" : "") +
                          " exec'd here (statically linked, so LD_PRELOAD cannot reach them)",
                      h.static_execs);
    report_.static_programs[program] += h.static_execs;
  }

  void add_diagnostics() {
    using trace::DiagnosticKind;
    const RawProcess& p = raw_;
    note_static_execs();
    for (const auto& [tid, r] : p.dropped) {
      const std::string_view reason = text(r.reason);
      t_.add_diagnostic(
          DiagnosticKind::Dropped, source_,
          reason.empty() ? std::string_view("records not written (no reason recorded)") : reason, r.count);
      report_.dropped_records += r.count;
    }
    for (int r = 0; r < kDropReasons; ++r) {  // counts no Dropped record carries (kDropsInHeader)
      if (p.header.dropped[r] == 0) continue;
      const bool has_text = r == kDropStopped && !p.header.stop_reason.empty();
      t_.add_diagnostic(DiagnosticKind::Dropped, source_,
                        has_text ? std::string_view(p.header.stop_reason) : kDropText[r], p.header.dropped[r]);
      report_.dropped_records += p.header.dropped[r];
    }
    if (p.header.has(kRecordingStopped)) {
      t_.add_diagnostic(DiagnosticKind::Note, source_,
                        "recording stopped early (see the dropped-record diagnostics)");
      report_.warnings.push_back(source_ +
                                 ": recording stopped early; later events of this process are missing");
    }
    if (p.torn_records > 0) {
      t_.add_diagnostic(DiagnosticKind::Truncated, source_,
                        "torn records (bad checksum or frame); the rest of their chunk was not read",
                        p.torn_records);
      report_.torn_records += p.torn_records;
    }
    if (p.unknown_records > 0)
      t_.add_diagnostic(DiagnosticKind::Skipped, source_, "records of a type this version does not read",
                        p.unknown_records);
    if (p.malformed_records > 0)
      t_.add_diagnostic(DiagnosticKind::Skipped, source_, "records too short for their type",
                        p.malformed_records);
    if (p.unmapped_io > 0)
      t_.add_diagnostic(DiagnosticKind::Skipped, source_,
                        "I/O records timed by the TSC without two clock-sync pairs to map them", p.unmapped_io);
    if (unknown_steps_ > 0)
      t_.add_diagnostic(DiagnosticKind::Skipped, source_, "step records of an unknown kind", unknown_steps_);
    if (!p.cut_short.empty()) {
      t_.add_diagnostic(DiagnosticKind::Truncated, source_, "reading stopped early: " + p.cut_short);
      report_.warnings.push_back(source_ + ": " + p.cut_short + "; later events of this process are missing");
    }
    if (p.partial_chunk || p.short_file)
      t_.add_diagnostic(DiagnosticKind::Note, source_,
                        "file ends inside its last chunk (the process ended while reserving it)");
    if (clamped_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_,
                        "events ending before they start or past the end of 64-bit time (durations clamped)", clamped_);
    if (unresolved_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_, "string ids without a String record (left empty)",
                        unresolved_);
    if (nvtx_categories_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_, "NVTX category names (not events)", nvtx_categories_);
    if (undefined_py_frames_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_, "Python sample frames without a PyFrame record (left unknown)",
                        undefined_py_frames_);
    if (unmatched_syncs_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_,
                        "CUDA synchronizations without their API call (placed on the main thread)", unmatched_syncs_);
    if (unplaced_event_records_ > 0)
      t_.add_diagnostic(DiagnosticKind::Skipped, source_,
                        "CUDA event records without their record call, stream or event id (not placed)",
                        unplaced_event_records_);
  }

  trace::Trace& t_;
  MergeReport& report_;
  const RawProcess& raw_;
  const Ns offset_;
  const std::string source_;
  std::uint32_t process_ = trace::kNone;
  std::unordered_map<std::uint32_t, std::uint32_t> tracks_;  // tid -> track
  std::set<std::string>& environments_;
  std::vector<TimedText>& timed_texts_;
  std::unordered_map<std::uint32_t, StringId> sids_;
  std::unordered_map<std::uint32_t, std::uint32_t> devices_;  // CUDA ordinal -> trace device
  std::unordered_map<std::uint64_t, std::uint32_t> streams_;  // (device << 32 | stream) -> track
  std::uint64_t clamped_ = 0, unresolved_ = 0, nvtx_categories_ = 0, unknown_steps_ = 0, unmatched_syncs_ = 0,
                undefined_py_frames_ = 0, unplaced_event_records_ = 0;
};

}  // namespace

std::string MergeReport::gpu_line(bool cupti_built) const {
  std::string line;
  if (cupti_active > 0 && (gpu_devices > 0 || gpu_activities > 0))
    line = fmt::format("{} GPU device record(s), {} kernels/copies/memsets from CUPTI in {} of {} processes",
                       gpu_devices, gpu_activities, cupti_active, processes);
  else if (cuda_processes > 0)
    line = fmt::format("no GPU activity seen: CUDA was initialised in {} process(es) but CUPTI recorded no device "
                       "or kernel", cuda_processes);
  else if (cupti_built)
    line = "no GPU seen: no process of the job initialised CUDA (CPU side recorded)";
  else
    line = "no GPU capture in this build (built without the CUDA toolkit)";
  if (nccl_processes > 0)
    line += fmt::format("; NCCL profiler plugin: {} operations in {} processes", nccl_operations, nccl_processes);
  return line;
}

namespace {

// Where the events of each converted file go: nowhere (they stay in the trace: merge_raw), or
// to `sink`, called with the trace holding the file's events alone and its process, which takes
// them out of the trace (merge_raw_to_file). Events stay copied in the trace only for steps and
// collectives: the clock alignment and the summary read them whole.
using EventSink = std::function<Status(trace::Trace& part, std::uint32_t process)>;

struct Merged {
  trace::Trace trace;
  std::vector<Ns> shift_by_process;  // the collectives' clock corrections; empty: none
};

// The events converted since the last call, taken out of `t` (the steps and collectives: from
// row `kept_steps` / `kept_collectives` on, copied).
trace::Trace take_events(trace::Trace& t, std::size_t& kept_steps, std::size_t& kept_collectives) {
  trace::Trace part;
  trace::Trace::for_each_event_table([](auto& from, auto& to) { to = std::exchange(from, {}); }, t, part);
  part.py_samples = std::exchange(t.py_samples, {});
  std::swap(t.steps, part.steps);  // they stay whole in t; the part gets their new rows
  std::swap(t.collectives, part.collectives);
  part.steps = trace::rows_from(t.steps, kept_steps);
  part.collectives = trace::rows_from(t.collectives, kept_collectives);
  kept_steps = t.steps.size();
  kept_collectives = t.collectives.size();
  return part;
}

Result<Merged> merge_files(std::span<const fs::path> dirs, const MergeOptions& options, MergeReport& report,
                           const EventSink& sink) {
  auto found = find_record_files(dirs);
  if (!found) return Error{found.error()};
  const std::vector<fs::path>& files = found.value();

  Merged merged;
  trace::Trace& t = merged.trace;
  std::string first_error;
  auto skip = [&](const fs::path& file, const std::string& error) {
    // The reader's messages start with the path, which is already the diagnostic's source.
    const std::string prefix = file.string() + ": ";
    t.add_diagnostic(trace::DiagnosticKind::Skipped, file.string(),
                     error.starts_with(prefix) ? error.substr(prefix.size()) : error);
    report.warnings.push_back("skipped " + error);
    ++report.skipped_files;
    if (first_error.empty()) first_error = error;
  };

  std::vector<std::optional<RecordFileHeader>> headers(files.size());
  std::vector<char> readable(files.size(), 0);
  for (std::size_t i = 0; i < files.size(); ++i) {
    auto h = read_record_header(files[i]);
    if (!h) {
      skip(files[i], h.error());
      continue;
    }
    headers[i] = std::move(h.value());
    readable[i] = 1;
  }
  const std::map<std::string, Ns> offsets = align_clocks(headers, t, report);
  std::set<std::string> environments;
  std::vector<TimedText> timed_texts;
  std::size_t kept_steps = 0, kept_collectives = 0;
  Status sunk;  // the first error of the sink: later files are not converted

  auto convert = [&](std::size_t i, Result<RawProcess>* raw) {
    if (raw != nullptr && !*raw) skip(files[i], raw->error());
    if (raw != nullptr && *raw && sunk) {
      if (options.keep_from_ns != INT64_MIN || options.keep_to_ns != INT64_MAX)
        crop_raw_process(raw->value(), options.keep_from_ns, options.keep_to_ns);
      const RawProcess& p = raw->value();
      const auto off = offsets.find(p.header.host);
      ProcessConverter(t, report, p, off == offsets.end() ? 0 : off->second, environments, timed_texts).run();
      ++report.files;
      if (sink) {
        trace::Trace part = take_events(t, kept_steps, kept_collectives);
        sunk = sink(part, static_cast<std::uint32_t>(t.processes.size() - 1));
      }
    }
    if (options.progress) options.progress(i + 1, files.size());
  };
  if (options.keep_last_steps > 0) {  // each process's cut depends on the others': all of them first
    std::vector<std::optional<Result<RawProcess>>> all(files.size());
    read_in_order(files, readable, [&](std::size_t i, Result<RawProcess>* raw) {
      if (raw != nullptr) all[i].emplace(std::move(*raw));
    });
    std::vector<RawProcess*> read;
    for (auto& raw : all)
      if (raw && *raw) read.push_back(&raw->value());
    crop_to_last_steps(read, options.keep_last_steps);
    for (std::size_t i = 0; i < files.size(); ++i) convert(i, all[i] ? &*all[i] : nullptr);
  } else {
    read_in_order(files, readable, convert);
  }
  if (!sunk) return Error{sunk.error()};

  if (report.files == 0)
    return make_error("no readable record file among " + std::to_string(files.size()) +
                      " found (first: " + first_error + ")");
  merged.shift_by_process = refine_clocks_from_collectives(t, report, timed_texts);
  for (const fs::path& dir : dirs)
    for (auto& [key, value] : window_metadata(dir)) set_metadata(t, key, value);
  return merged;
}

// The trace file of merge_raw_to_file, created once its page size is known: write_trace takes
// 64 KiB pages above 200,000 events, so the first files' events wait in memory until there are
// more than that, or until the last file (then 4 KiB pages): as write_trace decides for the whole.
class LazyTraceFile {
 public:
  explicit LazyTraceFile(fs::path path) : path_(std::move(path)) {}

  Status append(trace::Trace part) {
    if (writer_) return writer_->append(part);
    pending_events_ += part.event_count();
    pending_.push_back(std::move(part));
    return pending_events_ > kBigPagesEvents ? open(true) : Status{};
  }
  // The writer, with every waiting part appended.
  Result<trace::TraceFileWriter*> writer() {
    if (!writer_)
      if (auto st = open(false); !st) return Error{st.error()};
    return writer_.get();
  }

 private:
  static constexpr std::size_t kBigPagesEvents = 200'000;
  Status open(bool big_pages) {
    auto w = trace::TraceFileWriter::create(path_, big_pages);
    if (!w) return Error{w.error()};
    writer_ = std::move(w.value());
    for (trace::Trace& part : pending_)
      if (auto st = writer_->append(part); !st) return st;
    pending_.clear();
    return {};
  }
  fs::path path_;
  std::unique_ptr<trace::TraceFileWriter> writer_;
  std::vector<trace::Trace> pending_;
  std::size_t pending_events_ = 0;
};

// What `tracetune info` says of the trace merge_raw_to_file wrote, made as it is written: the
// event counts of each file's events, and the time span of each process, moved with its clock.
class StreamedSummary {
 public:
  void add(const trace::Trace& part, std::uint32_t process) {
    const trace::TraceSummary s = trace::summarize(part);
    for (const auto& [kind, n] : s.counts) counts_[kind] += n;
    total_ += s.total_events;
    if (part.event_count() == part.flows.size()) return;  // no span or counter: no time (Trace::time_bounds)
    const auto [lo, hi] = part.time_bounds();
    bounds_.push_back({process, lo, hi});
  }
  // `t`: the merged trace without its events but the steps and collectives, times corrected.
  trace::TraceSummary finish(const trace::Trace& t, std::span<const Ns> shift_by_process) const {
    trace::TraceSummary s = trace::summarize(t);
    s.counts = counts_;
    s.total_events = total_;
    bool any = false;
    for (const Bounds& b : bounds_) {
      const Ns shift = b.process < shift_by_process.size() ? shift_by_process[b.process] : 0;
      const Ns lo = sat_add(b.lo, shift), hi = sat_add(b.hi, shift);
      s.start = any ? std::min(s.start, lo) : lo;
      s.end = any ? std::max(s.end, hi) : hi;
      any = true;
    }
    if (!any) s.start = s.end = 0;
    return s;
  }

 private:
  struct Bounds {
    std::uint32_t process = 0;
    Ns lo = 0, hi = 0;
  };
  std::map<std::string, std::uint64_t> counts_;
  std::uint64_t total_ = 0;
  std::vector<Bounds> bounds_;
};

// Track k's shift: that of its process.
std::vector<Ns> shift_by_track(const trace::Trace& t, std::span<const Ns> shift_by_process) {
  std::vector<Ns> out(t.tracks.size(), 0);
  for (std::uint32_t k = 0; k < t.tracks.size(); ++k)
    if (const std::uint32_t p = t.process_of_track(k); p < shift_by_process.size()) out[k] = shift_by_process[p];
  return out;
}

}  // namespace

Result<trace::Trace> merge_raw(std::span<const fs::path> dirs, const MergeOptions& options,
                               MergeReport& report) {
  auto merged = merge_files(dirs, options, report, nullptr);
  if (!merged) return Error{merged.error()};
  return std::move(merged.value().trace);
}

Result<trace::TraceSummary> merge_raw_to_file(std::span<const fs::path> dirs, const MergeOptions& options,
                                              MergeReport& report, const MergeOutput& output) {
  LazyTraceFile file(output.path);
  StreamedSummary summary;
  auto merged = merge_files(dirs, options, report, [&](trace::Trace& part, std::uint32_t process) {
    summary.add(part, process);
    return file.append(std::move(part));
  });
  if (!merged) return Error{merged.error()};
  auto writer = file.writer();
  if (!writer) return Error{writer.error()};
  trace::TraceFileWriter& w = *writer.value();
  trace::Trace& t = merged.value().trace;
  const std::vector<Ns>& shifts = merged.value().shift_by_process;
  if (!shifts.empty())
    if (auto st = w.shift_times(shift_by_track(t, shifts)); !st) return Error{st.error()};
  for (const auto& kv : output.metadata) t.metadata.push_back(kv);
  if (auto st = w.finish(t, output.created_by); !st) return Error{st.error()};
  return summary.finish(t, shifts);
}

}  // namespace tt::collector
