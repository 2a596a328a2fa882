#include <fmt/format.h>

#include "tracetune/trace/exporters.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/summary.h"

namespace tt::trace {
namespace {

// GPU devices become pseudo-processes with ids above any real pid.
constexpr std::int64_t kDevicePidBase = 1ll << 32;

class ChromeWriter {
 public:
  explicit ChromeWriter(const Trace& t) : t_(t) {}

  std::string run() {
    out_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    metadata();
    spans(t_.kernels, "kernel", [&](std::size_t i) {
      arg("correlation", t_.kernels.correlation[i]);
      if (t_.kernels.external_id[i] != 0) arg("external_id", t_.kernels.external_id[i]);
      if (const auto c = t_.kernels.config[i]; c != kNone) {
        const auto& lc = t_.launch_configs[c];
        raw_arg("grid", fmt::format("[{},{},{}]", lc.grid_x, lc.grid_y, lc.grid_z));
        raw_arg("block", fmt::format("[{},{},{}]", lc.block_x, lc.block_y, lc.block_z));
        arg("registers", lc.registers);
        arg("shared_memory", lc.shared_static + lc.shared_dynamic);
      }
    });
    spans(t_.memcpys, "gpu_memcpy", [&](std::size_t i) {
      arg("bytes", t_.memcpys.bytes[i]);
      str_arg("direction", to_string(t_.memcpys.direction[i]));
      str_arg("src_kind", to_string(t_.memcpys.src_kind[i]));
      str_arg("dst_kind", to_string(t_.memcpys.dst_kind[i]));
      arg("correlation", t_.memcpys.correlation[i]);
    });
    spans(t_.memsets, "gpu_memset", [&](std::size_t i) {
      arg("bytes", t_.memsets.bytes[i]);
      str_arg("mem_kind", to_string(t_.memsets.mem_kind[i]));
      arg("correlation", t_.memsets.correlation[i]);
    });
    spans(t_.api_calls, nullptr, [&](std::size_t i) {
      arg("correlation", t_.api_calls.correlation[i]);
      if (t_.api_calls.cbid[i] != 0) arg("cbid", t_.api_calls.cbid[i]);
      if (t_.api_calls.external_id[i] != 0) arg("external_id", t_.api_calls.external_id[i]);
    });
    spans(t_.syncs, "cuda_sync", [&](std::size_t i) {
      str_arg("type", to_string(t_.syncs.type[i]));
      if (t_.syncs.stream[i] >= 0) arg("stream", t_.syncs.stream[i]);
      if (t_.syncs.event[i] >= 0) arg("event", t_.syncs.event[i]);
    });
    spans(t_.ranges, nullptr, [&](std::size_t i) {
      if (t_.ranges.domain[i] != 0) str_arg("domain", t_.strings.get(t_.ranges.domain[i]));
      if (t_.ranges.external_id[i] != 0) arg("external_id", t_.ranges.external_id[i]);
      if (t_.ranges.args[i] != 0) str_arg("args", t_.strings.get(t_.ranges.args[i]));
    });
    spans(t_.steps, "step", [&](std::size_t i) { arg("step", t_.steps.number[i]); });
    spans(t_.collectives, "collective", [&](std::size_t i) {
      const auto& c = t_.collectives;
      str_arg("op", t_.strings.get(c.op[i]));
      arg("bytes", c.bytes[i]);
      arg("count", c.count[i]);
      str_arg("dtype", t_.strings.get(c.dtype[i]));
      if (c.group_size[i] >= 0) arg("group_size", c.group_size[i]);
      str_arg("communicator", t_.strings.get(c.communicator[i]));
      if (c.algorithm[i] != 0) str_arg("algorithm", t_.strings.get(c.algorithm[i]));
      if (c.protocol[i] != 0) str_arg("protocol", t_.strings.get(c.protocol[i]));
      if (c.channels[i] >= 0) arg("channels", c.channels[i]);
      if (c.seq[i] >= 0) arg("seq", c.seq[i]);
      str_arg("side", to_string(c.side[i]));
    });
    spans(t_.io_calls, "io", [&](std::size_t i) {
      const auto& io = t_.io_calls;
      str_arg("op", to_string(io.op[i]));
      if (io.path[i] != 0) str_arg("path", t_.strings.get(io.path[i]));
      if (io.fd[i] >= 0) arg("fd", io.fd[i]);
      if (io.bytes[i] >= 0) arg("bytes", io.bytes[i]);
      if (io.offset[i] >= 0) arg("offset", io.offset[i]);
      arg("result", io.result[i]);
      if (io.err[i] != 0) arg("errno", io.err[i]);
    });
    for (std::size_t i = 0; i < t_.counters.size(); ++i) {
      begin_event(t_.counters.track[i]);
      out_ += ",\"ph\":\"C\",\"name\":";
      append_json_string(out_, t_.strings.get(t_.counters.name[i]));
      out_ += ",\"ts\":";
      ts(t_.counters.ts[i]);
      out_ += fmt::format(",\"args\":{{\"value\":{}}}}}", t_.counters.value[i]);
    }
    for (std::size_t i = 0; i < t_.flows.size(); ++i) {
      begin_event(t_.flows.track[i]);
      out_ += fmt::format(",\"ph\":\"{}\",\"id\":{},\"cat\":", static_cast<char>(t_.flows.phase[i]), t_.flows.id[i]);
      append_json_string(out_, t_.strings.get(t_.flows.category[i]));
      out_ += ",\"name\":";
      append_json_string(out_, t_.strings.get(t_.flows.category[i]));
      out_ += ",\"ts\":";
      ts(t_.flows.ts[i]);
      if (t_.flows.phase[i] == 'f') out_ += ",\"bp\":\"e\"";
      out_ += '}';
    }
    out_ += "\n]}\n";
    return std::move(out_);
  }

