// Kineto (PyTorch profiler) Chrome-trace JSON -> Trace.
//
// One streaming pass with simdjson's On-Demand API: no DOM, each event's fields are read
// once in whatever order they appear, strings are interned straight from the document's
// bytes (get_text: no copy unless they have escapes); large files are parsed in windows
// ("reading in windows" below). Timestamps are decimal microseconds ("4458676522690.655"); they are converted
// from the token text to integer nanoseconds exactly (never through a double, which loses
// the nanosecond digits at epoch-sized values).
//
// Category mapping (current names, and the legacy 2021 ones after the slash):
//   kernel/Kernel, mtia_ccp_events        -> kernels   (dma_request -> memcpys)
//   gpu_memcpy/Memcpy                     -> memcpys   (direction and memory kinds from the name)
//   gpu_memset/Memset                     -> memsets
//   cuda_runtime/Runtime, cuda_driver, mtia_runtime, privateuse1_* -> api_calls
//   cuda_sync                             -> syncs
//   cpu_op/Operator, user_annotation, gpu_user_annotation, python_function/Python,
//   Trace, any other category             -> ranges (kind by category)
//   "ProfilerStep#N"                      -> also a step
//   args "Collective name"                -> also a collective (host side on cpu_op,
//                                            device side on kernels)
//   ph s/t/f -> flows; ph C -> counters; ph i/I/R -> instant ranges; ph B/E -> ranges;
//   ph M -> process/thread names (applied, counted as metadata).
#include <algorithm>
#include <charconv>
#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <simdjson.h>

#include "tracetune/trace/file_io.h"
#include "tracetune/trace/units.h"
#include "tracetune/trace/importers.h"
#include "tracetune/trace/strings.h"
#include "json_stream.h"

namespace tt::trace {
namespace od = simdjson::ondemand;
namespace fs = std::filesystem;

namespace {

// ---- numbers from token text ----

// Parses a JSON number token (possibly followed by whitespace or a delimiter) holding
// microseconds into integer nanoseconds, rounding to the nearest ns. False if malformed.
bool us_token_to_ns(std::string_view tok, Ns& out) {
  std::size_t i = 0;
  bool neg = false;
  if (i < tok.size() && tok[i] == '-') { neg = true; ++i; }
  std::uint64_t ip = 0;
  std::size_t digits = 0;
  for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i, ++digits) {
    if (ip > (std::numeric_limits<std::int64_t>::max() / 1000 - 9) / 10) return false;
    ip = ip * 10 + static_cast<unsigned>(tok[i] - '0');
  }
  if (digits == 0) return false;
  std::uint64_t frac = 0;  // nanoseconds
  if (i < tok.size() && tok[i] == '.') {
    ++i;
    int n = 0;
    bool round_up = false;
    std::size_t fd = 0;
    for (; i < tok.size() && tok[i] >= '0' && tok[i] <= '9'; ++i, ++fd) {
      if (n < 3) { frac = frac * 10 + static_cast<unsigned>(tok[i] - '0'); ++n; }
      else if (n == 3) { round_up = tok[i] >= '5'; ++n; }
    }
    if (fd == 0) return false;
    for (; n < 3; ++n) frac *= 10;
    if (round_up) ++frac;
  }
  if (i < tok.size() && (tok[i] == 'e' || tok[i] == 'E')) {
    // Rare in traces: fall back to a double.
    double d = 0;
    const char* b = tok.data();
    std::size_t e = i + 1;
    while (e < tok.size() && (std::isdigit(static_cast<unsigned char>(tok[e])) || tok[e] == '-' || tok[e] == '+')) ++e;
    auto [p, ec] = std::from_chars(b, b + e, d);
    if (ec != std::errc() || !(d > -9.2e15 && d < 9.2e15)) return false;
    out = static_cast<Ns>(d * 1000.0 + (d < 0 ? -0.5 : 0.5));
    return true;
  }
  Ns v = static_cast<Ns>(ip) * 1000 + static_cast<Ns>(frac);
  out = neg ? -v : v;
  return true;
}

// Event names longer than this are cut (a 100 MB name is an attack or a bug, not a name: the
// reader refuses cells over 64 MiB, and the GUI would try to draw it).
constexpr std::size_t kMaxNameBytes = std::size_t{1} << 16;

// Why a time token was refused: a number too large for nanoseconds in 64 bits is not "not a
// number". The token is shortened for the message.
std::string bad_time(std::string_view key, std::string_view tok) {
  while (!tok.empty() && (tok.back() == ' ' || tok.back() == '\n' || tok.back() == '\r' || tok.back() == '\t')) tok.remove_suffix(1);
  double d = 0;
  const auto [p, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
  const bool number = p == tok.data() + tok.size() && (ec == std::errc() || ec == std::errc::result_out_of_range);
  if (!number) return "'" + std::string(key) + "' must be a number";
  return "'" + std::string(key) + "' = " + std::string(tok.substr(0, 40)) +
         " us is out of range (at most about 9.2e12 us, 106 days, in either direction)";
}

// Stable across platforms and library versions (std::hash is not): string flow ids become
// this number in the file.
std::uint64_t fnv1a64(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return h;
}

bool parse_int_text(std::string_view s, std::int64_t& out) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) { s.remove_prefix(2); base = 16; }
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
  return ec == std::errc() && p == s.data() + s.size();
}

// ---- args ----

enum ArgBit : std::uint32_t {
  kExternalId = 1u << 0, kCorrelation = 1u << 1, kStream = 1u << 2, kDevice = 1u << 3,
  kCbid = 1u << 4, kRegisters = 1u << 5, kSharedMem = 1u << 6, kGrid = 1u << 7,
  kBlock = 1u << 8, kBytes = 1u << 9, kInNelems = 1u << 10, kGroupSize = 1u << 11,
  kWaitStream = 1u << 12, kWaitEvent = 1u << 13, kSize = 1u << 14, kSortIndex = 1u << 15,
  kPgId = 1u << 16, kOutNelems = 1u << 17, kFlops = 1u << 18, kDims = 1u << 19, kWaitRecord = 1u << 20,
};

struct Args {
  std::uint32_t has = 0;
  std::int64_t external_id = 0, correlation = 0, stream = 0, device = 0, cbid = 0,
               registers = 0, shared_mem = 0, bytes = 0, in_nelems = 0, out_nelems = 0,
               group_size = 0, wait_stream = 0, wait_event = 0, wait_record = 0, size = 0, sort_index = 0,
               pg_id = 0;
  std::int64_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  std::string_view coll_name, dtype, pg_name, pg_desc, sync_kind, kind, direction, name, labels;
  // counter ('C') events: numeric args in order
  std::vector<std::pair<std::string_view, double>> numeric;
  // GEMM ops (record_shapes / with_flops): the first three inputs' sizes (up to 4 dims each),
  // the first input's type and the profiler's own FLOP count
  std::int64_t dims[3][4] = {};
  int ndims[3] = {};
  std::string_view input_type;
  std::int64_t flops = 0;
  // convolutions: "Concrete Inputs" (stride, padding, dilation, transposed, ..., output_mask)
  static constexpr int kConcrete = 11;
  std::string_view concrete[kConcrete];
  // args of an unexpected type, counted once the event is read whole (Importer::parse_event)
  std::uint32_t ignored_types = 0;
};

// ---- the importer ----

// (pid, tid), (device, stream) or (pid, 0), within one file: each file has its own importer.
struct TrackKey {
  std::int64_t a, b;
  bool operator==(const TrackKey&) const = default;
};
struct TrackKeyHash {
  std::size_t operator()(const TrackKey& k) const {
    std::uint64_t h = static_cast<std::uint64_t>(k.a) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<std::uint64_t>(k.b) + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h);
  }
};

enum class Cat : std::uint8_t {
  Kernel, Memcpy, Memset, Runtime, Driver, OtherApi, Sync, CpuOp, UserAnnotation,
  GpuAnnotation, Python, ProfilerSpan, MtiaDevice, Flow, Other,
};

// The most frequent categories, told apart by length first; Other for the rest.
Cat classify_common(std::string_view c) {
  switch (c.size()) {
    case 6:
      if (c == "kernel" || c == "Kernel") return Cat::Kernel;
      if (c == "Memcpy") return Cat::Memcpy;
      if (c == "Memset") return Cat::Memset;
      if (c == "cpu_op") return Cat::CpuOp;
      if (c == "Python") return Cat::Python;
      break;
    case 7:
      if (c == "Runtime") return Cat::Runtime;
      break;
    case 8:
      if (c == "Operator") return Cat::CpuOp;
      break;
    case 5:
      if (c == "Trace") return Cat::ProfilerSpan;
      break;
    default: break;
  }
  return Cat::Other;
}

Cat classify(std::string_view c) {
  if (const Cat common = classify_common(c); common != Cat::Other) return common;
  if (c == "gpu_memcpy") return Cat::Memcpy;
  if (c == "gpu_memset") return Cat::Memset;
  if (c == "cuda_runtime" || c == "mtia_runtime" || c == "privateuse1_runtime")
    return c[0] == 'c' ? Cat::Runtime : Cat::OtherApi;
  if (c == "cuda_driver" || c == "privateuse1_driver") return Cat::Driver;
  if (c == "cuda_sync") return Cat::Sync;
  if (c == "user_annotation" || c == "User annotation") return Cat::UserAnnotation;
  if (c == "gpu_user_annotation") return Cat::GpuAnnotation;
  if (c == "python_function") return Cat::Python;
  if (c == "mtia_ccp_events") return Cat::MtiaDevice;
  if (c == "ac2g" || c == "fwdbwd" || c == "async_cpu_to_gpu" || c == "async")
    return Cat::Flow;
  return Cat::Other;
}

bool is_device_cat(Cat c) {
  return c == Cat::Kernel || c == Cat::Memcpy || c == Cat::Memset || c == Cat::GpuAnnotation ||
         c == Cat::MtiaDevice || c == Cat::Sync;
}

// "Memcpy HtoD (Pageable -> Device)" -> direction and both memory kinds.
MemoryKind mem_kind_word(std::string_view w) {
  if (w == "Pageable") return MemoryKind::Pageable;
  if (w == "Pinned") return MemoryKind::Pinned;
  if (w == "Device") return MemoryKind::Device;
  if (w == "Managed") return MemoryKind::Managed;
  if (w == "Array") return MemoryKind::Array;
  return MemoryKind::Unknown;  // "Host" (ROCm) says nothing about pinning
}

MemcpyDirection direction_word(std::string_view w) {
  if (w == "HtoD" || w == "HOST_TO_DEVICE") return MemcpyDirection::HtoD;
  if (w == "DtoH" || w == "DEVICE_TO_HOST") return MemcpyDirection::DtoH;
  if (w == "DtoD" || w == "DEVICE_TO_DEVICE") return MemcpyDirection::DtoD;
  if (w == "HtoH" || w == "HOST_TO_HOST") return MemcpyDirection::HtoH;
  if (w == "PtoP" || w == "PEER_TO_PEER") return MemcpyDirection::PtoP;
  return MemcpyDirection::Unknown;
}

