// Raw record files (one per process, one directory per host) -> one Trace.
//
// Place in the data flow: collector ──▶ <dir>/<host>/proc-*.ttr ──record_reader──▶ RawProcess
// ──this──▶ Trace ──(caller)──▶ finalize / write_trace. Used by `tracetune record` once the
// job has ended and by `tracetune merge DIR...` for outputs gathered from several nodes.
//
// Three passes:
//  1. find every *.ttr (sorted, duplicates removed: the trace must not depend on directory
//     order or on a directory being named twice);
//  2. read every header (4 KiB each) and derive one clock offset per host, so that events
//     are placed on the trace clock as they are converted, with no second pass over tables;
//  3. read the files in parallel, convert them on this thread in file order (deterministic
//     string ids and track numbers), and free each one before the next: the readers run at
//     most a small window ahead, which bounds memory for jobs with hundreds of large files.
//
// Clocks: every record carries CLOCK_MONOTONIC, which is only comparable within one boot of
// one host. With one host the trace clock is that host's monotonic clock (offset 0). With
// several, each host gets offset = median over its files of (start_real - start_mono): the
// median shrugs off a file whose realtime anchor was taken across an NTP step.
//
// Each file is its own Process row, including the two files of a pid that called exec (the
// old image's file is flagged kExecReplaced): their command lines and threads differ.
// Damage never fails the merge: it becomes diagnostics, counts in the MergeReport and, for
// things a user should act on, warnings.
#include "tracetune/collector/merge.h"

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "tracetune/collector/record_reader.h"

