// The Kineto importer on hand-written fixtures that cover every category, the legacy 2021
// names, per-rank directories and the malformed inputs users actually have.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tracetune/trace/exporters.h"
#include "tracetune/trace/file_io.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/summary.h"

using namespace tt::trace;

namespace {

const std::string kData = TT_TEST_DATA_DIR;

Trace import_file(const std::string& rel) {
  Trace t;
  const std::filesystem::path p[] = {kData + "/" + rel};
  auto st = import_any(p, t);
  EXPECT_TRUE(st.ok()) << st.error();
  t.finalize();
  return t;
}

std::size_t find_name(const Trace& t, const SpanColumns& table, std::string_view name) {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (t.strings.get(table.name[i]) == name) return i;
  ADD_FAILURE() << "no event named " << name;
  return 0;
}

std::string import_error(std::string_view json) {
  Trace t;
  auto st = import_kineto_buffer(json, "input.json", t);
  return st.ok() ? std::string("OK") : st.error();
}

}  // namespace

TEST(KinetoImport, TimestampsAreExactNanoseconds) {
  const Trace t = import_file("kineto/all_categories.json");
  const auto step = find_name(t, t.steps, "ProfilerStep#3");
  EXPECT_EQ(t.steps.start[step], 100000500);  // 100000.5 us
  EXPECT_EQ(t.steps.dur[step], 900250);       // 900.25 us
  EXPECT_EQ(t.steps.number[step], 3);
  const auto mm = find_name(t, t.ranges, "aten::mm");
  EXPECT_EQ(t.ranges.start[mm], 100010123);
  EXPECT_EQ(t.ranges.dur[mm], 40000);  // 40.0004 us rounds to the nearest ns
}

TEST(KinetoImport, EveryCategoryLandsInItsTable) {
  const Trace t = import_file("kineto/all_categories.json");
  EXPECT_EQ(t.kernels.size(), 3u);
  EXPECT_EQ(t.memcpys.size(), 2u);
  EXPECT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.api_calls.size(), 2u);
  EXPECT_EQ(t.syncs.size(), 1u);
  EXPECT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.flows.size(), 2u);
  EXPECT_EQ(t.counters.size(), 2u);
  EXPECT_EQ(t.collectives.size(), 2u);
  EXPECT_EQ(t.ranges.size(), 9u);
  const auto drv = find_name(t, t.api_calls, "cuLaunchKernel");
  EXPECT_EQ(t.api_calls.api[drv], ApiKind::Driver);
  EXPECT_EQ(t.api_calls.correlation[drv], 901u);
  EXPECT_EQ(t.api_calls.cbid[drv], 307u);
  const auto py = find_name(t, t.ranges, "torch/nn/modules/module.py(1501): _call_impl");
  EXPECT_EQ(t.ranges.kind[py], RangeKind::PythonFunction);
  const auto fwd = find_name(t, t.ranges, "## forward ##");
  EXPECT_EQ(t.ranges.kind[fwd], RangeKind::GpuAnnotation);
  EXPECT_EQ(t.tracks[t.ranges.track[fwd]].type, TrackType::Stream);
  const auto manual = find_name(t, t.ranges, "manual region");
  EXPECT_EQ(t.ranges.dur[manual], 50500);  // from a B/E pair
  // unknown categories are kept, and said so
  find_name(t, t.ranges, "custom thing");
  const bool noted = std::any_of(t.diagnostics.begin(), t.diagnostics.end(), [](const Diagnostic& d) {
    return d.reason.find("hip_mystery") != std::string::npos;
  });
  EXPECT_TRUE(noted);
  const bool skipped_b = std::any_of(t.diagnostics.begin(), t.diagnostics.end(), [](const Diagnostic& d) {
    return d.kind == DiagnosticKind::Skipped && d.reason.find("'b'") != std::string::npos && d.count == 1;
  });
  EXPECT_TRUE(skipped_b);
}

