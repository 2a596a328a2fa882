// The trace model: what every tracetune source (collector, Kineto JSON, nsys SQLite) becomes.
//
// A Trace is columnar: one table per event kind, each a struct of arrays, with every event
// on a *track* (a thread, a GPU stream, a process). After `finalize()` each table is sorted
// by (track, start) so every track is a contiguous, start-sorted slice that range queries
// binary-search. Strings are interned once; events hold 32-bit ids. There is no per-event heap
// object, and the per-event footprint stays under 48 bytes (tests/unit/trace_model_test.cpp
// checks the budget on a real trace).
//
// Times are integer nanoseconds on the trace's single clock (`Trace::clock_domain`).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tracetune/trace/packed_column.h"
#include "tracetune/trace/strings.h"

namespace tt::trace {

using Ns = std::int64_t;
inline constexpr std::uint32_t kNone = 0xffffffffu;  // "no value" for 32-bit ids and counts

// ---- enumerations (the numeric values are part of the file format: never renumber) ----

enum class TrackType : std::uint8_t { Thread = 0, Stream = 1, Process = 2, Device = 3 };

enum class MemcpyDirection : std::uint8_t {
  Unknown = 0, HtoD = 1, DtoH = 2, DtoD = 3, HtoH = 4, PtoP = 5,
};
enum class MemoryKind : std::uint8_t {
  Unknown = 0, Pageable = 1, Pinned = 2, Device = 3, Managed = 4, Array = 5,
};
enum class ApiKind : std::uint8_t { Runtime = 0, Driver = 1, Other = 2 };
enum class SyncType : std::uint8_t {
  Unknown = 0, EventSync = 1, StreamWaitEvent = 2, StreamSync = 3, ContextSync = 4,
  EventRecord = 5,  // not a wait: where an event was recorded (the stream, the call's correlation)
};
enum class RangeKind : std::uint8_t {
  Nvtx = 0, UserAnnotation = 1, CpuOp = 2, PythonFunction = 3, GpuAnnotation = 4,
  Instant = 5, ProfilerSpan = 6, Other = 7, Runtime = 8,
};
enum class CollectiveSide : std::uint8_t { Host = 0, Device = 1 };
enum class IoOp : std::uint8_t {
  Open = 0, Read = 1, Write = 2, Close = 3, Seek = 4, Stat = 5, Mmap = 6, Other = 7,
};
enum class DiagnosticKind : std::uint8_t { Dropped = 0, Truncated = 1, Skipped = 2, Note = 3 };

std::string_view to_string(TrackType);
std::string_view to_string(MemcpyDirection);
std::string_view to_string(MemoryKind);
std::string_view to_string(ApiKind);
std::string_view to_string(SyncType);
std::string_view to_string(RangeKind);
std::string_view to_string(CollectiveSide);
std::string_view to_string(IoOp);
std::string_view to_string(DiagnosticKind);

// ---- entities (few: plain structs) ----

struct Process {
  std::int64_t pid = 0;
  std::int64_t parent_pid = -1;
  std::int32_t rank = -1;
  std::int32_t local_rank = -1;
  std::string host;
  std::string name;
  std::string command_line;
  Ns start = 0, end = 0;  // 0/0 = unknown
  std::int32_t exit_status = -1;
  bool truncated = false;
};

struct Thread {
  std::uint32_t process = kNone;  // index into Trace::processes
  std::int64_t tid = 0;
  std::string name;
};

struct Device {
  std::uint32_t process = kNone;  // the rank/process that used it (kNone: unknown)
  std::int32_t index = 0;         // device ordinal as the source numbered it
  std::string name, uuid, vendor;
  std::int32_t sm_count = -1;
  std::int64_t total_memory = -1;
  std::int32_t compute_major = -1, compute_minor = -1;
};

struct Stream {
  std::uint32_t device = kNone;  // index into Trace::devices
  std::int64_t stream = 0;       // stream id as the source numbered it
  std::string name;
};

// A track owns a time-ordered sequence of events of any table.
struct Track {
  TrackType type = TrackType::Thread;
  std::uint32_t owner = kNone;  // index into threads / streams / processes / devices
};

struct Diagnostic {
  DiagnosticKind kind = DiagnosticKind::Note;
  std::string source;  // file or component
  std::string reason;
  std::uint64_t count = 0;
};

// ---- event tables (struct of arrays) ----

// Columns every event table has. Kept in lock-step by the `push` helpers of each table.
// Durations are packed (packed_column.h): 4 bytes or fewer for nearly every event, a duration
// of 2^31 ns (2.1 s) or more, or a negative one, whole in a slot.
struct SpanColumns {
  std::vector<Ns> start;
  PackedColumn<Ns> dur;
  std::vector<std::uint32_t> track;
  std::vector<StringId> name;

