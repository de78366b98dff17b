/* The synthetic launch loop (see synth_launches.h). */
#include "prof/synth_launches.h"

#include <stdio.h>
#include <string.h>

static uint64_t next(uint64_t *s) { /* xorshift64*: enough spread for times */
  *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

static void add_device(prof_trace *t) {
  prof_device d = {.id = 0,
                   .compute_major = 9,
                   .compute_minor = 0,
                   .num_sms = 132,
                   .max_threads_per_block = 1024,
                   .max_threads_per_sm = 2048,
                   .max_blocks_per_sm = 32,
                   .regs_per_block = 65536,
                   .regs_per_sm = 65536,
                   .warp_size = 32,
                   .shared_memory_per_block = 49152,
                   .shared_memory_per_block_optin = 232448,
                   .shared_memory_per_sm = 233472,
                   .reserved_shared_memory_per_block = 1024,
                   .total_global_mem = 150754820096LL};
  snprintf(d.name, sizeof d.name, "NVIDIA H200");
  prof_trace_add_device(t, &d);
}

static const char *const kernels[] = {
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)",
    "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
    "at::native::MulFunctor<float> >(at::TensorIteratorBase&, at::native::MulFunctor<float> "
    "const&)::{lambda(int)#1}>(int, at::native::MulFunctor<float>)",
    "nvjet_sm90_tst_128x128_64x4_1x2_h_bz_coopA_NNT",
    "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
    "cutlass::bfloat16_t, Flash_kernel_traits<64, 128, 128, 4, cutlass::bfloat16_t> >, false, "
    "true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, "
    "at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(float*, float const*, int)",
};

static void add_kernel(prof_trace *t, uint64_t *s, int64_t start, int64_t corr) {
  int k = (int)(next(s) % (sizeof kernels / sizeof kernels[0]));
  prof_event e = prof_event_init(PROF_CAT_KERNEL, kernels[k]);
  e.pid = 0, e.tid = SYNTH_LOOP_STREAM, e.device = 0, e.stream = SYNTH_LOOP_STREAM;
  e.kind = PROF_KIND_KERNEL;
  e.start_ns = start, e.dur_ns = 1000 + (int64_t)(next(s) % 20000);
  e.correlation = corr;
  int32_t grid = k == 3 ? 132 : 1 << (8 + (int)(next(s) % 6));
  e.fp = (prof_footprint){.grid = {grid, k == 3 ? 16 : 1, 1},
                          .block = {k == 3 ? 128 : 256, 1, 1},
                          .registers_per_thread = k == 3 ? 255 : 32 + 8 * k,
                          .dynamic_shared_memory = k == 3 ? 98304 : 0,
                          .static_shared_memory = k == 4 ? 4096 : 0,
                          .shared_memory_limit_optin = k == 3,
                          .occupancy_pct_in_file = -1};
  prof_trace_append(t, &e, NULL);
}

prof_trace *synth_launch_loop(int64_t n, uint64_t seed) {
  prof_trace *t = NULL;
  prof_trace_create(&t);
  if (!t) return NULL;
  prof_trace_set_process(t, SYNTH_LOOP_PID, "python3");
  prof_trace_set_epoch_offset(t, 0);
  add_device(t);
  uint64_t s = seed | 1;
  int64_t now = 1700000000000000000LL, gpu_free = now, range_start = now;
  for (int64_t i = 0; i < n; i++) {
    if (i % SYNTH_LOOP_RANGE == 0) range_start = now;
    prof_event l = prof_event_init(PROF_CAT_CUDA_RUNTIME, "cudaLaunchKernel");
    l.pid = SYNTH_LOOP_PID, l.tid = SYNTH_LOOP_TID, l.cbid = 211;
    l.start_ns = now + 300 + (int64_t)(next(&s) % 400);
    l.dur_ns = 2000 + (int64_t)(next(&s) % 2500);
    l.correlation = i + 1;
    if (prof_trace_append(t, &l, NULL)) return prof_trace_destroy(t), NULL;
    int64_t k_start = l.start_ns + 3000 > gpu_free ? l.start_ns + 3000 : gpu_free;
    add_kernel(t, &s, k_start, l.correlation);
    gpu_free = k_start + prof_trace_at(t, prof_trace_count(t) - 1)->dur_ns + 500;
    now = l.start_ns + l.dur_ns + 200 + (int64_t)(next(&s) % 2000);
    if (i % SYNTH_LOOP_RANGE == SYNTH_LOOP_RANGE - 1 || i == n - 1) {
      prof_event r = prof_event_init(PROF_CAT_USER_ANNOTATION, "attn_fwd");
      r.pid = SYNTH_LOOP_PID, r.tid = SYNTH_LOOP_TID;
      r.start_ns = range_start, r.dur_ns = now - range_start;
      prof_trace_append(t, &r, NULL);
      now += 100;
    }
  }
  return t;
}
