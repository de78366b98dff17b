#!/usr/bin/env bash
# fa3k, call 2 (from build-gpu, ablation build): the default epilogue now stores per warp (wg_stage_out's
# staging, each warp's own 16-row TMA store, no warpgroup barrier) against the old one (536870912 =
# WS_AB_EPI_OLD): the fp64 flash sweep and the ws sweep with the three sanitizers under both, phase
# stamps on the two D64 base-tile cells, ws_vs_torch on the whole grid with the old form and the control.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="536870912" VERIFY_TIMEOUT=45 timeout 48 bash $F $D
echo "rc $?"
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=25 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,536870912 --reps 20" timeout 27 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=50 VERSUS_ARGS="--var epiold=536870912 --control --rounds 3" timeout 52 bash $F $D
echo "rc $?"
tar -czf $O/call2.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
