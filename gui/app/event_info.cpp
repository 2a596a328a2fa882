#include "event_info.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace tt::gui {

using trace::Ns;

std::string event_name(const Document& d, EventRef e) {
  const auto* c = span_columns(d.trace, e.table);
  if (!c || e.row >= c->size()) return {};
  return std::string(d.trace.strings.get(c->name[e.row]));
}
Ns event_start(const Document& d, EventRef e) {
  const auto* c = span_columns(d.trace, e.table);
  return c && e.row < c->size() ? c->start[e.row] : 0;
}
Ns event_end(const Document& d, EventRef e) {
  const auto* c = span_columns(d.trace, e.table);
  return c && e.row < c->size() ? c->end(e.row) : 0;
}

namespace {

const char* kind_label(Table t) {
  switch (t) {
    case Table::Ranges: return "CPU range";
    case Table::ApiCalls: return "CUDA API call";
    case Table::Syncs: return "synchronization";
    case Table::IoCalls: return "I/O call";
    case Table::Steps: return "step";
    case Table::Kernels: return "kernel";
    case Table::Memcpys: return "memcpy";
    case Table::Memsets: return "memset";
    case Table::Collectives: return "collective";
    case Table::Counters: return "counter";
  }
  return "?";
}

std::uint32_t correlation_of(const trace::Trace& t, EventRef e) {
  switch (e.table) {
    case Table::ApiCalls: return t.api_calls.correlation[e.row];
    case Table::Kernels: return t.kernels.correlation[e.row];
    case Table::Memcpys: return t.memcpys.correlation[e.row];
    case Table::Memsets: return t.memsets.correlation[e.row];
    case Table::Collectives: return t.collectives.correlation[e.row];  // an NCCL kernel (Kineto)
    default: return 0;
  }
}

std::uint32_t hue_color(std::uint32_t key, int sat, int val) {
  // a well-spread hue per key (Knuth's multiplicative hash), HSV -> RGB
  const std::uint32_t h = (key * 2654435761u) >> 16;
  const double hue = (h % 360) / 60.0, s = sat / 255.0, v = val / 255.0;
  const int i = static_cast<int>(hue);
  const double f = hue - i, p = v * (1 - s), q = v * (1 - s * f), u = v * (1 - s * (1 - f));
  double r = v, g = u, b = p;
  switch (i % 6) {
    case 0: r = v; g = u; b = p; break;
    case 1: r = q; g = v; b = p; break;
    case 2: r = p; g = v; b = u; break;
    case 3: r = p; g = q; b = v; break;
    case 4: r = u; g = p; b = v; break;
    default: r = v; g = p; b = q; break;
  }
  auto c = [](double x) { return static_cast<std::uint32_t>(std::clamp(x, 0.0, 1.0) * 255 + 0.5); };
  return 0xff000000u | c(r) << 16 | c(g) << 8 | c(b);
}

}  // namespace