void parse_memcpy_name(std::string_view name, MemcpyDirection& dir, MemoryKind& src,
                       MemoryKind& dst) {
  dir = MemcpyDirection::Unknown;
  src = dst = MemoryKind::Unknown;
  auto sp = name.find(' ');
  if (sp == std::string_view::npos) return;
  std::string_view rest = name.substr(sp + 1);
  auto sp2 = rest.find(' ');
  dir = direction_word(rest.substr(0, sp2));
  auto lp = rest.find('('), arrow = rest.find(" -> "), rp = rest.find(')');
  if (lp == std::string_view::npos || arrow == std::string_view::npos || rp == std::string_view::npos || arrow < lp || rp < arrow) return;
  src = mem_kind_word(rest.substr(lp + 1, arrow - lp - 1));
  dst = mem_kind_word(rest.substr(arrow + 4, rp - arrow - 4));
}

std::uint64_t dtype_size(std::string_view d) {
  if (d == "Float" || d == "Int" || d == "float32" || d == "int32" || d == "UInt32") return 4;
  if (d == "Double" || d == "Long" || d == "float64" || d == "int64" || d == "ComplexFloat") return 8;
  if (d == "Half" || d == "BFloat16" || d == "Short" || d == "float16" || d == "bfloat16") return 2;
  if (d == "Byte" || d == "Char" || d == "Bool" || d == "uint8" || d == "int8" ||
      d.starts_with("Float8"))
    return 1;
  if (d == "ComplexDouble") return 16;
  return 0;
}

SyncType sync_type_of(std::string_view kind) {
  if (kind == "Event Sync") return SyncType::EventSync;
  if (kind == "Stream Wait Event") return SyncType::StreamWaitEvent;
  if (kind == "Stream Sync") return SyncType::StreamSync;
  if (kind == "Context Sync") return SyncType::ContextSync;
  if (kind == "Event Record") return SyncType::EventRecord;
  return SyncType::Unknown;
}

// `key` is the word `w`: a compare of a length known when compiling (inlined, no call).
template <std::size_t N>
bool is(std::string_view key, const char (&w)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), w, N - 1) == 0;
}

enum class EventKey : std::uint8_t;

class Importer {
 public:
  Importer(Trace& t, std::string_view source, int rank_hint) : t_(t), source_(source), rank_(rank_hint) {}

  Status run(simdjson::padded_string_view json);
  // The same read in windows of about `window_bytes` (see read_windows): false with nothing
  // read when the file cannot be cut so; an error when a window's read failed.
  Result<bool> run_windows(simdjson::padded_string_view json, std::size_t window_bytes);
  // The same read as a stream (json_stream.h): memory bounded whatever the file's size.
  Status run_stream(const fs::path& path, const std::function<void(std::uint64_t, std::uint64_t)>& progress);

 private:
  // An id (pid or tid) that is a number or a string; strings get stable negative ids.
  struct Id {
    std::int64_t num = 0;
    std::string_view text;  // non-empty when the source used a string
    bool present = false;
  };

  // One event's fields as read (views into the parser's buffer), then its times in ns.
  struct Event {
    std::string_view ph, cat, name, ts_tok, dur_tok, bp;
    Id pid, tid;
    std::uint64_t flow_id = 0;
    bool has_id = false;
    Args args;
    Ns ts = 0, dur = 0;
    std::uint32_t duplicate_keys = 0;
  };

  Status parse_event(od::object obj, std::size_t index);
  Status read_event_fields(od::object obj, std::size_t index, Event& e);
  Status read_event_field(EventKey key, od::value& v, std::size_t index, Event& e);
  Status read_args_field(od::value& v, std::size_t index, Event& e);
  Status read_id_field(od::value& v, std::string_view key, std::size_t index, Id& id);
  Status read_event_times(Event& e, std::size_t index);
  void cut_long_name(std::string_view& name);
  // by phase
  void begin_end_event(const Event& e);
  Status flow_event(const Event& e, std::size_t index);
  void counter_event(const Event& e);
  void metadata_event(const Event& e);
  void complete_event(const Event& e);
  // complete events by category
  void device_event(const Event& e, Cat c);
  void push_kernel(const Event& e, std::uint32_t track, StringId nm);
  void push_memcpy(const Event& e, std::uint32_t track, StringId nm, bool dma);
  void push_memset(const Event& e, std::uint32_t track, StringId nm);
  void push_sync(const Event& e, std::uint32_t track, StringId nm);
  void push_event_records();
  void host_event(const Event& e, Cat c);
  void push_api_call(const Event& e, std::uint32_t track, StringId nm, Cat c);
  // numeric: 0 = ordinary args, 1 = a counter ('C'), 2 = unknown yet ('ph' after 'args')
  Status parse_args(od::object args, Args& a, int numeric, bool want_dims);
  void push_gemm_flops(Ns ts, std::uint32_t track, std::string_view name, const Args& args);
  void push_conv_flops(Ns ts, std::uint32_t track, std::string_view name, const Args& args);
  void push_attention_flops(Ns ts, std::uint32_t track, std::string_view name, const Args& args);
  void push_flops(Ns ts, std::uint32_t track, std::string_view kind, std::string_view input_type, double flops,
                  double elements);
  void push_op_shape(Ns ts, std::uint32_t track, std::string_view name, const Args& args);
  Status memory_event(const Id& pid, const Id& tid, Ns ts, const Args& args);
  Status parse_device_properties(od::array arr);
  Status parse_distributed_info(od::object obj);
  Error fail(std::string_view what, std::size_t index) const;
  Error fail_json(simdjson::error_code ec) const;
  Status read_events(od::array events, std::size_t& index);
  Status read_root_field(std::string_view key, od::value v, std::size_t& index, bool& saw_events);
  Status read_root_fields(od::document& doc, std::size_t& index, bool& saw_events);
  Status read_document(simdjson::padded_string_view json, std::size_t& index, bool& saw_events);
  Result<bool> read_windows(std::string_view text, std::size_t window_bytes, std::size_t& index, bool& saw_events);
  std::size_t read_middle_windows(std::string_view text, std::size_t start, std::size_t window_bytes,
                                  std::size_t& index, bool& saw_events);
  bool head_ends_in_events(simdjson::padded_string_view json);
  simdjson::padded_string_view piece(std::string_view prefix, std::string_view body, std::string_view suffix);

  std::int64_t id_of(const Id& id);
  void push_collective(Ns ts, Ns dur, std::uint32_t track, StringId name, const Args& a,
                       CollectiveSide side, std::uint32_t correlation);
  std::uint32_t process_index(const Id& pid);
  std::uint32_t thread_track(const Id& pid, const Id& tid);
  std::uint32_t stream_track(std::int64_t device, std::int64_t stream, bool from_tid = false);
  std::uint32_t device_index(std::int64_t device);
  void finish();

  Trace& t_;
  std::string source_;
  int rank_;
  std::unordered_map<TrackKey, std::uint32_t, TrackKeyHash> threads_, streams_, processes_,
      devices_;
  std::unordered_map<std::string, std::int64_t> string_ids_;
  // last lookups, a cheap cache: consecutive events share a thread
  TrackKey last_thread_key_{0, 0};
  bool have_last_thread_ = false;
  std::uint32_t last_thread_track_ = 0;
  std::uint32_t first_cpu_process_ = kNone;
  std::vector<std::uint32_t> file_devices_;
  // B/E pairs: open begins per track
  std::unordered_map<std::uint32_t, std::vector<std::pair<Ns, StringId>>> open_begins_;
  // counts for the summary in diagnostics
  std::uint64_t metadata_events_ = 0;
  std::uint64_t ignored_arg_types_ = 0;
  std::uint64_t duplicate_keys_ = 0;
  std::uint64_t clamped_durations_ = 0;
  std::uint64_t cut_names_ = 0;
  std::unordered_map<std::string, std::uint64_t> skipped_phases_, other_categories_;
  std::vector<std::pair<std::int64_t, StringId>> pending_names_;
  struct PendingRecord {
    Ns ts;
    std::int64_t device, stream, event;
    std::uint32_t correlation;
  };
  std::vector<PendingRecord> pending_records_;
  std::unordered_set<std::uint32_t> seen_records_;
  struct PendingFlow {
    std::size_t row;
    Id pid, tid;
  };
  std::vector<PendingFlow> pending_flows_;
  // An id kept past its event: its text copied out of the parser's buffer (streamed batches go).
  Id owned(Id id) {
    if (!id.text.empty()) id.text = *owned_texts_.insert(std::string(id.text)).first;
    return id;
  }
  std::unordered_set<std::string> owned_texts_;
  od::document* doc_ = nullptr;
  // One parser for every document this importer reads: its buffers (the structural index above
  // all) are allocated for the largest and reused, not faulted in afresh for each.
  od::parser parser_;
  // Windows: a middle window's events (read_middle_windows) end where the last one read ends
  // (resume_at_, in the window's text); the window's text itself, in a buffer reused.
  bool middle_window_ = false;
  const char* resume_at_ = nullptr;
  std::vector<char> piece_;
  const char* base_ = nullptr;
  std::size_t size_ = 0;
};

// Why a string field was refused: a string with a broken escape (a lone UTF-16 surrogate,
// "\ud800") is still a string.
std::string bad_string(od::value& v, std::string_view key) {
  od::json_type type;
  if (!v.type().get(type) && type == od::json_type::string)
    return "'" + std::string(key) + "' is a string with an invalid escape or encoding (a lone UTF-16 surrogate?)";
  return "'" + std::string(key) + "' must be a string";
}

Error Importer::fail(std::string_view what, std::size_t index) const {
  return make_error(source_ + ": event " + std::to_string(index) + ": " + std::string(what));
}

Error Importer::fail_json(simdjson::error_code ec) const {
  std::string where;
  const char* loc = nullptr;
  if (doc_ != nullptr && base_ != nullptr && !doc_->current_location().get(loc))
    where = " at byte " + std::to_string(loc - base_);
  std::string msg = simdjson::error_message(ec);
  if (ec == simdjson::INCOMPLETE_ARRAY_OR_OBJECT && base_ != nullptr) {
    // On-Demand checks up front that the last structural closes the root, so this comes
    // "at byte 0" both for a cut-off file and for one with text after the document: tell
    // them apart by what follows the last closing bracket.
    const std::string_view text(base_, size_);
    const std::size_t close = text.find_last_of("}]");
    const std::string_view tail = close == std::string_view::npos ? text : text.substr(close + 1);
    if (close != std::string_view::npos && tail.find_first_not_of(" \t\r\n") != std::string_view::npos &&
        tail.find_first_of("\",:{[") == std::string_view::npos)
      return make_error(source_ + ": trailing content after the JSON document (at byte " + std::to_string(close + 1) + ")");
    return make_error(source_ + ": invalid or truncated JSON (the file ends inside an object or array)");
  }
  if (ec == simdjson::DEPTH_ERROR) msg = "JSON nested too deeply";
  else if (ec == simdjson::INCOMPLETE_ARRAY_OR_OBJECT || ec == simdjson::TAPE_ERROR ||
           ec == simdjson::UNCLOSED_STRING)
    msg = "invalid or truncated JSON (" + msg + ")";
  else if (ec == simdjson::INCORRECT_TYPE)
    msg = "unexpected JSON type (" + msg + ")";
  return make_error(source_ + ": " + msg + where);
}