TEST(KinetoImport, KernelsCarryLaunchConfigAndCorrelation) {
  const Trace t = import_file("kineto/all_categories.json");
  const auto k = find_name(t, t.kernels, "sm90_xmma_gemm_bf16bf16_bf16f32");
  EXPECT_EQ(t.kernels.correlation[k], 900u);
  EXPECT_EQ(t.kernels.external_id[k], 5u);
  ASSERT_NE(t.kernels.config[k], kNone);
  const LaunchConfig& c = t.launch_configs[t.kernels.config[k]];
  EXPECT_EQ(c.grid_x, 66u);
  EXPECT_EQ(c.grid_y, 2u);
  EXPECT_EQ(c.block_x, 384u);
  EXPECT_EQ(c.registers, 168u);
  EXPECT_EQ(c.shared_static, 82944u);
  const Track& tr = t.tracks[t.kernels.track[k]];
  ASSERT_EQ(tr.type, TrackType::Stream);
  EXPECT_EQ(t.streams[tr.owner].stream, 7);
  EXPECT_EQ(t.streams[tr.owner].name, "stream 7");
  const Device& d = t.devices[t.streams[tr.owner].device];
  EXPECT_EQ(d.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(d.sm_count, 132);
  EXPECT_EQ(d.compute_major, 9);
}

TEST(KinetoImport, CopiesKnowDirectionAndMemoryKinds) {
  const Trace t = import_file("kineto/all_categories.json");
  const auto h2d = find_name(t, t.memcpys, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(t.memcpys.direction[h2d], MemcpyDirection::HtoD);
  EXPECT_EQ(t.memcpys.src_kind[h2d], MemoryKind::Pinned);
  EXPECT_EQ(t.memcpys.dst_kind[h2d], MemoryKind::Device);
  EXPECT_EQ(t.memcpys.bytes[h2d], 1048576u);
  const auto d2h = find_name(t, t.memcpys, "Memcpy DtoH (Device -> Pageable)");
  EXPECT_EQ(t.memcpys.direction[d2h], MemcpyDirection::DtoH);
  EXPECT_EQ(t.memcpys.dst_kind[d2h], MemoryKind::Pageable);
  EXPECT_EQ(t.memsets.mem_kind[0], MemoryKind::Device);
  EXPECT_EQ(t.syncs.type[0], SyncType::StreamWaitEvent);
  EXPECT_EQ(t.syncs.stream[0], 20);
  EXPECT_EQ(t.syncs.event[0], 12);
}

TEST(KinetoImport, CollectivesFromKernelAndHostArgs) {
  const Trace t = import_file("kineto/all_categories.json");
  ASSERT_EQ(t.collectives.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(t.strings.get(t.collectives.op[i]), "allreduce");
    EXPECT_EQ(t.collectives.count[i], 1048576u);
    EXPECT_EQ(t.collectives.group_size[i], 8);
    if (t.collectives.side[i] == CollectiveSide::Device) {
      EXPECT_EQ(t.collectives.bytes[i], 4u * 1048576u);  // Float
      EXPECT_EQ(t.strings.get(t.collectives.communicator[i]), "0");
      EXPECT_EQ(t.collectives.correlation[i], 902u);
    } else {
      EXPECT_EQ(t.collectives.bytes[i], 2u * 1048576u);  // BFloat16
      EXPECT_EQ(t.strings.get(t.collectives.communicator[i]), "3");
    }
  }
}

TEST(KinetoImport, ProcessesThreadsAndRank) {
  const Trace t = import_file("kineto/all_categories.json");
  // distributedInfo comes after traceEvents in this file: the rank still applies
  bool found = false;
  for (const Process& p : t.processes) {
    EXPECT_EQ(p.rank, 5);
    if (p.pid == 777) {
      found = true;
      EXPECT_EQ(p.name, "python3");
    }
  }
  EXPECT_TRUE(found);
  bool main_thread = false;
  for (const Thread& th : t.threads) main_thread |= th.tid == 778 && th.name == "main";
  EXPECT_TRUE(main_thread);
  // counters from a 'C' event with two series
  EXPECT_EQ(t.strings.get(t.counters.name[0]).substr(0, 7), "memory.");
}

TEST(KinetoImport, Legacy2021Categories) {
  const Trace t = import_file("kineto/legacy_2021.json");
  ASSERT_EQ(t.kernels.size(), 1u);
  EXPECT_EQ(t.kernels.correlation[0], 501u);
  EXPECT_EQ(t.kernels.external_id[0], 11u);  // lower-case "external id"
  EXPECT_EQ(t.streams[t.tracks[t.kernels.track[0]].owner].stream, 7);
  ASSERT_EQ(t.memcpys.size(), 1u);
  EXPECT_EQ(t.memcpys.src_kind[0], MemoryKind::Pageable);
  EXPECT_EQ(t.memsets.size(), 1u);
  EXPECT_EQ(t.api_calls.size(), 2u);
  const auto op = find_name(t, t.ranges, "aten::linear");
  EXPECT_EQ(t.ranges.kind[op], RangeKind::CpuOp);
  const auto py = find_name(t, t.ranges, "train.py(12): step");
  EXPECT_EQ(t.ranges.kind[py], RangeKind::PythonFunction);
  // the Python range contains the op: depth is computed per track
  EXPECT_EQ(t.ranges.depth[py], 0);
  EXPECT_EQ(t.ranges.depth[op], 1);
  // legacy "stream 7" tid on the flow endpoint maps to the same numeric stream id
  EXPECT_EQ(t.flows.size(), 2u);
}

TEST(KinetoImport, DirectoryOfRanks) {
  const Trace t = import_file("kineto/two_ranks");
  const auto s = summarize(t);
  EXPECT_EQ(s.ranks, (std::vector<int>{0, 1}));
  ASSERT_EQ(t.steps.size(), 2u);
  // each rank's device 0 is its own device
  EXPECT_EQ(t.devices.size(), 2u);
  EXPECT_NE(t.devices[0].process, t.devices[1].process);
}

TEST(KinetoImport, BadInputsGiveOneClearLine) {
  EXPECT_NE(import_error("").find("input.json"), std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": [").find("input.json"), std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": [{\"ph\": \"X\", \"ts\": \"late\"}]}").find("'ts' must be a number"),
            std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": [{\"ts\": 1}]}").find("missing 'ph'"), std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"n\"}]}").find("missing 'ts'"),
            std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": [{\"ph\": 5, \"ts\": 1}]}").find("'ph' must be a string"),
            std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": {}}").find("'traceEvents' must be an array"), std::string::npos);
  EXPECT_NE(import_error("{\"schemaVersion\": 1}").find("no 'traceEvents'"), std::string::npos);
  EXPECT_NE(import_error("42").find("not a Chrome trace"), std::string::npos);
  EXPECT_NE(import_error("{\"traceEvents\": []} trailing").find("input.json"), std::string::npos);
  const std::string deep(100000, '[');
  EXPECT_NE(import_error("{\"traceEvents\": " + deep).find("input.json"), std::string::npos);
  // error messages are one line
  for (const char* bad : {"{", "{\"traceEvents\": [1]}", "nul"}) {
    const std::string e = import_error(bad);
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_NE(e, "OK");
  }
}

