// Plain-language descriptions of one event (the hover box and the details pane), the colour
// a timeline block gets, and area-selection aggregates. Everything returned is plain text.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "document.h"
#include "tracetune/trace/units.h"

namespace tt::gui {

using Fields = std::vector<std::pair<std::string, std::string>>;

// Durations and sizes: the one formatter of each, shared with the reports and `info`.
using trace::format_bytes;
using trace::format_duration;

std::string event_name(const Document& d, EventRef e);
trace::Ns event_start(const Document& d, EventRef e);
trace::Ns event_end(const Document& d, EventRef e);

// name, kind, track, start (from the trace's start), duration, then the table's own columns
// (bytes, direction, memory kinds, correlation, launch configuration, collective, I/O path...).
// Waits for the document's details (Document::wait_details); when their read failed, its error
// stands in for the table's own columns.
Fields describe_event(const Document& d, EventRef e);

// A counter value in its unit: "73.4 %", "12.50 GB/s", "310.2 MB/s"; a recorded counter (no
// unit) as a plain number.
std::string format_counter_value(double v, const char* unit);

// A counter row's readout at time t (the hover box): the counter, its group, the value
// holding at t with its unit and, for a derived counter, the bin it comes from and the bin
// width. Empty when `row` is not a counter row or no value holds at t.
Fields describe_counter(const Document& d, std::uint32_t row, trace::Ns t);

// The other end of a launch: a CUDA API call's kernel / copy / set / NCCL kernel with the same
// correlation id in the same process, or a GPU op's launching call; failing that, the event at
// the other end of the trace's flow (Kineto's ac2g arrows). Invalid when there is none.
// Linear scans of the correlation column and the flow table (only on selection, so no
// per-event memory). Waits for the document's details (the correlation columns are among them).
EventRef correlated_event(const Document& d, EventRef e);

// 0xAARRGGBB colour of an event's block.
std::uint32_t event_color(const Document& d, EventRef e);

struct NameAggregate {
  std::string name;
  std::uint64_t count = 0;
  trace::Ns total = 0;  // sum of durations clipped to the selection
};
struct AreaAggregate {
  trace::Ns t0 = 0, t1 = 0;
  std::vector<NameAggregate> by_name;             // by total, largest first
  std::vector<std::pair<std::string, double>> busy;  // per row: union of its events / (t1 - t0)
  std::uint64_t events = 0;
};
// Events of `rows` (timeline rows; counter rows are skipped) overlapping [t0, t1).
AreaAggregate aggregate_area(const Document& d, const std::vector<std::uint32_t>& rows, trace::Ns t0, trace::Ns t1);

}  // namespace tt::gui
