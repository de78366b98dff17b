// Tile shapes of the warp-specialized flash kernel (flash_fwd_ws_kernel.cuh)
// and the one function that picks one per (head dim, causal, Sq).
// WS_TILE_BASE: the first shapes (128 x 128, 128 x 64 at D256, two consumer
// warpgroups), measured in bench/NOTES.md "ws: result".
// WS_TILE_FA3: FlashAttention-3's published choices: 192 query rows over
// three consumer warpgroups at D64, 128 x 176 K/V tiles at D128, 128 x 80 at
// D256. Which one each cell runs was decided by measurement (bench/NOTES.md,
// "ws tiles: result"); ws_tile_pick holds the outcome.
#ifndef ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TILE_H
#define ATTNPROF_SRC_ATTN_CUDA_FUSED_WS_TILE_H

enum { WS_TILE_BASE = 0, WS_TILE_FA3 = 1 };

// attn_fused_params.ws_ab, bench only (read from ATTNPROF_FLASH_WS_AB by an
// ablation build; 0 otherwise): the kernel as it was before the snake
// schedule (WS_AB_STRIDE, implies WS_AB_LPT), before the second Q buffer
// (WS_AB_ONE_Q), before causal tiles were paired per head (WS_AB_LPT: the
// longest-first order over all heads, dealt in a snake), with the
// epilogue waiting for its TMA store before the next tile (WS_AB_STORE_WAIT),
// with causal tiles paired at every length (WS_AB_PAIR), and, where one Q
// buffer fits, with O staged in the Q buffer and stored by TMA, the next
// tile's Q waiting for that store (WS_AB_O_SMEM; the kernel before O went
// straight from registers there). WS_AB_CLUSTER (non-causal, bf16): the
// instance with kFlags WS_CLUSTER, CTAs in clusters of two on adjacent m
// blocks of one head, each loading half of every K and V tile into both by
// TMA multicast (half the L2-to-SM reads per CTA). WS_AB_EAGER: the plain
// online softmax, O rescaled on every key tile (the kernel before the lazy
// softmax, which moves a row's max only when it rose by more than 8 in log2
// units and skips O's rescale in warps whose rows all kept theirs).
// WS_AB_TREE: the instance with kFlags WS_TREE, the other softmax form than
// kWsTreeDefault (false: the bit runs the row max and sum as trees of 4
// partials, every exp2's FFMA first; true: the bit runs the plain chains).
// With WS_AB_CLUSTER too, the cluster instance (the default form) runs
// where it applies (non-causal bf16).
// WS_AB_STALE: the instances with kFlags WS_STALE, the other softmax form
// than kWsStaleDefault names for their D (before WS_AB_TREE if both).
// WS_AB_DYN: tiles taken from a global counter by each CTA's producer as it
// finishes loading the last one (a dynamic persistent schedule; no clusters)
// instead of the static rounds (ws_sched; bench/NOTES.md "ws: short S, where
// the time goes"). WS_AB_STAMPS (bf16, D64 both tiles, D128 base): the
// instance with kFlags WS_STAMPS, which records clock stamps per CTA and tile
// and writes them to the file ATTNPROF_FLASH_WS_STAMPS after each call
// (bench/fused/ws_phases.py). WS_AB_EXP_FMA8 / 4 (bf16 D64, the stale-max
// softmax): the instances with kFlags WS_EXP_FMA8 / 4, every 8th / 4th exp2
// of the stale-max softmax on the FMA pipe. WS_AB_DESC (bf16): the
// instances with kFlags WS_DESC, the other wgmma descriptor form than
// kWsDescStepDefault names. WS_AB_TURN_EXP (bf16): the instances with kFlags
// WS_TURN_EXP, the other place for the ping-pong's turns than
// kWsTurnExpDefault names (around the product issue at the D64 base tile,
// around the exps elsewhere). WS_AB_SERIAL (bf16 D64 base tile): the
// instance with kFlags WS_SERIAL, cuDNN's order per key tile (S waited at
// once, no S of the next tile under the softmax); with WS_AB_SERIAL_WAIT too,
// the one with WS_SERIAL_WAIT (P V waited at once as well). Measured 1.03
// and 1.04-1.05x the default's time (bench/NOTES.md "ws: the D64 base tile
// in cuDNN's order").
// WS_AB_DYN runs in the instances with kFlags WS_DYN (bf16; the others have
// the dynamic schedule compiled out) and the stamps instances; WS_AB_DYN_CODE
// (bf16) the WS_DYN instances on the static schedule: the kernel as it was
// before the dynamic schedule's test was compiled out of the others.
// WS_AB_ROLLED (bf16 D64 and D128, the stale-max softmax): the instances
// with kFlags WS_ROLLED, the other key loop form than kWsRolledDefault names;
// with WS_AB_PV_FIRST too, those with WS_PV_FIRST as well (that loop waits for
// P V(i-1) before the exps, which pack P themselves: no second P register set).
// WS_AB_SPLIT (bf16 D64 base tile): the instance with kFlags WS_SPLIT, the
// other row max / row sum form than kWsSplitDefault names; with
// WS_AB_EXP_FMA8 too, the one with kFlags WS_EXP_FMA8 as well.
// WS_AB_END_SHORT (every instance, a run-time test in the schedule): where
// causal tiles are paired per head, the other order than kWsEndShortDefault
// names (the pairs in every round, or the pairs for the rounds that all CTAs
// fill and then the rest's m blocks one by one, longest first, so that the
// last round holds only short tiles; flash_fwd_ws_kernel.cuh ws_sched).
// WS_AB_Q_PREFETCH (bf16 D64 and D128 base tiles; with WS_AB_STAMPS, D64's
// stamps instance): the instances with kFlags WS_QPF, the other Q prefetch
// than kWsQPrefetchDefault names. WS_AB_PLAIN_DIV (bf16, both tiles): the
// instances with kFlags WS_DIVQ, the tile schedule's divisions as plain /
// and % (the kernel before ws_div's multipliers). WS_AB_LATE (bf16 D64 base
// tile; with WS_AB_STAMPS, its stamps instance): the instances with kFlags
// WS_LATE, the other hand-over of the turn after the stale-max exps than
// kWsLateDefault names (the old one, through l after the check's vote).
// WS_AB_RSKIP (bf16 D64 base tile; with WS_AB_STAMPS, its stamps instance):
// the instances with kFlags WS_DESC | WS_RSKIP, stepped descriptors and, where
// a stale-max step took no fresh max and no fallback (alpha is 1), no
// rescale and no vote for it. WS_AB_DIAG_FULL (bf16, both tiles; with
// WS_AB_STAMPS, D64's stamps instance): the instances with kFlags
// WS_DIAG_FULL, the other first-key-tile softmax than kWsDiagHalfDefault
// names (the whole tile masked, maxed and exponentiated). WS_AB_FRESH_SKIP
// (bf16 D64 and D128, both tiles; with WS_AB_STAMPS, D64's base stamps
// instance): the instances with kFlags WS_FRESH_SKIP, the other rule for the
// stale-max loop's second key tile than kWsFreshSkipDefault names (the old
// one: fresh in every consumer).
enum { WS_AB_STRIDE = 1, WS_AB_ONE_Q = 2, WS_AB_LPT = 4, WS_AB_STORE_WAIT = 8, WS_AB_PAIR = 16,
       WS_AB_O_SMEM = 32, WS_AB_CLUSTER = 64, WS_AB_EAGER = 128, WS_AB_TREE = 256,
       WS_AB_STALE = 512, WS_AB_DYN = 1024, WS_AB_STAMPS = 2048, WS_AB_EXP_FMA8 = 4096,
       WS_AB_EXP_FMA4 = 8192, WS_AB_DESC = 16384, WS_AB_TURN_EXP = 32768,
       WS_AB_SERIAL = 65536, WS_AB_SERIAL_WAIT = 131072, WS_AB_DYN_CODE = 262144,
       WS_AB_ROLLED = 524288, WS_AB_PV_FIRST = 1048576,
       WS_AB_SPLIT = 2097152, WS_AB_END_SHORT = 4194304, WS_AB_Q_PREFETCH = 8388608,
       WS_AB_PLAIN_DIV = 16777216, WS_AB_LATE = 33554432,
       WS_AB_RSKIP = 67108864, WS_AB_DIAG_FULL = 134217728, WS_AB_FRESH_SKIP = 536870912 };

