/* Finding libcudnn at run time (dlopen), so that a machine without cuDNN
 * loses the cudnn backend, with the reason, and keeps everything else.
 *
 * Which file: $ATTNPROF_CUDNN_LIB when set (a name or a path, and nothing
 * else is tried, so a test can point it at a bogus name); otherwise
 * libcudnn_graph.so.9 (it holds the backend API in cuDNN 9), then the
 * libcudnn.so.9 shim that forwards to it, then both under the toolkit's
 * library folder seen at build time. When a path is given, the sibling
 * sublibraries in that folder (engines, heuristics) are opened first, so a
 * cuDNN outside the loader's search path (PyTorch's wheel) finds them.
 *
 * No cuDNN header here: the symbols come back as void pointers and
 * cudnn_api.c gives them their types. CI tests this file on its own. */
#ifndef ATTNPROF_SRC_ATTN_CUDA_CUDNN_LOADER_H
#define ATTNPROF_SRC_ATTN_CUDA_CUDNN_LOADER_H

#include <stddef.h>

#include "attnprof/attn.h"

#define ATTN_CUDNN_LIB_ENV "ATTNPROF_CUDNN_LIB"

/* Opens the library and resolves symbols[0..n) into syms[0..n). On success
 * writes the file it opened into path (may be NULL). On failure returns
 * ATTN_STATUS_UNSUPPORTED and writes into why what was tried, the loader's
 * message, and what to set. The library stays open for the process. */
attn_status attn_cudnn_lib_open(const char *const *symbols, size_t n, void **syms, char *path,
                                size_t path_len, char *why, size_t why_len);

#endif