  std::size_t size() const { return start.size(); }
  Ns end(std::size_t i) const { return start[i] + dur[i]; }
  // Appends the common columns of one event; the caller appends the table's own columns.
  void push_span(Ns s, Ns d, std::uint32_t tr, StringId n) {
    start.push_back(s);
    dur.push_back(d);
    track.push_back(tr);
    name.push_back(n);
  }
};

// True when the rows are in the order Trace::finalize() sorts them to (track, start, longer
// first), so that finalize() keeps them where they are.
bool in_track_order(const SpanColumns& t);

// Deduplicated kernel launch configuration: most kernels repeat a handful of shapes.
struct LaunchConfig {
  std::uint32_t grid_x = 0, grid_y = 0, grid_z = 0;
  std::uint32_t block_x = 0, block_y = 0, block_z = 0;
  std::uint32_t registers = 0;
  std::uint32_t shared_static = 0, shared_dynamic = 0;
  bool operator==(const LaunchConfig&) const = default;
};

struct KernelTable : SpanColumns {
  std::vector<std::uint32_t> correlation;  // 0 = none
  std::vector<std::uint32_t> external_id;  // framework op id (Kineto "External id"), 0 = none
  PackedColumn<std::uint32_t> config;      // index into Trace::launch_configs, kNone = unknown
  PackedColumn<std::uint32_t> graph_id;    // CUDA graph id, 0 = not from a graph
};

struct MemcpyTable : SpanColumns {
  std::vector<std::uint64_t> bytes;
  std::vector<std::uint32_t> correlation;
  std::vector<MemcpyDirection> direction;
  std::vector<MemoryKind> src_kind, dst_kind;
  std::vector<std::uint8_t> async;  // 1 async, 0 sync, 2 unknown
};

struct MemsetTable : SpanColumns {
  std::vector<std::uint64_t> bytes;
  std::vector<std::uint32_t> correlation;
  std::vector<MemoryKind> mem_kind;
  std::vector<std::uint32_t> value;
};

struct ApiCallTable : SpanColumns {
  std::vector<std::uint32_t> correlation;
  std::vector<std::uint32_t> external_id;
  PackedColumn<std::uint32_t> cbid;
  PackedColumn<std::int32_t> return_value;
  std::vector<ApiKind> api;
};

// Stream waits and event records together say which stream's work another stream waited for:
// a StreamWaitEvent row waits for the latest EventRecord row of the same process with its event
// id and a lower correlation id; that record captured the work launched before it on its stream.
struct SyncTable : SpanColumns {
  std::vector<std::uint32_t> correlation;  // EventRecord: the record call's
  std::vector<SyncType> type;
  std::vector<std::int64_t> stream;  // the stream waited on / synchronized (EventRecord: recording stream), -1 unknown
  std::vector<std::int64_t> event;   // CUDA event id, -1 unknown
};

struct RangeTable : SpanColumns {
  std::vector<RangeKind> kind;
  PackedColumn<std::uint16_t> depth;     // nesting depth on its track, computed by finalize()
  PackedColumn<StringId> domain;         // NVTX domain or source category
  std::vector<std::uint32_t> external_id;
  // What a framework's annotation carried after its op name ("aten::mm, seq = 12, sizes =
  // [[2, 3]]" is named "aten::mm" with args "seq = 12, sizes = [[2, 3]]"); 0 = none.
  PackedColumn<StringId> args;

  // Appends one range; its depth stays 0 until finalize() computes it from the times.
  void push(Ns s, Ns d, std::uint32_t tr, StringId n, RangeKind k, StringId dom, std::uint32_t ext = 0,
            StringId arguments = 0) {
    push_span(s, d, tr, n);
    kind.push_back(k);
    depth.push_back(0);
    domain.push_back(dom);
    external_id.push_back(ext);
    args.push_back(arguments);
  }
};

struct StepTable : SpanColumns {  // track = the process's main thread track
  std::vector<std::int64_t> number;
};

struct CollectiveTable : SpanColumns {
  std::vector<StringId> op;            // allreduce, allgather, send, ...
  std::vector<std::uint64_t> bytes;    // per rank, as NCCL counts
  std::vector<std::uint64_t> count;    // elements
  std::vector<StringId> dtype;
  std::vector<std::int32_t> group_size;
  std::vector<StringId> communicator;  // process group / communicator id
  std::vector<StringId> algorithm, protocol;
  std::vector<std::int32_t> channels;
  std::vector<std::int64_t> seq;
  std::vector<std::int32_t> peer, root;
  std::vector<CollectiveSide> side;
  std::vector<std::uint32_t> correlation;