// The ws kernel's softmax form (flash_fwd_ws_kernel.cuh ws_soft): false,
// wg_softmax's chains; true, ws_softmax_tree (bench/NOTES.md "ws: softmax
// trees" measures both).
constexpr bool kWsTreeDefault = false;

// The stale-max softmax (flash_fwd_ws_kernel.cuh ws_softmax_stale: exps
// against the running max, checked by the row sums) by default at D 64 and
// 128, wg_softmax's form at D256 (H200, bf16, bench/NOTES.md "ws softmax,
// fewer instructions per score", two runs: 1-15 % faster at D64/D128 on every
// cell of the grid, 0-13 % slower at D256, where its FA3 instance spills).
// Instances with kFlags WS_STALE run the other form; WS_TREE instances and
// the bench-only flag instances keep wg_softmax's and ws_softmax_tree.
template <int kD>
constexpr bool kWsStaleDefault = kD <= 128;

// The wgmma descriptors (flash_fwd_ws_kernel.cuh issue_s / issue_pv): false,
// each k step's two descriptors built whole from its shared-memory address
// (wg_desc: mask, shift, or, about 8 uniform-datapath instructions each);
// true, one descriptor per operand and product, each k step's offset added
// to its low word (ws_desc_step: one add). Bench: WS_DESC runs the other.
constexpr bool kWsDescStepDefault = false;

