// The pure parts of the GPU benches (gpu_bench.h): list parsing, the formulas, the 16-bit
// float conversions used to fill GEMM inputs, and the text and JSON output. No CUDA here.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "tracetune/trace/strings.h"
#include "tracetune/trace/json_text.h"
#include "tracetune/tuner/gpu_bench.h"
#include "tracetune/tuner/storage_bench.h"  // parse_size

namespace tt::tuner {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One name from `known` (matched case-insensitively) per comma-separated item, no repeats.
Result<std::vector<std::string>> parse_names(std::string_view text, const std::vector<std::string>& known,
                                             std::string_view what) {
  std::vector<std::string> out;
  for (auto item : trace::split_list(text)) {
    auto it = std::find_if(known.begin(), known.end(), [&](const std::string& k) { return lower(k) == lower(item); });
    if (it == known.end()) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      return make_error(fmt::format("'{}' is not {} (one of {})", item, what, names));
    }
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
  }
  return out;
}

}  // namespace

Result<std::vector<std::uint64_t>> parse_size_list(std::string_view text) {
  std::vector<std::uint64_t> out;
  for (auto item : trace::split_list(text)) {
    auto v = parse_size(item);
    if (!v) return make_error(v.error());
    out.push_back(v.value());
  }
  return out;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// ---- gemm ----

double gemm_tflops(double m, double n, double k, double seconds) { return seconds > 0 ? 2 * m * n * k / seconds / 1e12 : 0; }

double GemmTrial::tflops() const { return gemm_tflops(n, n, n, seconds_median); }

Result<std::vector<int>> parse_gemm_sizes(std::string_view text) {
  std::vector<int> out;
  for (auto item : trace::split_list(text)) {
    int v = 0;
    bool ok = !item.empty() && item.size() <= 6;
    for (char c : item) {
      ok &= c >= '0' && c <= '9';
      if (ok) v = v * 10 + (c - '0');
    }
    if (!ok || v < 16 || v > 32768) return make_error(fmt::format("'{}' is not a matrix size from 16 to 32768", item));
    out.push_back(v);
  }
  return out;
}

std::uint16_t float_to_half_bits(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, sizeof x);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t exp = (x >> 23) & 0xffu;
  std::uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));  // inf, NaN
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);  // overflow: infinity
  if (e <= 0) {                                                    // a half subnormal, or zero
    if (e < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - e;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) ++h;  // a carry into the exponent is right (up to inf)
  return static_cast<std::uint16_t>(sign | h);
}

std::uint16_t float_to_bf16_bits(float f) {
  std::uint32_t x = 0;
  std::memcpy(&x, &f, sizeof x);
  if ((x & 0x7f800000u) == 0x7f800000u && (x & 0x7fffffu)) return static_cast<std::uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1);
  return static_cast<std::uint16_t>(x >> 16);
}

namespace {
double fp32_tflops(const std::vector<GemmTrial>& trials, int n) {
  for (const auto& t : trials)
    if (t.format == "fp32" && t.n == n) return t.tflops();
  return 0;
}
}  // namespace

std::string gemm_bench_text(const std::vector<GemmTrial>& trials) {
  std::string s = fmt::format("{:>6} {:<6} {:>12} {:>10} {:>9}\n", "size", "format", "median ms", "TFLOP/s", "vs fp32");
  for (const auto& t : trials) {
    const double base = fp32_tflops(trials, t.n);
    s += fmt::format("{:>6} {:<6} {:>12.4f} {:>10.2f} {:>8.2f}x\n", t.n, t.format, t.seconds_median * 1e3, t.tflops(),
                     base > 0 ? t.tflops() / base : 0);
  }
  return s;
}

std::string gemm_bench_json(const std::vector<GemmTrial>& trials) {
  std::string s = "{\"bench\": \"gemm\", \"trials\": [";
  for (std::size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    const double base = fp32_tflops(trials, t.n);
    s += fmt::format("{}{{\"format\": \"{}\", \"m\": {}, \"n\": {}, \"k\": {}, \"seconds\": {:.9f}, \"tflops\": {:.3f}, "
                     "\"speedup_vs_fp32\": {:.3f}}}",
                     i ? ", " : "", t.format, t.n, t.n, t.n, t.seconds_median, t.tflops(), base > 0 ? t.tflops() / base : 0);
  }
  return s + "]}\n";
}

// ---- launch ----

std::string launch_bench_text(const LaunchResult& r) {
  std::string s = fmt::format("{} empty kernels per repetition, median of {} repetitions, us per kernel\n", r.kernels, r.repeats);
  s += fmt::format("{:<22} {:>10} {:>12} {:>10}\n", "", "host", "end-to-end", "GPU");
  s += fmt::format("{:<22} {:>10.3f} {:>12.3f} {:>10.3f}\n", "cuLaunchKernel x N", r.direct_host_us, r.direct_e2e_us, r.direct_gpu_us);
  s += fmt::format("{:<22} {:>10.3f} {:>12.3f} {:>10.3f}\n", "CUDA graph replay", r.graph_host_us, r.graph_e2e_us, r.graph_gpu_us);
  s += fmt::format("graph replay: {:.2f}x faster end to end\n", r.graph_speedup());
  return s;
}