namespace tt::collector {
namespace fs = std::filesystem;
using trace::Ns;
using trace::StringId;

namespace {

// Marks the NVTX handler emits to carry nvtxNameCategory(): "nvtx.category <id> <name>".
constexpr std::string_view kNvtxCategoryPrefix = "nvtx.category ";
constexpr std::string_view kAlignedClock = "CLOCK_REALTIME (aligned from per-host monotonic clocks)";

trace::IoOp io_op(IoFunc f) {
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

// Two's-complement arithmetic: times are checksummed writer output, but a crafted file must
// not be able to reach signed-overflow UB.
Ns wrap_add(Ns a, Ns b) {
  return static_cast<Ns>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
Ns wrap_sub(Ns a, Ns b) {
  return static_cast<Ns>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
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
    if (h) anchors[h->host].push_back(wrap_sub(h->start_real_ns, h->start_mono_ns));
  std::map<std::string, Ns> offsets;
  for (auto& [host, deltas] : anchors) {
    Ns offset = 0;
    if (anchors.size() > 1) {
      const auto mid = deltas.begin() + static_cast<std::ptrdiff_t>(deltas.size() / 2);
      std::nth_element(deltas.begin(), mid, deltas.end());
      offset = *mid;  // upper median: always one file's real anchor
    }
    offsets[host] = offset;
    report.hosts.push_back({host, offset, deltas.size()});
    t.metadata.emplace_back("clock_offset_ns:" + host, std::to_string(offset));
  }
  t.clock_domain = anchors.size() > 1 ? std::string(kAlignedClock) : std::string("CLOCK_MONOTONIC");
  return offsets;
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
  ProcessConverter(trace::Trace& t, MergeReport& report, const RawProcess& raw, Ns offset,
                   std::set<std::string>& environments)
      : t_(t), report_(report), raw_(raw), offset_(offset), source_(raw.path.string()),
        environments_(environments) {}

  void run() {
    add_process_and_threads();
    add_io();
    add_ranges();
    add_marks();
    add_steps();
    add_counters();
    add_diagnostics();
  }

 private:
  Ns at(Ns mono) const { return wrap_add(mono, offset_); }
  Ns dur(Ns start, Ns end) {
    const Ns d = wrap_sub(end, start);
    if (d >= 0) return d;
    ++clamped_;
    return 0;
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

  void add_process_and_threads() {
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
      t_.add_diagnostic(
          trace::DiagnosticKind::Truncated, source_,
          fmt::format("process {} has no exit record (killed or crashed); its last event is at {} ns", h.pid,
                      at(std::max(raw_.last_ts_ns, h.start_mono_ns))));
    }

    // Threads: the main thread always (the process's own track), then every thread that
    // wrote an event, by tid.
    std::vector<std::uint32_t> tids;
    auto collect = [&](const auto& records) {
      for (const auto& r : records) tids.push_back(r.tid);
    };
    collect(raw_.io);
    collect(raw_.ranges);
    collect(raw_.marks);
    collect(raw_.steps);
    collect(raw_.counters);
    std::sort(tids.begin(), tids.end());
    tids.erase(std::unique(tids.begin(), tids.end()), tids.end());
    const auto main_tid = static_cast<std::uint32_t>(h.pid);
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
    for (const auto tid : tids)
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
      io.err.push_back(r.err);
    }
  }

  void push_range(std::uint32_t tid, Ns start, Ns d, StringId name, trace::RangeKind kind, StringId domain) {
    t_.ranges.push(start, d, track(tid), name, kind, domain);  // finalize() computes the depth
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
      push_range(tid, at(r.start_ns), dur(r.start_ns, r.end_ns), sid(r.name), kind, domain);
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
      push_range(tid, at(r.ts_ns), 0, sid(r.name), trace::RangeKind::Instant, domain);
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

  void add_diagnostics() {
    using trace::DiagnosticKind;
    const RawProcess& p = raw_;
    for (const auto& [tid, r] : p.dropped) {
      const std::string_view reason = text(r.reason);
      t_.add_diagnostic(
          DiagnosticKind::Dropped, source_,
          reason.empty() ? std::string_view("records not written (no reason recorded)") : reason, r.count);
      report_.dropped_records += r.count;
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
    if (unknown_steps_ > 0)
      t_.add_diagnostic(DiagnosticKind::Skipped, source_, "step records of an unknown kind", unknown_steps_);
    if (p.partial_chunk || p.short_file)
      t_.add_diagnostic(DiagnosticKind::Note, source_,
                        "file ends inside its last chunk (the process ended while reserving it)");
    if (clamped_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_,
                        "events ending before they start (duration clamped to 0)", clamped_);
    if (unresolved_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_, "string ids without a String record (left empty)",
                        unresolved_);
    if (nvtx_categories_ > 0)
      t_.add_diagnostic(DiagnosticKind::Note, source_, "NVTX category names (not events)", nvtx_categories_);
  }

  trace::Trace& t_;
  MergeReport& report_;
  const RawProcess& raw_;
  const Ns offset_;
  const std::string source_;
  std::uint32_t process_ = trace::kNone;
  std::unordered_map<std::uint32_t, std::uint32_t> tracks_;  // tid -> track
  std::set<std::string>& environments_;
  std::unordered_map<std::uint32_t, StringId> sids_;
  std::uint64_t clamped_ = 0, unresolved_ = 0, nvtx_categories_ = 0, unknown_steps_ = 0;
};

}  // namespace

Result<trace::Trace> merge_raw(std::span<const fs::path> dirs, const MergeOptions& options,
                               MergeReport& report) {
  auto found = find_record_files(dirs);
  if (!found) return Error{found.error()};
  const std::vector<fs::path>& files = found.value();

  trace::Trace t;
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

  read_in_order(files, readable, [&](std::size_t i, Result<RawProcess>* raw) {
    if (raw != nullptr && !*raw) skip(files[i], raw->error());
    if (raw != nullptr && *raw) {
      const RawProcess& p = raw->value();
      const auto off = offsets.find(p.header.host);
      ProcessConverter(t, report, p, off == offsets.end() ? 0 : off->second, environments).run();
      ++report.files;
    }
    if (options.progress) options.progress(i + 1, files.size());
  });

  if (report.files == 0)
    return make_error("no readable record file among " + std::to_string(files.size()) +
                      " found (first: " + first_error + ")");
  return t;
}

}  // namespace tt::collector