// Where the ping-pong's turns are taken (flash_fwd_ws_kernel.cuh
// ws_turn_wait): true, around each softmax's exps, as cuDNN's D64 kernel
// does; false, around the issue of S and P V. Exps at the D64 base tile
// (two consumers: the short causal cells), measured in one run (H200, bf16,
// bench/NOTES.md "ws: the ping-pong's turn around the exps"): D64 S1k causal
// 5 % faster, the blog shape 3 %; FA3's D64 tile (three consumers) lost
// 10-25 % with it, D128 and D256 moved within the run's noise.
template <int kD, int kTile>
constexpr bool kWsTurnExpDefault = kD == 64 && kTile == WS_TILE_BASE;

// The key loop of the stale-max softmax (flash_fwd_ws_kernel.cuh): false,
// the first key tile peeled, the step unrolled by two (P(i-1) and P(i) in
// two register buffers), each copy with its stale-max fallback; true, one
// body for every key tile (WS_ROLLED's form): the exps in place in S, P
// packed from them after P V(i-1)'s wait into one P buffer, so one copy of
// the step and of the fallback, in the same order (S(i) issued, then P V(i-1),
// the softmax under P V). Bench: WS_ROLLED runs the other.
template <int kD, int kTile>
constexpr bool kWsRolledDefault = false;

// The softmax's row max and row sum per row half in the unrolled key loop
// (flash_fwd_ws_kernel.cuh: the first key tile, the fresh max, the
// stale-max exps; wg_row_max, wg_exp_row): false, one dependent FMNMX and
// one FADD chain of kBN / 8 steps each; true, kWsSplit independent partials
// folded at the end (chains a kWsSplit-th as long). Measured equal (H200,
// D64 S1k causal and the blog shape 1.00x, bench/NOTES.md "ws: the softmax's
// row max and sum as partial chains"): the sums already run in the exp2
// unit's shadow. Bench: WS_SPLIT runs the other.
constexpr int kWsSplit = 4;
template <int kD, int kTile>
constexpr bool kWsSplitDefault = false;

