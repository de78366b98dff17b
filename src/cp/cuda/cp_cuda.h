/* Context parallelism on CUDA devices: the ring and all-gather drivers of
 * one rank over NCCL, and the fp32 merge kernels they enqueue. */
#ifndef ATTNPROF_ATTN_CUDA_CP_H
#define ATTNPROF_ATTN_CUDA_CP_H

#include <stdint.h>

#include "cp/cp_plan.h"
#include "cp/nccl_loader.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What one rank keeps between calls: the communication stream, the events
 * between it and the compute stream, and one device buffer (grown as needed). */
typedef struct attn_cp_cuda_state attn_cp_cuda_state;

attn_status attn_cp_cuda_set_device(int device);
int attn_cp_cuda_device_count(void);
/* One rank's forward (api and nccl may be NULL when n == 1). */
attn_status attn_cp_cuda_forward(attn_ctx *ctx, attn_cp_cuda_state **state, int device,
                                 const attn_nccl_api *api, void *nccl, int rank, int n,
                                 attn_cp_variant variant, const attn_cp_args *args);
void attn_cp_cuda_state_destroy(attn_cp_cuda_state *s);

/* Kernels (cp_merge.cu), each one launch on `stream`:
 * init: acc_o = 0 (n_o floats), acc_lse = -inf (n_l floats);
 * merge: as attn_cp_merge_host; finish: as attn_cp_finish_host. */
attn_status attn_cp_init_launch(float *acc_o, int64_t n_o, float *acc_lse, int64_t n_l,
                                void *stream);
attn_status attn_cp_merge_launch(float *acc_o, float *acc_lse, int64_t bh, int64_t rows, int64_t d,
                                 int64_t q0, int64_t nq, const void *part_o, attn_dtype dt,
                                 const float *part_lse, void *stream);
attn_status attn_cp_finish_launch(const float *acc_o, const float *acc_lse, int64_t bh,
                                  int64_t rows, int64_t d, void *out, attn_dtype dt, float *lse,
                                  void *stream);

#ifdef __cplusplus
}
#endif
#endif