std::int64_t Importer::id_of(const Id& id) {
  if (id.text.empty()) return id.num;
  auto [it, inserted] =
      string_ids_.try_emplace(std::string(id.text), -1 - static_cast<std::int64_t>(string_ids_.size()));
  return it->second;
}

std::uint32_t Importer::process_index(const Id& pid) {
  const std::int64_t p = id_of(pid);
  const TrackKey key{p, 0};
  auto it = processes_.find(key);
  if (it != processes_.end()) return it->second;
  Process proc;
  proc.pid = p;
  proc.rank = rank_;
  if (!pid.text.empty()) proc.name = std::string(pid.text);
  const std::uint32_t idx = t_.add_process(std::move(proc));
  processes_.emplace(key, idx);
  if (first_cpu_process_ == kNone && pid.text.empty()) first_cpu_process_ = idx;
  return idx;
}

std::uint32_t Importer::thread_track(const Id& pid, const Id& tid) {
  const TrackKey key{id_of(pid), id_of(tid)};
  if (have_last_thread_ && key == last_thread_key_) return last_thread_track_;
  auto it = threads_.find(key);
  std::uint32_t track;
  if (it != threads_.end()) {
    track = it->second;
  } else {
    Thread th;
    th.process = process_index(pid);
    th.tid = key.b;
    if (!tid.text.empty()) th.name = std::string(tid.text);
    track = t_.add_thread(std::move(th));
    threads_.emplace(key, track);
  }
  last_thread_key_ = key;
  have_last_thread_ = true;
  last_thread_track_ = track;
  return track;
}

std::uint32_t Importer::device_index(std::int64_t device) {
  const TrackKey key{device, 0};
  auto it = devices_.find(key);
  if (it != devices_.end()) return it->second;
  Device d;
  d.index = static_cast<std::int32_t>(device);
  const std::uint32_t idx = t_.add_device(std::move(d));
  devices_.emplace(key, idx);
  file_devices_.push_back(idx);
  return idx;
}

std::uint32_t Importer::stream_track(std::int64_t device, std::int64_t stream, bool from_tid) {
  const TrackKey key{device, stream};
  auto it = streams_.find(key);
  if (it != streams_.end()) return it->second;
  Stream s;
  s.device = device_index(device);
  s.stream = stream;
  // Device events without a stream id (e.g. MTIA dma_request) are placed by thread id; the
  // name says so (kNoStreamIdPrefix), and HTA-compatible analysis leaves them out as HTA does.
  if (from_tid) s.name = std::string(kNoStreamIdPrefix) + " " + std::to_string(stream);
  const std::uint32_t track = t_.add_stream(std::move(s));
  streams_.emplace(key, track);
  return track;
}

// A string value's text, with no copy when it has no escapes: the view is then the document's
// own bytes between the quotes (stage 1 has checked their UTF-8 already), which is what
// unescaping would write into the parser's string buffer. Strings with a backslash, and values
// that are not strings (the same error as get_string's), go through get_string. The text lives
// as long as the document's buffer, as the parser's string buffer does.
simdjson::error_code get_text(od::value& v, std::string_view& out) {
  const std::string_view tok = v.raw_json_token();  // up to the next structural character
  std::size_t close = tok.size();
  while (close > 1 && tok[close - 1] != '"') --close;  // the closing quote (whitespace may follow)
  if (tok.size() < 2 || tok[0] != '"' || close < 2) return v.get_string().get(out);
  const std::string_view body = tok.substr(1, close - 2);
  if (std::memchr(body.data(), '\\', body.size()) != nullptr) return v.get_string().get(out);
  out = body;
  return simdjson::SUCCESS;
}

// A field's key, with no copy when it has no escapes (as get_text; the key's characters end at
// its closing quote, which stage 1 has paired).
simdjson::error_code get_key(od::field& field, std::string_view& out) {
  const char* const start = field.key().raw();
  const char* end = start;
  while (*end != '"' && *end != '\\') ++end;
  if (*end == '\\') return field.unescaped_key().get(out);
  out = std::string_view(start, static_cast<std::size_t>(end - start));
  return simdjson::SUCCESS;
}

// An object's field as its key (get_key) and value.
simdjson::error_code read_field(simdjson::simdjson_result<od::field> result, std::string_view& key, od::value& v) {
  od::field field;
  if (auto ec = std::move(result).get(field)) return ec;
  if (auto ec = get_key(field, key)) return ec;
  v = field.value();
  return simdjson::SUCCESS;
}

// The common case of get_int read from the token: a JSON integer of at most 18 digits (no
// leading zero, no fraction or exponent), which get_int64 would read to the same value. False
// for anything else, which takes simdjson's number parsing.
bool small_int_token(std::string_view tok, std::int64_t& out) {
  std::size_t i = tok.size() > 0 && tok[0] == '-' ? 1 : 0;
  const std::size_t first = i;
  std::int64_t x = 0;
  const auto is_digit = [&](std::size_t k) { return k < tok.size() && tok[k] >= '0' && tok[k] <= '9'; };
  for (; i - first < 18 && is_digit(i); ++i) x = x * 10 + (tok[i] - '0');  // 18 digits cannot overflow
  const std::size_t digits = i - first;
  if (digits == 0 || is_digit(i) || (digits > 1 && tok[first] == '0')) return false;
  for (; i < tok.size(); ++i)  // only whitespace up to the next structural character
    if (tok[i] != ' ' && tok[i] != '\n' && tok[i] != '\r' && tok[i] != '\t') return false;
  out = first == 1 ? -x : x;
  return true;
}

// Reads an integer arg that may arrive as a number, a float or a numeric string.
bool get_int(od::value v, std::int64_t& out) {
  if (small_int_token(v.raw_json_token(), out)) return true;
  od::json_type type;
  if (v.type().get(type)) return false;
  if (type == od::json_type::number) {
    od::number_type nt;
    if (v.get_number_type().get(nt)) return false;
    if (nt == od::number_type::floating_point_number) {
      double d;
      if (v.get_double().get(d) || !(d > -9.2e18 && d < 9.2e18)) return false;
      out = static_cast<std::int64_t>(d);
      return true;
    }
    if (nt == od::number_type::unsigned_integer) {
      std::uint64_t u;
      if (v.get_uint64().get(u)) return false;
      out = static_cast<std::int64_t>(u);
      return true;
    }
    return !v.get_int64().get(out);
  }
  if (type == od::json_type::string) {
    std::string_view s;
    if (get_text(v, s)) return false;
    return parse_int_text(s, out);
  }
  return false;
}

// The GEMM ops whose shapes give their FLOPs (leaves of aten::matmul / aten::linear).
bool gemm_op(std::string_view name) {
  return name == "aten::mm" || name == "aten::addmm" || name == "aten::bmm" || name == "aten::baddbmm";
}

// Convolutions: every aten::convNd (and conv_transpose) goes through aten::convolution, its
// gradients through aten::convolution_backward.
bool conv_op(std::string_view name) { return name == "aten::convolution" || name == "aten::convolution_backward"; }

// Attention: the public aten::scaled_dot_product_attention (not the backend op it calls), and
// the backends' backward ops (aten::_scaled_dot_product_{flash,efficient,cudnn,...}_backward).
bool attention_op(std::string_view name) {
  return name == "aten::scaled_dot_product_attention" ||
         (name.starts_with("aten::_scaled_dot_product_") && name.ends_with("_backward"));
}

// The ops whose shapes the tuner benchmarks substitutions at (the Python integration's
// tracetune/_shapes.py records the same counters).
bool shape_op(std::string_view name) { return name == "aten::layer_norm" || name == "aten::cross_entropy_loss"; }

// "Input Dims": [[M, K], [K, N], ...]: the first three inputs' shapes (each up to 4 sizes).
bool get_input_dims(od::value v, Args& a) {
  od::array arr;
  if (v.get_array().get(arr)) return false;
  int i = 0;
  for (auto el : arr) {
    if (i == 3) break;
    od::array shape;
    od::value ev;
    if (el.get(ev) || ev.get_array().get(shape)) return false;
    int n = 0;
    for (auto d : shape) {
      std::int64_t x;
      od::value dv;
      if (d.get(dv) || !get_int(dv, x) || x < 0 || n == 4) return false;
      a.dims[i][n++] = x;
    }
    a.ndims[i++] = n;
  }
  return true;
}

// "Concrete Inputs": ["", "", "", "[1, 1]", "[0, 0]", ...]: the scalar and list arguments of an
// op as text, kept (views into the document) for the first Args::kConcrete inputs.
bool get_concrete_inputs(od::value v, Args& a) {
  od::array arr;
  if (v.get_array().get(arr)) return false;
  int i = 0;
  for (auto el : arr) {
    if (i == Args::kConcrete) break;
    od::value ev;
    if (el.get(ev) || get_text(ev, a.concrete[i++])) return false;
  }
  return true;
}

// The first entry of "Input type": ["float", "float"] -> "float".
bool get_first_string(od::value v, std::string_view& out) {
  od::array arr;
  if (v.get_array().get(arr)) return false;
  for (auto el : arr) {
    od::value ev;
    return !el.get(ev) && !get_text(ev, out);
  }
  return true;
}

bool get_dim3(od::value v, std::int64_t (&out)[3]) {
  od::array arr;
  if (v.get_array().get(arr)) return false;
  int i = 0;
  for (auto el : arr) {
    std::int64_t x;
    od::value ev;
    if (el.get(ev) || !get_int(ev, x)) return false;
    if (i < 3) out[i] = x;
    ++i;
  }
  return i == 3;
}

// An integer arg into `dst`, marking `bit` in a.has; false when the value is not an integer.
bool take_int(od::value& v, std::int64_t& dst, std::uint32_t bit, Args& a) {
  if (!get_int(v, dst)) return false;
  a.has |= bit;
  return true;
}
// A string arg into `dst`; false when the value is not a string.
bool take_str(od::value& v, std::string_view& dst) { return !get_text(v, dst); }
bool take_dim3(od::value& v, std::int64_t (&dst)[3], std::uint32_t bit, Args& a) {
  if (!get_dim3(v, dst)) return false;
  a.has |= bit;
  return true;
}

// The shapes of GEMM, convolution and attention ops (read only for those ops).
bool read_shape_arg(std::string_view key, od::value& v, Args& a) {
  if (is(key, "Input Dims")) {
    if (!get_input_dims(v, a)) return false;
    a.has |= kDims;
    return true;
  }
  if (is(key, "Input type")) return get_first_string(v, a.input_type);
  if (is(key, "Concrete Inputs")) return get_concrete_inputs(v, a);
  return true;
}

// The args read_arg reads whose keys are 15 characters long or more, told apart by length.
bool read_long_arg(std::string_view key, od::value& v, Args& a, bool want_dims) {
  switch (key.size()) {
    case 15:
      if (is(key, "Collective name")) return take_str(v, a.coll_name);
      break;
    case 16:
      if (is(key, "Process Group ID")) return take_int(v, a.pg_id, kPgId, a);
      break;
    case 18:
      if (is(key, "Process Group Name")) return take_str(v, a.pg_name);
      break;
    case 20:
      if (is(key, "registers per thread")) return take_int(v, a.registers, kRegisters, a);
      break;
    case 21:
      if (is(key, "wait_on_cuda_event_id")) return take_int(v, a.wait_event, kWaitEvent, a);
      break;
    case 25:
      if (is(key, "Process Group Description")) return take_str(v, a.pg_desc);
      break;
    case 33:
      if (is(key, "wait_on_cuda_event_record_corr_id")) return take_int(v, a.wait_record, kWaitRecord, a);
      break;
    default: break;
  }
  return want_dims ? read_shape_arg(key, v, a) : true;
}