 private:
  std::pair<std::int64_t, std::int64_t> pid_tid(std::uint32_t track) const {
    const Track& tr = t_.tracks[track];
    switch (tr.type) {
      case TrackType::Thread: {
        const Thread& th = t_.threads[tr.owner];
        return {th.process != kNone ? t_.processes[th.process].pid : 0, th.tid};
      }
      case TrackType::Stream: {
        const Stream& s = t_.streams[tr.owner];
        return {kDevicePidBase + (s.device != kNone ? s.device : 0), s.stream};
      }
      case TrackType::Process: return {t_.processes[tr.owner].pid, 0};
      case TrackType::Device: return {kDevicePidBase + tr.owner, 0};
    }
    return {0, 0};
  }

  void sep() {
    if (!first_) out_ += ",\n";
    first_ = false;
  }
  void begin_event(std::uint32_t track) {
    sep();
    const auto [pid, tid] = pid_tid(track);
    out_ += fmt::format("{{\"pid\":{},\"tid\":{}", pid, tid);
  }
  void ts(Ns ns) {
    // microseconds with the nanosecond digits kept
    const bool neg = ns < 0;
    const std::uint64_t a = neg ? 0ull - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    out_ += fmt::format("{}{}.{:03}", neg ? "-" : "", a / 1000, a % 1000);
  }
  void key(std::string_view k) {
    out_ += args_open_ ? "," : ",\"args\":{";
    args_open_ = true;
    out_ += '"';
    out_ += k;
    out_ += "\":";
  }
  template <class V> void arg(std::string_view k, V v) { key(k); out_ += fmt::format("{}", v); }
  void raw_arg(std::string_view k, std::string_view json) { key(k); out_ += json; }
  void str_arg(std::string_view k, std::string_view v) { key(k); append_json_string(out_, v); }

  template <class Table, class F>
  void spans(const Table& tab, const char* cat, F&& args) {
    for (std::size_t i = 0; i < tab.size(); ++i) {
      begin_event(tab.track[i]);
      out_ += ",\"ph\":\"X\",\"cat\":";
      append_json_string(out_, cat != nullptr ? std::string_view(cat) : category_of(tab, i));
      out_ += ",\"name\":";
      append_json_string(out_, t_.strings.get(tab.name[i]));
      out_ += ",\"ts\":";
      ts(tab.start[i]);
      out_ += ",\"dur\":";
      ts(tab.dur[i]);
      args_open_ = false;
      args(i);
      out_ += args_open_ ? "}}" : "}";
    }
  }
  std::string_view category_of(const ApiCallTable& a, std::size_t i) const {
    switch (a.api[i]) {
      case ApiKind::Runtime: return "cuda_runtime";
      case ApiKind::Driver: return "cuda_driver";
      case ApiKind::Other: break;
    }
    return "runtime";
  }
  template <class Table>
  std::string_view category_of(const Table&, std::size_t) const { return {}; }
  std::string_view category_of(const RangeTable& r, std::size_t i) const { return to_string(r.kind[i]); }

  void metadata() {
    for (std::size_t p = 0; p < t_.processes.size(); ++p) {
      const Process& pr = t_.processes[p];
      std::string label = pr.name.empty() ? "process" : pr.name;
      if (pr.rank >= 0) label += fmt::format(" (rank {})", pr.rank);
      sep();
      out_ += fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":", pr.pid);
      append_json_string(out_, label);
      out_ += "}}";
    }
    for (std::size_t d = 0; d < t_.devices.size(); ++d) {
      const Device& dv = t_.devices[d];
      std::string label = fmt::format("GPU {}", dv.index);
      if (!dv.name.empty()) label += " " + dv.name;
      if (dv.process != kNone && t_.processes[dv.process].rank >= 0) label += fmt::format(" (rank {})", t_.processes[dv.process].rank);
      sep();
      out_ += fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":", kDevicePidBase + d);
      append_json_string(out_, label);
      out_ += "}}";
    }
    for (std::uint32_t tr = 0; tr < t_.tracks.size(); ++tr) {
      std::string name;
      if (t_.tracks[tr].type == TrackType::Thread) name = t_.threads[t_.tracks[tr].owner].name;
      else if (t_.tracks[tr].type == TrackType::Stream) name = t_.track_label(tr);
      if (name.empty()) continue;
      const auto [pid, tid] = pid_tid(tr);
      sep();
      out_ += fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":", pid, tid);
      append_json_string(out_, name);
      out_ += "}}";
    }
  }

  const Trace& t_;
  std::string out_;
  bool first_ = true;
  bool args_open_ = false;
};

}  // namespace

std::string to_chrome_json(const Trace& t) { return ChromeWriter(t).run(); }

Status export_chrome(const Trace& t, const std::filesystem::path& path) {
  auto out = AtomicOutput::create(path);
  if (!out) return make_error(out.error());
  if (auto st = out->write(to_chrome_json(t)); !st) return st;
  return out->commit();
}

}  // namespace tt::trace
