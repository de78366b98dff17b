#!/usr/bin/env bash
# fa3k, call 1 (from build-gpu, ablation build): the cold start (268435456 = WS_AB_COLD, Q and K0
# before the rest of the first ring) and the old epilogue (536870912 = WS_AB_EPI_OLD; the default
# here is the per-warp one): the fp64 flash sweep and the ws sweep with the three sanitizers
# under each, phase stamps on the two D64 base-tile cells, ws_vs_torch on S <= 2k and the blog
# shape with both as variants and the control.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="268435456 536870912" VERIFY_TIMEOUT=52 timeout 55 bash $F $D
echo "rc $?"
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=30 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,268435456,536870912 --reps 20" timeout 32 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=38 VERSUS_ARGS="--max-s 2048 --var cold=268435456 --var epiold=536870912 --control --rounds 4" timeout 40 bash $F $D
echo "rc $?"
tar -czf $O/call1.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