  // Appends a collective as profiler annotations describe one: algorithm, protocol,
  // channels, sequence number, peer and root unknown (the NCCL profiler plugin knows them).
  void push(Ns s, Ns d, std::uint32_t tr, StringId n, StringId op_, std::uint64_t bytes_, std::uint64_t count_,
            StringId dtype_, std::int32_t group_size_, StringId communicator_, CollectiveSide side_,
            std::uint32_t correlation_) {
    push_span(s, d, tr, n);
    op.push_back(op_);
    bytes.push_back(bytes_);
    count.push_back(count_);
    dtype.push_back(dtype_);
    group_size.push_back(group_size_);
    communicator.push_back(communicator_);
    algorithm.push_back(0);
    protocol.push_back(0);
    channels.push_back(-1);
    seq.push_back(-1);
    peer.push_back(-1);
    root.push_back(-1);
    side.push_back(side_);
    correlation.push_back(correlation_);
  }
};

struct IoTable : SpanColumns {  // name = the libc function
  std::vector<IoOp> op;
  std::vector<std::int32_t> fd;
  std::vector<StringId> path;
  std::vector<std::int64_t> bytes;
  std::vector<std::int64_t> offset;
  std::vector<std::int64_t> result;
  std::vector<std::int16_t> err;  // errno, 0 = success (Linux's are below 4096, its MAX_ERRNO)
};

struct CounterTable {  // a sample: value at time on a track, name = counter name
  std::vector<Ns> ts;
  std::vector<std::uint32_t> track;
  std::vector<StringId> name;
  std::vector<double> value;
  std::size_t size() const { return ts.size(); }
};

struct FlowTable {  // Chrome-trace flow endpoints (Kineto ac2g, fwdbwd), kept as recorded
  std::vector<Ns> ts;
  std::vector<std::uint32_t> track;
  std::vector<StringId> category;
  std::vector<std::uint64_t> id;
  std::vector<std::uint8_t> phase;  // 's', 't' or 'f'
  std::size_t size() const { return ts.size(); }
};

// Python stack samples (`record --trace pystack`; docs/trace-format.md): each (function, file,
// line) once, stacks as a tree of nodes (a node is a frame under its caller's node), and per
// sample its thread's track and its innermost node.
struct PyFrame {
  StringId function = 0, file = 0;
  std::int32_t line = -1;  // -1: unknown
};
struct PyStackNode {
  std::uint32_t parent = kNone;  // the caller's node; kNone: an outermost frame
  std::uint32_t frame = 0;       // index into Trace::py_frames
};
struct PySampleTable {
  std::vector<Ns> ts;
  std::vector<std::uint32_t> track;  // the sampled thread
  std::vector<std::uint32_t> stack;  // its innermost node (index into Trace::py_stacks)
  std::size_t size() const { return ts.size(); }
};

// A contiguous run of one track's events inside a table, after finalize().
struct TrackSlice {
  std::uint32_t track = 0;
  std::uint32_t begin = 0, end = 0;
  Ns max_dur = 0;  // longest event in the slice: bounds the backward search of queries
};

struct Trace {
  // where the times come from, e.g. "CLOCK_MONOTONIC", "kineto-us"
  std::string clock_domain = "unknown";
  std::vector<std::pair<std::string, std::string>> metadata;  // free-form key/value

  StringTable strings;
  std::vector<Process> processes;
  std::vector<Thread> threads;
  std::vector<Device> devices;
  std::vector<Stream> streams;
  std::vector<Track> tracks;
  std::vector<LaunchConfig> launch_configs;
  std::vector<Diagnostic> diagnostics;

  KernelTable kernels;
  MemcpyTable memcpys;
  MemsetTable memsets;
  ApiCallTable api_calls;
  SyncTable syncs;
  RangeTable ranges;
  StepTable steps;
  CollectiveTable collectives;
  IoTable io_calls;
  CounterTable counters;
  FlowTable flows;
  std::vector<PyFrame> py_frames;
  std::vector<PyStackNode> py_stacks;
  PySampleTable py_samples;  // sorted by (track, ts) by finalize()

  // ---- building ----
  std::uint32_t add_process(Process p);
  std::uint32_t add_thread(Thread t);  // also creates its track; returns the *track* id
  std::uint32_t add_device(Device d);
  std::uint32_t add_stream(Stream s);  // also creates its track; returns the *track* id
  std::uint32_t intern_config(const LaunchConfig& c);
  void add_diagnostic(DiagnosticKind kind, std::string_view source, std::string_view reason,
                      std::uint64_t count = 1);

  // Sorts every table by (track, start), computes range depths and per-track slices.
  // Idempotent; cheap when already sorted (the SQLite reader's case).
  void finalize();
  bool finalized() const { return finalized_; }

