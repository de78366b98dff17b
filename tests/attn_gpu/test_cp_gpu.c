/* Context parallelism on one GPU: the merge kernel against the host merge,
 * attn_cp_forward on a one-rank communicator (ring and all-gather: the
 * per-step flash calls, merge, finish, the all-gather's reorder copies)
 * against the fp64 reference and single-GPU flash, and 2 to 4 ranks on the
 * one GPU through the CUDA drivers over a fake NCCL (below). With NCCL present, a
 * one-rank NCCL communicator made by NCCL and wrapped. Several ranks need
 * several GPUs (attnprof cp --gpus N). Without a GPU: exit 77 (Skipped). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attn_testutil.h"
#include "cp/cp_plan.h"
#include "attnprof/testing.h"

#ifdef ATTNPROF_HAVE_CUDA
static int failures;

#define CHECK(cond, ...)                          \
  do {                                            \
    if (!(cond)) {                                \
      failures++;                                 \
      printf("FAIL %s:%d: ", __FILE__, __LINE__); \
      printf(__VA_ARGS__);                        \
      printf("\n");                               \
    }                                             \
  } while (0)

#include "cp/nccl_loader.h"
#include "cp/cuda/cp_cuda.h"
#include <cuda_runtime_api.h>

static void *dev_copy(const void *h, size_t bytes) {
  void *d = NULL;
  if (attn_cuda_malloc(0, bytes, &d) || attn_cuda_to_device(0, d, h, bytes)) return NULL;
  return d;
}

/* Several partials folded by the kernel and by the host: same accumulators. */
static void merge_kernel_matches_host(attn_dtype dt, test_rng *rng) {
  enum { BH = 3, ROWS = 37, D = 64, PARTS = 4 };
  size_t es = attn_dtype_size(dt);
  float h_o[BH * ROWS * D] = {0}, h_l[BH * ROWS], g_o[BH * ROWS * D], g_l[BH * ROWS];
  for (int i = 0; i < BH * ROWS; i++) h_l[i] = -INFINITY;
  float *d_o = NULL, *d_l = NULL;
  attn_cuda_malloc(0, sizeof h_o, (void **)&d_o);
  attn_cuda_malloc(0, sizeof h_l, (void **)&d_l);
  CHECK(attn_cp_init_launch(d_o, BH * ROWS * D, d_l, BH * ROWS, NULL) == ATTN_STATUS_OK, "init");
  for (int p = 0; p < PARTS; p++) {
    int64_t q0 = p % 2 ? 5 : 0, nq = p % 2 ? 30 : ROWS;
    unsigned char po[BH * ROWS * D * 4];
    float pl[BH * ROWS];
    attn_tensor t = attn_tensor_bhsd(po, dt, ATTN_DEVICE_CPU, 1, BH, nq, D);
    for (int64_t x = 0; x < BH; x++)
      for (int64_t i = 0; i < nq; i++) {
        /* every 7th row saw no key in this block */
        pl[x * nq + i] = (x + i + p) % 7 == 0 ? -INFINITY : (float)(4 * test_rng_normal(rng));
        for (int e = 0; e < D; e++) attn_tensor_set(&t, 0, x, i, e, test_rng_normal(rng));
      }
    attn_cp_merge_host(h_o, h_l, BH, ROWS, D, q0, nq, po, dt, pl);
    void *dpo = dev_copy(po, (size_t)(BH * nq * D) * es), *dpl = dev_copy(pl, sizeof pl);
    CHECK(attn_cp_merge_launch(d_o, d_l, BH, ROWS, D, q0, nq, dpo, dt, dpl, NULL) == ATTN_STATUS_OK,
          "merge launch: %s", attn_last_error());
    attn_cuda_synchronize(0);
    attn_cuda_free(0, dpo);
    attn_cuda_free(0, dpl);
  }
  attn_cuda_to_host(0, g_o, d_o, sizeof g_o);
  attn_cuda_to_host(0, g_l, d_l, sizeof g_l);
  double worst = 0;
  int lse_bad = 0;
  for (int i = 0; i < BH * ROWS * D; i++) worst = fmax(worst, fabs(g_o[i] - h_o[i]));
  for (int i = 0; i < BH * ROWS; i++)
    lse_bad += !(g_l[i] == h_l[i] || fabs(g_l[i] - h_l[i]) <= 1e-5 * (1 + fabs(h_l[i])));
  CHECK(worst <= 1e-5 && !lse_bad, "merge %s: max |gpu - host| %.3g, %d lse rows differ",
        attn_dtype_name(dt), worst, lse_bad);
  printf("merge kernel %s: max |gpu - host| = %.3g over %d partials\n", attn_dtype_name(dt), worst,
         PARTS);
  attn_cuda_free(0, d_o);
  attn_cuda_free(0, d_l);
}

