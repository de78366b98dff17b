/* One rank's context-parallel forward on a CUDA device.
 *
 * Ring: at step s the rank computes on the K/V shard of rank (rank - s) mod n
 * while the communication stream sends that shard to rank+1 and receives the
 * next one from rank-1 (one grouped ncclSend/ncclRecv pair for K and V). Two
 * receive buffers alternate; the receive of step s waits on an event of the
 * compute of step s-1 (which read that buffer), and the compute of step s+1
 * waits on an event of the transfer of step s. The host only enqueues. Each
 * step's flash calls (cp_plan.c) write a partial output and LSE, which the
 * merge kernel folds into fp32 accumulators; the last kernel writes out.
 *
 * All-gather: own K/V copied into its slot, ncclAllGather in place, the
 * slots reordered into sequence order (2D copies), then one flash call per
 * local query chunk straight into out.
 *
 * Each step is a profiler range "cp.step N" (all-gather: "cp.allgather",
 * "cp.compute"), so per-step summaries find their kernels. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "attnprof/prof.h" /* its ranges: cp.step N, cp.allgather, cp.compute */
#include "core/cuda_error.h"
#include "core/error.h"
#include "cp/cuda/cp_cuda.h"

struct attn_cp_cuda_state {
  int device;
  cudaStream_t comm;
  cudaEvent_t ev_start, ev_comm[2], ev_comp[2], ev_end;
  void *buf;
  size_t buf_bytes;
};

attn_status attn_cp_cuda_set_device(int device) {
  ATTN_CUDA_TRY(cudaSetDevice(device));
  return ATTN_STATUS_OK;
}

int attn_cp_cuda_device_count(void) {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

void attn_cp_cuda_state_destroy(attn_cp_cuda_state *s) {
  if (!s) return;
  cudaSetDevice(s->device);
  if (s->comm) cudaStreamSynchronize(s->comm);
  cudaFree(s->buf);
  cudaEvent_t *ev[] = {&s->ev_start,   &s->ev_comm[0], &s->ev_comm[1],
                       &s->ev_comp[0], &s->ev_comp[1], &s->ev_end};
  for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
    if (*ev[i]) cudaEventDestroy(*ev[i]);
  if (s->comm) cudaStreamDestroy(s->comm);
  free(s);
}

static attn_status state_get(attn_cp_cuda_state **sp, int device, size_t bytes) {
  ATTN_CUDA_TRY(cudaSetDevice(device));
  if (!*sp) {
    attn_cp_cuda_state *s = calloc(1, sizeof *s);
    if (!s) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory");
    s->device = device;
    *sp = s;
    ATTN_CUDA_TRY(cudaStreamCreateWithFlags(&s->comm, cudaStreamNonBlocking));
    cudaEvent_t *ev[] = {&s->ev_start,   &s->ev_comm[0], &s->ev_comm[1],
                         &s->ev_comp[0], &s->ev_comp[1], &s->ev_end};
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++)
      ATTN_CUDA_TRY(cudaEventCreateWithFlags(ev[i], cudaEventDisableTiming));
  }
  attn_cp_cuda_state *s = *sp;
  if (s->device != device)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: the communicator runs on device %d, the shard is on device %d", s->device,
                     device);
  if (s->buf_bytes < bytes) { /* outside the loop: the free may wait */
    cudaFree(s->buf);
    s->buf = NULL;
    s->buf_bytes = 0;
    ATTN_CUDA_TRY(cudaMalloc(&s->buf, bytes));
    s->buf_bytes = bytes;
  }
  return ATTN_STATUS_OK;
}

/* Carves 256-byte aligned pieces out of the state's buffer. */
static void *carve(char **p, size_t bytes) {
  void *r = *p;
  *p += (bytes + 255) & ~(size_t)255;
  return r;
}

typedef struct {
  const attn_args *a;
  int64_t s, l, bh, d;
  int rank, n;
  size_t es, kv_row; /* bytes of one sequence row of K (all B*Hkv heads) */
  cudaStream_t compute;
} cp_job;

/* One flash call: queries of the shard against key rows of `k`/`v` (S extent
 * s_kv); output to out_base (S extent out_s) rows, lse to lse (contiguous). */