// The args read_arg reads whose keys are 9 to 14 characters long, told apart by length; longer
// keys go on to read_long_arg.
bool read_medium_arg(std::string_view key, od::value& v, Args& a, bool want_dims) {
  switch (key.size()) {
    case 9:
      if (is(key, "direction")) return take_str(v, a.direction);
      if (is(key, "stream_id")) return take_int(v, a.stream, kStream, a);
      break;
    case 10:
      if (is(key, "Group size")) return take_int(v, a.group_size, kGroupSize, a);
      if (is(key, "sort_index")) return take_int(v, a.sort_index, kSortIndex, a);
      break;
    case 11:
      if (is(key, "External id") || is(key, "external id")) return take_int(v, a.external_id, kExternalId, a);
      if (is(key, "correlation")) return take_int(v, a.correlation, kCorrelation, a);
      break;
    case 13:
      if (is(key, "shared memory")) return take_int(v, a.shared_mem, kSharedMem, a);
      if (is(key, "In msg nelems")) return take_int(v, a.in_nelems, kInNelems, a);
      break;
    case 14:
      if (is(key, "Out msg nelems")) return take_int(v, a.out_nelems, kOutNelems, a);
      if (is(key, "cuda_sync_kind")) return take_str(v, a.sync_kind);
      if (is(key, "wait_on_stream")) return take_int(v, a.wait_stream, kWaitStream, a);
      break;
    default: return read_long_arg(key, v, a, want_dims);
  }
  return want_dims ? read_shape_arg(key, v, a) : true;
}

// One arg of an event into `a` when the importer reads its key (others are left alone); false
// when its value has another type than the key's.
bool read_arg(std::string_view key, od::value& v, Args& a, bool want_dims) {
  switch (key.size()) {
    case 4:
      if (is(key, "grid")) return take_dim3(v, a.grid, kGrid, a);
      if (is(key, "cbid")) return take_int(v, a.cbid, kCbid, a);
      if (is(key, "kind")) return take_str(v, a.kind);
      if (is(key, "size")) return take_int(v, a.size, kSize, a);
      if (is(key, "name")) return take_str(v, a.name);
      return true;
    case 5:
      if (is(key, "flops")) return take_int(v, a.flops, kFlops, a);
      if (is(key, "block")) return take_dim3(v, a.block, kBlock, a);
      if (is(key, "bytes")) return take_int(v, a.bytes, kBytes, a);
      if (is(key, "dtype")) return take_str(v, a.dtype);
      return true;
    case 6:
      if (is(key, "stream")) return take_int(v, a.stream, kStream, a);
      if (is(key, "device")) return take_int(v, a.device, kDevice, a);
      if (is(key, "labels")) return take_str(v, a.labels);
      return true;
    default:
      return read_medium_arg(key, v, a, want_dims);
  }
}

// PyTorch's profiler (profile_memory=True) writes an instant "[memory]" at every allocation and
// free: "Device Type" (0 CPU, 1 CUDA), "Device Id", "Total Allocated", "Total Reserved". They
// become the counters "cuda:N memory.allocated" / ".reserved" (or "cpu memory.*") the analyzer
// reads per step (docs/analysis.md, "Memory"), not ranges.
Status Importer::memory_event(const Id& pid, const Id& tid, Ns ts, const Args& args) {
  double type = -1, id = 0, allocated = -1, reserved = -1;
  for (const auto& [key, value] : args.numeric) {
    if (key == "Device Type") type = value;
    else if (key == "Device Id") id = value;
    else if (key == "Total Allocated") allocated = value;
    else if (key == "Total Reserved") reserved = value;
  }
  // CPU allocations carry "Device Id": -1 (torch 2.x); only a CUDA event needs a device number
  if (allocated < 0 || !(type == 0 || type == 1) || (type == 1 && (id < 0 || id > 1024))) {
    t_.add_diagnostic(DiagnosticKind::Skipped, source_, "[memory] events without device and totals");
    return {};
  }
  const std::string device = type == 1 ? "cuda:" + std::to_string(static_cast<int>(id)) : std::string("cpu");
  const std::uint32_t track = thread_track(pid, tid);
  const auto push = [&](const char* kind, double v) {
    t_.counters.ts.push_back(ts);
    t_.counters.track.push_back(track);
    t_.counters.name.push_back(t_.strings.intern(device + " memory." + kind));
    t_.counters.value.push_back(v);
  };
  push("allocated", allocated);
  if (reserved >= 0) push("reserved", reserved);
  return {};
}

Status Importer::parse_args(od::object args, Args& a, int numeric, bool want_dims) {
  for (auto field : args) {
    std::string_view key;
    od::value v;
    if (auto ec = read_field(std::move(field), key, v)) return fail_json(ec);
    bool ok = true;
    if (numeric != 0) {  // 'C' events (or 'ph' not seen yet): numeric args may be series
      od::json_type type;
      double d;
      if (!v.type().get(type) && type == od::json_type::number && !v.get_double().get(d)) {
        a.numeric.emplace_back(key, d);
        if (numeric == 1) continue;
        // not known to be a counter: fall through, the value may also be a known arg
        // (On-Demand scalars can be read again until the iterator moves on)
      } else if (numeric == 1) {
        continue;
      }
    }
    if (!read_arg(key, v, a, want_dims)) ok = false;
    if (!ok) ++a.ignored_types;
  }
  return {};
}

Status Importer::read_id_field(od::value& v, std::string_view key, std::size_t index, Id& id) {
  od::json_type type;
  if (v.type().get(type)) return fail("bad '" + std::string(key) + "'", index);
  id.present = true;
  if (type == od::json_type::string) {
    if (get_text(v, id.text)) return fail("bad '" + std::string(key) + "'", index);
    // numeric strings are numbers; legacy GPU tracks say "stream 7"
    if (parse_int_text(id.text, id.num)) id.text = {};
    else if (id.text.starts_with("stream ") && parse_int_text(id.text.substr(7), id.num)) id.text = {};
    else if (id.text.empty()) id.text = "<unnamed>";
  } else if (!get_int(v, id.num)) {
    return fail("'" + std::string(key) + "' must be a number or a string", index);
  }
  return {};
}

// The event fields read_event_field reads; `bp` and unknown keys are not counted as duplicates.
enum class EventKey : std::uint8_t { Ph, Ts, Dur, Name, Cat, Pid, Tid, Args, Id, Bp, Other };

// An event's key, told by its length and first character (one compare of a known length).
EventKey event_key_of(std::string_view key) {
  switch (key.size()) {
    case 2:
      if (is(key, "ph")) return EventKey::Ph;
      if (is(key, "ts")) return EventKey::Ts;
      if (is(key, "id")) return EventKey::Id;
      if (is(key, "bp")) return EventKey::Bp;
      break;
    case 3:
      switch (key[0]) {
        case 'c': if (is(key, "cat")) return EventKey::Cat; break;
        case 'p': if (is(key, "pid")) return EventKey::Pid; break;
        case 't': if (is(key, "tid")) return EventKey::Tid; break;
        case 'd': if (is(key, "dur")) return EventKey::Dur; break;
        default: break;
      }
      break;
    case 4:
      if (is(key, "name")) return EventKey::Name;
      if (is(key, "args")) return EventKey::Args;
      break;
    default: break;
  }
  return EventKey::Other;
}

Status Importer::read_event_fields(od::object obj, std::size_t index, Event& e) {
  unsigned seen = 0;  // the fields read, one bit each: a second one is a duplicate key
  for (auto field : obj) {
    std::string_view key;
    od::value v;
    if (auto ec = read_field(std::move(field), key, v)) return fail_json(ec);
    const EventKey k = event_key_of(key);
    if (k < EventKey::Bp) {
      const unsigned bit = 1u << static_cast<unsigned>(k);
      if (seen & bit) ++e.duplicate_keys;
      seen |= bit;
    }
    if (auto st = read_event_field(k, v, index, e); !st) return st;
  }
  return {};
}

Status Importer::read_event_field(EventKey key, od::value& v, std::size_t index, Event& e) {
  switch (key) {
    case EventKey::Ph:
      if (get_text(v, e.ph)) return fail(bad_string(v, "ph"), index);
      break;
    case EventKey::Ts: e.ts_tok = v.raw_json_token(); break;
    case EventKey::Dur: e.dur_tok = v.raw_json_token(); break;
    case EventKey::Id: {
      std::int64_t x;
      if (get_int(v, x)) { e.flow_id = static_cast<std::uint64_t>(x); e.has_id = true; }
      else {
        std::string_view s;  // Chrome ids may be strings like "0x1f"
        if (!get_text(v, s)) { e.flow_id = fnv1a64(s); e.has_id = true; }
      }
      break;
    }
    case EventKey::Bp:
      if (get_text(v, e.bp)) e.bp = {};
      break;
    case EventKey::Cat:
      if (get_text(v, e.cat)) return fail(bad_string(v, "cat"), index);
      break;
    case EventKey::Pid: return read_id_field(v, "pid", index, e.pid);
    case EventKey::Tid: return read_id_field(v, "tid", index, e.tid);
    case EventKey::Name:
      if (get_text(v, e.name)) return fail(bad_string(v, "name"), index);
      break;
    case EventKey::Args: return read_args_field(v, index, e);
    case EventKey::Other: break;
  }
  return {};
}

Status Importer::read_args_field(od::value& v, std::size_t index, Event& e) {
  od::object a;
  if (v.get_object().get(a)) return fail("'args' must be an object", index);
  // 'ph' usually precedes 'args'; when it does not, keep numeric values in case it is a counter
  // [memory] instants carry their byte counts as numbers too (Kineto writes 'name' first)
  const int numeric = e.ph.empty() ? 2 : e.ph == "C" || e.name == "[memory]" ? 1 : 0;
  const bool want_dims =
      e.name.starts_with("aten::") && (gemm_op(e.name) || shape_op(e.name) || conv_op(e.name) || attention_op(e.name));
  return parse_args(a, e.args, numeric, want_dims);
}

Status Importer::read_event_times(Event& e, std::size_t index) {
  if (e.ph[0] != 'M') {
    if (e.ts_tok.empty()) return fail("missing 'ts'", index);
    if (!us_token_to_ns(e.ts_tok, e.ts)) return fail(bad_time("ts", e.ts_tok), index);
  }
  if (!e.dur_tok.empty() && !us_token_to_ns(e.dur_tok, e.dur)) return fail(bad_time("dur", e.dur_tok), index);
  // The store's rule (end_ns >= start_ns, both in 64 bits), applied here as a repair: the
  // reader would refuse the trace we wrote.
  if (e.dur < 0 || (e.ts > 0 && e.dur > std::numeric_limits<Ns>::max() - e.ts)) {
    e.dur = e.dur < 0 ? 0 : std::numeric_limits<Ns>::max() - e.ts;
    ++clamped_durations_;
  }
  return {};
}

