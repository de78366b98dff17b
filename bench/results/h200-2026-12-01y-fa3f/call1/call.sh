#!/usr/bin/env bash
# fa3f, call 1 (from build-gpu, ablation build): checks of WS_ROLLED, WS_DYN and the
# defaults with the dynamic schedule compiled out, then D64 S1k / D128 short cells, then ncu.
O=$1; T=60
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
FUSED_TEST_ONLY=flash timeout $T ./bin/test_fused_gpu > $O/test_flash.txt 2>&1 &
ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=524288 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $O/test_ws_base_ab524288.txt 2>&1 &
for ab in 524288 262144 1024; do
  ATTNPROF_FLASH_WS_AB=$ab FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $O/test_ws_ab$ab.txt 2>&1 &
done
for t in racecheck synccheck memcheck; do
  ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=524288 FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout $T "$cs" --tool $t --error-exitcode 3 ./bin/test_fused_gpu > $O/san_ws_${t}_base_ab524288.txt 2>&1 &
done
wait
for f in $O/test_*.txt $O/san_*.txt; do echo "== $(basename $f)"; grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|shapes" $f | tail -5; done
echo "== versus D64 ($SECONDS s in)"
PYTHONUNBUFFERED=1 timeout 50 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so --reps 10 --no-wgmma --d 64 --max-s 1024 --var rolled=524288 --var dyncode=262144 --control --rounds 6 > $O/ws_versus_d64.txt 2>&1
echo "rc $?"; tail -32 $O/ws_versus_d64.txt
echo "== versus D128 ($SECONDS s in)"
PYTHONUNBUFFERED=1 timeout 35 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so --reps 10 --no-wgmma --d 128 --max-s 2048 --var rolled=524288 --control --rounds 3 > $O/ws_versus_d128.txt 2>&1
echo "rc $?"; tail -24 $O/ws_versus_d128.txt
echo "== ncu ($SECONDS s in)"
mkdir -p $O/ncu
if [ "$SECONDS" -lt 115 ]; then
  FUSED_STEPS=ncu NCU_TIMEOUT=58 NCU_KERNELS="flash_fwd_ws|sdpa" NCU_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,524288 --cudnn" timeout 68 bash ../scripts/device.d/fused.sh $O/ncu
  echo "rc $?"; cat $O/ncu/ncu_compare.txt 2>/dev/null | head -60
else
  echo "ncu: not run (time)"
fi
echo "($SECONDS s in)"