// The paired causal schedule's end (flash_fwd_ws_kernel.cuh ws_sched_of):
// false, pairs in every round, so that the last round's CTAs run a whole
// pair or nothing; true, pairs for F rounds, then the remaining pairs' m
// blocks dealt one by one longest first in a snake (ws_single_at), so that
// the last round holds the shortest tiles. Measured (H200, bf16, bench/NOTES.md
// "ws: per-step phase stamps ...: call 1", 4 rounds, the control 1.00 on
// these cells): var / default time 0.99 at D64 S1k causal, 1.00 on the blog
// shape, 0.98 / 0.97 at D128 S1k / S2k causal, 0.99-1.00 at D256; the CTAs'
// end spread 21 -> 7 us (blog) and 26 -> 14 us (D64 S1k causal); in the
// next run, the old order 1.02-1.03x this one's time on the S1k causal cells
// and the blog shape, 1.00 elsewhere ("ws: the schedule's divisions"). Bench:
// WS_AB_END_SHORT runs the other (the pairs to the end).
constexpr bool kWsEndShortDefault = true;

// Q into L2 ahead of its load (flash_fwd_ws_kernel.cuh, static schedule):
// false, none; true, at each tile's start (Q landed) thread 0 of consumer 0
// prefetches the Q boxes of this CTA's tile after next into L2 by TMA, so
// that their load (issued once a Q buffer is free, at the next tile's first
// S) comes from L2 and not HBM. Bench: WS_QPF instances (WS_AB_Q_PREFETCH) run the other.
constexpr bool kWsQPrefetchDefault = false;

// The stale-max step's hand-over of the ping-pong's turn after its exps
// (flash_fwd_ws_kernel.cuh): true, on the row sums and P's packs
// (ws_turn_pass_late: no vote before the arrival, the packs inside the
// turn, the stale-max check's vote and l after it); false, through l after
// the check (ws_turn_pass_exp). Where the turns sit around the exps
// (kWsTurnExpDefault: the D64 base tile). Measured (H200, bf16, bench/NOTES.md
// "ws: the turn passed on the sums and packs: call 1", 4 rounds, the control 1.00
// on both cells): var / default time 0.97 at D64 S1k causal (331.6 -> 341.1
// TF/s), 0.98 on the blog shape (58.1 -> 56.9 us); in the whole grid's run the
// old form 1.03x on both, 1.00 elsewhere ("... as default: call 2"). Bench:
// WS_LATE runs the other.
template <int kD, int kTile>
constexpr bool kWsLateDefault = kD == 64 && kTile == WS_TILE_BASE;

// The first key tile's softmax (flash_fwd_ws_kernel.cuh, the causal
// diagonal or the ragged last tile, walked first): true, where every one of a
// consumer's 64 rows has all keys past the tile's first kept keys masked
// (ws_diag_keep: half the tile, rounded down to whole 16-key P fragments;
// consumer 0 on the diagonal when Sq = Sk), mask, max and exps run on those
// keys only and the rest of P is zero (half its exps); and where a consumer's
// rows all see keys 0..kept-1 (consumer 1 there), only the rest is masked.
// false: the whole tile masked, maxed and exponentiated, as before. Bench:
// WS_DIAG_FULL runs the other. Measured (H200, bf16, bench/NOTES.md "ws: the
// diagonal tile's masked half skipped", two runs, var / default time, the
// control 1.00-1.01): the whole tile 1.01 and 0.99 on the blog shape, 1.00
// and 1.01 on D64 S1k causal, 1.01-1.02 on D128 S1k causal, 1.03 and 1.03 on
// D64 S2k causal (FA3's tile); consumer 0's first softmax 1098 -> 731-745
// clocks. At D256 the code alone cost 1-2 % on every cell (the whole tile
// 0.98-0.99 in the first run), so off there. kWsFreshSkipDefault's rule needs
// its votes.
template <int kD, int kTile>
constexpr bool kWsDiagHalfDefault = kD <= 128;
// The stale-max loop's second key tile when causal (flash_fwd_ws_kernel.cuh
// step: the max taken fresh there, as the diagonal tile may give a row a few
// keys only): false, fresh in every consumer; true, skipped by a consumer
// whose rows all saw the first key tile's first ws_diag_keep keys (64 or
// more: consumer 1 on the diagonal with Sq = Sk), which then takes the
// stale-max exps, checked by the sums as every later step (a failed check
// falls back as there). Bench: WS_FRESH_SKIP runs the other. Measured (H200,
// bf16, bench/NOTES.md "ws: the diagonal tile's masked half skipped: call 2",
// 3 rounds, the control 1.00 on both cells): the old rule 1.02x this one's
// time on the blog shape and D64 S1k causal (plain kernel 56.5 against 55.4
// us, 196.5 against 193.2 us), 1.01 on D128 S1k / S2k causal, 1.00 on FA3's
// D64 causal cells; consumer 1's second key tile 2352 -> 2075 clocks. Only
// where kWsDiagHalfDefault's votes are taken (D64, D128).
template <int kD, int kTile>
constexpr bool kWsFreshSkipDefault = true;
// The keys kept by that softmax in a kBN-key tile.
template <int kBN>
constexpr int ws_diag_keep = kBN / 2 / 16 * 16;

