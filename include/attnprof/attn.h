/* attnprof attention API: scaled-dot-product attention behind one call.
 *
 *   out = softmax(scale * Q K^T + mask) V          (forward only)
 *
 * Q is [B, Hq, Sq, D], K and V are [B, Hkv, Sk, D] (Hq % Hkv == 0: grouped-query
 * attention), out is [B, Hq, Sq, D]. Every tensor is described by its shape and
 * its strides in elements, so a [B, S, H, D] buffer is passed without a copy by
 * giving strides {S*H*D, D, H*D, 1}.
 *
 * Errors: every call returns an attn_status; attn_last_error() holds one line
 * naming what was wrong and what would be accepted (per thread). */
#ifndef ATTNPROF_ATTN_H
#define ATTNPROF_ATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ATTNPROF_VERSION "0.1.0"

/* The library exports only what is declared with ATTN_API (built with hidden
 * visibility). */
#ifndef ATTN_API
#define ATTN_API __attribute__((visibility("default")))
#endif

/* One status table: X(enum suffix, message). */
#define ATTN_STATUS_MAP(X)                        \
  X(OK, "ok")                                     \
  X(INVALID_ARGUMENT, "invalid argument")         \
  X(UNSUPPORTED, "not supported by this backend") \
  X(OUT_OF_MEMORY, "out of memory")               \
  X(NO_DEVICE, "no usable device")                \
  X(BACKEND_ERROR, "backend library error")       \
  X(IO_ERROR, "input/output error")

typedef enum {
#define ATTN_STATUS_ENUM(name, msg) ATTN_STATUS_##name,
  ATTN_STATUS_MAP(ATTN_STATUS_ENUM)
#undef ATTN_STATUS_ENUM
      ATTN_STATUS_COUNT
} attn_status;

ATTN_API const char *attn_status_string(attn_status s);
/* The last error's one-line explanation on this thread ("" if none). */
ATTN_API const char *attn_last_error(void);

typedef enum {
  ATTN_DTYPE_F32,
  ATTN_DTYPE_F16,
  ATTN_DTYPE_BF16,
  ATTN_DTYPE_BOOL, /* masks only: one byte per element, nonzero = attend */
  ATTN_DTYPE_COUNT
} attn_dtype;

ATTN_API const char *attn_dtype_name(attn_dtype d);
ATTN_API size_t attn_dtype_size(attn_dtype d);
/* Parses "f32", "f16", "bf16" (and "float32", "float16", "bfloat16"). */
ATTN_API attn_status attn_dtype_from_name(const char *name, attn_dtype *out);

/* device < 0 means host memory; device >= 0 is a CUDA device ordinal. */
#define ATTN_DEVICE_CPU (-1)

typedef struct {
  void *data;
  attn_dtype dtype;
  int device;
  int64_t shape[4];   /* B, H, S, D (masks: B|1, H|1, Sq, Sk) */
  int64_t strides[4]; /* in elements; 0 broadcasts a mask dimension */
} attn_tensor;

/* A contiguous [B, H, S, D] tensor over data. */
ATTN_API attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int device, int64_t b,
                                      int64_t h, int64_t s, int64_t d);

typedef enum {
  ATTN_CAUSAL_NONE,
  /* query i sees keys j <= i (PyTorch's is_causal) */
  ATTN_CAUSAL_TOP_LEFT,
  /* query i sees keys j <= i + Sk - Sq (decoding against a KV cache) */
  ATTN_CAUSAL_BOTTOM_RIGHT
} attn_causal;

typedef enum {
  ATTN_MASK_NONE,
  ATTN_MASK_BOOL,    /* mask.dtype BOOL: nonzero = attend, zero = masked out */
  ATTN_MASK_ADDITIVE /* mask.dtype f32/f16/bf16: added to the scaled scores */
} attn_mask_kind;