static attn_status flash_call(attn_ctx *ctx, const cp_job *j, const attn_cp_call *c, void *k,
                              void *v, int64_t s_kv, void *out_base, int64_t out_s, int64_t out_r0,
                              float *lse) {
  const attn_args *a = j->a;
  attn_args ca = attn_args_make(attn_cp_rows_view(&a->q, a->q.data, j->l, c->q0, c->nq),
                                attn_cp_rows_view(&a->k, k, s_kv, c->k0, c->nk),
                                attn_cp_rows_view(&a->v, v, s_kv, c->k0, c->nk),
                                attn_cp_rows_view(&a->out, out_base, out_s, out_r0, c->nq));
  ca.causal = c->causal;
  ca.scale = a->scale;
  ca.lse = lse;
  ca.stream = j->compute;
  return attn_forward(ctx, ATTN_BACKEND_FLASH, &ca);
}

#define CP_NCCL(call, what)                                              \
  do {                                                                   \
    int rc_ = (call);                                                    \
    if (rc_ != ATTN_NCCL_SUCCESS) return attn_nccl_fail(api, rc_, what); \
  } while (0)

/* One ring transfer: send the block in hand to rank+1, receive rank-1's. */
static attn_status ring_exchange(const attn_nccl_api *api, void *nccl, const cp_job *j,
                                 cudaStream_t comm, void *send_k, void *send_v, int send_owner,
                                 void *recv_k, void *recv_v, int recv_owner) {
  size_t ns = (size_t)attn_cp_shard_len(j->s, j->n, send_owner) * j->kv_row;
  size_t nr = (size_t)attn_cp_shard_len(j->s, j->n, recv_owner) * j->kv_row;
  int next = (j->rank + 1) % j->n, prev = (j->rank + j->n - 1) % j->n;
  CP_NCCL(api->group_start(), "ncclGroupStart");
  CP_NCCL(api->send(send_k, ns, ATTN_NCCL_UINT8, next, nccl, comm), "ncclSend (K)");
  CP_NCCL(api->send(send_v, ns, ATTN_NCCL_UINT8, next, nccl, comm), "ncclSend (V)");
  CP_NCCL(api->recv(recv_k, nr, ATTN_NCCL_UINT8, prev, nccl, comm), "ncclRecv (K)");
  CP_NCCL(api->recv(recv_v, nr, ATTN_NCCL_UINT8, prev, nccl, comm), "ncclRecv (V)");
  CP_NCCL(api->group_end(), "ncclGroupEnd");
  return ATTN_STATUS_OK;
}

static attn_status ring_step(attn_ctx *ctx, attn_cp_cuda_state *st, const attn_nccl_api *api,
                             void *nccl, const cp_job *j, int step, void *kv[2][2], float *acc_o,
                             float *acc_lse, void *part_o, float *part_lse) {
  int src = (j->rank - step + j->n) % j->n;
  void *cur_k = step ? kv[(step - 1) % 2][0] : j->a->k.data;
  void *cur_v = step ? kv[(step - 1) % 2][1] : j->a->v.data;
  if (step + 1 < j->n) { /* the next block travels while this one is computed */
    if (step >= 1) ATTN_CUDA_TRY(cudaStreamWaitEvent(st->comm, st->ev_comp[(step - 1) % 2], 0));
    attn_status rc = ring_exchange(api, nccl, j, st->comm, cur_k, cur_v, src, kv[step % 2][0],
                                   kv[step % 2][1], (src + j->n - 1) % j->n);
    if (rc != ATTN_STATUS_OK) return rc;
    ATTN_CUDA_TRY(cudaEventRecord(st->ev_comm[step % 2], st->comm));
  }
  if (step >= 1) ATTN_CUDA_TRY(cudaStreamWaitEvent(j->compute, st->ev_comm[(step - 1) % 2], 0));
  attn_cp_call calls[4];
  int nc = attn_cp_ring_calls(j->a->causal != ATTN_CAUSAL_NONE, j->s, j->n, j->rank, src, calls);
  int64_t len_src = attn_cp_shard_len(j->s, j->n, src);
  for (int c = 0; c < nc; c++) {
    attn_status rc =
        flash_call(ctx, j, &calls[c], cur_k, cur_v, len_src, part_o, calls[c].nq, 0, part_lse);
    if (rc == ATTN_STATUS_OK)
      rc = attn_cp_merge_launch(acc_o, acc_lse, j->bh, j->l, j->d, calls[c].q0, calls[c].nq, part_o,
                                j->a->out.dtype, part_lse, j->compute);
    if (rc != ATTN_STATUS_OK) return rc;
  }
  ATTN_CUDA_TRY(cudaEventRecord(st->ev_comp[step % 2], j->compute));
  return ATTN_STATUS_OK;
}

