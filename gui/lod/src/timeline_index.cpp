#include "tracetune/gui/timeline_index.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace tt::gui {

using trace::kNone;
using trace::Trace;

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
    // processes by (host, rank, pid); a process's threads and devices in track order
    std::vector<std::uint32_t> procs(t_.processes.size());
    for (std::uint32_t i = 0; i < procs.size(); ++i) procs[i] = i;
    std::sort(procs.begin(), procs.end(), [&](auto a, auto b) {
      const auto& pa = t_.processes[a];
      const auto& pb = t_.processes[b];
      return std::tie(pa.host, pa.rank, pa.pid) < std::tie(pb.host, pb.rank, pb.pid);
    });
    std::map<std::string, std::uint32_t> host_group;
    for (auto p : procs) {
      const auto& proc = t_.processes[p];
      const std::string host = proc.host.empty() ? "host" : proc.host;
      auto [it, fresh] = host_group.try_emplace(host, 0);
      if (fresh) it->second = add_group(host, kNone);
      std::string label = proc.rank >= 0 ? "rank " + std::to_string(proc.rank) + " · pid " : "pid ";
      label += std::to_string(proc.pid);
      if (!proc.name.empty()) label += " (" + proc.name + ")";
      const auto pg = add_group(label, it->second);
      add_owned_tracks(p, pg);
    }
    // whatever no process owns (devices of unknown processes, orphan threads)
    std::uint32_t orphans = kNone;
    for (std::uint32_t tr = 0; tr < t_.tracks.size(); ++tr) {
      if (placed_[tr] || per_track_[tr].empty()) continue;
      if (orphans == kNone) orphans = add_group("no process", kNone);
      add_track(tr, orphans);
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
    std::vector<std::uint32_t> threads, streams_by_device_order, others;
    for (std::uint32_t tr = 0; tr < t_.tracks.size(); ++tr) {
      if (per_track_[tr].empty() || t_.process_of_track(tr) != p) continue;
      if (t_.tracks[tr].type == trace::TrackType::Thread) threads.push_back(tr);
      else if (t_.tracks[tr].type == trace::TrackType::Stream) streams_by_device_order.push_back(tr);
      else others.push_back(tr);
    }
    // steps first: the rank's iterations frame everything below
    for (auto tr : threads)
      for (const auto& seg : per_track_[tr])
        if (seg.table == Table::Steps) add_row(seg, tr, pg);
    for (auto tr : threads) add_track(tr, add_group(t_.track_label(tr), pg), /*skip_steps=*/true);
    for (auto tr : others) add_track(tr, add_group(t_.track_label(tr), pg));
    // GPU → streams, one group per device
    std::map<std::uint32_t, std::uint32_t> device_group;
    for (auto tr : streams_by_device_order) {
      const auto dev = t_.streams[t_.tracks[tr].owner].device;
      auto [it, fresh] = device_group.try_emplace(dev, 0);
      if (fresh) {
        std::string label = "GPU";
        if (dev != kNone) {
          label += " " + std::to_string(t_.devices[dev].index);
          if (!t_.devices[dev].name.empty()) label += " (" + t_.devices[dev].name + ")";
        }
        it->second = add_group(label, pg);
      }
      const auto& st = t_.streams[t_.tracks[tr].owner];
      std::string label = st.name.empty() ? "stream " + std::to_string(st.stream) : st.name;
      add_track(tr, add_group(label, it->second));
    }
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

  void add_row(const Segment& seg, std::uint32_t tr, std::uint32_t group) {
    const auto proc = t_.process_of_track(tr);
    if (seg.table == Table::Counters) {
      // one row per counter name, in first-seen order
      std::vector<trace::StringId> names;
      std::map<trace::StringId, std::vector<std::uint32_t>> rows_by_name;
      for (auto i = seg.begin; i < seg.end; ++i) {
        auto& v = rows_by_name[t_.counters.name[i]];
        if (v.empty()) names.push_back(t_.counters.name[i]);
        v.push_back(i);
      }
      for (auto name : names) {
        TimelineRow row = base_row(seg.table, tr, group, proc);
        row.label = std::string(t_.strings.get(name));
        row.events = rows_by_name[name].size();
        row.counter = build_counter_series(t_.counters, std::move(rows_by_name[name]));
        idx_.index_bytes += row.counter.rows.capacity() * 4 + row.counter.block_min.capacity() * 16;
        idx_.rows.push_back(std::move(row));
      }
      return;
    }
    TimelineRow row = base_row(seg.table, tr, group, proc);
    row.label = table_label(seg.table);
    if (seg.table == Table::Collectives && t_.tracks[tr].type == trace::TrackType::Thread) row.label = "NCCL (host)";
    row.events = seg.end - seg.begin;
    const auto* cols = span_columns(t_, seg.table);
    row.lanes = build_lanes(*cols, seg.begin, seg.end, seg.table == Table::Ranges ? t_.ranges.depth.data() : nullptr);
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