/* Several sequences in one call (serving): packed variable-length queries and
 * a KV cache, paged or contiguous, with a length per sequence. Referenced from
 * attn_args.seqs; NULL there is the dense case above. All tables are int32 in
 * the memory q is in (host, or the same CUDA device).
 *
 *   q_offsets [B+1]   packed queries: q and out are [1, Hq, total_q, D] (a
 *                     [total_q, Hq, D] buffer through strides); sequence b
 *                     owns rows q_offsets[b] .. q_offsets[b+1]-1 (empty and
 *                     one-token sequences are fine); q_offsets[0] = 0 and
 *                     q_offsets[B] = total_q. lse is then [Hq, total_q].
 *                     NULL: q and out are [B, Hq, Sq, D], Sq tokens each.
 *   kv_offsets [B+1]  packed keys/values (prefill of several sequences, no
 *                     cache): k and v are [1, Hkv, total_kv, D], sequence b
 *                     owns rows kv_offsets[b] .. kv_offsets[b+1]-1.
 *   kv_lens [B]       a KV cache: sequence b sees its first kv_lens[b] keys.
 *     block_table     paged: [B, max_pages] (row stride table_stride, 0 =
 *     [B, max_pages]  max_pages); k and v are page pools [pages, page_size,
 *                     Hkv, D], passed as attn_tensor {pages, Hkv, page_size,
 *                     D} with their strides; key j of sequence b is row
 *                     j % page_size of page block_table[b][j / page_size].
 *                     Entries past a sequence's last page are not read.
 *     NULL            contiguous: k and v are [B, Hkv, S_cap, D] and
 *                     kv_lens[b] <= S_cap.
 *   neither           k and v are [B, Hkv, Sk, D], every key seen.
 *
 * causal is per sequence and bottom-right (the new tokens are the last ones
 * of their sequence: token t of n_q sees keys j <= t + n_kv - n_q), or none;
 * masks are not taken here. A row that sees no key gives 0 and lse -inf.
 *
 * Every table is validated before anything runs: the first bad entry is named
 * ("block_table[3][7] = 912: pages are 0..511"). Tables in device memory are
 * copied to the host for that (a cudaMemcpy: it waits for the device and
 * cannot be captured in a CUDA graph). trusted = 1 skips the copy and the
 * check; then max_q and max_kv must bound every sequence's query and key
 * counts, and a wrong table is undefined behaviour. */
typedef struct {
  int64_t batch; /* B >= 1 */
  const int32_t *q_offsets;
  const int32_t *kv_offsets;
  const int32_t *kv_lens;
  const int32_t *block_table;
  int64_t max_pages, table_stride;
  int trusted;
  int64_t max_q, max_kv; /* used when trusted (else computed from the tables) */
} attn_seqs;

typedef struct {
  attn_tensor q, k, v, out;
  attn_causal causal;
  double scale; /* 0 means 1/sqrt(D) */
  attn_mask_kind mask_kind;
  attn_tensor mask; /* [B|1, H|1, Sq, Sk], used when mask_kind != NONE */
  /* Optional log-sum-exp per query row, natural log, [B, Hq, Sq] contiguous fp32,
   * in the same memory as out. A fully masked row gets -inf. */
  float *lse;
  void *stream;          /* cudaStream_t for CUDA backends; ignored on the CPU */
  const attn_seqs *seqs; /* several sequences (see attn_seqs); NULL: dense */
} attn_args;

/* Fills args with q/k/v/out and defaults (no mask, no causal, default scale). */
ATTN_API attn_args attn_args_make(attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out);

typedef enum {
  ATTN_BACKEND_AUTO,
  ATTN_BACKEND_NAIVE,
  ATTN_BACKEND_NAIVE_INPLACE,
  ATTN_BACKEND_MATH,
  ATTN_BACKEND_EFFICIENT,
  ATTN_BACKEND_FLASH,
  ATTN_BACKEND_CUDNN,
  ATTN_BACKEND_COUNT
} attn_backend;

