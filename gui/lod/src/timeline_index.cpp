#include "tracetune/gui/timeline_index.h"

#include <algorithm>
#include <map>
#include <string_view>
#include <tuple>

#include "tracetune/gui/derived_counters.h"

namespace tt::gui {

using trace::kNone;
using trace::Trace;

// Memory counters (docs/analysis.md, "Memory": "<device> memory.<kind>") are bytes.
const char* counter_unit(std::string_view name) {
  for (std::string_view kind : {" memory.allocated", " memory.reserved", " memory.max_allocated", " memory.rss"})
    if (name.ends_with(kind)) return "B";
  return "";
}

bool is_gpu_table(Table t) {
  return t == Table::Kernels || t == Table::Memcpys || t == Table::Memsets || t == Table::Collectives;
}

const char* table_label(Table t) {
  switch (t) {
    case Table::Ranges: return "CPU ops";
    case Table::ApiCalls: return "CUDA API";
    case Table::Syncs: return "syncs";
    case Table::IoCalls: return "I/O";
    case Table::Steps: return "steps";
    case Table::Kernels: return "kernels";
    case Table::Memcpys: return "memcpy";
    case Table::Memsets: return "memset";
    case Table::Collectives: return "NCCL";
    case Table::Counters: return "counter";
  }
  return "?";
}

const trace::SpanColumns* span_columns(const Trace& t, Table table) {
  switch (table) {
    case Table::Ranges: return &t.ranges;
    case Table::ApiCalls: return &t.api_calls;
    case Table::Syncs: return &t.syncs;
    case Table::IoCalls: return &t.io_calls;
    case Table::Steps: return &t.steps;
    case Table::Kernels: return &t.kernels;
    case Table::Memcpys: return &t.memcpys;
    case Table::Memsets: return &t.memsets;
    case Table::Collectives: return &t.collectives;
    case Table::Counters: return nullptr;
  }
  return nullptr;
}

namespace {

struct Segment {
  Table table;
  std::uint32_t begin, end;
};

// Tables are sorted by (track, start) after finalize(): each track is one contiguous run.
void add_runs(const std::vector<std::uint32_t>& track_col, Table table, std::vector<std::vector<Segment>>& per_track) {
  const auto n = static_cast<std::uint32_t>(track_col.size());
  for (std::uint32_t i = 0; i < n;) {
    std::uint32_t j = i + 1;
    while (j < n && track_col[j] == track_col[i]) ++j;
    if (track_col[i] < per_track.size()) per_track[track_col[i]].push_back({table, i, j});
    i = j;
  }
}

std::size_t lanes_bytes(const std::vector<Lane>& lanes) {
  std::size_t b = lanes.capacity() * sizeof(Lane);
  for (const auto& l : lanes) b += l.index.capacity() * sizeof(std::uint32_t);
  return b;
}

class Builder {
 public:
  explicit Builder(const Trace& t) : t_(t), per_track_(t.tracks.size()), placed_(t.tracks.size(), false) {
    add_runs(t.ranges.track, Table::Ranges, per_track_);
    add_runs(t.api_calls.track, Table::ApiCalls, per_track_);
    add_runs(t.syncs.track, Table::Syncs, per_track_);
    add_runs(t.io_calls.track, Table::IoCalls, per_track_);
    add_runs(t.steps.track, Table::Steps, per_track_);
    add_runs(t.kernels.track, Table::Kernels, per_track_);
    add_runs(t.memcpys.track, Table::Memcpys, per_track_);
    add_runs(t.memsets.track, Table::Memsets, per_track_);
    add_runs(t.collectives.track, Table::Collectives, per_track_);
    add_runs(t.counters.track, Table::Counters, per_track_);
  }

