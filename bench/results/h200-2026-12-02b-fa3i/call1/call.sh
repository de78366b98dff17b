#!/usr/bin/env bash
# fa3i, call 1 (from build-gpu, ablation build): per-step phase stamps of the D64 base tile on
# the blog shape and D64 S1k causal (AB 0; 33554432 = WS_AB_LATE, the turn passed on the sums
# and packs; 100679680 = late + desc + rskip), then ws_vs_torch on S <= 2k and the blog shape
# with desc (16384), late, ld (late + desc) and ldr as variants and the control, then the fp64
# ws sweep and the three sanitizers under late, ld and ldr. Everything under $1/d, packed.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=40 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,33554432,100679680 --reps 20" timeout 42 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=50 VERSUS_ARGS="--max-s 2048 --var desc=16384 --var late=33554432 --var ld=33570816 --var ldr=100679680 --control --rounds 4" timeout 52 bash $F $D
echo "rc $?"
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="33554432 33570816 100679680" VERIFY_TIMEOUT=75 timeout 78 bash $F $D
echo "rc $?"
tar -czf $O/call1.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
