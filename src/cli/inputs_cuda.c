/* Device copies of the CLI's inputs (--device cuda[:N]) and the GPU default
 * shape. The host buffers stay: the fp64 reference reads them and the
 * accuracy check copies the device output back into them. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "cli/cli_cuda.h"
#ifdef ATTNPROF_HAVE_CUDA
#include "attnprof/testing.h"
#endif

static int given(int argc, char **argv, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < argc; i++)
    if (!strncmp(argv[i], name, n) && (argv[i][n] == '\0' || argv[i][n] == '=')) return 1;
  return 0;
}

void cli_gpu_default_shape(int argc, char **argv, cli_problem *p) {
  if (p->device < 0 || given(argc, argv, "--shape")) return;
  p->d = CLI_GPU_SHAPE_D; /* the serving options keep what they set */
  if (!given(argc, argv, "--batch")) p->b = CLI_GPU_SHAPE_B;
  if (!given(argc, argv, "--heads")) p->hq = CLI_GPU_SHAPE_H;
  if (!given(argc, argv, "--new-tokens")) p->sq = CLI_GPU_SHAPE_S;
  if (!given(argc, argv, "--kv-heads") && !given(argc, argv, "--heads")) p->hkv = CLI_GPU_SHAPE_H;
  if (!given(argc, argv, "--sk") && !given(argc, argv, "--kv-len")) p->sk = CLI_GPU_SHAPE_S;
}

void cli_device_describe(int device, char *buf, size_t len) {
#ifdef ATTNPROF_HAVE_CUDA
  if (device >= 0) {
    snprintf(buf, len, "cuda:%d %s", device, attn_cuda_device_name(device));
    return;
  }
#endif
  snprintf(buf, len, device < 0 ? "cpu" : "cuda:%d", device);
}

#ifdef ATTNPROF_HAVE_CUDA

/* One host buffer copied to a new device buffer; the tensor then points
 * at the device copy. */
static attn_status copy_tensor(int device, attn_tensor *t, void **dev) {
  size_t bytes = (size_t)attn_tensor_span(t) * attn_dtype_size(t->dtype);
  attn_status st = attn_cuda_malloc(device, bytes, dev);
  if (st) return st;
  st = attn_cuda_to_device(device, *dev, t->data, bytes);
  t->data = *dev, t->device = device; /* also on failure: the free finds the device */
  return st;
}

attn_status cli_inputs_to_device(const cli_problem *p, cli_inputs *in) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why))
    return attn_fail(ATTN_STATUS_NO_DEVICE, "--device cuda:%d: %s; use --device cpu", p->device,
                     why);
  attn_tensor *ts[5] = {&in->args.q, &in->args.k, &in->args.v, &in->args.out, &in->args.mask};
  attn_status st = ATTN_STATUS_OK;
  for (int i = 0; i < 5 && !st; i++)
    if (in->bufs[i]) st = copy_tensor(p->device, ts[i], &in->dev_bufs[i]);
  for (int i = 0; i < 2 && !st && in->tables[i]; i++) { /* --page-size tables */
    size_t bytes = (size_t)(i ? in->seqs.batch * in->seqs.max_pages : in->seqs.batch) * 4;
    if (!(st = attn_cuda_malloc(p->device, bytes, &in->dev_tables[i])))
      st = attn_cuda_to_device(p->device, in->dev_tables[i], in->tables[i], bytes);
  }
  if (!st && in->args.seqs) {
    in->dev_seqs = in->seqs;
    in->dev_seqs.kv_lens = in->dev_tables[0], in->dev_seqs.block_table = in->dev_tables[1];
    in->args.seqs = &in->dev_seqs;
  }
  if (!st && in->bufs[5]) {
    size_t bytes = (size_t)(p->b * p->hq * p->sq) * sizeof(float);
    st = attn_cuda_malloc(p->device, bytes, &in->dev_bufs[5]);
    in->args.lse = st ? NULL : in->dev_bufs[5];
  }
  return st;
}

void cli_inputs_free_device(cli_inputs *in) {
  /* q is copied first: once any device buffer exists, q.device names it. */
  for (int i = 0; i < 6; i++)
    if (in->dev_bufs[i]) attn_cuda_free(in->args.q.device, in->dev_bufs[i]);
  for (int i = 0; i < 2; i++)
    if (in->dev_tables[i]) attn_cuda_free(in->args.q.device, in->dev_tables[i]);
  memset(in->dev_bufs, 0, sizeof in->dev_bufs);
  memset(in->dev_tables, 0, sizeof in->dev_tables);
}

#else

attn_status cli_inputs_to_device(const cli_problem *p, cli_inputs *in) {
  (void)in;
  return attn_fail(ATTN_STATUS_NO_DEVICE,
                   "--device cuda:%d: this build has no CUDA backends (CMake found no CUDA "
                   "toolkit); use --device cpu",
                   p->device);
}

void cli_inputs_free_device(cli_inputs *in) { (void)in; }

#endif
