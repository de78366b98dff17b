/* attnprof context parallelism: one attention over a sequence split across
 * GPUs (one process per GPU), over NCCL.
 *
 * Layout (zigzag): the sequence of S rows is cut into 2N chunks; rank i holds
 * chunks i and 2N-1-i, one after the other, so every rank gets the same share
 * of causal work. When 2N does not divide S, the first S mod 2N chunks hold
 * one row more; shards then differ by at most one row.
 *
 * Variants:
 *   ring       K/V shards travel around the ring (NCCL send/recv on a
 *              communication stream) while flash computes the shard in hand;
 *              each step's partial output and LSE are merged exactly in fp32.
 *   allgather  NCCL all-gathers K/V once, then one flash call per local query
 *              chunk (short sequences, large GQA ratios: little K/V to move).
 *   auto       ring when one ring step has at least ATTN_CP_AUTO_BALANCE FLOPs
 *              per byte it moves (the step's transfer can hide under its
 *              compute), else allgather; see docs/context-parallel.md.
 *
 * NCCL is opened at run time (libnccl.so.2 from ATTNPROF_NCCL_LIB, the
 * system, or PyTorch's nvidia-nccl wheel). A communicator made here sets
 * NCCL_NVLS_ENABLE=0 first: NVLink multicast stays off. */
#ifndef ATTNPROF_CP_H
#define ATTNPROF_CP_H

#include "attnprof/attn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Ring when a ring step's FLOPs per byte moved reach this (a flash rate of
 * ~540 TFLOP/s over ~450 GB/s of NVLink per direction), else allgather. */
#define ATTN_CP_AUTO_BALANCE 1200.0

typedef enum {
  ATTN_CP_AUTO,
  ATTN_CP_RING,
  ATTN_CP_ALLGATHER,
  ATTN_CP_VARIANT_COUNT
} attn_cp_variant;

ATTN_API const char *attn_cp_variant_name(attn_cp_variant v);
/* Parses "auto", "ring", "allgather". */
ATTN_API attn_status attn_cp_variant_from_name(const char *name, attn_cp_variant *out);

/* ---- the zigzag layout (host arithmetic) ---- */
/* First row and length of chunk c (0 <= c < 2n) of a sequence of s rows. */
ATTN_API int64_t attn_cp_chunk_start(int64_t s, int n, int c);
ATTN_API int64_t attn_cp_chunk_len(int64_t s, int n, int c);
/* Rows rank holds: chunk rank, then chunk 2n-1-rank. */
ATTN_API int64_t attn_cp_shard_len(int64_t s, int n, int rank);
/* Copies rank's rows of a host tensor `full` ([B, H, S, D], any strides) into
 * `shard`, a host tensor of shape [B, H, shard_len, D] (any strides), and back. */
ATTN_API attn_status attn_cp_scatter(const attn_tensor *full, int n, int rank, attn_tensor *shard);
ATTN_API attn_status attn_cp_gather(const attn_tensor *shard, int n, int rank, attn_tensor *full);

/* ---- communicators ---- */
/* CUDA devices visible to this process (0 without the CUDA half or a device). */
ATTN_API int attn_cp_device_count(void);

typedef struct attn_cp_comm attn_cp_comm;

/* OK when libnccl.so.2 was found and opened; else why (one line). */
ATTN_API attn_status attn_cp_nccl_available(char *why, size_t why_len);
/* Wraps a caller's ncclComm_t (passed as void *) whose rank runs on `device`;
 * the caller keeps ownership of the NCCL communicator. */
ATTN_API attn_status attn_cp_comm_wrap(void *nccl_comm, int device, attn_cp_comm **out);
/* Makes a communicator of nranks processes: rank 0 writes NCCL's unique id
 * to `path` (written to path.tmp, then renamed), the others wait for it (60 s
 * at most). One rank (nranks = 1) needs no NCCL. */
ATTN_API attn_status attn_cp_comm_init_file(const char *path, int rank, int nranks, int device,
                                            attn_cp_comm **out);
ATTN_API void attn_cp_comm_destroy(attn_cp_comm *comm);
ATTN_API int attn_cp_comm_rank(const attn_cp_comm *comm);
ATTN_API int attn_cp_comm_size(const attn_cp_comm *comm);
/* The variant the last attn_cp_forward on this communicator ran (AUTO if none). */
ATTN_API attn_cp_variant attn_cp_comm_last_variant(const attn_cp_comm *comm);

/* ---- the forward ---- */
typedef struct {
  /* This rank's shard: q [B, Hq, L, D], k and v [B, Hkv, L, D], out [B, Hq, L, D],
   * contiguous, on the communicator's device, L = attn_cp_shard_len(seq_len,
   * nranks, rank). causal: NONE or TOP_LEFT (of the whole sequence). lse
   * (optional): [B, Hq, L] fp32. stream: the compute stream. */
  attn_args shard;
  int64_t seq_len;
  attn_cp_variant variant;
} attn_cp_args;

/* The variant attn_cp_forward would run, and in why (if non-NULL) the reason. */
ATTN_API attn_cp_variant attn_cp_pick(const attn_cp_comm *comm, const attn_cp_args *args, char *why,
                                      size_t why_len);
/* Every rank calls it with its shard; out (and lse) hold this rank's rows of
 * the attention over the whole sequence. Asynchronous on args->shard.stream:
 * the host never waits inside. */
ATTN_API attn_status attn_cp_forward(attn_ctx *ctx, attn_cp_comm *comm, const attn_cp_args *args);

#ifdef __cplusplus
}
#endif
#endif
