/* Context parallelism's public side: communicators (wrapped or made from a
 * unique id exchanged through a file), the variant choice, and
 * attn_cp_forward, which hands one rank's work to the CUDA driver (or, for a
 * single rank with host shards, to the in-process driver). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cp/cp_plan.h"
#include "cp/nccl_loader.h"
#include "core/error.h"
#ifdef ATTNPROF_HAVE_CUDA
#include "cp/cuda/cp_cuda.h"
#endif

struct attn_cp_comm {
  int rank, size, device, owns;
  void *nccl; /* ncclComm_t; NULL for one rank */
  attn_cp_variant last;
  void *cuda; /* attn_cp_cuda_state */
};

int attn_cp_device_count(void) {
#ifdef ATTNPROF_HAVE_CUDA
  return attn_cp_cuda_device_count();
#else
  return 0;
#endif
}

attn_status attn_cp_nccl_available(char *why, size_t why_len) {
  return attn_nccl_open(why, why_len) ? ATTN_STATUS_OK : ATTN_STATUS_NO_DEVICE;
}

static attn_status comm_new(int rank, int size, int device, void *nccl, int owns,
                            attn_cp_comm **out) {
  attn_cp_comm *c = calloc(1, sizeof *c);
  if (!c) return attn_fail(ATTN_STATUS_OUT_OF_MEMORY, "cp: no host memory");
  *c = (attn_cp_comm){rank, size, device, owns, nccl, ATTN_CP_AUTO, NULL};
  *out = c;
  return ATTN_STATUS_OK;
}

attn_status attn_cp_comm_wrap(void *nccl_comm, int device, attn_cp_comm **out) {
  *out = NULL;
  const attn_nccl_api *api = attn_nccl_open(NULL, 0);
  if (!api) return ATTN_STATUS_NO_DEVICE;
  int rank = -1, size = 0, rc;
  if (!nccl_comm) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "cp: NULL ncclComm_t");
  if ((rc = api->comm_count(nccl_comm, &size)) != ATTN_NCCL_SUCCESS)
    return attn_nccl_fail(api, rc, "ncclCommCount");
  if ((rc = api->comm_user_rank(nccl_comm, &rank)) != ATTN_NCCL_SUCCESS)
    return attn_nccl_fail(api, rc, "ncclCommUserRank");
  return comm_new(rank, size, device, nccl_comm, 0, out);
}

#ifdef ATTNPROF_HAVE_CUDA
/* Rank 0's side of the id exchange: written whole, then renamed into place,
 * so a reader never sees half an id. */
static attn_status id_write(const char *path, const attn_nccl_unique_id *id) {
  char tmp[1100];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, path) != 0) {
    int e = errno;
    if (f) unlink(tmp);
    return attn_fail(ATTN_STATUS_IO_ERROR, "cp: cannot write the NCCL id to %s: %s", path,
                     strerror(e));
  }
  return ATTN_STATUS_OK;
}

static attn_status id_read(const char *path, attn_nccl_unique_id *id) {
  for (int waited_ms = 0; waited_ms < 60000; waited_ms += 10) {
    FILE *f = fopen(path, "rb");
    if (f) {
      size_t got = fread(id, sizeof *id, 1, f);
      fclose(f);
      if (got == 1) return ATTN_STATUS_OK;
    }
    nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
  }
  return attn_fail(ATTN_STATUS_IO_ERROR,
                   "cp: no NCCL id at %s after 60 s: is rank 0 running with the same path?", path);
}
#endif