TEST(KinetoImport, MegabyteStringsAndOddArgTypesAreFine) {
  const std::string big(1 << 20, 'n');
  const std::string json = "{\"traceEvents\": [{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + big +
                           "\", \"pid\": 1, \"tid\": 1, \"ts\": 1, \"dur\": 2, \"args\": {\"External id\": \"0x10\", "
                           "\"correlation\": [1], \"stream\": null}}]}";
  Trace t;
  auto st = import_kineto_buffer(json, "big.json", t);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(t.ranges.size(), 1u);
  // names are cut to 64 KiB (issue 17: a 100 MB name stalled the GUI), and the cut is counted
  EXPECT_EQ(t.strings.get(t.ranges.name[0]).size(), std::size_t{1} << 16);
  EXPECT_TRUE(std::any_of(t.diagnostics.begin(), t.diagnostics.end(),
                          [](const Diagnostic& d) { return d.reason.find("longer than 64 KiB") != std::string::npos; }));
  EXPECT_EQ(t.ranges.external_id[0], 16u);
  const bool noted = std::any_of(t.diagnostics.begin(), t.diagnostics.end(), [](const Diagnostic& d) {
    return d.reason.find("unexpected type") != std::string::npos && d.count == 2;
  });
  EXPECT_TRUE(noted);
}

TEST(KinetoImport, OpShapesOfLayerNormAndCrossEntropyBecomeCounters) {
  // record_shapes=True: the tuner benchmarks substitutions at these shapes
  Trace t;
  auto st = import_kineto_buffer(
      R"({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::layer_norm", "pid": 1, "tid": 1, "ts": 1, "dur": 1,
         "args": {"Input Dims": [[8, 32, 16], [], [16], [16], [], []], "Input type": ["float"]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::cross_entropy_loss", "pid": 1, "tid": 1, "ts": 3, "dur": 1,
         "args": {"Input Dims": [[256, 16000], [256], [], [], [], []]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::layer_norm", "pid": 1, "tid": 1, "ts": 5, "dur": 1,
         "args": {"Input Dims": [[], [], [], [], [], []]}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 7, "dur": 1,
         "args": {"Input Dims": [[8, 16]]}}]})",
      "shapes.json", t);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(t.counters.size(), 2u);  // no shape from empty dims, none for ops no entry replaces
  EXPECT_EQ(t.strings.get(t.counters.name[0]), "shape.aten::layer_norm.256x16");
  EXPECT_EQ(t.strings.get(t.counters.name[1]), "shape.aten::cross_entropy_loss.256x16000");
  EXPECT_EQ(t.counters.value[0], 1.0);
  EXPECT_EQ(t.counters.ts[1], 3000);
}