/* One problem through attn_cp_forward on a one-rank communicator. */
static void one_rank_forward(attn_ctx *ctx, attn_cp_comm *comm, attn_cp_variant v, int64_t hq,
                             int64_t hkv, int64_t s, int64_t d, int causal, test_rng *rng) {
  problem_spec spec = {.dtype = ATTN_DTYPE_BF16,
                       .b = 2,
                       .hq = hq,
                       .hkv = hkv,
                       .sq = s,
                       .sk = s,
                       .d = d,
                       .causal = causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE,
                       .layout = LAYOUT_BHSD,
                       .lse = 1};
  test_problem p;
  if (problem_make(&p, &spec, rng)) {
    CHECK(0, "problem_make");
    return;
  }
  problem_poison(&p); /* out and lse NaN, the bytes around them remembered */
  attn_args dev = p.args;
  attn_tensor *ts[4] = {&dev.q, &dev.k, &dev.v, &dev.out};
  void *dm[5] = {0};
  for (int i = 0; i < 4; i++) {
    dm[i] = dev_copy(p.mem[i], p.mem_bytes[i]);
    ts[i]->data = dm[i];
    ts[i]->device = 0;
  }
  size_t lse_bytes = p.lse_n * sizeof(float);
  dm[4] = dev_copy(p.args.lse, lse_bytes);
  dev.lse = dm[4];
  attn_cp_args a = {.shard = dev, .seq_len = s, .variant = v};
  attn_status st = attn_cp_forward(ctx, comm, &a);
  CHECK(st == ATTN_STATUS_OK, "cp forward: %s", attn_last_error());
  attn_cuda_to_host(0, p.mem[3], dm[3], p.mem_bytes[3]);
  attn_cuda_to_host(0, p.args.lse, dm[4], lse_bytes);
  /* flash's bound for bf16 (test_fused_gpu.c: 4u, two roundings), plus one
   * rounding of each partial to bf16 before the fp32 merge; lse as there */
  check_result r = problem_check(&p, 0, 6 * test_unit_roundoff(ATTN_DTYPE_BF16), 256 * 0x1p-24);
  CHECK(r.ok, "cp %s Hq=%lld Hkv=%lld S=%lld D=%lld causal=%d: %s", attn_cp_variant_name(v),
        (long long)hq, (long long)hkv, (long long)s, (long long)d, causal, r.why);
  CHECK(attn_cp_comm_last_variant(comm) == v, "last variant %s, asked %s",
        attn_cp_variant_name(attn_cp_comm_last_variant(comm)), attn_cp_variant_name(v));
  /* single-GPU flash on the same inputs: the rows agree */
  unsigned char *flash_out = malloc(p.mem_bytes[3]);
  dev.lse = NULL;
  st = attn_forward(ctx, ATTN_BACKEND_FLASH, &dev);
  attn_cuda_to_host(0, flash_out, dm[3], p.mem_bytes[3]);
  attn_tensor fo = p.args.out;
  fo.data = flash_out;
  double num = 0, den = 0;
  for (int64_t b = 0; b < 2; b++)
    for (int64_t h = 0; h < hq; h++)
      for (int64_t i = 0; i < s; i++)
        for (int64_t e = 0; e < d; e++) {
          double x = attn_tensor_get(&p.args.out, b, h, i, e), y = attn_tensor_get(&fo, b, h, i, e);
          num += (x - y) * (x - y), den += y * y;
        }
  CHECK(st == ATTN_STATUS_OK && sqrt(num / den) <= 1e-2, "vs flash: %.3g", sqrt(num / den));
  printf("cp %-9s Hq=%lld Hkv=%lld S=%lld D=%lld causal=%d: rel err %.2e (ref), %.2e (flash)\n",
         attn_cp_variant_name(v), (long long)hq, (long long)hkv, (long long)s, (long long)d, causal,
         r.rel_err, sqrt(num / den));
  free(flash_out);
  for (int i = 0; i < 5; i++) attn_cuda_free(0, dm[i]);
  problem_free(&p);
}