void Importer::cut_long_name(std::string_view& name) {
  if (name.size() <= kMaxNameBytes) return;
  std::size_t n = kMaxNameBytes;  // cut at a UTF-8 character boundary
  while (n > 0 && (static_cast<unsigned char>(name[n]) & 0xC0) == 0x80) --n;
  name = name.substr(0, n);
  ++cut_names_;
}

Status Importer::parse_event(od::object obj, std::size_t index) {
  Event e;
  if (auto st = read_event_fields(obj, index, e); !st) return st;
  // counted only now: a window cut inside an event fails before here, and the event is read
  // again with the rest (read_windows)
  duplicate_keys_ += e.duplicate_keys;
  ignored_arg_types_ += e.args.ignored_types;
  if (e.ph.empty()) return fail("missing 'ph'", index);
  if (auto st = read_event_times(e, index); !st) return st;
  cut_long_name(e.name);

  switch (e.ph[0]) {
    case 'X':
      complete_event(e);
      return {};
    case 'B': case 'E':
      begin_end_event(e);
      return {};
    case 'i': case 'I': case 'R': case 'n':
      if (e.name == "[memory]") return memory_event(e.pid, e.tid, e.ts, e.args);
      t_.ranges.push(e.ts, 0, thread_track(e.pid, e.tid), t_.strings.intern(e.name), RangeKind::Instant,
                     t_.strings.intern(e.cat));
      return {};
    case 's': case 't': case 'f':
      return flow_event(e, index);
    case 'C':
      counter_event(e);
      return {};
    case 'M':
      metadata_event(e);
      return {};
    default:
      ++skipped_phases_[std::string(e.ph)];
      return {};
  }
}

void Importer::begin_end_event(const Event& e) {
  const std::uint32_t track = thread_track(e.pid, e.tid);
  auto& stack = open_begins_[track];
  if (e.ph[0] == 'B') {
    stack.emplace_back(e.ts, t_.strings.intern(e.name));
  } else if (stack.empty()) {
    t_.add_diagnostic(DiagnosticKind::Skipped, source_, "'E' event without a matching 'B'");
  } else {
    auto [b, nm] = stack.back();
    stack.pop_back();
    t_.ranges.push(b, std::max<Ns>(0, e.ts - b), track, nm, RangeKind::Other, t_.strings.intern(e.cat));
  }
}

Status Importer::flow_event(const Event& e, std::size_t index) {
  if (!e.has_id) return fail("flow event without 'id'", index);
  // The endpoint's track is resolved at the end of the file: a flow that ends on a GPU
  // (pid = device, tid = stream) belongs on the stream, which may not be seen yet.
  pending_flows_.push_back({t_.flows.size(), owned(e.pid), owned(e.tid)});
  t_.flows.ts.push_back(e.ts);
  t_.flows.track.push_back(kNone);
  t_.flows.category.push_back(t_.strings.intern(e.cat));
  t_.flows.id.push_back(e.flow_id);
  t_.flows.phase.push_back(static_cast<std::uint8_t>(e.ph[0]));
  return {};
}

void Importer::counter_event(const Event& e) {
  const std::uint32_t track = thread_track(e.pid, e.tid);
  const auto& numeric = e.args.numeric;
  if (numeric.empty()) {
    t_.add_diagnostic(DiagnosticKind::Skipped, source_, "counter events without numeric values");
    return;
  }
  const std::string base(e.name);
  for (auto [key, value] : numeric) {
    t_.counters.ts.push_back(e.ts);
    t_.counters.track.push_back(track);
    t_.counters.name.push_back(numeric.size() == 1 ? t_.strings.intern(base)
                                                   : t_.strings.intern(base + "." + std::string(key)));
    t_.counters.value.push_back(value);
  }
}

void Importer::metadata_event(const Event& e) {
  ++metadata_events_;
  if (e.name != "process_name" && e.name != "thread_name") return;
  if (e.args.name.empty()) return;
  const bool proc = e.name[0] == 'p';
  // Applied after the pass, once we know whether the pid is a process or a device.
  const std::int64_t p = id_of(e.pid);
  const std::int64_t tt = proc ? std::numeric_limits<std::int64_t>::min() : id_of(e.tid);
  pending_names_.emplace_back(p, t_.strings.intern(e.name));
  pending_names_.emplace_back(tt, t_.strings.intern(e.args.name));
}

// A complete ('X') event: a device activity on its stream, or a host-side one on its thread.
void Importer::complete_event(const Event& e) {
  const Cat c = classify(e.cat);
  if (c == Cat::Other) ++other_categories_[std::string(e.cat)];
  if (is_device_cat(c)) device_event(e, c);
  else host_event(e, c);
}

void Importer::device_event(const Event& e, Cat c) {
  const Args& args = e.args;
  const std::int64_t device = (args.has & kDevice) ? args.device : id_of(e.pid);
  const std::int64_t stream = (args.has & kStream) ? args.stream : id_of(e.tid);
  const std::uint32_t track = stream_track(device, stream, !(args.has & kStream));
  const StringId nm = t_.strings.intern(e.name);
  const bool dma = c == Cat::MtiaDevice && e.name == "dma_request";
  if (c == Cat::Kernel || (c == Cat::MtiaDevice && !dma)) {
    push_kernel(e, track, nm);
  } else if (c == Cat::Memcpy || dma) {
    push_memcpy(e, track, nm, dma);
  } else if (c == Cat::Memset) {
    push_memset(e, track, nm);
  } else if (c == Cat::Sync) {
    push_sync(e, track, nm);
  } else {  // GpuAnnotation
    t_.ranges.push(e.ts, e.dur, track, nm, RangeKind::GpuAnnotation, t_.strings.intern(e.cat),
                   static_cast<std::uint32_t>(args.external_id));
  }
  if (!args.coll_name.empty() && c == Cat::Kernel)
    push_collective(e.ts, e.dur, track, nm, args, CollectiveSide::Device,
                    static_cast<std::uint32_t>(args.correlation));
}

void Importer::push_kernel(const Event& e, std::uint32_t track, StringId nm) {
  const Args& args = e.args;
  auto& k = t_.kernels;
  k.start.push_back(e.ts); k.dur.push_back(e.dur); k.track.push_back(track); k.name.push_back(nm);
  k.correlation.push_back(static_cast<std::uint32_t>(args.correlation));
  k.external_id.push_back(static_cast<std::uint32_t>(args.external_id));
  std::uint32_t cfg = kNone;
  if ((args.has & (kGrid | kBlock)) == (kGrid | kBlock)) {
    LaunchConfig lc;
    lc.grid_x = static_cast<std::uint32_t>(args.grid[0]);
    lc.grid_y = static_cast<std::uint32_t>(args.grid[1]);
    lc.grid_z = static_cast<std::uint32_t>(args.grid[2]);
    lc.block_x = static_cast<std::uint32_t>(args.block[0]);
    lc.block_y = static_cast<std::uint32_t>(args.block[1]);
    lc.block_z = static_cast<std::uint32_t>(args.block[2]);
    lc.registers = static_cast<std::uint32_t>(args.registers);
    lc.shared_static = static_cast<std::uint32_t>(args.shared_mem);
    cfg = t_.intern_config(lc);
  }
  k.config.push_back(cfg);
  k.graph_id.push_back(0);
}

// A copy, or an MTIA dma_request (its direction in args rather than in the name).
void Importer::push_memcpy(const Event& e, std::uint32_t track, StringId nm, bool dma) {
  const Args& args = e.args;
  auto& m = t_.memcpys;
  MemcpyDirection dir;
  MemoryKind src, dst;
  parse_memcpy_name(e.name, dir, src, dst);
  if (dma) dir = direction_word(args.direction);
  else if (dir == MemcpyDirection::Unknown && !args.kind.empty()) dir = direction_word(args.kind);
  m.start.push_back(e.ts); m.dur.push_back(e.dur); m.track.push_back(track); m.name.push_back(nm);
  m.bytes.push_back(static_cast<std::uint64_t>((args.has & kBytes) ? args.bytes : (args.has & kSize) ? args.size : 0));
  m.correlation.push_back(static_cast<std::uint32_t>(args.correlation));
  m.direction.push_back(dir);
  m.src_kind.push_back(src);
  m.dst_kind.push_back(dst);
  m.async.push_back(2);
}

void Importer::push_memset(const Event& e, std::uint32_t track, StringId nm) {
  auto& m = t_.memsets;
  m.start.push_back(e.ts); m.dur.push_back(e.dur); m.track.push_back(track); m.name.push_back(nm);
  m.bytes.push_back(static_cast<std::uint64_t>(e.args.bytes));
  m.correlation.push_back(static_cast<std::uint32_t>(e.args.correlation));
  MemoryKind mk = MemoryKind::Unknown;
  const std::string_view name = e.name;
  if (auto lp = name.find('('); lp != std::string_view::npos && name.back() == ')')
    mk = mem_kind_word(name.substr(lp + 1, name.size() - lp - 2));
  m.mem_kind.push_back(mk);
  m.value.push_back(0);
}

void Importer::push_sync(const Event& e, std::uint32_t track, StringId nm) {
  const Args& args = e.args;
  auto& s = t_.syncs;
  s.start.push_back(e.ts); s.dur.push_back(e.dur); s.track.push_back(track); s.name.push_back(nm);
  s.correlation.push_back(static_cast<std::uint32_t>(args.correlation));
  s.type.push_back(sync_type_of(args.sync_kind.empty() ? e.name : args.sync_kind));
  s.stream.push_back((args.has & kWaitStream) ? args.wait_stream : (args.has & kStream) ? args.stream : -1);
  s.event.push_back((args.has & kWaitEvent) ? args.wait_event : -1);
  // The record a stream wait names: kept as an event_record row on the recording stream once
  // the pass is over (only for a stream the trace has, so no empty tracks appear).
  const std::uint32_t record = static_cast<std::uint32_t>(args.wait_record);
  if ((args.has & kWaitRecord) && (args.has & kWaitStream) && record != 0 && seen_records_.insert(record).second) {
    const std::int64_t device = (args.has & kDevice) ? args.device : id_of(e.pid);
    pending_records_.push_back({e.ts, device, args.wait_stream, (args.has & kWaitEvent) ? args.wait_event : -1, record});
  }
}

// The event records stream waits named, on their recording streams (see push_sync).
void Importer::push_event_records() {
  const StringId nm = t_.strings.intern("Event Record");
  for (const auto& r : pending_records_) {
    const auto st = streams_.find({r.device, r.stream});
    if (st == streams_.end()) continue;
    auto& s = t_.syncs;
    s.start.push_back(r.ts); s.dur.push_back(0); s.track.push_back(st->second); s.name.push_back(nm);
    s.correlation.push_back(r.correlation);
    s.type.push_back(SyncType::EventRecord);
    s.stream.push_back(r.stream);
    s.event.push_back(r.event);
  }
}