TEST(KinetoImport, CounterArgsBeforePhase) {
  // Field order is free in JSON: a counter whose args precede "ph" keeps its values.
  Trace t;
  auto st = import_kineto_buffer(
      R"({"traceEvents": [{"args": {"bytes": 5, "flag": true}, "name": "mem", "ph": "C", "pid": 1, "tid": 1, "ts": 2},
                          {"args": {"External id": 7}, "ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 3, "dur": 1}]})",
      "order.json", t);
  ASSERT_TRUE(st.ok()) << st.error();
  ASSERT_EQ(t.counters.size(), 1u);
  EXPECT_EQ(t.counters.value[0], 5.0);
  EXPECT_EQ(t.strings.get(t.counters.name[0]), "mem");
  ASSERT_EQ(t.ranges.size(), 1u);
  EXPECT_EQ(t.ranges.external_id[0], 7u);
}

// A stream wait that names its event record (wait_on_cuda_event_record_corr_id) also gives the
// record: an event_record row on the recording stream with the record call's correlation id,
// once per record, and none for a stream the trace has no other event on.
TEST(KinetoImport, StreamWaitsGiveTheirEventRecords) {
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "fft", "pid": 0, "tid": 20, "ts": 10, "dur": 5,
     "args": {"device": 0, "stream": 20, "correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 20, "dur": 5,
     "args": {"device": 0, "stream": 7, "correlation": 9}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 16, "dur": 0,
     "args": {"cuda_sync_kind": "Stream Wait Event", "device": 0, "stream": 7, "wait_on_stream": 20,
              "wait_on_cuda_event_record_corr_id": 6, "wait_on_cuda_event_id": 3, "correlation": 7}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 17, "dur": 0,
     "args": {"cuda_sync_kind": "Stream Wait Event", "device": 0, "stream": 7, "wait_on_stream": 20,
              "wait_on_cuda_event_record_corr_id": 6, "wait_on_cuda_event_id": 3, "correlation": 8}},
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7, "ts": 18, "dur": 0,
     "args": {"cuda_sync_kind": "Stream Wait Event", "device": 0, "stream": 7, "wait_on_stream": 21,
              "wait_on_cuda_event_record_corr_id": 4, "wait_on_cuda_event_id": 1, "correlation": 9}}]})";
  Trace t;
  auto st = import_kineto_buffer(json, "waits.json", t);
  ASSERT_TRUE(st.ok()) << st.error();
  t.finalize();
  std::vector<std::size_t> records;
  for (std::size_t i = 0; i < t.syncs.size(); ++i)
    if (t.syncs.type[i] == SyncType::EventRecord) records.push_back(i);
  ASSERT_EQ(records.size(), 1u);  // one record named twice; stream 21 has no events
  const std::size_t r = records[0];
  EXPECT_EQ(t.syncs.correlation[r], 6u);
  EXPECT_EQ(t.syncs.stream[r], 20);
  EXPECT_EQ(t.syncs.event[r], 3);
  EXPECT_EQ(t.streams[t.tracks[t.syncs.track[r]].owner].stream, 20);
  EXPECT_EQ(t.streams.size(), 2u);
  EXPECT_EQ(to_string(t.syncs.type[r]), "event_record");
}