  TimelineIndex build() {
    const auto [s, e] = t_.time_bounds();
    idx_.start = s;
    idx_.end = e;
    grid_ = BinGrid::covering(s, e);
    // processes by (host, rank, pid); a process's threads and devices in track order
    std::vector<std::uint32_t> procs(t_.processes.size());
    for (std::uint32_t i = 0; i < procs.size(); ++i) procs[i] = i;
    std::sort(procs.begin(), procs.end(), [&](auto a, auto b) {
      const auto& pa = t_.processes[a];
      const auto& pb = t_.processes[b];
      return std::tie(pa.host, pa.rank, pa.pid) < std::tie(pb.host, pb.rank, pb.pid);
    });
    std::map<std::string, std::uint32_t> host_group, pseudo_group;
    for (auto p : procs) {
      const auto& proc = t_.processes[p];
      const std::string host = proc.host.empty() ? "host" : proc.host;
      auto [it, fresh] = host_group.try_emplace(host, 0);
      if (fresh) it->second = add_group(host, kNone);
      if (proc.pid < 0) {  // a Kineto pseudo-process: under the host's one folded group
        auto [pit, pfresh] = pseudo_group.try_emplace(host, 0);
        if (pfresh) {
          pit->second = add_group("profiler pseudo-processes", it->second);
          idx_.groups[pit->second].start_collapsed = true;
        }
        add_owned_tracks(p, add_group(proc.name.empty() ? "pid " + std::to_string(proc.pid) : proc.name, pit->second));
        continue;
      }
      std::string label = proc.rank >= 0 ? "rank " + std::to_string(proc.rank) + " · pid " : "pid ";
      label += std::to_string(proc.pid);
      if (!proc.name.empty()) label += " (" + proc.name + ")";
      const auto pg = add_group(label, it->second);
      add_owned_tracks(p, pg);
    }
    // whatever no process owns (devices of unknown processes, orphan threads)
    std::uint32_t orphans = kNone;
    std::vector<std::uint32_t> orphan_tracks;
    for (std::uint32_t tr = 0; tr < t_.tracks.size(); ++tr) {
      if (placed_[tr] || per_track_[tr].empty()) continue;
      if (orphans == kNone) orphans = add_group("no process", kNone);
      add_track(tr, orphans);
      orphan_tracks.push_back(tr);
    }
    if (orphans != kNone) {  // their derived counters, named by device since they share a group
      add_io_row(orphan_tracks, orphans, kNone);
      for (const auto& [dev, dev_streams] : streams_by_device(orphan_tracks))
        add_device_rows(dev_streams, orphans, kNone, device_label(dev) + " ");
    }
    return std::move(idx_);
  }

 private:
  std::uint32_t add_group(std::string label, std::uint32_t parent) {
    TimelineGroup g;
    g.label = std::move(label);
    g.parent = parent;
    g.level = parent == kNone ? 0 : idx_.groups[parent].level + 1;
    idx_.groups.push_back(std::move(g));
    return static_cast<std::uint32_t>(idx_.groups.size() - 1);
  }

  void add_owned_tracks(std::uint32_t p, std::uint32_t pg) {
    std::vector<std::uint32_t> threads, streams, others;
    for (std::uint32_t tr = 0; tr < t_.tracks.size(); ++tr) {
      if (per_track_[tr].empty() || t_.process_of_track(tr) != p) continue;
      if (t_.tracks[tr].type == trace::TrackType::Thread) threads.push_back(tr);
      else if (t_.tracks[tr].type == trace::TrackType::Stream) streams.push_back(tr);
      else others.push_back(tr);
    }
    // steps first: the rank's iterations frame everything below
    for (auto tr : threads)
      for (const auto& seg : per_track_[tr])
        if (seg.table == Table::Steps) add_row(seg, tr, pg);
    // then the process's I/O throughput (over all its threads)
    std::vector<std::uint32_t> hosts = threads;
    hosts.insert(hosts.end(), others.begin(), others.end());
    add_io_row(hosts, pg, p);
    for (auto tr : threads) add_track(tr, add_group(t_.track_label(tr), pg), /*skip_steps=*/true);
    for (auto tr : others) add_track(tr, add_group(t_.track_label(tr), pg));
    // GPU → its derived counters, then its streams: one group per device, devices in the
    // order of their first stream (streams without a device share one "GPU" group)
    for (const auto& [dev, dev_streams] : streams_by_device(streams)) {
      const auto gg = add_group(device_label(dev), pg);
      add_device_rows(dev_streams, gg, p, "");
      for (auto tr : dev_streams) {
        const auto& st = t_.streams[t_.tracks[tr].owner];
        std::string label = st.name.empty() ? "stream " + std::to_string(st.stream) : st.name;
        add_track(tr, add_group(label, gg));
      }
    }
  }

  std::string device_label(std::uint32_t dev) const {
    std::string label = "GPU";
    if (dev != kNone) {
      label += " " + std::to_string(t_.devices[dev].index);
      if (!t_.devices[dev].name.empty()) label += " (" + t_.devices[dev].name + ")";
    }
    return label;
  }

