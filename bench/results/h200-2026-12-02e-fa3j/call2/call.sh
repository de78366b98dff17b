#!/usr/bin/env bash
# fa3j, call 2 (from build-gpu, ablation build): the default decided after call 1 (the first key
# tile on its kept keys at D64 and D128, the visible part unmasked; kWsDiagHalfDefault = kD <=
# 128) against the old first key tile (134217728 = WS_AB_DIAG_FULL) and with the second key
# tile's fresh max skipped where the rows saw 64 keys or more (536870912 = WS_AB_FRESH_SKIP):
# phase stamps on the two D64 base-tile cells, ws_vs_torch on the whole grid with both variants
# and the control, then the fp64 flash sweep and the ws sweep with the three sanitizers under
# the default and both variants. Everything under $1/d, packed.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=38 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,134217728,536870912 --reps 20" timeout 40 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=55 VERSUS_ARGS="--var diagfull=134217728 --var freshskip=536870912 --control --rounds 3" timeout 58 bash $F $D
echo "rc $?"
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="134217728 536870912" VERIFY_TIMEOUT=70 timeout 73 bash $F $D
echo "rc $?"
tar -czf $O/call2.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
