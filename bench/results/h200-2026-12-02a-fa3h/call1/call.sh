#!/usr/bin/env bash
# fa3h, call 1 (from build-gpu, ablation build): per-step phase stamps of the D64 base tile
# on the blog shape and D64 S1k causal (AB 0, 4194304 = WS_AB_END_SHORT, 8388608 =
# WS_AB_Q_PREFETCH), then ws_vs_torch on S <= 2k and the blog shape with both as variants,
# then the fp64 ws sweep and the three sanitizers under each. Everything under $1/d, packed
# into one tarball (the device tool brings back few files).
O=$1; D=$O/d; F=../scripts/device.d/fused.sh; mkdir -p $D
echo "== phases ($SECONDS s in)"
FUSED_STEPS=phases PHASES_TIMEOUT=45 PHASES_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,4194304,8388608 --reps 20" timeout 47 bash $F $D
echo "rc $?"
echo "== versus ($SECONDS s in)"
FUSED_STEPS=versus VERSUS_TIMEOUT=55 VERSUS_ARGS="--max-s 2048 --var endshort=4194304 --var qpf=8388608 --var both=12582912 --control --rounds 4" timeout 57 bash $F $D
echo "rc $?"
echo "== verify ($SECONDS s in)"
FUSED_STEPS=verify VERIFY_AB="4194304 8388608" VERIFY_TIMEOUT=52 timeout 55 bash $F $D
echo "rc $?"
tar -czf $O/call1.tgz -C $O d && rm -rf $D
echo "($SECONDS s in)"