  // The stream tracks among `tracks`, by device in first-seen order, each in track order.
  std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> streams_by_device(
      const std::vector<std::uint32_t>& tracks) const {
    std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> out;
    for (auto tr : tracks) {
      if (t_.tracks[tr].type != trace::TrackType::Stream) continue;
      const auto dev = t_.streams[t_.tracks[tr].owner].device;
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& d) { return d.first == dev; });
      if (it == out.end()) it = out.insert(out.end(), {dev, {}});
      it->second.push_back(tr);
    }
    return out;
  }

  // ---- derived counters (derived_counters.h): rows with no contributing event are not made ----

  // GPU busy % and H2D / D2H bandwidth of one device's streams.
  void add_device_rows(const std::vector<std::uint32_t>& streams, std::uint32_t group, std::uint32_t proc,
                       const std::string& prefix) {
    std::vector<TableRun> work, copies;
    for (auto tr : streams)
      for (const auto& seg : per_track_[tr]) {
        if (seg.table != Table::Kernels && seg.table != Table::Memcpys && seg.table != Table::Memsets) continue;
        work.push_back({span_columns(t_, seg.table), seg.begin, seg.end});
        if (seg.table == Table::Memcpys) copies.push_back(work.back());
      }
    if (work.empty()) return;
    const double bin = static_cast<double>(grid_.bin);
    add_derived_row(covered_ns_per_bin(work, grid_), 100.0 / bin, "%", prefix + "GPU busy %", streams[0], group, proc);
    // bytes per ns is GB/s
    add_derived_row(copy_bytes_per_bin(t_.memcpys, copies, trace::MemcpyDirection::HtoD, grid_), 1.0 / bin, "GB/s",
                    prefix + "H2D GB/s", streams[0], group, proc);
    add_derived_row(copy_bytes_per_bin(t_.memcpys, copies, trace::MemcpyDirection::DtoH, grid_), 1.0 / bin, "GB/s",
                    prefix + "D2H GB/s", streams[0], group, proc);
  }

  // I/O throughput of the I/O calls on `tracks` (a process's threads).
  void add_io_row(const std::vector<std::uint32_t>& tracks, std::uint32_t group, std::uint32_t proc) {
    std::vector<TableRun> runs;
    std::uint32_t first = kNone;
    for (auto tr : tracks)
      for (const auto& seg : per_track_[tr])
        if (seg.table == Table::IoCalls) {
          runs.push_back({&t_.io_calls, seg.begin, seg.end});
          if (first == kNone) first = tr;
        }
    if (runs.empty()) return;
    // bytes per ns × 1000 is MB/s
    add_derived_row(io_bytes_per_bin(t_.io_calls, runs, grid_), 1e3 / static_cast<double>(grid_.bin), "MB/s",
                    "I/O MB/s", first, group, proc);
  }

  void add_derived_row(const std::vector<double>& per_bin, double scale, const char* unit, std::string label,
                       std::uint32_t tr, std::uint32_t group, std::uint32_t proc) {
    if (per_bin.empty()) return;
    std::vector<float> values(per_bin.size());
    for (std::size_t i = 0; i < per_bin.size(); ++i) values[i] = static_cast<float>(per_bin[i] * scale);
    TimelineRow row = base_row(Table::Counters, tr, group, proc);
    row.label = std::move(label);
    row.events = 0;  // derived from other rows' events: it holds none of its own
    row.counter = build_binned_series(std::move(values), grid_.t0, grid_.bin, unit);
    idx_.index_bytes += row.counter.heap_bytes();
    idx_.rows.push_back(std::move(row));
  }

  void add_track(std::uint32_t tr, std::uint32_t group, bool skip_steps = false) {
    placed_[tr] = true;
    // display order within a track's group
    static constexpr Table kOrder[] = {Table::Steps,  Table::Ranges,  Table::ApiCalls,    Table::Syncs,
                                       Table::IoCalls, Table::Kernels, Table::Memcpys, Table::Memsets,
                                       Table::Collectives, Table::Counters};
    for (auto table : kOrder) {
      if (skip_steps && table == Table::Steps) continue;
      for (const auto& seg : per_track_[tr])
        if (seg.table == table) add_row(seg, tr, group);
    }
  }