ATTN_API const char *attn_backend_name(attn_backend b);
/* Parses "auto", "naive", "naive_inplace", "math", "efficient", "flash", "cudnn". */
ATTN_API attn_status attn_backend_from_name(const char *name, attn_backend *out);

/* Validates args (shapes, strides, dtypes, mask) without looking at backends. */
ATTN_API attn_status attn_args_check(const attn_args *args);

/* ---- the engine handle ---------------------------------------------------
 * An attn_ctx owns everything a call may keep between calls: per-device
 * cuBLAS and cuDNN handles, device scratch and workspaces (bounded by
 * workspace_limit), and one bounded LRU cache (cuDNN plans, TMA descriptors,
 * causal masks, CUDA graphs) with hit/miss/eviction counts. Nothing is kept
 * anywhere else: two handles share no state.
 *
 * Thread rule: a handle is used by one thread at a time. Give each thread its
 * own handle, or create it with opts.locked = 1, and calls on it from several
 * threads then take turns on its lock. Streams may change from call to call:
 * buffers last used on another stream are waited for first. */
typedef struct attn_ctx attn_ctx;

/* Which kernel the CUDA flash backend runs. */
typedef enum {
  ATTN_FLASH_KERNEL_AUTO,     /* the fastest built for this device and input */
  ATTN_FLASH_KERNEL_MMA_SYNC, /* FlashAttention-2 on mma.sync (sm_80 and later) */
  ATTN_FLASH_KERNEL_WGMMA,    /* the same on Hopper's wgmma (compute capability 9.0) */
  ATTN_FLASH_KERNEL_WS,       /* warp-specialized, TMA-fed (compute capability 9.0) */
  ATTN_FLASH_KERNEL_COUNT
} attn_flash_kernel;

/* Which cuDNN operation graph the cudnn backend builds. */
typedef enum {
  ATTN_CUDNN_GRAPH_AUTO,      /* the SDPA node where it applies, else the composite graph */
  ATTN_CUDNN_GRAPH_COMPOSITE, /* matmul, scale, mask, softmax, matmul */
  ATTN_CUDNN_GRAPH_NODE       /* cuDNN's SDPA_FWD operation */
} attn_cudnn_graph;

typedef struct {
  /* sizeof(attn_ctx_opts), set by attn_ctx_opts_default: a handle refuses
   * options whose size it does not know (built against another attn.h). */
  size_t size;
  /* Device bytes of scratch and workspace the handle may hold per device
   * (scores of the S x S baselines, cuBLAS and cuDNN workspaces); a call
   * needing more is refused with the figures. 0: no limit. */
  size_t workspace_limit;
  size_t cache_capacity; /* entries of the LRU cache; 0: 64 */
  /* 1: the cuBLAS baselines capture a forward into a CUDA graph when the
   * same arguments repeat, and replay it (the trace then shows
   * cudaGraphLaunch and the kernels it ran). 0: eager launches. */
  int cuda_graphs;
  attn_flash_kernel flash_kernel;
  attn_cudnn_graph cudnn_graph;
  int cpu_threads; /* threads of the CPU backends; 0: OpenMP's default */
  /* The widest vector ISA the CPU flash backend may use: NULL or "auto",
   * "portable" (no vector clone), "avx2", "avx512". */
  const char *cpu_isa;
  int locked; /* 1: calls from several threads take turns */
} attn_ctx_opts;

/* The defaults (size set): no limit, 64 cache entries, eager launches, every
 * choice auto. */
ATTN_API attn_ctx_opts attn_ctx_opts_default(void);
/* Overrides opts from the environment, for command lines (ATTNPROF_FLASH_KERNEL,
 * ATTNPROF_CUDA_GRAPHS, ATTNPROF_CUDNN_GRAPH, ATTNPROF_CACHE_CAPACITY,
 * ATTNPROF_CPU_ISA, ATTNPROF_WORKSPACE_LIMIT); INVALID_ARGUMENT on a value not
 * understood, with the accepted ones in attn_last_error(). */
