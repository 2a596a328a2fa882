/* tracetune's NCCL tuner plugin (libnccl-tuner-tracetune.so). `tracetune run --config` loads
 * it into the job through NCCL_TUNER_PLUGIN and names the table from tuned.toml's
 * [[nccl.table]] entries in TRACETUNE_NCCL_TABLE. For each collective NCCL enqueues, the
 * first table entry matching (collective, message size, and optionally node/rank counts)
 * makes its algorithm/protocol the cheapest in NCCL's cost table (cost 0) and sets the channel
 * count; anything not covered keeps NCCL's own choice.
 *
 * The table is read once per communicator in init; getCollInfo runs on NCCL's enqueue path
 * and only scans that array (no allocation, no locks, no I/O). A missing or malformed table
 * leaves NCCL's defaults in place, with a one-line warning on stderr (once per process) and
 * in NCCL's log. Table format (written by tracetune, documented in docs/tuning.md):
 *
 *   tracetune-nccl-table 1
 *   # collective min_bytes max_bytes algorithm protocol channels nodes ranks
 *   allreduce 0 65536 tree ll 0 -1 -1
 */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_tuner_abi.h"

#define TT_EXPORT __attribute__((visibility("default")))
#define TT_MAX_ENTRIES 1024

typedef struct {
  int coll;
  unsigned long long min_bytes, max_bytes;
  int algo, proto, channels;
  long nodes, ranks; /* -1: any */
} tt_entry;

typedef struct {
  size_t n_ranks, n_nodes;
  int n; /* entries that apply to this communicator's node/rank counts */
  tt_entry entries[TT_MAX_ENTRIES];
} tt_ctx;

static const char* const kColls[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
static const char* const kAlgos[] = {"tree", "ring", "collnetdirect", "collnetchain", "nvls", "nvlstree", "pat"};
static const char* const kProtos[] = {"ll", "ll128", "simple"};

static atomic_int g_warned;

static void warn_once(tt_ncclDebugLogger_t log, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (log != NULL) log(TT_NCCL_LOG_WARN, TT_NCCL_TUNING_SUBSYS, __FILE__, __LINE__, "tracetune tuner: %s", msg);
  if (atomic_exchange(&g_warned, 1) == 0) fprintf(stderr, "tracetune nccl tuner: %s; NCCL keeps its own choices\n", msg);
}

static int index_of(const char* const* names, int n, const char* s) {
  for (int i = 0; i < n; ++i)
    if (strcasecmp(names[i], s) == 0) return i;
  return -1;
}

/* Parses the table at `path` into ctx (only entries for this communicator's size). Returns 0,
 * or -1 after writing why into `why`. */
static int load_table(const char* path, tt_ctx* ctx, char* why, size_t why_size) {
  FILE* f = fopen(path, "re");
  if (f == NULL) {
    snprintf(why, why_size, "%s: %s", path, strerror(errno));
    return -1;
  }
  char line[512];
  int lineno = 0, rc = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    ++lineno;
    if (strchr(line, '\n') == NULL && !feof(f)) {
      snprintf(why, why_size, "%s: line %d: too long", path, lineno);
      rc = -1;
      break;
    }
    if (lineno == 1) {
      if (strncmp(line, "tracetune-nccl-table 1", 22) != 0 || (line[22] != '\n' && line[22] != '\0')) {
        snprintf(why, why_size, "%s: not a tracetune NCCL table (version 1)", path);
        rc = -1;
        break;
      }
      continue;
    }
    char* p = line;
    while (*p == ' ' || *p == '\t') ++p;
    if (*p == '#' || *p == '\n' || *p == '\0') continue;
    char coll[32], algo[32], proto[32], extra[2];
    unsigned long long lo = 0, hi = 0;
    int channels = 0;
    long nodes = 0, ranks = 0;
    const int got = sscanf(p, "%31s %llu %llu %31s %31s %d %ld %ld %1s", coll, &lo, &hi, algo, proto, &channels, &nodes,
                           &ranks, extra);
    tt_entry e = {index_of(kColls, TT_NCCL_NUM_FUNCS, coll), lo, hi, index_of(kAlgos, TT_NCCL_NUM_ALGORITHMS, algo),
                  index_of(kProtos, TT_NCCL_NUM_PROTOCOLS, proto), channels, nodes, ranks};
    if (got != 8 || e.coll < 0 || e.algo < 0 || e.proto < 0 || lo > hi || channels < 0 || channels > 64 ||
        nodes == 0 || nodes < -1 || ranks == 0 || ranks < -1) {
      snprintf(why, why_size, "%s: line %d: expected 'collective min_bytes max_bytes algorithm protocol channels nodes ranks'",
               path, lineno);
      rc = -1;
      break;
    }
    if ((e.nodes != -1 && (size_t)e.nodes != ctx->n_nodes) || (e.ranks != -1 && (size_t)e.ranks != ctx->n_ranks)) continue;
    if (ctx->n == TT_MAX_ENTRIES) {
      snprintf(why, why_size, "%s: more than %d entries", path, TT_MAX_ENTRIES);
      rc = -1;
      break;
    }
    ctx->entries[ctx->n++] = e;
  }
  if (rc == 0 && lineno == 0) {
    snprintf(why, why_size, "%s: empty", path);
    rc = -1;
  }
  fclose(f);
  if (rc != 0) ctx->n = 0; /* all or nothing: a half-read table would be a different tuning */
  return rc;
}