/* ---- N ranks on one GPU over a fake NCCL ---------------------------------
 * The CUDA drivers take the NCCL entry points as a table; this one moves the
 * bytes with cudaMemcpyAsync on the stream given. All ranks' shards live on
 * the one GPU, so a receive copies the block its sender holds at that step,
 * which is the original shard of rank (rank - step - 1) mod n, and checks the
 * byte count the driver computed against that shard's size. Ranks run one
 * after another (each enqueues all its steps): NCCL's own transport and the
 * cross-rank overlap are not exercised, everything else of the drivers is. */
typedef struct {
  int rank, n;
  int64_t s;
  size_t kv_row;
  void *const *k, *const *v; /* every rank's K/V shard on the device */
  int step, recv_in_group, gather_in_group, bad_count;
} fake_comm;

static fake_comm *fake_now; /* the rank whose driver is running */

static const char *fake_error(int r) { return r ? "fake NCCL error" : "ok"; }
static int fake_group_start(void) { return 0; }
static int fake_group_end(void) {
  if (fake_now->recv_in_group) fake_now->step++;
  fake_now->recv_in_group = fake_now->gather_in_group = 0;
  return 0;
}
static int fake_send(const void *b, size_t c, int t, int peer, void *comm, void *stream) {
  fake_comm *f = comm;
  return peer == (f->rank + 1) % f->n ? 0 : 1;
}
static int fake_recv(void *buf, size_t count, int t, int peer, void *comm, void *stream) {
  fake_comm *f = comm;
  int owner = ((f->rank - f->step - 1) % f->n + f->n) % f->n;
  size_t want = (size_t)attn_cp_shard_len(f->s, f->n, owner) * f->kv_row;
  if (peer != (f->rank + f->n - 1) % f->n) return 1;
  if (count != want) f->bad_count++;
  const void *src = f->recv_in_group++ == 0 ? f->k[owner] : f->v[owner];
  return cudaMemcpyAsync(buf, src, want, cudaMemcpyDeviceToDevice, stream) != cudaSuccess;
}
static int fake_all_gather(const void *send, void *recv, size_t count, int t, void *comm,
                           void *stream) {
  fake_comm *f = comm;
  void *const *src = f->gather_in_group++ == 0 ? f->k : f->v;
  for (int r = 0; r < f->n; r++) {
    size_t bytes = (size_t)attn_cp_shard_len(f->s, f->n, r) * f->kv_row;
    if (bytes > count) f->bad_count++;
    if (r != f->rank && cudaMemcpyAsync((char *)recv + r * count, src[r], bytes,
                                        cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
      return 1;
  }
  return 0;
}

static const attn_nccl_api fake_api = {.get_error_string = fake_error,
                                       .group_start = fake_group_start,
                                       .group_end = fake_group_end,
                                       .send = fake_send,
                                       .recv = fake_recv,
                                       .all_gather = fake_all_gather,
                                       .path = "fake"};

/* The whole problem made once, scattered to n shards on the GPU, each rank's
 * driver run over the fake NCCL, gathered, checked against the fp64
 * reference (out and lse poisoned first, every row checked). */
static void fake_ring(attn_ctx *ctx, int n, attn_cp_variant v, int64_t hq, int64_t hkv, int64_t s,
                      int64_t d, int causal, test_rng *rng) {
  problem_spec spec = {.dtype = ATTN_DTYPE_BF16,
                       .b = 1,
                       .hq = hq,
                       .hkv = hkv,
                       .sq = s,
                       .sk = s,
                       .d = d,
                       .causal = causal ? ATTN_CAUSAL_TOP_LEFT : ATTN_CAUSAL_NONE,
                       .layout = LAYOUT_BHSD,
                       .lse = 1};
  test_problem p;
  if (problem_make(&p, &spec, rng)) {
    CHECK(0, "problem_make");
    return;
  }
  problem_poison(&p);
  size_t es = 2;
  void *dq[8], *dk[8], *dv[8], *dout[8], *dlse[8];
  attn_args sh[8];
  fake_comm fc[8];
  attn_cp_cuda_state *st[8] = {0};
  for (int r = 0; r < n; r++) {
    int64_t l = attn_cp_shard_len(s, n, r);
    void *hbuf = malloc((size_t)(hq * l * d) * es + 1);
    attn_tensor hq_t = attn_tensor_bhsd(hbuf, ATTN_DTYPE_BF16, ATTN_DEVICE_CPU, 1, hq, l, d);
    attn_tensor hk_t = attn_tensor_bhsd(hbuf, ATTN_DTYPE_BF16, ATTN_DEVICE_CPU, 1, hkv, l, d);
    attn_cp_scatter(&p.args.q, n, r, &hq_t);
    dq[r] = dev_copy(hbuf, (size_t)(hq * l * d) * es + 1);
    attn_cp_scatter(&p.args.k, n, r, &hk_t);
    dk[r] = dev_copy(hbuf, (size_t)(hkv * l * d) * es + 1);
    attn_cp_scatter(&p.args.v, n, r, &hk_t);
    dv[r] = dev_copy(hbuf, (size_t)(hkv * l * d) * es + 1);
    attn_cp_scatter(&p.args.out, n, r, &hq_t); /* poisoned rows */
    dout[r] = dev_copy(hbuf, (size_t)(hq * l * d) * es + 1);
    free(hbuf);
    attn_cuda_malloc(0, (size_t)(hq * l) * 4 + 4, &dlse[r]);
    attn_cuda_fill_bytes(0, dlse[r], 0xff, (size_t)(hq * l) * 4 + 4);
    sh[r] = attn_args_make(attn_tensor_bhsd(dq[r], ATTN_DTYPE_BF16, 0, 1, hq, l, d),
                           attn_tensor_bhsd(dk[r], ATTN_DTYPE_BF16, 0, 1, hkv, l, d),
                           attn_tensor_bhsd(dv[r], ATTN_DTYPE_BF16, 0, 1, hkv, l, d),
                           attn_tensor_bhsd(dout[r], ATTN_DTYPE_BF16, 0, 1, hq, l, d));
    sh[r].causal = spec.causal;
    sh[r].lse = dlse[r];
  }
  for (int r = 0; r < n; r++) {
    fc[r] =
        (fake_comm){.rank = r, .n = n, .s = s, .kv_row = (size_t)(hkv * d) * es, .k = dk, .v = dv};
    fake_now = &fc[r];
    attn_cp_args a = {.shard = sh[r], .seq_len = s, .variant = v};
    attn_status rc = attn_cp_check_shard(&sh[r], s, n, r);
    if (rc == ATTN_STATUS_OK)
      rc = attn_cp_cuda_forward(ctx, &st[r], 0, &fake_api, &fc[r], r, n, v, &a);
    CHECK(rc == ATTN_STATUS_OK, "rank %d: %s", r, attn_last_error());
    CHECK(fc[r].bad_count == 0, "rank %d: %d transfers of the wrong size", r, fc[r].bad_count);
    CHECK(v != ATTN_CP_RING || fc[r].step == n - 1, "rank %d: %d ring exchanges, expected %d", r,
          fc[r].step, n - 1);
  }
  attn_cuda_synchronize(0);
  for (int r = 0; r < n; r++) {
    int64_t l = attn_cp_shard_len(s, n, r);
    void *hbuf = malloc((size_t)(hq * l * d) * es + 1);
    float *hl = malloc((size_t)(hq * l) * 4 + 4);
    attn_cuda_to_host(0, hbuf, dout[r], (size_t)(hq * l * d) * es);
    attn_cuda_to_host(0, hl, dlse[r], (size_t)(hq * l) * 4);
    attn_tensor ho = attn_tensor_bhsd(hbuf, ATTN_DTYPE_BF16, ATTN_DEVICE_CPU, 1, hq, l, d);
    attn_tensor hlt = attn_tensor_bhsd(hl, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, hq, l, 1);
    attn_tensor flse = attn_tensor_bhsd(p.args.lse, ATTN_DTYPE_F32, ATTN_DEVICE_CPU, 1, hq, s, 1);
    attn_cp_gather(&ho, n, r, &p.args.out);
    attn_cp_gather(&hlt, n, r, &flse);
    free(hbuf);
    free(hl);
    attn_cp_cuda_state_destroy(st[r]);
    attn_cuda_free(0, dq[r]), attn_cuda_free(0, dk[r]), attn_cuda_free(0, dv[r]);
    attn_cuda_free(0, dout[r]), attn_cuda_free(0, dlse[r]);
  }
  check_result c = problem_check(&p, 0, 6 * test_unit_roundoff(ATTN_DTYPE_BF16), 256 * 0x1p-24);
  CHECK(c.ok, "fake NCCL %s n=%d Hq=%lld Hkv=%lld S=%lld D=%lld causal=%d: %s",
        attn_cp_variant_name(v), n, (long long)hq, (long long)hkv, (long long)s, (long long)d,
        causal, c.why);
  printf("fake NCCL %-9s n=%d Hq=%lld Hkv=%lld S=%lld D=%lld causal=%d: rel err %.2e, lse %.2e\n",
         attn_cp_variant_name(v), n, (long long)hq, (long long)hkv, (long long)s, (long long)d,
         causal, c.rel_err, c.lse_err);
  problem_free(&p);
}

/* A one-rank communicator made by NCCL itself and wrapped (the caller's
 * ncclComm_t path): rank and size read back through NCCL, a forward runs. */
static void nccl_wrapped(attn_ctx *ctx, test_rng *rng) {
  char why[600];
  const attn_nccl_api *api = attn_nccl_open(why, sizeof why);
  if (!api) {
    printf("NCCL not found, the wrapped-communicator part did not run: %s\n", why);
    return;
  }
  int ver = 0;
  api->get_version(&ver);
  printf("NCCL %d from %s\n", ver, api->path);
  setenv("NCCL_NVLS_ENABLE", "0", 1);
  attn_nccl_unique_id id;
  void *nccl = NULL;
  CHECK(api->get_unique_id(&id) == 0, "ncclGetUniqueId");
  CHECK(api->comm_init_rank(&nccl, 1, id, 0) == 0, "ncclCommInitRank");
  attn_cp_comm *c = NULL;
  CHECK(attn_cp_comm_wrap(nccl, 0, &c) == ATTN_STATUS_OK, "wrap: %s", attn_last_error());
  if (c) {
    CHECK(attn_cp_comm_size(c) == 1 && attn_cp_comm_rank(c) == 0, "size %d rank %d",
          attn_cp_comm_size(c), attn_cp_comm_rank(c));
    one_rank_forward(ctx, c, ATTN_CP_ALLGATHER, 4, 2, 77, 64, 1, rng);
    attn_cp_comm_destroy(c);
  }
  if (nccl) api->comm_destroy(nccl);
}

int main(void) {
  char why[256];
  if (attn_cuda_probe(why, sizeof why)) {
    printf("skipped: %s\n", why);
    return 77;
  }
  test_rng rng = {test_seed(1515)};
  merge_kernel_matches_host(ATTN_DTYPE_F32, &rng);
  merge_kernel_matches_host(ATTN_DTYPE_BF16, &rng);
  attn_ctx *ctx = NULL;
  attn_cp_comm *comm = NULL;
  CHECK(attn_ctx_create(NULL, &ctx) == ATTN_STATUS_OK, "ctx");
  CHECK(attn_cp_comm_init_file(NULL, 0, 1, 0, &comm) == ATTN_STATUS_OK, "one-rank comm: %s",
        attn_last_error());
  for (int v = ATTN_CP_RING; comm && v <= ATTN_CP_ALLGATHER; v++)
    for (int causal = 0; causal <= 1; causal++) {
      one_rank_forward(ctx, comm, (attn_cp_variant)v, 4, 4, 256, 128, causal, &rng);
      one_rank_forward(ctx, comm, (attn_cp_variant)v, 8, 2, 301, 64, causal, &rng);
      one_rank_forward(ctx, comm, (attn_cp_variant)v, 2, 1, 3, 128, causal, &rng);
    }
  attn_cp_comm_destroy(comm);
  for (int v = ATTN_CP_RING; v <= ATTN_CP_ALLGATHER; v++)
    for (int causal = 0; causal <= 1; causal++) {
      fake_ring(ctx, 2, (attn_cp_variant)v, 4, 4, 256, 128, causal, &rng);
      fake_ring(ctx, 3, (attn_cp_variant)v, 8, 2, 301, 64, causal, &rng);
      fake_ring(ctx, 4, (attn_cp_variant)v, 4, 1, 517, 128, causal, &rng);
      fake_ring(ctx, 4, (attn_cp_variant)v, 2, 2, 7, 64, causal, &rng); /* empty chunks */
    }
  nccl_wrapped(ctx, &rng);
  attn_ctx_destroy(ctx);
  printf("%s: %d failure(s)\n", failures ? "FAILED" : "passed", failures);
  return failures ? 1 : 0;
}
#else
int main(void) {
  printf("skipped: this build has no CUDA half\n");
  return 77;
}
#endif