  // The segment's rows grouped by a key column, groups in first-seen order.
  static std::vector<std::pair<trace::StringId, std::vector<std::uint32_t>>> group_by(
      const std::vector<trace::StringId>& key, const Segment& seg) {
    std::vector<std::pair<trace::StringId, std::vector<std::uint32_t>>> groups;
    std::map<trace::StringId, std::size_t> slot;
    for (auto i = seg.begin; i < seg.end; ++i) {
      auto [it, fresh] = slot.try_emplace(key[i], groups.size());
      if (fresh) groups.emplace_back(key[i], std::vector<std::uint32_t>{});
      groups[it->second].second.push_back(i);
    }
    return groups;
  }

  void add_row(const Segment& seg, std::uint32_t tr, std::uint32_t group) {
    const auto proc = t_.process_of_track(tr);
    if (seg.table == Table::Counters) {  // one row per counter name
      for (auto& [name, rows] : group_by(t_.counters.name, seg)) {
        TimelineRow row = base_row(seg.table, tr, group, proc);
        row.label = std::string(t_.strings.get(name));
        row.events = rows.size();
        row.counter = build_counter_series(t_.counters, std::move(rows));
        row.counter.unit = counter_unit(row.label);
        idx_.index_bytes += row.counter.heap_bytes();
        idx_.rows.push_back(std::move(row));
      }
      return;
    }
    const bool host_nccl = seg.table == Table::Collectives && t_.tracks[tr].type == trace::TrackType::Thread;
    const std::string label = host_nccl ? "NCCL (host)" : table_label(seg.table);
    if (seg.table == Table::Collectives) {  // one row per communicator when a track has several
      auto comms = group_by(t_.collectives.communicator, seg);
      if (comms.size() > 1) {
        for (auto& [comm, rows] : comms) {
          TimelineRow row = base_row(seg.table, tr, group, proc);
          const auto name = t_.strings.get(comm);
          row.label = label + (name.empty() ? std::string(" · no communicator") : " · comm " + std::string(name));
          row.events = rows.size();
          row.lanes = build_lanes_of(t_.collectives, rows);
          idx_.index_bytes += lanes_bytes(row.lanes);
          idx_.rows.push_back(std::move(row));
        }
        return;
      }
    }
    TimelineRow row = base_row(seg.table, tr, group, proc);
    row.label = label;
    row.events = seg.end - seg.begin;
    const auto* cols = span_columns(t_, seg.table);
    row.lanes = build_lanes(*cols, seg.begin, seg.end, seg.table == Table::Ranges ? &t_.ranges.depth : nullptr);
    idx_.index_bytes += lanes_bytes(row.lanes);
    idx_.rows.push_back(std::move(row));
  }

  TimelineRow base_row(Table table, std::uint32_t tr, std::uint32_t group, std::uint32_t proc) const {
    TimelineRow row;
    row.table = table;
    row.track = tr;
    row.group = group;
    row.process = proc;
    row.rank = proc == kNone ? -1 : t_.processes[proc].rank;
    return row;
  }

  const Trace& t_;
  std::vector<std::vector<Segment>> per_track_;
  std::vector<bool> placed_;
  BinGrid grid_;  // the derived counters' bins, over the trace's span
  TimelineIndex idx_;
};

}  // namespace

TimelineIndex build_timeline_index(const Trace& t) { return Builder(t).build(); }

RowPosition locate(const TimelineIndex& idx, const Trace& t, EventRef ref) {
  const auto* cols = span_columns(t, ref.table);
  if (!cols || ref.row >= cols->size()) return {};
  const auto track = cols->track[ref.row];
  for (std::uint32_t r = 0; r < idx.rows.size(); ++r) {
    const auto& row = idx.rows[r];
    if (row.table != ref.table || row.track != track) continue;
    for (std::uint32_t l = 0; l < row.lanes.size(); ++l) {
      const auto& lane = row.lanes[l];
      if (lane.index.empty()) {
        if (ref.row >= lane.begin && ref.row < lane.end) return {r, l, ref.row - lane.begin};
        continue;
      }
      // start-sorted: binary search, then step over events with the same start
      auto it = std::lower_bound(lane.index.begin(), lane.index.end(), cols->start[ref.row],
                                 [&](std::uint32_t i, Ns s) { return cols->start[i] < s; });
      for (; it != lane.index.end() && cols->start[*it] == cols->start[ref.row]; ++it)
        if (*it == ref.row) return {r, l, static_cast<std::uint32_t>(it - lane.index.begin())};
    }
  }
  return {};
}

}  // namespace tt::gui
