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

/* One status table: X(enum suffix, message). */
#define ATTN_STATUS_MAP(X)                                             \
  X(OK, "ok")                                                          \
  X(INVALID_ARGUMENT, "invalid argument")                              \
  X(UNSUPPORTED, "not supported by this backend")                      \
  X(OUT_OF_MEMORY, "out of memory")                                    \
  X(NO_DEVICE, "no usable device")                                     \
  X(BACKEND_ERROR, "backend library error")                            \
  X(IO_ERROR, "input/output error")

typedef enum {
#define ATTN_STATUS_ENUM(name, msg) ATTN_STATUS_##name,
  ATTN_STATUS_MAP(ATTN_STATUS_ENUM)
#undef ATTN_STATUS_ENUM
  ATTN_STATUS_COUNT
} attn_status;

const char *attn_status_string(attn_status s);
/* The last error's one-line explanation on this thread ("" if none). */
const char *attn_last_error(void);

typedef enum {
  ATTN_DTYPE_F32,
  ATTN_DTYPE_F16,
  ATTN_DTYPE_BF16,
  ATTN_DTYPE_BOOL, /* masks only: one byte per element, nonzero = attend */
  ATTN_DTYPE_COUNT
} attn_dtype;

const char *attn_dtype_name(attn_dtype d);
size_t attn_dtype_size(attn_dtype d);
/* Parses "f32", "f16", "bf16" (and "float32", "float16", "bfloat16"). */
attn_status attn_dtype_from_name(const char *name, attn_dtype *out);

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
attn_tensor attn_tensor_bhsd(void *data, attn_dtype dtype, int device, int64_t b,
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

typedef struct {
  attn_tensor q, k, v, out;
  attn_causal causal;
  double scale; /* 0 means 1/sqrt(D) */
  attn_mask_kind mask_kind;
  attn_tensor mask; /* [B|1, H|1, Sq, Sk], used when mask_kind != NONE */
  /* Optional log-sum-exp per query row, natural log, [B, Hq, Sq] contiguous fp32,
   * in the same memory as out. A fully masked row gets -inf. */
  float *lse;
  void *stream; /* cudaStream_t for CUDA backends; ignored on the CPU */
} attn_args;

/* Fills args with q/k/v/out and defaults (no mask, no causal, default scale). */
attn_args attn_args_make(attn_tensor q, attn_tensor k, attn_tensor v, attn_tensor out);

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

const char *attn_backend_name(attn_backend b);
/* Parses "auto", "naive", "naive_inplace", "math", "efficient", "flash", "cudnn". */
attn_status attn_backend_from_name(const char *name, attn_backend *out);

/* Validates args (shapes, strides, dtypes, mask) without looking at backends. */
attn_status attn_args_check(const attn_args *args);

/* ATTN_STATUS_OK if `backend` (AUTO: the one AUTO would pick) takes these inputs
 * on their device; otherwise a status and, in why[0..why_len), the reason in
 * words a user can act on. */
attn_status attn_why_not(attn_backend backend, const attn_args *args, char *why,
                         size_t why_len);

/* The backend AUTO picks for these inputs; writes into `log` (if non-NULL) one
 * line per candidate saying why it was taken or refused. */
attn_status attn_select(const attn_args *args, attn_backend *picked, char *log,
                        size_t log_len);

/* Runs attention. The backend may be AUTO. out (and lse) are written. */
attn_status attn_forward(attn_backend backend, const attn_args *args);

/* What is compiled in and usable here. */
typedef struct {
  attn_backend backend;
  const char *name;     /* "naive" */
  const char *impl;     /* "naive_cpu" */
  int device_kind;      /* ATTN_DEVICE_CPU or 0 for CUDA */
  const char *summary;  /* one line: what it is */
} attn_backend_info;

/* Number of backend implementations compiled in; fills info[i] for i < n. */
size_t attn_backend_list(attn_backend_info *info, size_t max);

/* FLOPs of one forward: 4*B*Hq*Sq*Sk*D, halved (roughly) for causal. */
double attn_flops(const attn_args *args);

/* Number of threads CPU backends use (0 = the OpenMP default). */
void attn_set_num_threads(int n);

/* ---- utilities shared by the CLI, tests and benches -------------------- */

/* The fp64 oracle: the same function computed in double on the host, with
 * the conventions every careful backend follows (a fully masked row gives 0 and
 * lse -inf; NaN/Inf in inputs propagate as IEEE arithmetic does). Reads host
 * tensors only. out_ref is [B, Hq, Sq, D] contiguous; lse_ref [B, Hq, Sq] or NULL. */
attn_status attn_reference_f64(const attn_args *args, double *out_ref, double *lse_ref);

/* ||out - ref|| / ||ref|| over the logical elements of a host tensor (ref is
 * contiguous [B, H, S, D]). NaN if either holds NaN where the other does not. */
double attn_rel_error(const attn_tensor *out, const double *ref);

/* Storage conversions (bf16/f16 are storage only; compute is fp32). Rounding
 * to nearest even. */
float attn_bf16_to_f32(uint16_t v);
uint16_t attn_f32_to_bf16(float v);
float attn_f16_to_f32(uint16_t v);
uint16_t attn_f32_to_f16(float v);
/* Element i (logical, row-major over shape) of a host tensor as double. */
double attn_tensor_get(const attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);
void attn_tensor_set(attn_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d, double v);
/* Number of elements the strides can reach (the allocation a tensor needs). */
int64_t attn_tensor_span(const attn_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
