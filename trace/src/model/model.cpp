#include "tracetune/trace/model.h"

#include <algorithm>
#include <initializer_list>
#include <limits>
#include <numeric>

namespace tt::trace {

std::string_view to_string(TrackType v) {
  switch (v) {
    case TrackType::Thread: return "thread";
    case TrackType::Stream: return "stream";
    case TrackType::Process: return "process";
    case TrackType::Device: return "device";
  }
  return "unknown";
}
std::string_view to_string(MemcpyDirection v) {
  switch (v) {
    case MemcpyDirection::HtoD: return "HtoD";
    case MemcpyDirection::DtoH: return "DtoH";
    case MemcpyDirection::DtoD: return "DtoD";
    case MemcpyDirection::HtoH: return "HtoH";
    case MemcpyDirection::PtoP: return "PtoP";
    case MemcpyDirection::Unknown: break;
  }
  return "unknown";
}
std::string_view to_string(MemoryKind v) {
  switch (v) {
    case MemoryKind::Pageable: return "pageable";
    case MemoryKind::Pinned: return "pinned";
    case MemoryKind::Device: return "device";
    case MemoryKind::Managed: return "managed";
    case MemoryKind::Array: return "array";
    case MemoryKind::Unknown: break;
  }
  return "unknown";
}
std::string_view to_string(ApiKind v) {
  switch (v) {
    case ApiKind::Runtime: return "runtime";
    case ApiKind::Driver: return "driver";
    case ApiKind::Other: return "other";
  }
  return "other";
}
std::string_view to_string(SyncType v) {
  switch (v) {
    case SyncType::EventSync: return "event_sync";
    case SyncType::StreamWaitEvent: return "stream_wait_event";
    case SyncType::StreamSync: return "stream_sync";
    case SyncType::ContextSync: return "context_sync";
    case SyncType::EventRecord: return "event_record";
    case SyncType::Unknown: break;
  }
  return "unknown";
}
std::string_view to_string(RangeKind v) {
  switch (v) {
    case RangeKind::Nvtx: return "nvtx";
    case RangeKind::UserAnnotation: return "user_annotation";
    case RangeKind::CpuOp: return "cpu_op";
    case RangeKind::PythonFunction: return "python_function";
    case RangeKind::GpuAnnotation: return "gpu_annotation";
    case RangeKind::Instant: return "instant";
    case RangeKind::ProfilerSpan: return "profiler_span";
    case RangeKind::Runtime: return "runtime";
    case RangeKind::Other: return "other";
  }
  return "other";
}
std::string_view to_string(CollectiveSide v) {
  return v == CollectiveSide::Host ? "host" : "device";
}
std::string_view to_string(IoOp v) {
  switch (v) {
    case IoOp::Open: return "open";
    case IoOp::Read: return "read";
    case IoOp::Write: return "write";
    case IoOp::Close: return "close";
    case IoOp::Seek: return "seek";
    case IoOp::Stat: return "stat";
    case IoOp::Mmap: return "mmap";
    case IoOp::Other: return "other";
  }
  return "other";
}
std::string_view to_string(DiagnosticKind v) {
  switch (v) {
    case DiagnosticKind::Dropped: return "dropped";
    case DiagnosticKind::Truncated: return "truncated";
    case DiagnosticKind::Skipped: return "skipped";
    case DiagnosticKind::Note: return "note";
  }
  return "note";
}

std::uint32_t Trace::add_process(Process p) {
  processes.push_back(std::move(p));
  return static_cast<std::uint32_t>(processes.size() - 1);
}

std::uint32_t Trace::add_thread(Thread t) {
  threads.push_back(std::move(t));
  tracks.push_back({TrackType::Thread, static_cast<std::uint32_t>(threads.size() - 1)});
  finalized_ = false;
  return static_cast<std::uint32_t>(tracks.size() - 1);
}

std::uint32_t Trace::add_device(Device d) {
  devices.push_back(std::move(d));
  return static_cast<std::uint32_t>(devices.size() - 1);
}

std::uint32_t Trace::add_stream(Stream s) {
  streams.push_back(std::move(s));
  tracks.push_back({TrackType::Stream, static_cast<std::uint32_t>(streams.size() - 1)});
  finalized_ = false;
  return static_cast<std::uint32_t>(tracks.size() - 1);
}

std::uint32_t Trace::intern_config(const LaunchConfig& c) {
  // Few distinct configs per trace; a reverse scan finds recent repeats fast.
  for (std::size_t i = launch_configs.size(); i-- > 0;)
    if (launch_configs[i] == c) return static_cast<std::uint32_t>(i);
  launch_configs.push_back(c);
  return static_cast<std::uint32_t>(launch_configs.size() - 1);
}

void Trace::add_diagnostic(DiagnosticKind kind, std::string_view source, std::string_view reason,
                           std::uint64_t count) {
  for (auto& d : diagnostics)
    if (d.kind == kind && d.source == source && d.reason == reason) {
      d.count += count;
      return;
    }
  diagnostics.push_back({kind, std::string(source), std::string(reason), count});
}

namespace {

template <class T>
void permute(std::vector<T>& v, const std::vector<std::uint32_t>& order) {
  if (v.empty()) return;
  std::vector<T> out;
  out.reserve(v.size());
  for (auto i : order) out.push_back(v[i]);
  v.swap(out);
}
template <class T>
void permute(PackedColumn<T>& v, const std::vector<std::uint32_t>& order) {
  if (!v.empty()) v.permute(order);
}

// Heap bytes a column holds.
template <class T> std::size_t column_bytes(const std::vector<T>& col) { return col.capacity() * sizeof(T); }
template <class T> std::size_t column_bytes(const PackedColumn<T>& col) { return col.heap_bytes(); }

// The fewest bytes a row of a column takes (a packed column's: a 1-byte cell).
template <class T> std::size_t min_cell_bytes(const std::vector<T>&) { return sizeof(T); }
template <class T> std::size_t min_cell_bytes(const PackedColumn<T>&) { return 1; }

// Calls f(column) for every column of a table; the one place that lists them.
template <class F> void each_column(SpanColumns& t, F&& f) {
  f(t.start); f(t.dur); f(t.track); f(t.name);
}
template <class F> void each_column(KernelTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.correlation); f(t.external_id); f(t.config); f(t.graph_id);
}
template <class F> void each_column(MemcpyTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.bytes); f(t.correlation); f(t.direction); f(t.src_kind); f(t.dst_kind); f(t.async);
}
template <class F> void each_column(MemsetTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.bytes); f(t.correlation); f(t.mem_kind); f(t.value);
}
template <class F> void each_column(ApiCallTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.correlation); f(t.external_id); f(t.cbid); f(t.return_value); f(t.api);
}
template <class F> void each_column(SyncTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.correlation); f(t.type); f(t.stream); f(t.event);
}
template <class F> void each_column(RangeTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.kind); f(t.depth); f(t.domain); f(t.external_id); f(t.args);
}
template <class F> void each_column(StepTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.number);
}
template <class F> void each_column(CollectiveTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.op); f(t.bytes); f(t.count); f(t.dtype); f(t.group_size); f(t.communicator);
  f(t.algorithm); f(t.protocol); f(t.channels); f(t.seq); f(t.peer); f(t.root); f(t.side);
  f(t.correlation);
}
template <class F> void each_column(IoTable& t, F&& f) {
  each_column(static_cast<SpanColumns&>(t), f);
  f(t.op); f(t.fd); f(t.path); f(t.bytes); f(t.offset); f(t.result); f(t.err);
}
template <class F> void each_column(CounterTable& t, F&& f) {
  f(t.ts); f(t.track); f(t.name); f(t.value);
}
template <class F> void each_column(FlowTable& t, F&& f) {
  f(t.ts); f(t.track); f(t.category); f(t.id); f(t.phase);
}
template <class F> void each_column(PySampleTable& t, F&& f) {
  f(t.ts); f(t.track); f(t.stack);
}