namespace {

// The fields of a host-side event (ranges, API calls, syncs, I/O calls, steps).
void host_fields(const trace::Trace& t, EventRef e, Fields& f) {
  const auto r = e.row;
  auto corr = [&](std::uint32_t v) { if (v) f.emplace_back("correlation", std::to_string(v)); };
  switch (e.table) {
    case Table::Ranges:
      f.emplace_back("range kind", std::string(to_string(t.ranges.kind[r])));
      f.emplace_back("depth", std::to_string(t.ranges.depth[r]));
      if (t.ranges.domain[r]) f.emplace_back("domain", std::string(t.strings.get(t.ranges.domain[r])));
      if (t.ranges.external_id[r]) f.emplace_back("external id", std::to_string(t.ranges.external_id[r]));
      if (t.ranges.args[r]) f.emplace_back("args", std::string(t.strings.get(t.ranges.args[r])));
      break;
    case Table::ApiCalls:
      f.emplace_back("api", std::string(to_string(t.api_calls.api[r])));
      corr(t.api_calls.correlation[r]);
      if (t.api_calls.cbid[r]) f.emplace_back("callback id", std::to_string(t.api_calls.cbid[r]));
      if (t.api_calls.return_value[r]) f.emplace_back("return value", std::to_string(t.api_calls.return_value[r]));
      break;
    case Table::Syncs:
      f.emplace_back("sync type", std::string(to_string(t.syncs.type[r])));
      corr(t.syncs.correlation[r]);
      if (t.syncs.stream[r] >= 0) f.emplace_back("stream", std::to_string(t.syncs.stream[r]));
      break;
    case Table::IoCalls:
      f.emplace_back("op", std::string(to_string(t.io_calls.op[r])));
      if (t.io_calls.path[r]) f.emplace_back("path", std::string(t.strings.get(t.io_calls.path[r])));
      f.emplace_back("fd", std::to_string(t.io_calls.fd[r]));
      if (t.io_calls.bytes[r] >= 0) f.emplace_back("bytes", format_bytes(static_cast<std::uint64_t>(t.io_calls.bytes[r])));
      f.emplace_back("result", std::to_string(t.io_calls.result[r]));
      if (t.io_calls.err[r]) f.emplace_back("errno", std::to_string(t.io_calls.err[r]));
      break;
    case Table::Steps: f.emplace_back("step", std::to_string(t.steps.number[r])); break;
    default: break;
  }
}

// The fields of a GPU-side event (kernels, copies, sets, collectives).
void gpu_fields(const trace::Trace& t, EventRef e, Fields& f) {
  const auto r = e.row;
  auto corr = [&](std::uint32_t v) { if (v) f.emplace_back("correlation", std::to_string(v)); };
  switch (e.table) {
    case Table::Kernels: {
      corr(t.kernels.correlation[r]);
      if (t.kernels.external_id[r]) f.emplace_back("external id", std::to_string(t.kernels.external_id[r]));
      const auto cfg = t.kernels.config[r];
      if (cfg != trace::kNone && cfg < t.launch_configs.size()) {
        const auto& lc = t.launch_configs[cfg];
        f.emplace_back("grid", fmt::format("{}×{}×{}", lc.grid_x, lc.grid_y, lc.grid_z));
        f.emplace_back("block", fmt::format("{}×{}×{}", lc.block_x, lc.block_y, lc.block_z));
        f.emplace_back("registers", std::to_string(lc.registers));
        f.emplace_back("shared memory", format_bytes(lc.shared_static + lc.shared_dynamic));
      }
      if (t.kernels.graph_id[r]) f.emplace_back("CUDA graph", std::to_string(t.kernels.graph_id[r]));
      break;
    }
    case Table::Memcpys: {
      const auto b = t.memcpys.bytes[r];
      f.emplace_back("bytes", format_bytes(b));
      f.emplace_back("direction", std::string(to_string(t.memcpys.direction[r])));
      f.emplace_back("memory", std::string(to_string(t.memcpys.src_kind[r])) + " -> " +
                                   std::string(to_string(t.memcpys.dst_kind[r])));
      if (t.memcpys.dur[r] > 0) f.emplace_back("bandwidth", fmt::format("{:.2f} GB/s", double(b) / double(t.memcpys.dur[r])));
      corr(t.memcpys.correlation[r]);
      break;
    }
    case Table::Memsets:
      f.emplace_back("bytes", format_bytes(t.memsets.bytes[r]));
      f.emplace_back("memory", std::string(to_string(t.memsets.mem_kind[r])));
      corr(t.memsets.correlation[r]);
      break;
    case Table::Collectives: {
      const auto& k = t.collectives;
      f.emplace_back("op", std::string(t.strings.get(k.op[r])));
      f.emplace_back("bytes", format_bytes(k.bytes[r]));
      if (k.dtype[r]) f.emplace_back("dtype", std::string(t.strings.get(k.dtype[r])));
      if (k.group_size[r] > 0) f.emplace_back("group size", std::to_string(k.group_size[r]));
      if (k.communicator[r]) f.emplace_back("communicator", std::string(t.strings.get(k.communicator[r])));
      f.emplace_back("side", std::string(to_string(k.side[r])));
      break;
    }
    default: break;
  }
}

}  // namespace

Fields describe_event(const Document& d, EventRef e) {
  const auto& t = d.trace;
  const auto* c = span_columns(t, e.table);
  Fields f;
  if (!c || e.row >= c->size()) return f;
  f.emplace_back("name", event_name(d, e));
  f.emplace_back("kind", kind_label(e.table));
  f.emplace_back("track", t.track_label(c->track[e.row]));
  const auto proc = t.process_of_track(c->track[e.row]);
  if (proc != trace::kNone && t.processes[proc].rank >= 0) f.emplace_back("rank", std::to_string(t.processes[proc].rank));
  f.emplace_back("start", format_duration(c->start[e.row] - d.index.start) + " from the trace's start");
  f.emplace_back("duration", format_duration(c->dur[e.row]));
  if (const auto& details = d.wait_details(); !details) f.emplace_back("details", details.error());
  else if (is_gpu_table(e.table)) gpu_fields(t, e, f);
  else host_fields(t, e, f);
  return f;
}