std::string launch_bench_json(const LaunchResult& r) {
  return fmt::format(
      "{{\"bench\": \"launch\", \"kernels\": {}, \"repeats\": {}, \"direct\": {{\"host_us\": {:.4f}, \"e2e_us\": {:.4f}, "
      "\"gpu_us\": {:.4f}}}, \"graph\": {{\"host_us\": {:.4f}, \"e2e_us\": {:.4f}, \"gpu_us\": {:.4f}}}, "
      "\"graph_speedup\": {:.3f}}}\n",
      r.kernels, r.repeats, r.direct_host_us, r.direct_e2e_us, r.direct_gpu_us, r.graph_host_us, r.graph_e2e_us,
      r.graph_gpu_us, r.graph_speedup());
}

// ---- nccl ----

std::vector<std::uint64_t> default_nccl_sizes() {
  std::vector<std::uint64_t> out;
  for (std::uint64_t b = 8; b <= (1ull << 30); b *= 2) out.push_back(b);
  return out;
}

Result<std::vector<std::string>> parse_nccl_algos(std::string_view text) {
  static const std::vector<std::string> known = {"Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT"};
  return parse_names(text, known, "an NCCL algorithm");
}

Result<std::vector<std::string>> parse_nccl_protos(std::string_view text) {
  static const std::vector<std::string> known = {"LL", "LL128", "Simple"};
  return parse_names(text, known, "an NCCL protocol");
}

Result<std::vector<std::string>> parse_nccl_collectives(std::string_view text) {
  static const std::vector<std::string> known = {"allreduce", "allgather", "reducescatter"};
  return parse_names(text, known, "a collective");
}

NcclCounts nccl_counts(const std::string& collective, std::uint64_t bytes, int ranks) {
  constexpr std::uint64_t elem = 4;  // float32
  NcclCounts c;
  if (ranks < 1) return c;
  const std::uint64_t n = static_cast<std::uint64_t>(ranks);
  if (collective == "allreduce") {
    c.count = bytes / elem;
    c.bytes = c.send_bytes = c.recv_bytes = c.count * elem;
  } else if (collective == "allgather") {
    c.count = bytes / (elem * n);
    c.send_bytes = c.count * elem;
    c.bytes = c.recv_bytes = c.send_bytes * n;
  } else if (collective == "reducescatter") {
    c.count = bytes / (elem * n);
    c.recv_bytes = c.count * elem;
    c.bytes = c.send_bytes = c.recv_bytes * n;
  }
  if (c.count == 0) c = {};
  return c;
}

std::string nccl_bench_text(const NcclSweep& sw) {
  std::string s = fmt::format("NCCL {}, {} GPUs in one process (float32, sum); bandwidths as nccl-tests defines them\n",
                              sw.nccl_version, sw.ranks);
  s += fmt::format("{:<14} {:<9} {:<7} {:>12} {:>12} {:>12} {:>12}\n", "collective", "algorithm", "proto", "bytes", "time us",
                   "algbw GB/s", "busbw GB/s");
  for (const auto& p : sw.points)
    s += fmt::format("{:<14} {:<9} {:<7} {:>12} {:>12.2f} {:>12.3f} {:>12.3f}\n", p.collective, p.algorithm, p.protocol,
                     p.bytes, p.time_us, algbw_gbs(p), busbw_gbs(p));
  for (const auto& k : sw.skipped)
    s += fmt::format("skipped: {} {} {}{}: {}\n", k.algorithm, k.protocol, k.collective.empty() ? "(all)" : k.collective,
                     k.bytes ? fmt::format(" {} bytes", k.bytes) : "", k.error);
  return s;
}

std::string nccl_bench_json(const NcclSweep& sw) {
  std::string s = fmt::format("{{\"bench\": \"nccl\", \"nccl_version\": {}, \"ranks\": {}, \"datatype\": \"float32\", \"points\": [",
                              sw.nccl_version, sw.ranks);
  for (std::size_t i = 0; i < sw.points.size(); ++i) {
    const auto& p = sw.points[i];
    s += fmt::format("{}\n  {{\"collective\": {}, \"algorithm\": {}, \"protocol\": {}, \"bytes\": {}, \"ranks\": {}, "
                     "\"time_us\": {:.4f}, \"algbw_gbs\": {:.4f}, \"busbw_gbs\": {:.4f}}}",
                     i ? "," : "", trace::json_quote(p.collective), trace::json_quote(p.algorithm), trace::json_quote(p.protocol), p.bytes,
                     p.ranks, p.time_us, algbw_gbs(p), busbw_gbs(p));
  }
  s += "], \"skipped\": [";
  for (std::size_t i = 0; i < sw.skipped.size(); ++i) {
    const auto& k = sw.skipped[i];
    s += fmt::format("{}\n  {{\"collective\": {}, \"algorithm\": {}, \"protocol\": {}, \"bytes\": {}, \"error\": {}}}",
                     i ? "," : "", trace::json_quote(k.collective), trace::json_quote(k.algorithm), trace::json_quote(k.protocol), k.bytes,
                     trace::json_quote(k.error));
  }
  return s + "]}\n";
}

}  // namespace tt::tuner