// A host-side complete event: an API call, or a range (also a step, a GEMM's FLOPs or a
// collective's host side when its name or args say so).
void Importer::host_event(const Event& e, Cat c) {
  const Args& args = e.args;
  const std::uint32_t track = thread_track(e.pid, e.tid);
  const StringId nm = t_.strings.intern(e.name);
  if (c == Cat::Runtime || c == Cat::Driver || c == Cat::OtherApi) {
    push_api_call(e, track, nm, c);
    return;
  }
  if (c == Cat::Flow) {  // an 'X' event in a flow category: keep it as a range
    ++other_categories_[std::string(e.cat)];
  }
  RangeKind kind = RangeKind::Other;
  switch (c) {
    case Cat::CpuOp: kind = RangeKind::CpuOp; break;
    case Cat::UserAnnotation: kind = RangeKind::UserAnnotation; break;
    case Cat::Python: kind = RangeKind::PythonFunction; break;
    case Cat::ProfilerSpan: kind = RangeKind::ProfilerSpan; break;
    default: break;
  }
  t_.ranges.push(e.ts, e.dur, track, nm, kind, t_.strings.intern(e.cat), static_cast<std::uint32_t>(args.external_id));
  if (kind == RangeKind::CpuOp && (args.has & (kDims | kFlops))) {
    if (shape_op(e.name)) push_op_shape(e.ts, track, e.name, args);
    else if (gemm_op(e.name)) push_gemm_flops(e.ts, track, e.name, args);  // not aten::mul's "flops"
    else if (conv_op(e.name)) push_conv_flops(e.ts, track, e.name, args);
    else if (attention_op(e.name)) push_attention_flops(e.ts, track, e.name, args);
  }

  if (e.name.starts_with("ProfilerStep#")) {
    std::int64_t n = 0;
    if (parse_int_text(e.name.substr(13), n)) {
      t_.steps.start.push_back(e.ts); t_.steps.dur.push_back(e.dur); t_.steps.track.push_back(track);
      t_.steps.name.push_back(nm); t_.steps.number.push_back(n);
    }
  }
  if (!args.coll_name.empty()) push_collective(e.ts, e.dur, track, nm, args, CollectiveSide::Host, 0);
}

void Importer::push_api_call(const Event& e, std::uint32_t track, StringId nm, Cat c) {
  auto& a = t_.api_calls;
  a.start.push_back(e.ts); a.dur.push_back(e.dur); a.track.push_back(track); a.name.push_back(nm);
  a.correlation.push_back(static_cast<std::uint32_t>(e.args.correlation));
  a.external_id.push_back(static_cast<std::uint32_t>(e.args.external_id));
  a.cbid.push_back(static_cast<std::uint32_t>(e.args.cbid));
  a.return_value.push_back(0);
  a.api.push_back(c == Cat::Runtime ? ApiKind::Runtime : c == Cat::Driver ? ApiKind::Driver : ApiKind::Other);
}

// Model FLOPs of a GEMM op (docs/analysis.md, "Kernel efficiency"): the profiler's own count
// (with_flops=True) or 2·M·K·N (times the batch) from its input shapes (record_shapes=True), as
// the counter "gemm.flops.<dtype>" at the op's start on its thread. Inner ops a GEMM dispatches
// to (aten::matmul -> aten::mm) are not double counted: only these leaf ops are read.
void Importer::push_gemm_flops(Ns ts, std::uint32_t track, std::string_view name, const Args& a) {
  double flops = (a.has & kFlops) ? static_cast<double>(a.flops) : 0;  // double: crafted shapes cannot overflow
  const int first = name == "aten::addmm" || name == "aten::baddbmm" ? 1 : 0;  // input 0 is the bias
  const auto& x = a.dims[first];
  const auto& y = a.dims[first + 1];
  const int nx = a.ndims[first], ny = a.ndims[first + 1];
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  // elements read and written: A (MxK), B (KxN) and C (MxN), times the batch
  double elements = 0;
  if (nx == 2 && ny == 2 && x[1] == y[0]) elements = d(x[0]) * d(x[1]) + d(y[0]) * d(y[1]) + d(x[0]) * d(y[1]);
  if (nx == 3 && ny == 3 && x[0] == y[0] && x[2] == y[1])
    elements = d(x[0]) * (d(x[1]) * d(x[2]) + d(y[1]) * d(y[2]) + d(x[1]) * d(y[2]));
  if (flops <= 0 && nx == 2 && ny == 2 && x[1] == y[0]) flops = 2 * d(x[0]) * d(x[1]) * d(y[1]);
  if (flops <= 0 && nx == 3 && ny == 3 && x[0] == y[0] && x[2] == y[1]) flops = 2 * d(x[0]) * d(x[1]) * d(x[2]) * d(y[2]);
  push_flops(ts, track, "gemm", a.input_type, flops, elements);
}

// An op's model FLOPs as the counter "<kind>.flops.<dtype>" at its start on its thread, and the
// bytes it must move at least (`elements` of its operands and result, each once) as
// "<kind>.bytes.<dtype>": its roofline's arithmetic intensity.
void Importer::push_flops(Ns ts, std::uint32_t track, std::string_view kind, std::string_view type, double flops,
                          double elements) {
  if (!(flops > 0 && flops < 1e21)) return;
  const char* dtype = type == "float" ? "fp32" : type == "c10::BFloat16" ? "bf16" : type == "c10::Half" ? "fp16"
                      : type == "double" ? "fp64" : "other";
  const double element_size = type == "float" ? 4 : type == "c10::BFloat16" || type == "c10::Half" ? 2 : type == "double" ? 8 : 0;
  auto counter = [&](std::string_view what, double value) {
    t_.counters.ts.push_back(ts);
    t_.counters.track.push_back(track);
    t_.counters.name.push_back(t_.strings.intern(std::string(kind) + "." + std::string(what) + "." + dtype));
    t_.counters.value.push_back(value);
  };
  counter("flops", flops);
  if (elements > 0 && elements < 1e20 && element_size > 0) counter("bytes", elements * element_size);
}

namespace {

// Sizes, strides and paddings beyond this are not a real convolution (and would overflow).
constexpr std::int64_t kMaxConvSize = std::int64_t{1} << 31;

// "[True, False]" -> {"True", "False"}: the items of a list written as text; none when `text`
// is not one.
std::vector<std::string_view> list_items(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return {};
  auto items = split_list(text.substr(1, text.size() - 2));
  for (auto& item : items)
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
  return items;
}

// "[1, 1]" -> {1, 1}; "[2]" -> {2}. False for anything else (or more than `max` numbers).
bool int_list(std::string_view text, std::int64_t* out, int max, int& n) {
  n = 0;
  const auto items = list_items(text);
  if (items.empty()) return false;
  for (std::string_view item : items) {
    std::int64_t v = 0;
    if (n == max || !parse_int_text(item, v) || v < 0 || v > kMaxConvSize) return false;
    out[n++] = v;
  }
  return true;
}

}  // namespace

// Model FLOPs of a convolution from its shapes (record_shapes=True): 2 · N · K · (output
// positions) · (C / groups) · (kernel positions) for the forward op, from the input, the
// weight [K, C/groups, R, S] and the stride, padding and dilation in "Concrete Inputs"; the
// backward op counts that once per gradient its output_mask asks for (input, weight) from the
// output gradient's shape. 1-D and 2-D convolutions (inputs of at most 4 sizes); transposed
// convolutions are not counted.
void Importer::push_conv_flops(Ns ts, std::uint32_t track, std::string_view name, const Args& a) {
  const bool backward = name == "aten::convolution_backward";
  const int in = backward ? 1 : 0, w = backward ? 2 : 1;  // backward: grad_output, input, weight
  const int spatial = a.ndims[in] - 2;
  if ((a.has & kDims) == 0 || spatial < 1 || a.ndims[w] != a.ndims[in] || (backward && a.ndims[0] != a.ndims[in]))
    return;
  const auto d = [](std::int64_t v) { return static_cast<double>(v); };
  const std::int64_t* x = a.dims[in];
  const std::int64_t* k = a.dims[w];
  for (int i = 0; i < a.ndims[in]; ++i)
    if (x[i] > kMaxConvSize || k[i] > kMaxConvSize) return;
  if (k[1] <= 0 || x[1] % k[1] != 0) return;
  const int base = backward ? 4 : 3;  // stride, padding, dilation, transposed
  if (a.concrete[base + 3] == "True") return;
  double out = 1, window = 1;
  for (int i = 0; i < spatial; ++i) window *= d(k[2 + i]);
  if (backward) {
    for (int i = 0; i < spatial; ++i) out *= d(a.dims[0][2 + i]);
  } else {
    std::int64_t stride[2], pad[2], dil[2];
    int ns = 0, np = 0, nd = 0;
    if (!int_list(a.concrete[base], stride, 2, ns) || !int_list(a.concrete[base + 1], pad, 2, np) ||
        !int_list(a.concrete[base + 2], dil, 2, nd))
      return;
    for (int i = 0; i < spatial; ++i) {
      const auto at = [&](const std::int64_t* v, int n) { return v[n == 1 ? 0 : std::min(i, n - 1)]; };
      const std::int64_t s = at(stride, ns), o = (x[2 + i] + 2 * at(pad, np) - at(dil, nd) * (k[2 + i] - 1) - 1);
      if (s == 0 || o < 0) return;
      out *= d(o / s + 1);
    }
  }
  const double one = 2 * d(x[0]) * d(k[0]) * out * d(k[1]) * window;  // C/groups = k[1]
  double in_elems = d(x[0]) * d(x[1]), w_elems = d(k[0]) * d(k[1]) * window, out_elems = d(x[0]) * d(k[0]) * out;
  for (int i = 0; i < spatial; ++i) in_elems *= d(x[2 + i]);
  double grads = 1;
  if (backward) {  // output_mask "[True, True, False]": the input's, the weight's and the bias's gradients
    const auto mask = list_items(a.concrete[10]);
    grads = mask.size() >= 2 ? (mask[0] == "True") + (mask[1] == "True") : 2;
  }
  push_flops(ts, track, "conv", a.input_type, one * grads, in_elems + w_elems + out_elems);
}

// Model FLOPs of attention from its shapes (record_shapes=True): query [..., L, E], key
// [..., S, E], value [..., S, Ev] with the same leading (batch, head) sizes: 2·L·S·E for the
// scores plus 2·L·S·Ev for their product with the values, per batch and head. The backward op
// (inputs: the output's gradient [..., L, Ev], query, key) counts twice that: four products to
// the forward's two. Causal attention is counted in full, as torch.utils.flop_counter does.
void Importer::push_attention_flops(Ns ts, std::uint32_t track, std::string_view name, const Args& a) {
  const bool backward = name.ends_with("_backward");
  const int q = backward ? 1 : 0, k = backward ? 2 : 1, v = backward ? 0 : 2;  // backward: v's width from grad_out
  const int n = a.ndims[q];
  if ((a.has & kDims) == 0 || n < 3 || a.ndims[k] != n || a.ndims[v] != n) return;
  const auto d = [](std::int64_t x) { return static_cast<double>(x); };
  double batch = 1;
  for (int i = 0; i < n - 2; ++i) {
    if (a.dims[k][i] != a.dims[q][i] || a.dims[v][i] != a.dims[q][i]) return;  // broadcast (GQA): not counted
    batch *= d(a.dims[q][i]);
  }
  const double l = d(a.dims[q][n - 2]), e = d(a.dims[q][n - 1]), s = d(a.dims[k][n - 2]), ev = d(a.dims[v][n - 1]);
  if (a.dims[k][n - 1] != a.dims[q][n - 1] || (!backward && a.dims[v][n - 2] != a.dims[k][n - 2]) ||
      (backward && a.dims[v][n - 2] != a.dims[q][n - 2]))
    return;
  const double forward = 2 * batch * l * s * (e + ev);
  const double elements = batch * (l * e + s * e + s * ev + l * ev);  // q, k, v and the output
  push_flops(ts, track, "attention", a.input_type, backward ? 2 * forward : forward, elements);
}