// Columns grown by push_back hold up to twice their rows (a third more on average): a table
// finalize() does not reorder (reordering copies each column to its exact size) gives the
// slack back, one column at a time.
template <class Table> void shrink_columns(Table& t) {
  each_column(t, [](auto& col) { shrink_column(col); });
}

// Sort by (track, start, longer first) so parents precede the children they contain.
template <class Table> void sort_span_table(Table& t) {
  const std::size_t n = t.size();
  if (in_track_order(t)) return shrink_columns(t);
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (t.track[a] != t.track[b]) return t.track[a] < t.track[b];
    if (t.start[a] != t.start[b]) return t.start[a] < t.start[b];
    return t.dur[a] > t.dur[b];
  });
  each_column(t, [&](auto& col) { permute(col, order); });
}

template <class Table> void sort_point_table(Table& t) {
  const std::size_t n = t.size();
  std::vector<std::uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  if (std::is_sorted(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return t.track[a] != t.track[b] ? t.track[a] < t.track[b] : t.ts[a] < t.ts[b];
      }))
    return shrink_columns(t);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return t.track[a] != t.track[b] ? t.track[a] < t.track[b] : t.ts[a] < t.ts[b];
  });
  each_column(t, [&](auto& col) { permute(col, order); });
}

// Nesting depth of each range on its track: a stack of open ends per track.
void compute_depths(RangeTable& r) {
  std::vector<Ns> open_ends;
  std::uint32_t cur_track = kNone;
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (r.track[i] != cur_track) { open_ends.clear(); cur_track = r.track[i]; }
    while (!open_ends.empty() && open_ends.back() <= r.start[i]) open_ends.pop_back();
    // A range that is not contained by the top (partial overlap) still nests visually below it.
    r.depth.set(i, static_cast<std::uint16_t>(std::min<std::size_t>(open_ends.size(), 0xffff)));
    open_ends.push_back(r.end(i));
  }
}