namespace {

// The event of a GPU-op table (from a launch) or the API call (from a GPU op) on `track` that
// contains time `ts`; the latest-starting one when several do.
EventRef event_at(const trace::Trace& t, bool gpu, std::uint32_t track, Ns ts) {
  EventRef best;
  Ns best_start = 0;
  auto scan = [&](Table table) {
    const auto* c = span_columns(t, table);
    for (std::uint32_t i = 0; i < c->size(); ++i)
      if (c->track[i] == track && c->start[i] <= ts && ts <= c->end(i) && (!best.valid() || c->start[i] > best_start)) {
        best = {table, i};
        best_start = c->start[i];
      }
  };
  if (gpu)
    for (Table table : {Table::Kernels, Table::Memcpys, Table::Memsets, Table::Collectives}) scan(table);
  else
    scan(Table::ApiCalls);
  return best;
}

// Kineto's ac2g flow events join a launch to its GPU op by place and time: a start point ('s')
// on the launching thread inside the call, an end point ('f', or a step 't') on the stream at
// the op's start, with one flow id. Used when the correlation column finds nothing in the same
// process: a trace whose GPU is listed under another process than the launching thread
// (torch.compile's triton_example.json.gz).
EventRef flow_linked(const Document& d, EventRef e) {
  const auto& t = d.trace;
  const auto& f = t.flows;
  const auto* c = span_columns(t, e.table);
  const bool from_launch = e.table == Table::ApiCalls;
  const std::uint32_t track = c->track[e.row];
  const Ns s = c->start[e.row], end = c->end(e.row);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const bool here = from_launch ? f.phase[i] == 's' : f.phase[i] != 's';
    if (!here || f.track[i] != track || f.ts[i] < s || f.ts[i] > end) continue;
    for (std::size_t j = 0; j < f.size(); ++j) {
      const bool there = from_launch ? f.phase[j] != 's' : f.phase[j] == 's';
      if (j == i || !there || f.id[j] != f.id[i] || f.category[j] != f.category[i]) continue;
      if (EventRef other = event_at(t, from_launch, f.track[j], f.ts[j]); other.valid()) return other;
    }
  }
  return {};
}

}  // namespace

std::string format_counter_value(double v, const char* unit) {
  const std::string_view u = unit ? unit : "";
  if (u == "%") return fmt::format("{:.1f} %", v);
  if (u == "GB/s") return fmt::format("{:.2f} GB/s", v);
  if (u == "MB/s") return fmt::format("{:.1f} MB/s", v);
  if (u == "B") return format_bytes(static_cast<std::int64_t>(v));  // memory
  if (u.empty()) return fmt::format("{:.6g}", v);
  return fmt::format("{:.6g} {}", v, u);
}

Fields describe_counter(const Document& d, std::uint32_t row, Ns t) {
  Fields f;
  if (row >= d.index.rows.size() || d.index.rows[row].table != Table::Counters) return f;
  const auto& r = d.index.rows[row];
  const auto& s = r.counter;
  double v = 0;
  if (!counter_value_at(d.trace.counters, s, t, v)) return f;
  f.emplace_back("counter", r.label);
  if (r.group != trace::kNone) f.emplace_back("in", d.index.groups[r.group].label);
  f.emplace_back("value", format_counter_value(v, s.unit));
  if (s.derived()) {
    const Ns b0 = s.t0 + (t - s.t0) / s.bin * s.bin;
    f.emplace_back("bin", format_duration(s.bin) + " wide, from " + format_duration(b0 - d.index.start) +
                              " from the trace's start");
    f.emplace_back("derived", "from the trace's events, averaged over each bin");
  } else {
    f.emplace_back("at", format_duration(t - d.index.start) + " from the trace's start");
  }
  return f;
}