// The shape of a layer_norm or cross_entropy_loss op from its first input (record_shapes=True)
// as the counter "shape.<op>.<rows>x<cols>" (value 1) at the op's start: layer_norm's last
// dimension is taken as the normalised size (the common case: normalized_shape = [C]); a loss's
// second dimension is its classes.
void Importer::push_op_shape(Ns ts, std::uint32_t track, std::string_view name, const Args& a) {
  const auto& x = a.dims[0];
  const int n = a.ndims[0];
  if (n == 0) return;
  const int col = name == "aten::layer_norm" ? n - 1 : std::min(n - 1, 1);
  std::int64_t rows = 1;
  for (int i = 0; i < n; ++i)
    if (i != col) {
      if (x[i] > 0 && rows > (std::int64_t{1} << 40) / x[i]) return;  // crafted sizes
      rows *= x[i];
    }
  if (rows <= 0 || x[col] <= 0) return;
  t_.counters.ts.push_back(ts);
  t_.counters.track.push_back(track);
  t_.counters.name.push_back(t_.strings.intern("shape." + std::string(name) + "." + std::to_string(rows) + "x" + std::to_string(x[col])));
  t_.counters.value.push_back(1);
}

void Importer::push_collective(Ns ts, Ns dur, std::uint32_t track, StringId name,
                               const Args& a, CollectiveSide side, std::uint32_t correlation) {
  const auto n = static_cast<std::uint64_t>((a.has & kInNelems) ? a.in_nelems : 0);
  std::string comm(a.pg_name);
  if (comm.empty() && (a.has & kPgId)) comm = std::to_string(a.pg_id);
  t_.collectives.push(ts, dur, track, name, t_.strings.intern(a.coll_name),
                      n * dtype_size(a.dtype),  // per rank, as NCCL counts
                      n, t_.strings.intern(a.dtype),
                      (a.has & kGroupSize) ? static_cast<std::int32_t>(a.group_size) : -1,
                      t_.strings.intern(comm), side, correlation);
}

Status Importer::parse_device_properties(od::array arr) {
  for (auto el : arr) {
    od::object o;
    if (el.get_object().get(o)) return make_error(source_ + ": deviceProperties entries must be objects");
    Device d;
    std::int64_t id = -1;
    for (auto field : o) {
      std::string_view key;
      if (auto ec = field.unescaped_key().get(key)) return fail_json(ec);
      od::value v;
      if (auto ec = field.value().get(v)) return fail_json(ec);
      std::int64_t x = 0;
      std::string_view s;
      if (key == "id") { if (get_int(v, x)) id = x; }
      else if (key == "name") { if (!v.get_string().get(s)) d.name = std::string(s); }
      else if (key == "totalGlobalMem") { if (get_int(v, x)) d.total_memory = x; }
      else if (key == "computeMajor") { if (get_int(v, x)) d.compute_major = static_cast<int>(x); }
      else if (key == "computeMinor") { if (get_int(v, x)) d.compute_minor = static_cast<int>(x); }
      else if (key == "numSms") { if (get_int(v, x)) d.sm_count = static_cast<int>(x); }
      else if (key == "uuid") { if (!v.get_string().get(s)) d.uuid = std::string(s); }
    }
    if (id < 0) continue;
    const std::uint32_t idx = device_index(id);
    Device& dst = t_.devices[idx];
    d.index = dst.index;
    d.process = dst.process;
    dst = std::move(d);
  }
  return {};
}

Status Importer::parse_distributed_info(od::object obj) {
  for (auto field : obj) {
    std::string_view key;
    if (auto ec = field.unescaped_key().get(key)) return fail_json(ec);
    if (key == "rank") {
      od::value v;
      std::int64_t r;
      if (!field.value().get(v) && get_int(v, r) && r >= 0 && r < (1 << 30)) rank_ = static_cast<int>(r);
    }
  }
  return {};
}

void Importer::finish() {
  push_event_records();
  for (const auto& f : pending_flows_) {
    const auto st = streams_.find({id_of(f.pid), id_of(f.tid)});
    const bool on_gpu = st != streams_.end() && threads_.find({id_of(f.pid), id_of(f.tid)}) == threads_.end();
    t_.flows.track[f.row] = on_gpu ? st->second : thread_track(f.pid, f.tid);
  }
  // Names from metadata events: pid -> process name, (pid, tid) -> thread name.
  for (std::size_t i = 0; i + 1 < pending_names_.size(); i += 2) {
    const auto [pid, kind_id] = pending_names_[i];
    const auto [tid, value] = pending_names_[i + 1];
    const bool proc = t_.strings.get(kind_id) == "process_name";
    if (proc) {
      if (auto it = processes_.find({pid, 0}); it != processes_.end() && t_.processes[it->second].name.empty())
        t_.processes[it->second].name = std::string(t_.strings.get(value));
    } else if (auto it = threads_.find({pid, tid}); it != threads_.end()) {
      auto& th = t_.threads[t_.tracks[it->second].owner];
      if (th.name.empty()) th.name = std::string(t_.strings.get(value));
    } else if (auto st = streams_.find({pid, tid}); st != streams_.end()) {
      auto& s = t_.streams[t_.tracks[st->second].owner];
      if (s.name.empty()) {
        std::string_view v = t_.strings.get(value);
        while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
        s.name = std::string(v);
      }
    }
  }
  for (auto& [track, stack] : open_begins_)
    if (!stack.empty())
      t_.add_diagnostic(DiagnosticKind::Truncated, source_, "'B' event without a matching 'E'", stack.size());
  // distributedInfo may follow traceEvents: set the rank once the whole file is read.
  for (auto& [key, idx] : processes_) t_.processes[idx].rank = rank_;
  for (std::uint32_t d : file_devices_)
    if (t_.devices[d].process == kNone) t_.devices[d].process = first_cpu_process_;
  if (metadata_events_ > 0)
    t_.add_diagnostic(DiagnosticKind::Note, source_, "metadata events (ph 'M') applied to process and thread names", metadata_events_);
  if (cut_names_ > 0)
    t_.add_diagnostic(DiagnosticKind::Note, source_, "event names longer than 64 KiB cut to that length", cut_names_);
  if (clamped_durations_ > 0)
    t_.add_diagnostic(DiagnosticKind::Note, source_, "negative or overflowing durations clamped (to 0, or to the end of time)",
                      clamped_durations_);
  if (duplicate_keys_ > 0)
    t_.add_diagnostic(DiagnosticKind::Note, source_, "duplicate keys in an event (the last value kept)", duplicate_keys_);
  if (ignored_arg_types_ > 0)
    t_.add_diagnostic(DiagnosticKind::Skipped, source_, "event args of an unexpected type (ignored)", ignored_arg_types_);
  for (auto& [ph, n] : skipped_phases_)
    t_.add_diagnostic(DiagnosticKind::Skipped, source_, "events with unsupported phase '" + ph + "'", n);
  for (auto& [cat, n] : other_categories_)
    t_.add_diagnostic(DiagnosticKind::Note, source_, "events of unknown category '" + cat + "' imported as generic ranges", n);
}

Status Importer::read_events(od::array events, std::size_t& index) {
  for (auto el : events) {
    od::object obj;
    if (auto ec = el.get_object().get(obj)) {
      if (ec == simdjson::INCORRECT_TYPE) return fail("not a JSON object", index);
      return fail_json(ec);
    }
    if (auto st = parse_event(obj, index); !st) return st;
    // The token after the event is its array's ',' or ']'; anything else means a malformed value
    // inside the event left the reader out of step with the text (a read of the whole document
    // and one in windows would then go on differently: both stop here, with this error)
    const char* next = nullptr;
    if (doc_ != nullptr && !doc_->current_location().get(next)) {
      if (*next != ',' && *next != ']') return fail("malformed JSON inside the event", index);
      if (middle_window_) resume_at_ = next;
    }
    ++index;
  }
  return {};
}

Status Importer::read_root_field(std::string_view key, od::value v, std::size_t& index, bool& saw_events) {
  if (key == "traceEvents") {
    od::array arr;
    if (v.get_array().get(arr)) return make_error(source_ + ": 'traceEvents' must be an array");
    if (auto st = read_events(arr, index); !st) return st;
    saw_events = true;
  } else if (key == "deviceProperties") {
    od::array arr;
    if (v.get_array().get(arr)) return make_error(source_ + ": 'deviceProperties' must be an array");
    if (auto st = parse_device_properties(arr); !st) return st;
  } else if (key == "distributedInfo") {
    od::object o;
    if (v.get_object().get(o)) return make_error(source_ + ": 'distributedInfo' must be an object");
    if (auto st = parse_distributed_info(o); !st) return st;
  } else if (key == "baseTimeNanoseconds" || key == "schemaVersion" || key == "traceName" || key == "displayTimeUnit") {
    std::string_view text;
    if (v.get_string().get(text)) {  // numbers: keep the token as written
      text = v.raw_json_token();
      while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == ',' || text.back() == '\r' ||
                               text.back() == '\t' || text.back() == '}'))
        text.remove_suffix(1);
    }
    t_.metadata.emplace_back(source_ + ":" + std::string(key), std::string(text));
  }
  return {};
}

// A UTF-8 byte order mark (Windows editors write one) is not JSON: skipped.
simdjson::padded_string_view without_bom(simdjson::padded_string_view json) {
  if (json.size() >= 3 && std::memcmp(json.data(), "\xEF\xBB\xBF", 3) == 0)
    return simdjson::padded_string_view(json.data() + 3, json.size() - 3, json.capacity() - 3);
  return json;
}

Status Importer::run(simdjson::padded_string_view json) {
  json = without_bom(json);
  std::size_t index = 0;
  bool saw_events = false;
  if (auto st = read_document(json, index, saw_events); !st) return st;
  if (!saw_events) return make_error(source_ + ": no 'traceEvents' array: not a Chrome/Kineto trace");
  finish();
  return {};
}

// ---- reading in windows ----
//
// A large file in memory is read as a few documents of about kKinetoWindowBytes each, not as
// one: simdjson's structural index (4 bytes per token, as large as the text) and the parser's
// buffers are then sized for one window and reused, where a whole 87 MB file faulted in 85 MB
// of fresh pages for them. The windows are cut between two events of the root's traceEvents
// array and each is read as the whole file would be there:
//   head:   the file up to the first cut, closed with "]}" (the fields before traceEvents, and
//           its first events); used only when a read that touches nothing says its last root
//           field is traceEvents, closed by the "]" added (head_ends_in_events)
//   middle: {"traceEvents":[ events up to the next cut ]} (one field, nothing else)
//   rest:   {"traceEvents":[ the rest of the file (its last events, the fields after them)
// A cut is a "}, {" found by a byte search, so only a candidate: one in a string fails the
// window's stage 1, one deeper in an event leaves the window unbalanced, which On-Demand
// refuses before reading anything; one in a root field after the events fails at that field
// (a middle window has one). The rest is then read from the last event read on (an event
// changes the trace only once all its fields are read). Any failure of the rest (or of the
// head) starts over with the whole document on a new trace (import_json), so errors and
// their messages are the whole document's. Measured on mtia_rank_0 (87 MB): peak memory
// 186 -> 116 MB, 46k -> 32k page faults, CPU time 3% less (the windows' copy costs most of
// what the faults saved; bench/speed_profile.md).