// kBM query rows (64 per consumer warpgroup), kBN keys per K/V tile, kStages
// ring slots per K and V, kCons consumer warpgroups, the setmaxnreg split
// (producer, consumer: 128 x (kProdRegs + kCons x kConsRegs) <= 64 K).
template <int kD, int kTile>
struct ws_shape {
  static constexpr bool kFa3 = kTile == WS_TILE_FA3;
  static constexpr int kBM = kFa3 && kD == 64 ? 192 : 128;
  static constexpr int kBN = kFa3 ? (kD == 64 ? 128 : kD == 128 ? 176 : 80) : (kD == 256 ? 64 : 128);
  static constexpr int kStages = kD == 64 ? 4 : 2;
  static constexpr int kCons = kBM / 64;
  static constexpr int kProdRegs = kCons == 3 ? 32 : 24;
  static constexpr int kConsRegs = kCons == 3 ? 160 : 240;
};

// The shape each (D, causal, Sq) runs by default: FA3's where it passed the
// fp64 checks and measured faster than the base shape in the same run
// (bench/NOTES.md "ws tiles: result", H200, bf16, one round: differences
// under about 5 % are within that run's noise), else the base shape.
static inline int ws_tile_pick(int d, int causal, long long sq) {
  const int short_seq = sq < 2048; // the S 1k cells of the grid
  switch (d) {
  // D64: three consumers hide the softmax that two did not (1.08-1.31x the
  // base non-causal, 1.11-1.19x causal at S >= 2k); causal S 1k measured
  // 0.96-0.97x (192-row tiles pad 1024 rows by 12 %, fewer tiles per SM).
  case 64: return causal && short_seq ? WS_TILE_BASE : WS_TILE_FA3;
  // D128 non-causal: 176-key tiles fill shared memory (32 + 4 x 44 KB) and
  // pay the per-tile cost 27 % less often per key: 1.01-1.06x at S >= 2k,
  // 0.99x at S 1k. Causal keeps 128 x 128 (FA3's choice too) below S 16k: a
  // wider tile wastes more masked keys on the diagonal; measured 0.91-0.99x
  // at S <= 8k (0.80 at S 1k with the paired schedule). At S 16k causal
  // 176 measured 1.06x and 1.05x in two runs (2026-12-01, -01d).
  case 128: return short_seq || (causal && sq < 16384) ? WS_TILE_BASE : WS_TILE_FA3;
  // D256: 80-key tiles (64 + 4 x 40 KB): 1.03-1.15x non-causal, 1.01-1.10x
  // causal at S >= 2k; causal S 1k measured 0.99x.
  default: return causal && short_seq ? WS_TILE_BASE : WS_TILE_FA3;
  }
}

#endif