/* The longest shard: not always rank 0's (with S mod 2N > N, a middle rank
 * holds two longer chunks). */
static int64_t shard_max(const cp_job *j) {
  int64_t m = 0;
  for (int r = 0; r < j->n; r++) {
    int64_t l = attn_cp_shard_len(j->s, j->n, r);
    m = l > m ? l : m;
  }
  return m;
}

static attn_status ring(attn_ctx *ctx, attn_cp_cuda_state **sp, const attn_nccl_api *api,
                        void *nccl, const cp_job *j) {
  int64_t lmax = shard_max(j);
  size_t kvb = (size_t)lmax * j->kv_row, no = (size_t)(j->bh * j->l * j->d);
  /* 4 K/V blocks, acc_o (fp32), acc_lse and part_lse, part_o; 256 B of
   * alignment each */
  size_t need = 4 * kvb + no * 4 + (size_t)(j->bh * j->l) * 8 + no * j->es + 8 * 256;
  attn_status rc = state_get(sp, j->a->q.device, need);
  if (rc != ATTN_STATUS_OK) return rc;
  attn_cp_cuda_state *st = *sp;
  char *p = st->buf;
  void *kv[2][2] = {{carve(&p, kvb), carve(&p, kvb)}, {carve(&p, kvb), carve(&p, kvb)}};
  float *acc_o = carve(&p, no * 4), *acc_lse = carve(&p, (size_t)(j->bh * j->l) * 4);
  float *part_lse = carve(&p, (size_t)(j->bh * j->l) * 4);
  void *part_o = carve(&p, no * j->es);
  ATTN_CUDA_TRY(cudaEventRecord(st->ev_start, j->compute)); /* the caller's K/V are ready */
  ATTN_CUDA_TRY(cudaStreamWaitEvent(st->comm, st->ev_start, 0));
  rc = attn_cp_init_launch(acc_o, (int64_t)no, acc_lse, j->bh * j->l, j->compute);
  char name[32];
  for (int step = 0; rc == ATTN_STATUS_OK && step < j->n; step++) {
    snprintf(name, sizeof name, "cp.step %d", step);
    prof_range_push(name);
    rc = ring_step(ctx, st, api, nccl, j, step, kv, acc_o, acc_lse, part_o, part_lse);
    prof_range_pop();
  }
  if (rc == ATTN_STATUS_OK)
    rc = attn_cp_finish_launch(acc_o, acc_lse, j->bh, j->l, j->d, j->a->out.data, j->a->out.dtype,
                               j->a->lse, j->compute);
  return rc;
}

/* The gathered slots (rank-major, each [B, Hkv, L_r, D]) into sequence order
 * [B, Hkv, S, D]: one 2D copy per (rank, chunk). */
static attn_status reorder(const cp_job *j, const char *slots, size_t slot_bytes, char *seq,
                           cudaStream_t stream) {
  size_t row = (size_t)j->a->k.shape[3] * j->es;
  size_t bhkv = (size_t)(j->a->k.shape[0] * j->a->k.shape[1]);
  for (int r = 0; r < j->n; r++) {
    int64_t lr = attn_cp_shard_len(j->s, j->n, r), off = 0;
    int chunks[2] = {r, 2 * j->n - 1 - r};
    for (int c = 0; c < 2; c++) {
      int64_t len = attn_cp_chunk_len(j->s, j->n, chunks[c]);
      int64_t start = attn_cp_chunk_start(j->s, j->n, chunks[c]);
      if (len > 0)
        ATTN_CUDA_TRY(cudaMemcpy2DAsync(seq + (size_t)start * row, (size_t)j->s * row,
                                        slots + (size_t)r * slot_bytes + (size_t)off * row,
                                        (size_t)lr * row, (size_t)len * row, bhkv,
                                        cudaMemcpyDeviceToDevice, stream));
      off += len;
    }
  }
  return ATTN_STATUS_OK;
}