ATTN_API attn_status attn_ctx_opts_from_env(attn_ctx_opts *opts);
/* A new handle (opts NULL: the defaults). Creates no device state yet: the
 * first call on a device does. */
ATTN_API attn_status attn_ctx_create(const attn_ctx_opts *opts, attn_ctx **out);
/* Waits for the handle's device work, frees everything it holds. NULL is fine. */
ATTN_API void attn_ctx_destroy(attn_ctx *ctx);
ATTN_API const attn_ctx_opts *attn_ctx_options(const attn_ctx *ctx);

typedef struct {
  size_t cache_entries, cache_capacity;
  uint64_t cache_hits, cache_misses, cache_evictions;
  size_t workspace_bytes; /* device scratch and workspaces held, all devices */
  size_t workspace_limit;
} attn_ctx_stats;

ATTN_API void attn_ctx_stats_get(attn_ctx *ctx, attn_ctx_stats *out);
/* Frees scratch, workspaces and every cache entry (after waiting for the
 * device); library handles stay. The next call allocates again. */
ATTN_API void attn_ctx_trim(attn_ctx *ctx);

/* ATTN_STATUS_OK if `backend` (AUTO: the one AUTO would pick) takes these inputs
 * on their device; otherwise a status and, in why[0..why_len), the reason in
 * words a user can act on. */
ATTN_API attn_status attn_why_not(attn_ctx *ctx, attn_backend backend, const attn_args *args,
                                  char *why, size_t why_len);

/* The backend AUTO picks for these inputs; writes into `log` (if non-NULL) one
 * line per candidate saying why it was taken or refused. */
ATTN_API attn_status attn_select(attn_ctx *ctx, const attn_args *args, attn_backend *picked,
                                 char *log, size_t log_len);

/* Runs attention. The backend may be AUTO. out (and lse) are written. */
ATTN_API attn_status attn_forward(attn_ctx *ctx, attn_backend backend, const attn_args *args);

/* What is compiled in and usable here. */
typedef struct {
  attn_backend backend;
  const char *name;    /* "naive" */
  const char *impl;    /* "naive_cpu" */
  int device_kind;     /* ATTN_DEVICE_CPU or 0 for CUDA */
  const char *summary; /* one line: what it is */
} attn_backend_info;

/* Number of backend implementations compiled in; fills info[i] for i < n. */
ATTN_API size_t attn_backend_list(attn_backend_info *info, size_t max);

/* FLOPs of one forward: 4*B*Hq*Sq*Sk*D, halved (roughly) for causal. */
ATTN_API double attn_flops(const attn_args *args);

/* Bytes one forward must move at least: Q, K, V and O once (and a mask's
 * logical elements), K and V only up to the last key a query sees under a
 * causal rule; with seqs, the K/V rows each sequence sees plus the tables.
 * The numerator of GB/s. 0 when args are invalid. */
ATTN_API double attn_bytes(const attn_args *args);

/* ---- checking an output ------------------------------------------------ */
/* Product features (attnprof --check, the Python package's check), so they
 * stay in the API; the test kit's helpers are in attnprof/testing.h. */

/* The fp64 oracle: the same function computed in double on the host, with
 * the conventions every careful backend follows (a fully masked row gives 0 and
 * lse -inf; NaN/Inf in inputs propagate as IEEE arithmetic does). Reads host
 * tensors only. out_ref is [B, Hq, Sq, D] contiguous; lse_ref [B, Hq, Sq] or NULL. */
ATTN_API attn_status attn_reference_f64(const attn_args *args, double *out_ref, double *lse_ref);

/* ||out - ref|| / ||ref|| over the logical elements of a host tensor (ref is
 * contiguous [B, H, S, D]). NaN if either holds NaN where the other does not. */
ATTN_API double attn_rel_error(const attn_tensor *out, const double *ref);

#ifdef __cplusplus
}
#endif
#endif