EventRef correlated_event(const Document& d, EventRef e) {
  const auto& t = d.trace;
  const auto* c = span_columns(t, e.table);
  if (!c || e.row >= c->size() || !(e.table == Table::ApiCalls || is_gpu_table(e.table))) return {};
  if (!d.wait_details()) return flow_linked(d, e);  // no correlation column to scan
  if (const auto corr = correlation_of(t, e)) {
    const auto proc = t.process_of_track(c->track[e.row]);
    auto scan = [&](Table table, const std::vector<std::uint32_t>& col, const std::vector<std::uint32_t>& track) -> EventRef {
      for (std::uint32_t i = 0; i < col.size(); ++i)
        if (col[i] == corr && t.process_of_track(track[i]) == proc) return {table, i};
      return {};
    };
    if (e.table == Table::ApiCalls) {
      if (auto k = scan(Table::Kernels, t.kernels.correlation, t.kernels.track); k.valid()) return k;
      if (auto m = scan(Table::Memcpys, t.memcpys.correlation, t.memcpys.track); m.valid()) return m;
      if (auto m = scan(Table::Memsets, t.memsets.correlation, t.memsets.track); m.valid()) return m;
      if (auto n = scan(Table::Collectives, t.collectives.correlation, t.collectives.track); n.valid()) return n;
    } else if (auto a = scan(Table::ApiCalls, t.api_calls.correlation, t.api_calls.track); a.valid()) {
      return a;
    }
  }
  return flow_linked(d, e);
}

std::uint32_t event_color(const Document& d, EventRef e) {
  const auto& t = d.trace;
  switch (e.table) {
    case Table::Memcpys: {
      // by direction; pageable host memory (slow, synchronous staging) is drawn in warning tones
      const auto dir = t.memcpys.direction[e.row];
      const bool pageable = t.memcpys.src_kind[e.row] == trace::MemoryKind::Pageable ||
                            t.memcpys.dst_kind[e.row] == trace::MemoryKind::Pageable;
      switch (dir) {
        case trace::MemcpyDirection::HtoD: return pageable ? 0xffd84315u : 0xff2e7d32u;
        case trace::MemcpyDirection::DtoH: return pageable ? 0xffad1457u : 0xff1565c0u;
        case trace::MemcpyDirection::DtoD: return 0xff6a1b9au;
        case trace::MemcpyDirection::PtoP: return 0xff00838fu;
        default: return pageable ? 0xffef6c00u : 0xff757575u;
      }
    }
    case Table::Memsets: return 0xff8d6e63u;
    case Table::Steps: return t.steps.number[e.row] % 2 ? 0xff90a4aeu : 0xffb0bec5u;
    case Table::Syncs: return 0xffc62828u;
    case Table::IoCalls: return 0xffff8f00u;
    case Table::Collectives: return hue_color(t.collectives.op[e.row] + 7, 120, 200);
    case Table::ApiCalls: return hue_color(t.api_calls.name[e.row], 90, 215);
    default: {
      const auto* c = span_columns(t, e.table);
      return hue_color(c->name[e.row], 110, 225);
    }
  }
}

AreaAggregate aggregate_area(const Document& d, const std::vector<std::uint32_t>& rows, Ns t0, Ns t1) {
  AreaAggregate a;
  a.t0 = t0;
  a.t1 = t1;
  if (t1 <= t0) return a;
  std::map<std::pair<Table, trace::StringId>, NameAggregate> by;
  for (auto r : rows) {
    if (r >= d.index.rows.size()) continue;
    const auto& row = d.index.rows[r];
    const auto* c = span_columns(d.trace, row.table);
    if (!c) continue;
    std::vector<std::pair<Ns, Ns>> spans;
    for (const auto& lane : row.lanes) {
      const auto [first, last] = lane_range(lane, t0, t1);
      for (auto k = first; k < last; ++k) {
        const auto i = lane.row(k);
        const Ns s = std::max(t0, c->start[i]), e = std::min(t1, c->end(i));
        auto& agg = by[{row.table, c->name[i]}];
        if (agg.count == 0) agg.name = std::string(d.trace.strings.get(c->name[i]));
        ++agg.count;
        agg.total += std::max<Ns>(0, e - s);
        spans.emplace_back(s, e);
        ++a.events;
      }
    }
    // busy: the union of the row's events inside the selection
    std::sort(spans.begin(), spans.end());
    Ns busy = 0, cur_s = 0, cur_e = INT64_MIN;
    for (auto [s, e] : spans) {
      if (s > cur_e) {
        if (cur_e > cur_s) busy += cur_e - cur_s;
        cur_s = s;
        cur_e = e;
      } else {
        cur_e = std::max(cur_e, e);
      }
    }
    if (cur_e > cur_s && cur_e != INT64_MIN) busy += cur_e - cur_s;
    a.busy.emplace_back(d.index.groups[row.group].label + " / " + row.label, double(busy) / double(t1 - t0));
  }
  for (auto& [k, v] : by) a.by_name.push_back(std::move(v));
  std::sort(a.by_name.begin(), a.by_name.end(), [](const auto& x, const auto& y) {
    return x.total != y.total ? x.total > y.total : x.name < y.name;
  });
  return a;
}

}  // namespace tt::gui
