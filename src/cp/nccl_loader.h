/* NCCL opened at run time: the few entry points context parallelism uses,
 * declared here from NCCL's stable C ABI (no nccl.h needed to build). */
#ifndef ATTNPROF_ATTN_CP_NCCL_LOADER_H
#define ATTNPROF_ATTN_CP_NCCL_LOADER_H

#include <stddef.h>

#include "attnprof/attn.h"

typedef struct {
  char internal[128];
} attn_nccl_unique_id;

enum { ATTN_NCCL_SUCCESS = 0, ATTN_NCCL_UINT8 = 1 };

typedef struct {
  const char *(*get_error_string)(int result);
  int (*get_version)(int *version);
  int (*get_unique_id)(attn_nccl_unique_id *id);
  int (*comm_init_rank)(void **comm, int nranks, attn_nccl_unique_id id, int rank);
  int (*comm_destroy)(void *comm);
  int (*comm_count)(const void *comm, int *count);
  int (*comm_user_rank)(const void *comm, int *rank);
  int (*group_start)(void);
  int (*group_end)(void);
  int (*send)(const void *buf, size_t count, int type, int peer, void *comm, void *stream);
  int (*recv)(void *buf, size_t count, int type, int peer, void *comm, void *stream);
  int (*all_gather)(const void *send, void *recv, size_t count, int type, void *comm, void *stream);
  char path[512]; /* the file opened */
} attn_nccl_api;

/* The API, opened once per process; NULL with the reason in attn_last_error()
 * (and in why, when given) if no libnccl.so.2 was found. Search: the file in
 * ATTNPROF_NCCL_LIB, then the loader's path (libnccl.so.2), then
 * nvidia/nccl/lib/ under Python's site-packages (PyTorch's nvidia-nccl wheel). */
const attn_nccl_api *attn_nccl_open(char *why, size_t why_len);

/* One line naming the failed NCCL call and NCCL's message. */
attn_status attn_nccl_fail(const attn_nccl_api *api, int result, const char *call);

#endif