std::vector<TrackSlice> slices_of(const SpanColumns& t) {
  std::vector<TrackSlice> out;
  for (std::uint32_t i = 0; i < t.size(); ++i) {
    if (out.empty() || out.back().track != t.track[i])
      out.push_back({t.track[i], i, i, 0});
    out.back().end = i + 1;
    out.back().max_dur = std::max(out.back().max_dur, t.dur[i]);
  }
  return out;
}

}  // namespace

bool in_track_order(const SpanColumns& t) {
  bool sorted = true;
  for (std::size_t i = 1; i < t.size() && sorted; ++i) {
    if (t.track[i - 1] != t.track[i]) { sorted = t.track[i - 1] < t.track[i]; continue; }
    if (t.start[i - 1] != t.start[i]) { sorted = t.start[i - 1] < t.start[i]; continue; }
    sorted = t.dur[i - 1] >= t.dur[i];
  }
  return sorted;
}

void Trace::finalize() {
  if (finalized_) return;
  sort_span_table(kernels);
  sort_span_table(memcpys);
  sort_span_table(memsets);
  sort_span_table(api_calls);
  sort_span_table(syncs);
  sort_span_table(ranges);
  compute_depths(ranges);
  sort_span_table(steps);
  sort_span_table(collectives);
  sort_span_table(io_calls);
  sort_point_table(counters);
  sort_point_table(flows);
  sort_point_table(py_samples);
  compute_slices();
  index_process_tracks();
  finalized_ = true;
}

void Trace::index_process_tracks() {
  process_track_at_.assign(processes.size() + 1, 0);
  process_track_ids_.clear();
  std::vector<std::uint32_t> owner(tracks.size());
  for (std::uint32_t k = 0; k < tracks.size(); ++k) {
    owner[k] = process_of_track(k);
    if (owner[k] < processes.size()) ++process_track_at_[owner[k] + 1];
  }
  for (std::size_t p = 0; p < processes.size(); ++p) process_track_at_[p + 1] += process_track_at_[p];
  process_track_ids_.resize(process_track_at_.back());
  std::vector<std::uint32_t> next(process_track_at_.begin(), process_track_at_.end() - 1);
  for (std::uint32_t k = 0; k < tracks.size(); ++k)  // ascending per process
    if (owner[k] < processes.size()) process_track_ids_[next[owner[k]]++] = k;
  indexed_tracks_ = tracks.size();
}

std::vector<std::uint32_t> Trace::tracks_of_process(std::uint32_t process) const {
  std::vector<std::uint32_t> out;
  if (indexed_tracks_ == tracks.size() && process_track_at_.size() == processes.size() + 1) {
    if (process < processes.size())
      out.assign(process_track_ids_.begin() + process_track_at_[process],
                 process_track_ids_.begin() + process_track_at_[process + 1]);
    return out;
  }
  for (std::uint32_t k = 0; k < tracks.size(); ++k)
    if (process_of_track(k) == process) out.push_back(k);
  return out;
}