static tt_ncclResult_t tt_init(size_t n_ranks, size_t n_nodes, tt_ncclDebugLogger_t log, void** out) {
  tt_ctx* ctx = calloc(1, sizeof(tt_ctx));
  if (ctx == NULL) return tt_ncclInternalError;
  ctx->n_ranks = n_ranks;
  ctx->n_nodes = n_nodes;
  const char* path = getenv("TRACETUNE_NCCL_TABLE");
  char why[640];
  if (path == NULL || *path == '\0') {
    warn_once(log, "TRACETUNE_NCCL_TABLE is not set (run the job with tracetune run --config)");
  } else if (load_table(path, ctx, why, sizeof why) != 0) {
    warn_once(log, "%s", why);
  } else if (log != NULL) {
    log(TT_NCCL_LOG_INFO, TT_NCCL_TUNING_SUBSYS, __FILE__, __LINE__,
        "tracetune tuner: %d table entries for %zu ranks on %zu nodes from %s", ctx->n, n_ranks, n_nodes, path);
  }
  *out = ctx;
  return tt_ncclSuccess;
}

static tt_ncclResult_t tt_init_v5(void** ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes, tt_ncclDebugLogger_t log,
                                  tt_ncclNvlDomainInfo_v5_t* nvl, tt_ncclTunerConstants_v5_t* constants) {
  (void)comm_id;
  (void)nvl;
  (void)constants; /* NCCL's model constants are left as they are */
  return tt_init(n_ranks, n_nodes, log, ctx);
}

static tt_ncclResult_t tt_get_coll_info(void* context, int coll, size_t n_bytes, int num_pipe_ops, float** cost_table,
                                        int num_algo, int num_proto, int reg_buff, int* n_channels) {
  (void)num_pipe_ops;
  (void)reg_buff;
  const tt_ctx* ctx = context;
  if (ctx == NULL || cost_table == NULL) return tt_ncclSuccess;
  /* NCCL passes a contiguous float[numAlgo][numProto] block behind the float** type. */
  float* cost = (float*)cost_table;
  for (int i = 0; i < ctx->n; ++i) {
    const tt_entry* e = &ctx->entries[i];
    if (e->coll != coll || n_bytes < e->min_bytes || n_bytes > e->max_bytes) continue;
    if (e->algo >= num_algo || e->proto >= num_proto) return tt_ncclSuccess;
    float* c = &cost[e->algo * num_proto + e->proto];
    if (*c == TT_NCCL_ALGO_PROTO_IGNORE) return tt_ncclSuccess; /* unavailable here: keep NCCL's choice */
    *c = 0.0f;
    if (e->channels > 0 && n_channels != NULL) *n_channels = e->channels;
    return tt_ncclSuccess;
  }
  return tt_ncclSuccess;
}

static tt_ncclResult_t tt_finalize(void* ctx) {
  free(ctx);
  return tt_ncclSuccess;
}

TT_EXPORT const tt_ncclTuner_v5_t ncclTunerPlugin_v5 = {"tracetune", tt_init_v5, tt_get_coll_info, tt_finalize};
TT_EXPORT const tt_ncclTuner_v4_t ncclTunerPlugin_v4 = {"tracetune", tt_init, tt_get_coll_info, tt_finalize};