  // Per-track slices of a table, valid after finalize().
  std::span<const TrackSlice> slices_kernels() const { return slices_[0]; }
  std::span<const TrackSlice> slices_memcpys() const { return slices_[1]; }
  std::span<const TrackSlice> slices_memsets() const { return slices_[2]; }
  std::span<const TrackSlice> slices_api_calls() const { return slices_[3]; }
  std::span<const TrackSlice> slices_syncs() const { return slices_[4]; }
  std::span<const TrackSlice> slices_ranges() const { return slices_[5]; }
  std::span<const TrackSlice> slices_io() const { return slices_[6]; }

  // Calls f(a.kernels, b.kernels, ...), then f with the traces' memcpys, and so on for every
  // event table (kernels to flows: the tables event_count() counts; py_samples are samples, not
  // events): event_count, event_bytes and the merge's take_events (collector/src/merge.cpp)
  // list the tables through it, so a new event table is added here.
  template <class F, class... Traces>
  static void for_each_event_table(F&& f, Traces&... traces) {
    f(traces.kernels...);
    f(traces.memcpys...);
    f(traces.memsets...);
    f(traces.api_calls...);
    f(traces.syncs...);
    f(traces.ranges...);
    f(traces.steps...);
    f(traces.collectives...);
    f(traces.io_calls...);
    f(traces.counters...);
    f(traces.flows...);
  }

  // All events of all tables (counters and flows included).
  std::size_t event_count() const;
  // Heap bytes held by event columns and strings (for the ≤48 B/event budget).
  std::size_t event_bytes() const;

  // Earliest start and latest end over all events; {0,0} when empty.
  std::pair<Ns, Ns> time_bounds() const;

  // Owning process of a track, kNone when unknown (e.g. a stream of an unowned device).
  std::uint32_t process_of_track(std::uint32_t track) const;
  // The tracks process_of_track() gives to `process`, ascending: from an index finalize()
  // builds (so that a pass over one rank reads its own tracks, not every rank's), or from a scan
  // of every track when tracks or processes were added since.
  std::vector<std::uint32_t> tracks_of_process(std::uint32_t process) const;
  std::string track_label(std::uint32_t track) const;

 private:
  bool finalized_ = false;
  std::vector<TrackSlice> slices_[7];
  // tracks_of_process's index: process p's tracks are process_track_ids_[process_track_at_[p]
  // .. process_track_at_[p + 1]); built for tracks.size() tracks
  std::vector<std::uint32_t> process_track_at_, process_track_ids_;
  std::size_t indexed_tracks_ = 0;
  void compute_slices();
  void index_process_tracks();
};

// Bytes one event takes in each table's columns: element sizes only (no strings, no vector
// slack), so n events of a table hold at least n times this. Estimates of a trace's memory
// before it is read (estimate.h) use them.
struct RowBytes {
  std::size_t kernels, memcpys, memsets, api_calls, syncs, ranges, steps, collectives, io_calls, counters, flows;
};
RowBytes row_bytes();

// Moves every time of process p by shift_by_process[p] (missing entries: 0): its start and end
// (unless unknown, 0/0) and every event on its tracks (threads, and streams of its devices) in
// every table. Durations and order on each track are unchanged, so a finalized trace stays
// finalized. Times saturate at the ends of 64-bit time. The merger uses it to move a host's
// processes onto the clock of the others.
void shift_process_times(Trace& t, std::span<const Ns> shift_by_process);

// Rows [from, size) of a table, every column: what a producer that writes a trace in parts
// (TraceFileWriter) keeps of a table it also reads whole.
StepTable rows_from(const StepTable& t, std::size_t from);
CollectiveTable rows_from(const CollectiveTable& t, std::size_t from);

// Events on `track` in a finalized table overlapping [t0, t1): an index range [first, last)
// that contains every event with start < t1 and end > t0 (and instants in [t0, t1)). It may
// also contain a few that end before t0 (behind a longer one): callers that need exactness
// test the end. Binary search on start, bounded by the slice's longest event: O(log n + k).
// The slice of `track` among a table's slices (sorted by track): a binary search; nullptr
// when the track has no events there.
const TrackSlice* find_slice(std::span<const TrackSlice> slices, std::uint32_t track);

// The rows [first, last) on `track` of a table whose track column is sorted (a finalized
// table's, e.g. steps or collectives, which have no slices).
std::pair<std::uint32_t, std::uint32_t> rows_on_track(const std::vector<std::uint32_t>& track_column, std::uint32_t track);

std::pair<std::uint32_t, std::uint32_t> query_range(const SpanColumns& table,
                                                    std::span<const TrackSlice> slices,
                                                    std::uint32_t track, Ns t0, Ns t1);

}  // namespace tt::trace
