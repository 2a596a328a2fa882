// The timeline's rows, built once from a finalized Trace when it is loaded (in the loader's
// worker thread): a tree of groups (host → process → thread, GPU → stream) whose leaves are
// rows, each row one table's events on one track split into lanes (lod.h), or a counter.
// Kineto's pseudo-processes (string pids such as "Spans" and "Traces", imported with negative
// ids) sit in one group per host that starts collapsed: they are the profiler's, not the job's.
// Counter rows are either the trace's own samples (one per counter name and track) or derived
// from the events (derived_counters.h): "GPU busy %", "H2D GB/s" and "D2H GB/s" first in each
// GPU's group, "I/O MB/s" under each process after its steps; a derived row exists only when
// some event feeds it. The index keeps pointers into the Trace's columns: the Trace must
// outlive it and not change.
//
// Memory: a row whose events fit on one lane holds no per-event data; nested ranges and
// overlapping GPU work cost one 32-bit index per event; a derived counter costs 4 bytes per
// bin (at most 2^20 bins) whatever the number of events. No Qt here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tracetune/gui/lod.h"
#include "tracetune/trace/model.h"

namespace tt::gui {

// The event tables a row can show.
enum class Table : std::uint8_t {
  Ranges, ApiCalls, Syncs, IoCalls, Steps, Kernels, Memcpys, Memsets, Collectives, Counters,
};
const char* table_label(Table t);
bool is_gpu_table(Table t);  // kernels, memcpys, memsets, collectives
const trace::SpanColumns* span_columns(const trace::Trace& t, Table table);  // nullptr for Counters

// A reference to one event: a table and its row.
struct EventRef {
  Table table = Table::Ranges;
  std::uint32_t row = trace::kNone;
  bool valid() const { return row != trace::kNone; }
  bool operator==(const EventRef&) const = default;
};

struct TimelineGroup {
  std::string label;
  std::uint32_t parent = trace::kNone;  // index into groups, kNone for top level
  int level = 0;                        // 0 host / GPU-less top, 1 process, 2 thread or device...
  bool start_collapsed = false;         // shown folded when a trace opens (profiler pseudo-processes)
};

struct TimelineRow {
  Table table = Table::Ranges;
  std::uint32_t track = 0;
  std::uint32_t group = trace::kNone;  // the innermost group it belongs to
  std::int32_t rank = -1;              // the owning process's rank (-1: unknown)
  std::uint32_t process = trace::kNone;
  std::string label;                   // e.g. "CPU ops", "kernels", "CUDA API", a counter's name
  std::vector<Lane> lanes;             // Table::Counters: empty
  CounterSeries counter;               // Table::Counters: one counter name's samples, or derived bins
  std::uint64_t events = 0;            // events of its own (counter samples; 0 for a derived row)
};

struct TimelineIndex {
  std::vector<TimelineGroup> groups;
  std::vector<TimelineRow> rows;  // in display order; a row's groups precede it
  trace::Ns start = 0, end = 0;   // the trace's time bounds
  std::size_t index_bytes = 0;    // heap held by lane indexes, counter series and their summaries
};

// Builds the rows of every non-empty (track, table) of `t` (finalized).
TimelineIndex build_timeline_index(const trace::Trace& t);

// The row showing `ref` (kNone if none), and the lane and lane position it sits at.
struct RowPosition {
  std::uint32_t row = trace::kNone, lane = 0, pos = 0;
};
RowPosition locate(const TimelineIndex& idx, const trace::Trace& t, EventRef ref);

}  // namespace tt::gui
