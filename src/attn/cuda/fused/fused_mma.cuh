// sm_80 tensor-core and async-copy primitives shared by the fused kernels
// (flash and efficient), written from the PTX ISA: cp.async (16-byte global
// -> shared copies that complete in groups), ldmatrix (8x8 b16 tiles from
// shared memory straight into mma fragments), mma.sync m16n8k16 with fp32
// accumulators, ex2.approx, and the XOR swizzle of the shared-memory tiles.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// g = lane / 4 and t = lane % 4:
//   A 16x16 (row-major): reg0 = (row g,   cols 2t, 2t+1)   reg1 = (row g+8, cols 2t, 2t+1)
//                        reg2 = (row g,   cols 2t+8, +9)   reg3 = (row g+8, cols 2t+8, +9)
//   B 16x8  (col-major): reg0 = (rows 2t, 2t+1, col g)     reg1 = (rows 2t+8, 2t+9, col g)
//   C 16x8  (fp32):      c0,c1 = (row g, cols 2t, 2t+1)    c2,c3 = (row g+8, cols 2t, 2t+1)
// ldmatrix.x4: lanes 8i..8i+7 give the row addresses of matrix i; matrix i
// lands in register i; without .trans a lane holds (row g, cols 2t, 2t+1) of
// each, with .trans (rows 2t, 2t+1, col g).
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_CUH
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_MMA_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>
#include <string.h>

#define FUSED_DEV static __device__ __forceinline__
#define FUSED_LOG2E 1.4426950408889634f
#define FUSED_LN2 0.6931471805599453f

FUSED_DEV uint32_t fused_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// 16 bytes global -> shared, bypassing L1 (.cg). src_bytes 0 writes 16 zero
// bytes and reads nothing: the tails past S and D are zero, never garbage
// (a garbage V row times p = 0 could still be NaN).
FUSED_DEV void fused_cp_async16(uint32_t dst, const void *src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}

FUSED_DEV void fused_cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::); }

template <int kPending>
FUSED_DEV void fused_cp_async_wait(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending));
}

FUSED_DEV void fused_ldmatrix_x4(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

FUSED_DEV void fused_ldmatrix_x4_trans(uint32_t r[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// d += a * b, one m16n8k16 tile, fp32 accumulators; T: __nv_bfloat16 or __half.
template <typename T>
FUSED_DEV void fused_mma(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
  if constexpr (__is_same(T, __nv_bfloat16))
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  else
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats -> one register of two 16-bit values, lo in the low half (the
// lower column index of a fragment pair), round to nearest even.
template <typename T>
FUSED_DEV uint32_t fused_pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (__is_same(T, __nv_bfloat16)) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    memcpy(&r, &v, 4);
  } else {
    __half2 v = __floats2half2_rn(lo, hi);
    memcpy(&r, &v, 4);
  }
  return r;
}

// 2^x on the special-function unit: ex2(-inf) = +0, which the online softmax
// relies on for masked scores.
FUSED_DEV float fused_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Storage conversions for the scalar paths.
FUSED_DEV float fused_to_f32(float v) { return v; }
FUSED_DEV float fused_to_f32(__nv_bfloat16 v) { return __bfloat162float(v); }
FUSED_DEV float fused_to_f32(__half v) { return __half2float(v); }

template <typename T>
FUSED_DEV T fused_from_f32(float v) {
  if constexpr (__is_same(T, float)) return v;
  else if constexpr (__is_same(T, __nv_bfloat16)) return __float2bfloat16_rn(v);
  else return __float2half_rn(v);
}

// Element offset of (row, 16-byte chunk) in a swizzled [kRows x kD] 16-bit
// tile. The tile is cut into column blocks of 64 elements (128-byte rows) when
// kD % 64 == 0, else of 32 elements (64-byte rows, D = 96); each block is
// [kRows x W] and its chunks are XOR-permuted by row so that the 8 row
// addresses of one ldmatrix phase (8 consecutive rows, one chunk column) and
// the 8 chunks one cp.async phase writes fall in 8 different 16-byte bank
// groups: no bank conflicts without padding.
//   W = 64: chunk ^ (row % 8)           (a row fills all 32 banks)
//   W = 32: chunk ^ ((row / 2) % 4)     (two rows share the 32 banks)
template <int kRows, int kD>
FUSED_DEV int fused_swz(int row, int chunk) {
  static_assert(kD % 32 == 0, "tile width must be a multiple of 32 elements");
  if (kD % 64 == 0)
    return (chunk >> 3) * (kRows * 64) + row * 64 + (((chunk & 7) ^ (row & 7)) << 3);
  return (chunk >> 2) * (kRows * 32) + row * 32 + (((chunk & 3) ^ ((row >> 1) & 3)) << 3);
}

#endif