static attn_status allgather(attn_ctx *ctx, attn_cp_cuda_state **sp, const attn_nccl_api *api,
                             void *nccl, const cp_job *j) {
  size_t slot = (size_t)shard_max(j) * j->kv_row;
  size_t seq = (size_t)j->s * j->kv_row, nl = (size_t)(j->bh * j->l) * 4;
  attn_status rc = state_get(sp, j->a->q.device, 2 * (j->n * slot + seq) + nl + 1280);
  if (rc != ATTN_STATUS_OK) return rc;
  attn_cp_cuda_state *st = *sp;
  char *p = st->buf;
  char *gk = carve(&p, j->n * slot), *gv = carve(&p, j->n * slot);
  char *sk = carve(&p, seq), *sv = carve(&p, seq);
  float *part_lse = carve(&p, nl);
  size_t own = (size_t)j->l * j->kv_row;
  prof_range_push("cp.allgather");
  ATTN_CUDA_TRY(cudaEventRecord(st->ev_start, j->compute));
  ATTN_CUDA_TRY(cudaStreamWaitEvent(st->comm, st->ev_start, 0));
  ATTN_CUDA_TRY(
      cudaMemcpyAsync(gk + j->rank * slot, j->a->k.data, own, cudaMemcpyDeviceToDevice, st->comm));
  ATTN_CUDA_TRY(
      cudaMemcpyAsync(gv + j->rank * slot, j->a->v.data, own, cudaMemcpyDeviceToDevice, st->comm));
  if (j->n > 1) {
    CP_NCCL(api->group_start(), "ncclGroupStart");
    CP_NCCL(api->all_gather(gk + j->rank * slot, gk, slot, ATTN_NCCL_UINT8, nccl, st->comm),
            "ncclAllGather (K)");
    CP_NCCL(api->all_gather(gv + j->rank * slot, gv, slot, ATTN_NCCL_UINT8, nccl, st->comm),
            "ncclAllGather (V)");
    CP_NCCL(api->group_end(), "ncclGroupEnd");
  }
  rc = reorder(j, gk, slot, sk, st->comm);
  if (rc == ATTN_STATUS_OK) rc = reorder(j, gv, slot, sv, st->comm);
  prof_range_pop();
  if (rc != ATTN_STATUS_OK) return rc;
  ATTN_CUDA_TRY(cudaEventRecord(st->ev_comm[0], st->comm));
  ATTN_CUDA_TRY(cudaStreamWaitEvent(j->compute, st->ev_comm[0], 0));
  prof_range_push("cp.compute");
  attn_cp_call calls[2];
  int nc = attn_cp_allgather_calls(j->a->causal != ATTN_CAUSAL_NONE, j->s, j->n, j->rank, calls);
  for (int c = 0; rc == ATTN_STATUS_OK && c < nc; c++) {
    int whole = calls[c].nq == j->l; /* lse straight into the caller's buffer */
    rc = flash_call(ctx, j, &calls[c], sk, sv, j->s, j->a->out.data, j->l, calls[c].q0,
                    j->a->lse && !whole ? part_lse : j->a->lse);
    if (rc == ATTN_STATUS_OK && j->a->lse && !whole)
      rc = cudaMemcpy2DAsync(j->a->lse + calls[c].q0, (size_t)j->l * 4, part_lse,
                             (size_t)calls[c].nq * 4, (size_t)calls[c].nq * 4, (size_t)j->bh,
                             cudaMemcpyDeviceToDevice, j->compute) == cudaSuccess
               ? ATTN_STATUS_OK
               : attn_fail(ATTN_STATUS_BACKEND_ERROR, "cp: copy of the lse rows failed");
  }
  prof_range_pop();
  return rc;
}

attn_status attn_cp_cuda_forward(attn_ctx *ctx, attn_cp_cuda_state **sp, int device,
                                 const attn_nccl_api *api, void *nccl, int rank, int n,
                                 attn_cp_variant variant, const attn_cp_args *args) {
  const attn_args *a = &args->shard;
  if (a->q.device != device)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: the shard is on device %d, the communicator's rank on device %d",
                     a->q.device, device);
  cp_job j = {.a = a,
              .s = args->seq_len,
              .l = a->q.shape[2],
              .bh = a->q.shape[0] * a->q.shape[1],
              .d = a->q.shape[3],
              .rank = rank,
              .n = n,
              .es = attn_dtype_size(a->q.dtype),
              .compute = (cudaStream_t)a->stream};
  j.kv_row = (size_t)(a->k.shape[0] * a->k.shape[1] * a->k.shape[3]) * j.es;
  attn_status rc = variant == ATTN_CP_ALLGATHER ? allgather(ctx, sp, api, nccl, &j)
                                                : ring(ctx, sp, api, nccl, &j);
  if (rc == ATTN_STATUS_OK && *sp) { /* the caller's stream waits for the comm stream too */
    ATTN_CUDA_TRY(cudaEventRecord((*sp)->ev_end, (*sp)->comm));
    ATTN_CUDA_TRY(cudaStreamWaitEvent(j.compute, (*sp)->ev_end, 0));
  }
  return rc;
}