namespace {

// Everything an import leaves in a trace, as text: its events (Chrome JSON), processes,
// threads, devices, streams, metadata and diagnostics; or the error.
std::string import_dump(std::string_view json, std::size_t window_bytes) {
  Trace t;
  auto st = import_kineto_buffer(json, "input.json", t, -1, window_bytes);
  if (!st) return "error: " + st.error();
  t.finalize();
  std::string out = to_chrome_json(t);
  for (const auto& p : t.processes) out += "\nprocess " + std::to_string(p.pid) + " " + p.name + " " + std::to_string(p.rank);
  for (const auto& th : t.threads) out += "\nthread " + std::to_string(th.tid) + " " + th.name;
  for (const auto& d : t.devices) out += "\ndevice " + std::to_string(d.index) + " " + d.name + " " + std::to_string(d.sm_count);
  for (const auto& s : t.streams) out += "\nstream " + std::to_string(s.stream) + " " + s.name;
  for (const auto& [k, v] : t.metadata) out += "\nmeta " + k + "=" + v;
  for (const auto& d : t.diagnostics) out += "\ndiag " + d.source + " " + d.reason + " " + std::to_string(d.count);
  out += "\nevents " + std::to_string(t.event_count());
  return out;
}

// A trace whose "}, {" are often not between two events: in names, in args' arrays of objects,
// in root fields before and after the events; with duplicate keys and args of odd types.
std::string tricky_trace(int events) {
  std::string j = R"({"deviceProperties": [{"id": 0, "name": "A}, {B", "numSms": 108}, {"id": 1, "name": "C"}],)"
                  "\n\"traceEvents\": [\n";
  for (int i = 0; i < events; ++i) {
    if (i) j += ",\n  ";
    const std::string n = std::to_string(i);
    switch (i % 5) {
      case 0: j += R"({"ph": "X", "cat": "cpu_op", "name": "op}, {)" + n + R"(", "pid": 1, "tid": 2, "ts": )" + n +
                   R"(.5, "dur": 1, "args": {"External id": )" + n + R"(, "x": [{"a": 1}, {"b": [{"c": 2}, {}]}]}})";
        break;
      case 1: j += R"({"ph": "X", "cat": "kernel", "name": "k\"}, {\")" + n + R"(", "pid": 0, "tid": 7, "ts": )" + n +
                   R"(, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": )" + n + R"(, "grid": [1, 2, 3], "block": "odd"}})";
        break;
      case 2: j += R"({"ph": "X", "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": )" + n +
                   R"(, "dur": 1, "args": {"correlation": )" + n + R"(}})";
        break;
      case 3: j += R"({"ph": "C", "name": "mem", "pid": 1, "tid": 2, "ts": )" + n + R"(, "args": {"a": 1, "b": 2.5}})";
        break;
      default: j += R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)" + n + R"(", "pid": 1, "tid": 2, "ts": )" +
                    n + R"(, "dur": 3, "args": {"labels": [{"k": "}, {"}, {"k": 1}]}})";
    }
  }
  j += "\n], \"extra\": [{\"a\": 1}, {\"b\": 2}, {\"c\": 3}], \"distributedInfo\": {\"rank\": 3},"
       " \"baseTimeNanoseconds\": 1700000000000000000}\n";
  return j;
}

constexpr std::size_t kWhole = std::size_t{1} << 40;  // a window larger than any input: one document

}  // namespace

// The windowed read (kineto_import.cpp, "reading in windows") leaves the trace the whole
// document's read leaves, whatever the window size and wherever "}, {" hides; and a file with
// an error gives the whole document's message.
TEST(KinetoImport, WindowsReadWhatTheWholeDocumentReads) {
  const std::string tricky = tricky_trace(400);
  const std::string whole = import_dump(tricky, kWhole);
  ASSERT_EQ(whole.find("error"), std::string::npos) << whole;
  // window sizes that put cuts everywhere: in strings, in args, in the root fields after the events
  for (std::size_t w = 16; w < 5000; w = w * 9 / 8 + 1) EXPECT_EQ(import_dump(tricky, w), whole) << "window " << w;
  for (const char* rel : {"/corpus/kineto/hta/alexnet.json.gz", "/corpus/kineto/hta/simple_add.json.gz",
                          "/corpus/kineto/hta/event_sync_multi_stream.json.gz", "/corpus/kineto/param/dlrm_8rank/rank-0.json.gz"}) {
    auto json = read_maybe_gzip(kData + rel);
    ASSERT_TRUE(json.ok()) << rel;
    const std::string_view text(json.value().data(), json.value().size());
    const std::string expected = import_dump(text, kWhole);
    for (std::size_t w : {64, 1000, 20000}) EXPECT_EQ(import_dump(text, w), expected) << rel << " window " << w;
  }
  // errors anywhere: each one the whole document's message
  const std::size_t mid = tricky.find("\"ph\": \"C\"", tricky.size() / 2);
  std::vector<std::string> bad = {
      tricky.substr(0, tricky.size() - 20),                                  // cut off
      tricky.substr(0, mid) + "\"pH\"" + tricky.substr(mid + 4),             // an event without ph
      tricky.substr(0, mid) + "\"ph\": \"C\" \"x\"" + tricky.substr(mid + 9),  // invalid JSON in the middle
      tricky.substr(0, mid) + "\"ph\": \"\xff\"" + tricky.substr(mid + 9),    // invalid UTF-8
      tricky + "trailing",
  };
  for (const auto& b : bad) {
    const std::string expected = import_dump(b, kWhole);
    EXPECT_EQ(expected.rfind("error: ", 0), 0u) << expected.substr(0, 200);
    for (std::size_t w : {16, 257, 4096}) EXPECT_EQ(import_dump(b, w), expected) << "window " << w;
  }
}
