// `tracetune bench ...`: the product's micro-benchmarks (figures for tuning decisions, never
// pass/fail): each subcommand's options, then a call into tuner/microbench.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "tracetune/trace/file_io.h"
#include "tracetune/trace/strings.h"
#include "tracetune/tuner/collective_model.h"
#include "tracetune/tuner/gpu_bench.h"
#include "tracetune/tuner/kernel_bench.h"
#include "tracetune/tuner/storage_bench.h"
#include "verb.h"

namespace tt::cli {
namespace {

int cmd_bench_storage(tuner::StorageBenchOptions opt, const std::string& threads, const std::string& blocks,
                      const std::string& max_bytes, bool json) {
  opt.threads.clear();
  for (const std::string_view item : trace::split_list(threads)) {
    const std::string t(item);
    char* end = nullptr;
    const long n = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0' || n < 1 || n > 256) return usage_error("bench storage", "--threads: '" + t + "' is not a count from 1 to 256");
    opt.threads.push_back(static_cast<int>(n));
  }
  opt.blocks.clear();
  for (const std::string_view b : trace::split_list(blocks)) {
    auto v = tuner::parse_size(b);
    if (!v) return usage_error("bench storage", "--block: " + v.error());
    opt.blocks.push_back(v.value());
  }
  auto mb = tuner::parse_size(max_bytes);
  if (!mb) return usage_error("bench storage", "--max-bytes: " + mb.error());
  opt.max_bytes = mb.value();
  auto r = tuner::run_storage_bench(opt);
  if (!r) return fail(r.error());
  std::fputs(json ? tuner::storage_bench_json(opt, r.value()).c_str() : tuner::storage_bench_text(opt, r.value()).c_str(), stdout);
  return 0;
}

// "no GPU" (exit 3, one line) before any GPU bench runs.
int no_gpu(const char* bench) {
  if (const std::string why = tuner::gpu_unavailable_reason(); !why.empty()) {
    std::fprintf(stderr, "tracetune: bench %s: no GPU (%s)\n", bench, why.c_str());
    return tuner::kNoGpuExit;
  }
  return 0;
}

int cmd_bench_h2d(tuner::CopyBenchOptions opt, const std::string& sizes, bool json) {
  auto list = tuner::parse_size_list(sizes);
  if (!list) return usage_error("bench h2d", "--sizes: " + list.error());
  opt.sizes = std::move(list.value());
  if (int rc = no_gpu("h2d")) return rc;
  auto r = tuner::run_copy_bench(opt);
  if (!r) return fail("bench h2d: " + r.error());
  std::fputs(json ? tuner::copy_bench_json(r.value()).c_str() : tuner::copy_bench_text(r.value()).c_str(), stdout);
  return 0;
}

int cmd_bench_gemm(tuner::GemmBenchOptions opt, const std::string& sizes, bool json) {
  auto v = tuner::parse_gemm_sizes(sizes);
  if (!v) return usage_error("bench gemm", "--sizes: " + v.error());
  opt.sizes = v.value();
  if (int rc = no_gpu("gemm")) return rc;
  auto r = tuner::run_gemm_bench(opt);
  if (!r) return fail("bench gemm: " + r.error());
  std::fputs(json ? tuner::gemm_bench_json(r.value()).c_str() : tuner::gemm_bench_text(r.value()).c_str(), stdout);
  return 0;
}

int cmd_bench_launch(const tuner::LaunchBenchOptions& opt, bool json) {
  if (int rc = no_gpu("launch")) return rc;
  auto r = tuner::run_launch_bench(opt);
  if (!r) return fail("bench launch: " + r.error());
  std::fputs(json ? tuner::launch_bench_json(r.value()).c_str() : tuner::launch_bench_text(r.value()).c_str(), stdout);
  return 0;
}

struct NcclArgs {
  tuner::NcclBenchOptions opt;
  std::string sizes, algos = "Ring,Tree", protos = "LL,LL128,Simple", collectives = "allreduce,allgather,reducescatter";
  bool json = false;
};

int cmd_bench_nccl(NcclArgs a) {
  if (a.sizes.empty()) {
    a.opt.sizes = tuner::default_nccl_sizes();
  } else {
    auto v = tuner::parse_size_list(a.sizes);
    if (!v) return usage_error("bench nccl", "--sizes: " + v.error());
    a.opt.sizes = v.value();
  }
  auto algos = tuner::parse_nccl_algos(a.algos);
  if (!algos) return usage_error("bench nccl", "--algos: " + algos.error());
  auto protos = tuner::parse_nccl_protos(a.protos);
  if (!protos) return usage_error("bench nccl", "--protos: " + protos.error());
  auto colls = tuner::parse_nccl_collectives(a.collectives);
  if (!colls) return usage_error("bench nccl", "--collectives: " + colls.error());
  a.opt.algos = algos.value();
  a.opt.protos = protos.value();
  a.opt.collectives = colls.value();
  if (int rc = no_gpu("nccl")) return rc;
  auto r = tuner::run_nccl_bench(a.opt);
  if (!r) return fail("bench nccl: " + r.error());
  std::fputs(a.json ? tuner::nccl_bench_json(r.value()).c_str() : tuner::nccl_bench_text(r.value()).c_str(), stdout);
  return 0;
}

struct ModelArgs {
  std::string sweep;
  int nodes = 2, gpus = 0;
  double inter_alpha_us = 20, inter_gbps = 12.5, gradient_mb = 100, backward_ms = 50;
  std::string buckets = "1,5,10,25,50,100,200";
};

// Fits the α–β model to a sweep and predicts, for N nodes, the all-reduce choice by size and
// the DDP bucket size that exposes the least communication.
int cmd_bench_model(const ModelArgs& a) {
  auto text = trace::read_maybe_gzip(a.sweep);
  if (!text) return fail("bench model: " + text.error());
  auto pts = tuner::parse_sweep_json(std::string_view(text->data(), text->size()));
  if (!pts) return fail("bench model: " + a.sweep + ": " + pts.error());
  std::vector<tuner::SweepPoint> ring;
  int ranks = 0;
  for (const auto& p : pts.value())
    if (p.collective == "allreduce" && p.algorithm == "ring") {
      if (ranks != 0 && p.ranks != ranks) return fail("bench model: ring all-reduce points of different rank counts");
      ranks = p.ranks;
      ring.push_back(p);
    }
  if (ring.empty()) return fail("bench model: the sweep has no ring all-reduce points");
  auto ab = tuner::fit_alpha_beta(ring);
  if (!ab) return fail("bench model: " + ab.error());
  auto link = tuner::intra_link_from_ring(ab.value(), ranks);
  if (!link) return fail("bench model: " + link.error());
  tuner::Cluster c{a.nodes, a.gpus > 0 ? a.gpus : ranks, link.value(), {a.inter_alpha_us, 1e-3 / a.inter_gbps}};
  std::printf("fit (ring all-reduce, %d GPUs, %zu points): T(n) = %.2f us + n / %.2f GB/s  (max error %.1f%%)\n", ranks,
              ab->points, ab->alpha_us, 1e-3 / ab->beta_us_per_byte, 100 * ab->max_rel_error);
  std::printf("intra-node hop: %.3f us, %.2f GB/s; inter-node (given): %.2f us, %.2f GB/s\n", link->alpha_us,
              1e-3 / link->beta_us_per_byte, a.inter_alpha_us, a.inter_gbps);
  std::printf("\n%d nodes x %d GPUs: predicted all-reduce time by size\n%12s %12s %12s %14s  best\n", c.nodes,
              c.gpus_per_node, "bytes", "ring us", "tree us", "hierarch. us");
  for (double n = 1024; n <= 1024.0 * 1024 * 1024; n *= 8) {
    const auto best = tuner::best_allreduce(c, n);
    std::printf("%12.0f %12.1f %12.1f %14.1f  %s\n", n, tuner::allreduce_time_us(tuner::AllReduceAlgo::Ring, c, n),
                tuner::allreduce_time_us(tuner::AllReduceAlgo::Tree, c, n),
                tuner::allreduce_time_us(tuner::AllReduceAlgo::Hierarchical, c, n), std::string(tuner::to_string(best.algo)).c_str());
  }
  std::vector<double> mbs;
  for (const std::string_view item : trace::split_list(a.buckets)) {
    mbs.push_back(std::atof(std::string(item).c_str()));
    if (!(mbs.back() > 0)) return usage_error("bench model", "--buckets wants positive MiB values");
  }
  std::printf("\nDDP, %.0f MiB of gradients, %.1f ms backward:\n%10s %8s %12s %12s\n", a.gradient_mb, a.backward_ms,
              "bucket MiB", "buckets", "comm ms", "exposed ms");
  for (double mb : mbs) {
    const auto p = tuner::simulate_buckets(c, a.gradient_mb * 1024 * 1024, a.backward_ms * 1000, mb);
    std::printf("%10.1f %8d %12.3f %12.3f\n", mb, p.buckets, p.comm_us / 1000, p.exposed_us / 1000);
  }
  const auto best = tuner::best_bucket(c, a.gradient_mb * 1024 * 1024, a.backward_ms * 1000, mbs);
  std::printf("predicted best: ddp.bucket_cap_mb = %g (%s for the last bucket), %.3f ms exposed\n", best.bucket_mb,
              std::string(tuner::to_string(best.algo)).c_str(), best.exposed_us / 1000);
  return 0;
}

struct StorageArgs {
  tuner::StorageBenchOptions opt;
  std::string path, threads = "1,2,4,8", blocks = "64K,1M", max_bytes = "1G";
  bool json = false, cached = false;
};

Verb add_storage(CLI::App& bench) {
  auto a = std::make_shared<StorageArgs>();
  auto* cmd = bench.add_subcommand(
      "storage", "Read throughput of a data path vs reader threads and block size (whole files, like DataLoader workers):\n"
                 "  tracetune bench storage PATH [--threads 1,2,4,8] [--block 64K,1M] [--json]");
  cmd->add_option("path", a->path, "The job's data: a directory (read recursively) or a file")->required();
  cmd->add_option("--threads", a->threads, "Reader thread counts to try (default 1,2,4,8)");
  cmd->add_option("--block", a->blocks, "Read sizes to try, e.g. 4K,64K,1M (default 64K,1M)");
  cmd->add_option("--max-bytes", a->max_bytes, "Read at most this much per trial (default 1G; first files by name)");
  cmd->add_flag("--cached", a->cached, "Keep the page cache between trials (measures cached reads)");
  cmd->add_flag("--json", a->json, "Machine-readable JSON output");
  return {cmd, [a] {
            a->opt.path = a->path;
            a->opt.drop_cache = !a->cached;
            return cmd_bench_storage(a->opt, a->threads, a->blocks, a->max_bytes, a->json);
          }};
}

struct H2dArgs {
  tuner::CopyBenchOptions opt;
  std::string sizes = "4K,64K,1M,16M,64M";
  bool json = false;
};

Verb add_h2d(CLI::App& bench) {
  auto a = std::make_shared<H2dArgs>();
  auto* cmd = bench.add_subcommand("h2d", "Host<->device copy bandwidth, pageable vs pinned memory, by size (needs a GPU;\n"
                                          "without one: one line and exit 3)");
  cmd->add_option("--device", a->opt.device, "CUDA device (default 0)");
  cmd->add_option("--sizes", a->sizes, "Copy sizes (default 4K,64K,1M,16M,64M)");
  cmd->add_option("--repeats", a->opt.repeats, "Copies per size, median reported (default 10)")->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", a->json, "Machine-readable JSON output");
  return {cmd, [a] { return cmd_bench_h2d(a->opt, a->sizes, a->json); }};
}

struct GemmArgs {
  tuner::GemmBenchOptions opt;
  std::string sizes = "1024,4096,8192";
  bool json = false;
};

Verb add_gemm(CLI::App& bench) {
  auto a = std::make_shared<GemmArgs>();
  auto* cmd = bench.add_subcommand(
      "gemm", "cuBLAS GEMM throughput (TFLOP/s, median of timed repetitions) in FP32, TF32, BF16 and FP16, and each\n"
              "format's speedup over FP32 (needs a GPU; without one: one line and exit 3)");
  cmd->add_option("--device", a->opt.device, "CUDA device (default 0)");
  cmd->add_option("--sizes", a->sizes, "Square matrix sizes M=N=K (default 1024,4096,8192)");
  cmd->add_option("--repeats", a->opt.repeats, "Timed GEMMs per format and size, median reported (default 20)")
      ->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", a->json, "Machine-readable JSON output");
  return {cmd, [a] { return cmd_bench_gemm(a->opt, a->sizes, a->json); }};
}

struct LaunchArgs {
  tuner::LaunchBenchOptions opt;
  bool json = false;
};

Verb add_launch(CLI::App& bench) {
  auto a = std::make_shared<LaunchArgs>();
  auto* cmd = bench.add_subcommand(
      "launch", "Kernel launch cost (us per kernel: host side, end to end, GPU) of N empty kernels launched one by one\n"
                "vs replayed as one CUDA graph (needs a GPU; without one: one line and exit 3)");
  cmd->add_option("--device", a->opt.device, "CUDA device (default 0)");
  cmd->add_option("--kernels", a->opt.kernels, "Kernels per repetition (default 1000)")->check(CLI::Range(1, 1000000));
  cmd->add_option("--repeats", a->opt.repeats, "Repetitions, medians reported (default 10)")->check(CLI::Range(1, 10000));
  cmd->add_flag("--json", a->json, "Machine-readable JSON output");
  return {cmd, [a] { return cmd_bench_launch(a->opt, a->json); }};
}

Verb add_nccl(CLI::App& bench) {
  auto a = std::make_shared<NcclArgs>();
  auto* cmd = bench.add_subcommand(
      "nccl", "NCCL sweep over all local GPUs in one process: time, algbw and busbw (as nccl-tests defines them) per\n"
              "collective, algorithm, protocol and size; --json writes the sweep `bench model` reads (needs GPUs;\n"
              "without one: one line and exit 3)");
  cmd->add_option("--sizes", a->sizes, "Sizes, nccl-tests' size column (default 8 to 1G, doubling)");
  cmd->add_option("--algos", a->algos, "NCCL_ALGO values to try (default Ring,Tree)");
  cmd->add_option("--protos", a->protos, "NCCL_PROTO values to try (default LL,LL128,Simple)");
  cmd->add_option("--collectives", a->collectives, "Collectives (default allreduce,allgather,reducescatter)");
  cmd->add_option("--gpus", a->opt.gpus, "GPUs to use (default: all visible)")->check(CLI::Range(1, 1024));
  cmd->add_option("--iters", a->opt.iters, "Timed operations per point (default 20)")->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", a->opt.warmup, "Untimed operations first (default 5)")->check(CLI::Range(0, 100000));
  cmd->add_flag("--json", a->json, "The sweep as JSON (the input of `tracetune bench model`)");
  return {cmd, [a] { return cmd_bench_nccl(*a); }};
}

Verb add_model(CLI::App& bench) {
  auto a = std::make_shared<ModelArgs>();
  auto* cmd = bench.add_subcommand(
      "model", "Fit the alpha-beta all-reduce model to an NCCL sweep (JSON: {\"points\": [{collective, algorithm,\n"
               "protocol, bytes, ranks, time_us}]}) and predict, for N nodes, the all-reduce algorithm by size and the\n"
               "DDP bucket size exposing the least communication");
  cmd->add_option("sweep", a->sweep, "The sweep JSON file")->required();
  cmd->add_option("--nodes", a->nodes, "Nodes to predict for (default 2)")->check(CLI::Range(1, 100000));
  cmd->add_option("--gpus-per-node", a->gpus, "GPUs per node (default: the sweep's rank count)")->check(CLI::Range(1, 1024));
  cmd->add_option("--inter-alpha-us", a->inter_alpha_us, "Node-to-node latency per hop, us (default 20)")->check(cli::positive_number());
  cmd->add_option("--inter-gbps", a->inter_gbps, "Node-to-node bandwidth per NIC, GB/s (default 12.5)")->check(cli::positive_number());
  cmd->add_option("--gradient-mb", a->gradient_mb, "Gradient size, MiB (default 100)")->check(cli::positive_number());
  cmd->add_option("--backward-ms", a->backward_ms, "Backward pass time, ms (default 50)")->check(cli::positive_number());
  cmd->add_option("--buckets", a->buckets, "Bucket sizes to compare, MiB (default 1,5,10,25,50,100,200)");
  return {cmd, [a] { return cmd_bench_model(*a); }};
}

struct KernelArgs {
  tuner::KernelBenchOptions opt;
  std::string only, shapes, optimizer_config, device = "cpu";
  int threads = 0, warmup = 3, repeats = 15;
  bool json = false, numerics = false;
};

// The kernel benchmark runs in the job's Python: its flags are passed on as arguments.
int cmd_bench_kernels(KernelArgs a) {
  a.opt.args = {"--device", a.device, "--threads", std::to_string(a.threads), "--warmup", std::to_string(a.warmup),
                "--repeats", std::to_string(a.repeats)};
  for (auto [flag, value] : {std::pair{"--only", &a.only}, std::pair{"--shapes", &a.shapes},
                             std::pair{"--optimizer-config", &a.optimizer_config}})
    if (!value->empty()) a.opt.args.insert(a.opt.args.end(), {flag, *value});
  if (a.json) a.opt.args.push_back("--json");
  if (a.numerics) a.opt.args.push_back("--allow-numerics");
  return tuner::run_kernel_bench(a.opt);
}

Verb add_kernels(CLI::App& bench) {
  auto a = std::make_shared<KernelArgs>();
  auto* cmd = bench.add_subcommand(
      "kernels", "Kernel substitutions (LayerNorm, softmax + cross-entropy, optimizer step) against the stock PyTorch\n"
                 "ops at given shapes: forward + backward medians, the ratio, and the parity check of outputs and\n"
                 "gradients against the tolerances of each entry's numerics class (runs in the job's Python)");
  cmd->add_option("--python", a->opt.python, "Python interpreter with the job's PyTorch (default python3)");
  cmd->add_option("--only", a->only, "Substitution ids, comma-separated (layernorm,cross_entropy,optimizer)");
  cmd->add_option("--shapes", a->shapes, "id=ROWSxCOLS,... (optimizer: TENSORSxELEMENTS; defaults\n"
                                         "layernorm=2048x256, cross_entropy=512x32000, optimizer=24x65536)");
  cmd->add_option("--optimizer-config", a->optimizer_config,
                  "The job's optimizer as JSON (a trace's tracetune.optimizer mark; tune --kernels passes it):\n"
                  "the optimizer entry runs on it instead of AdamW(lr=1e-3, weight_decay=0.01)");
  cmd->add_option("--device", a->device, "cpu or cuda (default cpu)")->check(CLI::IsMember({"cpu", "cuda"}));
  cmd->add_option("--threads", a->threads, "torch intra-op threads (default: PyTorch's)")->check(CLI::Range(0, 1024));
  cmd->add_option("--warmup", a->warmup, "Untimed runs of each first (default 3)")->check(CLI::Range(0, 1000));
  cmd->add_option("--repeats", a->repeats, "Timed runs of each, interleaved (default 15)")->check(CLI::Range(3, 100000));
  cmd->add_flag("--allow-numerics", a->numerics, "Also try implementations whose numerics class changes results");
  cmd->add_flag("--json", a->json, "Results as JSON");
  return {cmd, [a] { return cmd_bench_kernels(*a); }};
}

}  // namespace

void add_bench_verbs(CLI::App& app, Verbs& verbs) {
  auto* bench = app.add_subcommand("bench", "Micro-benchmarks for tuning decisions (figures, never pass/fail)");
  bench->require_subcommand(1);
  for (auto* add : {add_storage, add_h2d, add_gemm, add_launch, add_nccl, add_model, add_kernels})
    verbs.push_back(add(*bench));
}

}  // namespace tt::cli
