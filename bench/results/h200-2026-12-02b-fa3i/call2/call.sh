#!/usr/bin/env bash
# fa3i, call 2 (from build-gpu, ablation build): the new default (the D64 base tile's stale-max
# step passes the turn on its sums and packs, kWsLateDefault) against the old hand-over
# (33554432 = WS_AB_LATE now): phase stamps on the two D64 base-tile cells, ws_vs_torch on the
# whole grid with the old form as a variant and the control, then the fp64 flash sweep and the
# ws sweep with the three sanitizers under the default and under the old form.
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=30 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,33554432 --reps 20" timeout 32 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=75 VERSUS_ARGS="--var oldturn=33554432 --control --rounds 3" timeout 78 bash $F $D
echo "rc $?"
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="33554432" VERIFY_TIMEOUT=55 timeout 58 bash $F $D
echo "rc $?"
tar -czf $O/call2.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
