#!/usr/bin/env bash
# fa3j, call 1 (from build-gpu, ablation build): the first key tile's softmax on its kept keys
# only where the rest is masked for all of a consumer's rows (kWsDiagHalfDefault, built as the
# default) against the whole tile (134217728 = WS_AB_DIAG_FULL, the old form): phase stamps on
# the two D64 base-tile cells, ws_vs_torch on the whole grid with the old form as a variant and
# the control, then the fp64 flash sweep and the ws sweep with the three sanitizers under the
# default and the old form. Everything under $1/d, packed.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=32 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,134217728 --reps 20" timeout 34 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=55 VERSUS_ARGS="--var diagfull=134217728 --control --rounds 4" timeout 58 bash $F $D
echo "rc $?"
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="134217728" VERIFY_TIMEOUT=65 timeout 68 bash $F $D
echo "rc $?"
tar -czf $O/call1.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
