#!/usr/bin/env bash
# fa3h, call 2 (from build-gpu, ablation build): the new defaults (end-short order, the tile
# schedule's divisions by multipliers) against the old ones as variants: phase stamps on the
# two D64 base-tile cells (AB 0 and 4194304 = the pairs to the end), ws_vs_torch on the whole
# grid (plaindiv = 16777216, WS_DIVQ instances; oldorder = 4194304; control), then the fp64
# flash sweep and the ws sweep with the three sanitizers under the defaults and each bit.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=40 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,4194304 --reps 20" timeout 42 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=80 VERSUS_ARGS="--var plaindiv=16777216 --var oldorder=4194304 --control --rounds 3" timeout 82 bash $F $D
echo "rc $?"
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="16777216 4194304" VERIFY_TIMEOUT=55 timeout 58 bash $F $D
echo "rc $?"
tar -czf $O/call2.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