void Trace::compute_slices() {
  slices_[0] = slices_of(kernels);
  slices_[1] = slices_of(memcpys);
  slices_[2] = slices_of(memsets);
  slices_[3] = slices_of(api_calls);
  slices_[4] = slices_of(syncs);
  slices_[5] = slices_of(ranges);
  slices_[6] = slices_of(io_calls);
}

RowBytes row_bytes() {
  auto of = []<class Table>(Table t) {
    std::size_t b = 0;
    each_column(t, [&](auto& col) { b += min_cell_bytes(col); });
    return b;
  };
  return {of(KernelTable{}), of(MemcpyTable{}), of(MemsetTable{}),     of(ApiCallTable{}),
          of(SyncTable{}),   of(RangeTable{}),  of(StepTable{}),       of(CollectiveTable{}),
          of(IoTable{}),     of(CounterTable{}), of(FlowTable{})};
}

std::size_t Trace::event_count() const {
  std::size_t n = 0;
  for_each_event_table([&](const auto& table) { n += table.size(); }, *this);
  return n;
}

std::size_t Trace::event_bytes() const {
  std::size_t b = strings.bytes() + launch_configs.capacity() * sizeof(LaunchConfig);
  for_each_event_table(
      [&](const auto& table) {
        each_column(const_cast<std::remove_const_t<std::remove_reference_t<decltype(table)>>&>(table),
                    [&](auto& col) { b += column_bytes(col); });
      },
      *this);
  for (const auto& s : slices_) b += s.capacity() * sizeof(TrackSlice);
  return b;
}