attn_status attn_cp_comm_init_file(const char *path, int rank, int nranks, int device,
                                   attn_cp_comm **out) {
  *out = NULL;
  if (nranks < 1 || rank < 0 || rank >= nranks || device < 0)
    return attn_fail(ATTN_STATUS_INVALID_ARGUMENT,
                     "cp: rank %d of %d on device %d: accepted are 0 <= rank < ranks, device >= 0",
                     rank, nranks, device);
#ifndef ATTNPROF_HAVE_CUDA
  return attn_fail(ATTN_STATUS_NO_DEVICE, "cp: this build has no CUDA half");
#else
  attn_status st = attn_cp_cuda_set_device(device);
  if (st != ATTN_STATUS_OK || nranks == 1)
    return st != ATTN_STATUS_OK ? st : comm_new(0, 1, device, NULL, 1, out);
  if (!path) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "cp: no id file path");
  /* NVLink multicast (NVLS) stays off on shared machines, whatever was set */
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  const attn_nccl_api *api = attn_nccl_open(NULL, 0);
  if (!api) return ATTN_STATUS_NO_DEVICE;
  attn_nccl_unique_id id;
  int rc;
  if (rank == 0) {
    if ((rc = api->get_unique_id(&id)) != ATTN_NCCL_SUCCESS)
      return attn_nccl_fail(api, rc, "ncclGetUniqueId");
    st = id_write(path, &id);
  } else {
    st = id_read(path, &id);
  }
  if (st != ATTN_STATUS_OK) return st;
  void *nccl = NULL;
  if ((rc = api->comm_init_rank(&nccl, nranks, id, rank)) != ATTN_NCCL_SUCCESS)
    return attn_nccl_fail(api, rc, "ncclCommInitRank");
  st = comm_new(rank, nranks, device, nccl, 1, out);
  if (st != ATTN_STATUS_OK) api->comm_destroy(nccl);
  return st;
#endif
}

void attn_cp_comm_destroy(attn_cp_comm *c) {
  if (!c) return;
#ifdef ATTNPROF_HAVE_CUDA
  attn_cp_cuda_state_destroy(c->cuda);
#endif
  if (c->owns && c->nccl) {
    const attn_nccl_api *api = attn_nccl_open(NULL, 0);
    if (api) api->comm_destroy(c->nccl);
  }
  free(c);
}

int attn_cp_comm_rank(const attn_cp_comm *c) { return c ? c->rank : -1; }
int attn_cp_comm_size(const attn_cp_comm *c) { return c ? c->size : 0; }
attn_cp_variant attn_cp_comm_last_variant(const attn_cp_comm *c) {
  return c ? c->last : ATTN_CP_AUTO;
}

attn_cp_variant attn_cp_pick(const attn_cp_comm *c, const attn_cp_args *args, char *why,
                             size_t why_len) {
  char tmp[8];
  if (!why || !why_len) why = tmp, why_len = sizeof tmp;
  if (args->variant == ATTN_CP_RING || args->variant == ATTN_CP_ALLGATHER) {
    snprintf(why, why_len, "%s: asked for", attn_cp_variant_name(args->variant));
    return args->variant;
  }
  int n = c ? c->size : 1;
  if (n == 1) {
    snprintf(why, why_len, "ring: one rank, nothing moves");
    return ATTN_CP_RING;
  }
  double fpb = attn_cp_ring_intensity(&args->shard, args->seq_len, n);
  attn_cp_variant v = attn_cp_auto(&args->shard, args->seq_len, n);
  snprintf(why, why_len, "%s: a ring step computes %.0f FLOP per byte it moves (%s %.0f)",
           attn_cp_variant_name(v), fpb, v == ATTN_CP_RING ? ">=" : "<", ATTN_CP_AUTO_BALANCE);
  return v;
}

attn_status attn_cp_forward(attn_ctx *ctx, attn_cp_comm *c, const attn_cp_args *args) {
  if (!c || !args) return attn_fail(ATTN_STATUS_INVALID_ARGUMENT, "cp: NULL communicator or args");
  attn_status st = attn_cp_check_shard(&args->shard, args->seq_len, c->size, c->rank);
  if (st != ATTN_STATUS_OK) return st;
  attn_cp_variant v = attn_cp_pick(c, args, NULL, 0);
  if (args->shard.q.device == ATTN_DEVICE_CPU) {
    if (c->size != 1)
      return attn_fail(ATTN_STATUS_UNSUPPORTED,
                       "cp: host shards run on one rank only; several ranks need CUDA devices");
    st = attn_cp_host_forward(ctx, v, args->seq_len, 1, &args->shard);
  } else {
#ifdef ATTNPROF_HAVE_CUDA
    const attn_nccl_api *api = c->size > 1 ? attn_nccl_open(NULL, 0) : NULL;
    if (c->size > 1 && !api) return ATTN_STATUS_NO_DEVICE;
    st = attn_cp_cuda_forward(ctx, (attn_cp_cuda_state **)&c->cuda, c->device, api, c->nccl,
                              c->rank, c->size, v, args);
#else
    st = attn_fail(ATTN_STATUS_NO_DEVICE, "cp: this build has no CUDA half");
#endif
  }
  if (st == ATTN_STATUS_OK) c->last = v;
  return st;
}
