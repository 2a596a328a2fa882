// α–β model fitting and the all-reduce / DDP bucket simulator. See collective_model.h.
#include "tracetune/tuner/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <span>

#include <fmt/format.h>
#include <simdjson.h>

namespace tt::tuner {

double busbw_factor(const std::string& c, int n) {
  if (n <= 0) return 0;
  const double p = n;
  if (c == "allreduce") return 2 * (p - 1) / p;
  if (c == "allgather" || c == "reducescatter" || c == "alltoall") return (p - 1) / p;
  return 1;  // broadcast, reduce, sendrecv
}

double algbw_gbs(const SweepPoint& p) { return p.time_us > 0 ? static_cast<double>(p.bytes) / (p.time_us * 1e3) : 0; }
double busbw_gbs(const SweepPoint& p) { return algbw_gbs(p) * busbw_factor(p.collective, p.ranks); }

Result<AlphaBeta> fit_alpha_beta(const std::vector<SweepPoint>& pts) {
  // Weighted least squares: minimise sum w (T - a - b n)^2 with w = 1/T^2.
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  std::size_t used = 0;
  for (const auto& p : pts) {
    if (p.time_us <= 0) continue;
    const double w = 1 / (p.time_us * p.time_us), x = static_cast<double>(p.bytes), y = p.time_us;
    sw += w;
    sx += w * x;
    sy += w * y;
    sxx += w * x * x;
    sxy += w * x * y;
    ++used;
  }
  const double det = sw * sxx - sx * sx;
  if (used < 2 || std::abs(det) <= 1e-12 * sw * sxx)
    return make_error(fmt::format("cannot fit alpha and beta: need at least two distinct message sizes (have {} points)", used));
  AlphaBeta ab;
  ab.beta_us_per_byte = (sw * sxy - sx * sy) / det;
  ab.alpha_us = (sy - ab.beta_us_per_byte * sx) / sw;
  if (ab.beta_us_per_byte < 0) ab.beta_us_per_byte = 0;
  if (ab.alpha_us < 0) ab.alpha_us = 0;
  ab.points = used;
  for (const auto& p : pts)
    if (p.time_us > 0)
      ab.max_rel_error = std::max(ab.max_rel_error, std::abs(ab.time_us(static_cast<double>(p.bytes)) - p.time_us) / p.time_us);
  return ab;
}

Result<LinkModel> intra_link_from_ring(const AlphaBeta& ring, int ranks) {
  if (ranks < 2) return make_error("a ring needs at least 2 GPUs to say anything about the links between them");
  const double p = ranks;
  return LinkModel{ring.alpha_us / (2 * (p - 1)), ring.beta_us_per_byte * p / (2 * (p - 1))};
}

std::string_view to_string(AllReduceAlgo a) {
  switch (a) {
    case AllReduceAlgo::Ring: return "ring";
    case AllReduceAlgo::Tree: return "tree";
    case AllReduceAlgo::Hierarchical: return "hierarchical";
  }
  return "?";
}

double allreduce_time_us(AllReduceAlgo algo, const Cluster& c, double n) {
  const double N = std::max(1, c.nodes), g = std::max(1, c.gpus_per_node), P = N * g;
  if (P <= 1) return 0;
  const bool multi = N > 1;
  const double b_max = multi ? std::max(c.intra.beta_us_per_byte, c.inter.beta_us_per_byte) : c.intra.beta_us_per_byte;
  switch (algo) {
    case AllReduceAlgo::Ring: {
      const double inter_hops = multi ? 2 * N : 0;
      return (2 * (P - 1) - inter_hops) * c.intra.alpha_us + inter_hops * c.inter.alpha_us + 2 * (P - 1) / P * n * b_max;
    }
    case AllReduceAlgo::Tree:
      return 2 * ((g - 1) * c.intra.alpha_us + std::log2(N) * c.inter.alpha_us) + 2 * n * b_max;
    case AllReduceAlgo::Hierarchical:
      return 2 * (g - 1) * c.intra.alpha_us + 2 * (g - 1) / g * n * c.intra.beta_us_per_byte +
             2 * (N - 1) * c.inter.alpha_us + 2 * (N - 1) / N * (n / g) * c.inter.beta_us_per_byte;
  }
  return 0;
}

AllReduceChoice best_allreduce(const Cluster& c, double bytes) {
  AllReduceChoice best{AllReduceAlgo::Ring, std::numeric_limits<double>::infinity()};
  for (auto a : {AllReduceAlgo::Ring, AllReduceAlgo::Tree, AllReduceAlgo::Hierarchical}) {
    if (a == AllReduceAlgo::Hierarchical && c.nodes <= 1) continue;  // the same as ring on one node
    const double t = allreduce_time_us(a, c, bytes);
    if (t < best.time_us) best = {a, t};
  }
  return best;
}

BucketPrediction simulate_buckets(const Cluster& c, double gradient_bytes, double backward_us, double bucket_mb) {
  BucketPrediction r;
  r.bucket_mb = bucket_mb;
  const double b = bucket_mb * 1024 * 1024;
  r.buckets = std::max(1, static_cast<int>(std::ceil(gradient_bytes / b)));
  double produced = 0, finish = 0;
  for (int i = 0; i < r.buckets; ++i) {
    const double size = std::min(b, gradient_bytes - produced);
    produced += size;
    const double ready = backward_us * produced / gradient_bytes;
    const AllReduceChoice choice = best_allreduce(c, size);
    if (i == r.buckets - 1) r.algo = choice.algo;  // the last (exposed) bucket's choice
    finish = std::max(finish, ready) + choice.time_us;
    r.comm_us += choice.time_us;
  }
  r.exposed_us = std::max(0.0, finish - backward_us);
  return r;
}

BucketPrediction best_bucket(const Cluster& c, double gradient_bytes, double backward_us, const std::vector<double>& mbs) {
  BucketPrediction best;
  bool first = true;
  for (double mb : mbs) {
    const BucketPrediction p = simulate_buckets(c, gradient_bytes, backward_us, mb);
    if (first || p.exposed_us < best.exposed_us - 1e-9 ||
        (std::abs(p.exposed_us - best.exposed_us) <= 1e-9 && p.bucket_mb > best.bucket_mb)) {
      best = p;
      first = false;
    }
  }
  return best;
}

Result<std::vector<SweepPoint>> parse_sweep_json(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (auto err = parser.parse(text.data(), text.size()).get(doc))
    return make_error(fmt::format("not valid JSON: {}", simdjson::error_message(err)));
  simdjson::dom::array arr;
  if (doc["points"].get_array().get(arr)) return make_error("no \"points\" array");
  std::vector<SweepPoint> out;
  std::size_t i = 0;
  for (simdjson::dom::element e : arr) {
    SweepPoint p;
    std::string_view s;
    std::uint64_t u = 0;
    std::int64_t n = 0;
    double t = 0;
    if (e["collective"].get_string().get(s) == simdjson::SUCCESS) p.collective = std::string(s);
    if (e["algorithm"].get_string().get(s) == simdjson::SUCCESS) p.algorithm = std::string(s);
    if (e["protocol"].get_string().get(s) == simdjson::SUCCESS) p.protocol = std::string(s);
    if (e["bytes"].get_uint64().get(u) != simdjson::SUCCESS || e["ranks"].get_int64().get(n) != simdjson::SUCCESS ||
        e["time_us"].get_double().get(t) != simdjson::SUCCESS || n < 1 || n > 1 << 20 || !(t > 0))
      return make_error(fmt::format("points[{}]: needs bytes, ranks (>= 1) and time_us (> 0)", i));
    p.bytes = u;
    p.ranks = static_cast<int>(n);
    p.time_us = t;
    out.push_back(std::move(p));
    ++i;
  }
  return out;
}

namespace {

int enum_index(std::span<const std::string_view> names, std::string_view name) {
  const auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : static_cast<int>(it - names.begin());
}

}  // namespace

std::vector<NcclTableEntry> nccl_table_from_sweep(const std::vector<SweepPoint>& points) {
  struct Best {
    double time_us = std::numeric_limits<double>::infinity();
    int algorithm = -1, protocol = -1;
  };
  // (collective, ranks) -> size -> fastest (algorithm, protocol); ordered maps keep the output stable
  std::map<std::pair<int, int>, std::map<std::uint64_t, Best>> best;
  for (const auto& p : points) {
    const int coll = enum_index(kNcclCollectives, p.collective);
    const int algo = enum_index(kNcclAlgorithms, p.algorithm);
    const int proto = enum_index(kNcclProtocols, p.protocol);
    if (coll < 0 || algo < 0 || proto < 0 || p.ranks < 1 || !(p.time_us > 0) || p.bytes > (std::uint64_t{1} << 50)) continue;
    Best& b = best[{coll, p.ranks}][p.bytes];
    if (p.time_us < b.time_us) b = {p.time_us, algo, proto};
  }
  std::vector<NcclTableEntry> table;
  for (const auto& [key, sizes] : best) {
    const auto [coll, ranks] = key;
    for (auto it = sizes.begin(); it != sizes.end();) {
      auto end = std::next(it);
      while (end != sizes.end() && end->second.algorithm == it->second.algorithm &&
             end->second.protocol == it->second.protocol)
        ++end;
      NcclTableEntry e;
      e.collective = coll;
      e.min_bytes = table.empty() || table.back().collective != coll || table.back().ranks != ranks ? 0 : it->first;
      e.max_bytes = end == sizes.end() ? std::prev(end)->first : end->first - 1;
      e.algorithm = it->second.algorithm;
      e.protocol = it->second.protocol;
      e.nodes = 1;
      e.ranks = ranks;
      if (table.size() < kMaxNcclTableEntries) table.push_back(e);
      it = end;
    }
  }
  return table;
}

}  // namespace tt::tuner