std::size_t skip_space(std::string_view text, std::size_t i) {
  while (i < text.size() && (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t')) ++i;
  return i;
}

// The ',' of the next "}, {" from `from` on (whitespace allowed around it); npos when none.
std::size_t next_cut(std::string_view text, std::size_t from) {
  while (from < text.size()) {
    const std::size_t close = text.find('}', from);
    if (close == std::string_view::npos) return close;
    const std::size_t comma = skip_space(text, close + 1);
    if (comma < text.size() && text[comma] == ',') {
      const std::size_t open = skip_space(text, comma + 1);
      if (open < text.size() && text[open] == '{') return comma;
    }
    from = close + 1;
  }
  return std::string_view::npos;
}

constexpr std::string_view kWindowPrefix = R"({"traceEvents":[)";

// prefix + body + suffix as a padded document in piece_ (reused: one window's pages).
simdjson::padded_string_view Importer::piece(std::string_view prefix, std::string_view body, std::string_view suffix) {
  const std::size_t n = prefix.size() + body.size() + suffix.size();
  if (piece_.size() < n + simdjson::SIMDJSON_PADDING) piece_.resize(n + simdjson::SIMDJSON_PADDING);
  char* p = piece_.data();
  for (const std::string_view part : {prefix, body, suffix}) {
    if (!part.empty()) std::memcpy(p, part.data(), part.size());  // an empty view may have no data
    p += part.size();
  }
  std::memset(p, 0, simdjson::SIMDJSON_PADDING);
  p = piece_.data();
  return simdjson::padded_string_view(p, n, piece_.size());
}

// Whether the head window `json` ends inside the root's traceEvents: its root is an object
// whose last field is traceEvents, an array, and nothing follows the root. Reads without
// touching the trace (values are skipped, not read).
bool Importer::head_ends_in_events(simdjson::padded_string_view json) {
  od::document doc;
  od::object root;
  if (parser_.iterate(json).get(doc) || doc.get_object().get(root)) return false;
  bool last_is_events = false;
  for (auto field : root) {
    std::string_view key;
    od::value v;
    if (field.unescaped_key().get(key) || field.value().get(v)) return false;
    od::json_type type;
    last_is_events = key == "traceEvents" && !v.type().get(type) && type == od::json_type::array;
  }
  const char* rest = nullptr;
  return last_is_events && doc.current_location().get(rest) != simdjson::SUCCESS;  // at the end
}

// The middle windows from `start` (the first byte after a cut) on; returns where the rest
// begins: after the last window read, or after the last event read in a window that failed.
std::size_t Importer::read_middle_windows(std::string_view text, std::size_t start, std::size_t window_bytes,
                                          std::size_t& index, bool& saw_events) {
  middle_window_ = true;
  while (true) {
    const std::size_t cut = next_cut(text, start + window_bytes);
    if (cut == std::string_view::npos) break;
    resume_at_ = nullptr;
    const auto json = piece(kWindowPrefix, text.substr(start, cut - start), "]}");
    if (read_document(json, index, saw_events)) {
      start = cut + 1;
      continue;
    }
    if (resume_at_ != nullptr) {  // at the ',' (or ']') after the last event read
      start += static_cast<std::size_t>(resume_at_ - (json.data() + kWindowPrefix.size()));
      if (text[start] == ',') ++start;
    }
    break;
  }
  middle_window_ = false;
  return start;
}

Result<bool> Importer::read_windows(std::string_view text, std::size_t window_bytes, std::size_t& index,
                                    bool& saw_events) {
  std::size_t cut = next_cut(text, window_bytes);
  for (int tries = 1; cut != std::string_view::npos && !head_ends_in_events(piece({}, text.substr(0, cut), "]}")); ++tries)
    cut = tries < 4 ? next_cut(text, cut + window_bytes) : std::string_view::npos;
  if (cut == std::string_view::npos) return false;  // nothing read: the whole document is
  if (auto st = read_document(piece({}, text.substr(0, cut), "]}"), index, saw_events); !st) return make_error(st.error());
  const std::size_t rest = read_middle_windows(text, cut + 1, window_bytes, index, saw_events);
  if (auto st = read_document(piece(kWindowPrefix, text.substr(rest), {}), index, saw_events); !st)
    return make_error(st.error());
  return true;
}

Result<bool> Importer::run_windows(simdjson::padded_string_view json, std::size_t window_bytes) {
  json = without_bom(json);
  std::size_t index = 0;
  bool saw_events = false;
  auto windowed = read_windows(std::string_view(json.data(), json.size()), window_bytes, index, saw_events);
  if (!windowed || !windowed.value()) return windowed;
  finish();
  return true;
}

// One JSON document: an array of events, or an object of top-level fields (the whole file, or
// one piece of a streamed one). `index` counts the events read so far.
Status Importer::read_document(simdjson::padded_string_view json, std::size_t& index, bool& saw_events) {
  od::document doc;
  base_ = json.data();
  size_ = json.size();
  doc_ = nullptr;
  if (auto ec = parser_.iterate(json).get(doc)) return fail_json(ec);
  doc_ = &doc;
  od::json_type top;
  if (auto ec = doc.type().get(top)) return fail_json(ec);
  if (top == od::json_type::array) {
    od::array arr;
    if (auto ec = doc.get_array().get(arr)) return fail_json(ec);
    if (auto st = read_events(arr, index); !st) return st;
    saw_events = true;
  } else if (top == od::json_type::object) {
    if (auto st = read_root_fields(doc, index, saw_events); !st) return st;
  } else {
    return make_error(source_ + ": not a Chrome trace (top level must be an object or an array)");
  }
  const char* rest = nullptr;  // anything but the end of input here is trailing garbage
  if (!doc.current_location().get(rest)) return fail_json(simdjson::TRAILING_CONTENT);
  doc_ = nullptr;
  return {};
}

Status Importer::read_root_fields(od::document& doc, std::size_t& index, bool& saw_events) {
  od::object root;
  if (auto ec = doc.get_object().get(root)) return fail_json(ec);
  int fields = 0;
  for (auto field : root) {
    std::string_view key;
    if (auto ec = field.unescaped_key().get(key)) return fail_json(ec);
    od::value v;
    if (auto ec = field.value().get(v)) return fail_json(ec);
    // a middle window is {"traceEvents": [events]}: a second field is the file's own, past the
    // array's end, and read with the rest (read_windows)
    if (middle_window_ && ++fields > 1) return make_error(source_ + ": the events array ends inside a window");
    if (auto st = read_root_field(key, v, index, saw_events); !st) return st;
  }
  return {};
}

Status Importer::run_stream(const fs::path& path, const std::function<void(std::uint64_t, std::uint64_t)>& progress) {
  std::size_t index = 0;
  bool saw_events = false, piece_had_events = false;  // the splitter says whether traceEvents was there
  // each piece (a batch of events, or one {"key": value} field) is its own document
  auto piece = [&](std::string_view text) { return read_document(simdjson::padded_string(text), index, piece_had_events); };
  JsonStreamSink sink{piece, piece, progress};
  if (auto st = stream_trace_json(path, sink, saw_events); !st) return st;
  if (!saw_events) return make_error(source_ + ": no 'traceEvents' array: not a Chrome/Kineto trace");
  finish();
  return {};
}

}  // namespace

namespace {

// Nothing read into it yet (a failed window read can start over on a new one).
bool is_new(const Trace& t) {
  return t.event_count() == 0 && t.processes.empty() && t.threads.empty() && t.devices.empty() && t.streams.empty() &&
         t.tracks.empty() && t.launch_configs.empty() && t.diagnostics.empty() && t.metadata.empty() &&
         t.py_frames.empty() && t.py_stacks.empty() && t.py_samples.size() == 0 && !t.finalized() &&
         t.strings.size() == Trace().strings.size();
}

// One file's JSON into `out`: in windows when it is large and `out` is new; as one document
// otherwise, and again as one document, on a new trace, when a window's read failed (so that
// errors, and anything the windows could not tell, are the whole document's).
Status import_json(simdjson::padded_string_view json, std::string_view source, Trace& out, int rank_hint,
                   std::size_t window_bytes) {
  if (json.size() >= 4 * window_bytes && is_new(out)) {
    auto windowed = Importer(out, source, rank_hint).run_windows(json, window_bytes);
    if (windowed && windowed.value()) return {};
    if (!windowed) {
      Trace fresh;
      fresh.clock_domain = out.clock_domain;
      out = std::move(fresh);
    }
  }
  return Importer(out, source, rank_hint).run(json);
}

}  // namespace

Status import_kineto_buffer(std::string_view json, std::string_view source, Trace& out, int rank_hint,
                            std::size_t window_bytes) {
  simdjson::padded_string padded(json);
  if (out.clock_domain == "unknown") out.clock_domain = "kineto-us";
  return import_json(padded, source, out, rank_hint, window_bytes);
}

// Files from this size on (gzip: compressed size x 8) are read as a stream: memory bounded by
// the trace model, not the file. TRACETUNE_STREAM_FROM_BYTES sets another size (0: always); a
// malformed value was refused by check_environment() before any import.
std::uint64_t stream_from_bytes() {
  constexpr std::uint64_t kDefault = 256ull << 20;
  auto n = env_byte_count(kStreamFromBytesVariable, kDefault);
  return n ? n.value() : kDefault;
}

bool should_stream(const fs::path& f) {
  auto probe = probe_gzip(f);
  if (!probe) return false;  // the in-memory path names the problem
  const std::uint64_t estimate = probe->gzip ? probe->file_size * 8 : probe->file_size;
  return estimate >= stream_from_bytes();
}

Result<std::vector<fs::path>> kineto_files(const fs::path& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return std::vector<fs::path>{path};
  auto files = list_trace_files(path);
  if (files && files->empty()) return make_error(path.string() + ": no .json or .json.gz files in directory");
  return files;
}

Status import_kineto(const fs::path& path, Trace& out, const ImportProgress& progress) {
  auto listed = kineto_files(path);
  if (!listed) return make_error(listed.error());
  const std::vector<fs::path>& files = listed.value();
  if (out.clock_domain == "unknown") out.clock_domain = "kineto-us";
  for (const auto& f : files) {
    if (should_stream(f)) {
      auto per_file = [&](std::uint64_t read, std::uint64_t total) { if (progress) progress(f.string(), read, total); };
      if (auto st = Importer(out, f.string(), -1).run_stream(f, per_file); !st) return st;
      continue;
    }
    auto data = read_maybe_gzip(f);
    if (!data) return make_error(data.error());
    if (auto st = import_json(data.value(), f.string(), out, -1, kKinetoWindowBytes); !st) return st;
  }
  return {};
}

}  // namespace tt::trace