std::pair<Ns, Ns> Trace::time_bounds() const {
  Ns lo = 0, hi = 0;
  bool any = false;
  auto span = [&](const SpanColumns& t) {
    for (std::size_t i = 0; i < t.size(); ++i) {
      const Ns s = t.start[i], e = t.end(i);
      if (!any) { lo = s; hi = e; any = true; continue; }
      lo = std::min(lo, s);
      hi = std::max(hi, e);
    }
  };
  span(kernels); span(memcpys); span(memsets); span(api_calls); span(syncs); span(ranges);
  span(steps); span(collectives); span(io_calls);
  for (Ns t : counters.ts) {
    if (!any) { lo = hi = t; any = true; continue; }
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  return {lo, hi};
}

std::uint32_t Trace::process_of_track(std::uint32_t track) const {
  if (track >= tracks.size()) return kNone;
  const Track& t = tracks[track];
  switch (t.type) {
    case TrackType::Thread: return threads[t.owner].process;
    case TrackType::Stream: {
      const auto dev = streams[t.owner].device;
      return dev == kNone ? kNone : devices[dev].process;
    }
    case TrackType::Process: return t.owner;
    case TrackType::Device: return devices[t.owner].process;
  }
  return kNone;
}

namespace {

Ns saturating_add(Ns a, Ns b) {
  Ns r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<Ns>::max() : std::numeric_limits<Ns>::min();
}

}  // namespace

namespace {

template <class Table>
Table copy_rows_from(const Table& t, std::size_t from) {
  std::vector<const void*> columns;  // each_column visits the columns of every table of a type in one order
  each_column(const_cast<Table&>(t), [&](auto& col) { columns.push_back(&col); });
  Table out;
  std::size_t k = 0;
  each_column(out, [&](auto& col) {
    const auto& src = *static_cast<const std::remove_reference_t<decltype(col)>*>(columns[k++]);
    col.assign(src.begin() + static_cast<std::ptrdiff_t>(std::min(from, src.size())), src.end());
  });
  return out;
}

}  // namespace

StepTable rows_from(const StepTable& t, std::size_t from) { return copy_rows_from(t, from); }
CollectiveTable rows_from(const CollectiveTable& t, std::size_t from) { return copy_rows_from(t, from); }

void shift_process_times(Trace& t, std::span<const Ns> shift_by_process) {
  auto shift_of_process = [&](std::uint32_t p) { return p < shift_by_process.size() ? shift_by_process[p] : 0; };
  std::vector<Ns> shift_of_track(t.tracks.size(), 0);
  bool any = false;
  for (std::uint32_t tr = 0; tr < t.tracks.size(); ++tr) {
    shift_of_track[tr] = shift_of_process(t.process_of_track(tr));
    any |= shift_of_track[tr] != 0;
  }
  for (std::uint32_t p = 0; p < t.processes.size(); ++p) {
    Process& pr = t.processes[p];
    if (shift_of_process(p) == 0 || (pr.start == 0 && pr.end == 0)) continue;
    pr.start = saturating_add(pr.start, shift_of_process(p));
    pr.end = saturating_add(pr.end, shift_of_process(p));
  }
  if (!any) return;
  auto shift_column = [&](std::vector<Ns>& times, const std::vector<std::uint32_t>& tracks) {
    for (std::size_t i = 0; i < times.size(); ++i)
      if (tracks[i] < shift_of_track.size()) times[i] = saturating_add(times[i], shift_of_track[tracks[i]]);
  };
  for (SpanColumns* table : std::initializer_list<SpanColumns*>{&t.kernels, &t.memcpys, &t.memsets, &t.api_calls,
                                                                &t.syncs, &t.ranges, &t.steps, &t.collectives,
                                                                &t.io_calls}) {
    shift_column(table->start, table->track);
    for (std::size_t i = 0; i < table->size(); ++i)  // an end pushed past 64-bit time stops there
      if (table->start[i] > 0 && table->dur[i] > std::numeric_limits<Ns>::max() - table->start[i])
        table->dur.set(i, std::numeric_limits<Ns>::max() - table->start[i]);
  }
  shift_column(t.counters.ts, t.counters.track);
  shift_column(t.flows.ts, t.flows.track);
  shift_column(t.py_samples.ts, t.py_samples.track);
}

std::string Trace::track_label(std::uint32_t track) const {
  if (track >= tracks.size()) return "?";
  const Track& t = tracks[track];
  switch (t.type) {
    case TrackType::Thread: {
      const Thread& th = threads[t.owner];
      std::string s = "thread " + std::to_string(th.tid);
      if (!th.name.empty()) s += " (" + th.name + ")";
      return s;
    }
    case TrackType::Stream: {
      const Stream& st = streams[t.owner];
      std::string s = "stream " + std::to_string(st.stream);
      if (st.device != kNone) s = "device " + std::to_string(devices[st.device].index) + " " + s;
      return s;
    }
    case TrackType::Process: return "process " + std::to_string(processes[t.owner].pid);
    case TrackType::Device: return "device " + std::to_string(devices[t.owner].index);
  }
  return "?";
}

const TrackSlice* find_slice(std::span<const TrackSlice> slices, std::uint32_t track) {
  const auto it = std::lower_bound(slices.begin(), slices.end(), track,
                                   [](const TrackSlice& s, std::uint32_t tr) { return s.track < tr; });
  return it == slices.end() || it->track != track ? nullptr : &*it;
}

std::pair<std::uint32_t, std::uint32_t> rows_on_track(const std::vector<std::uint32_t>& track_column, std::uint32_t track) {
  const auto [b, e] = std::equal_range(track_column.begin(), track_column.end(), track);
  return {static_cast<std::uint32_t>(b - track_column.begin()), static_cast<std::uint32_t>(e - track_column.begin())};
}

std::pair<std::uint32_t, std::uint32_t> query_range(const SpanColumns& table,
                                                    std::span<const TrackSlice> slices,
                                                    std::uint32_t track, Ns t0, Ns t1) {
  const TrackSlice* it = find_slice(slices, track);
  if (it == nullptr) return {0, 0};
  if (t1 <= t0) return {it->begin, it->begin};
  const auto* st = table.start.data();
  // Any event overlapping [t0,t1) starts in [t0 - max_dur, t1).
  const Ns lo_start = t0 - it->max_dur;
  const auto first = static_cast<std::uint32_t>(
      std::lower_bound(st + it->begin, st + it->end, lo_start) - st);
  const auto last = static_cast<std::uint32_t>(
      std::lower_bound(st + first, st + it->end, t1) - st);
  // Skip leading candidates that ended before t0; later ones may still be non-overlapping
  // (a short event after a long one): callers filter by end when they need exactness.
  std::uint32_t f = first;
  // (An instant, zero-length event exactly at t0 is inside the window.)
  while (f < last && (table.end(f) < t0 || (table.end(f) == t0 && table.dur[f] > 0))) ++f;
  return {f, last};
}

}  // namespace tt::trace
