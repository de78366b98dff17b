#!/usr/bin/env bash
# fa3g, call 1 (from build-gpu, ablation build): checks of WS_SPLIT (AB 2097152: the row max
# and sum as 4 partials per row half, bf16 D64 base tile) and of the default instances, then
# D64 S1k / blog cells with split, fma8 (AB 4096, re-measured under the turn around the
# exps) and both (AB 2101248), then ncu of the default, split and split+fma8 on the two D64
# causal cells. Logs of the
# checks and the ncu pages in one tarball (the device tool brings back few files).
O=$1; T=55
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
C=/tmp/fa3g_chk; mkdir -p $C
FUSED_TEST_ONLY=flash timeout $T ./bin/test_fused_gpu > $C/test_flash.txt 2>&1 &
ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=2097152 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $C/test_ws_base_ab2097152.txt 2>&1 &
ATTNPROF_FLASH_WS_AB=2097152 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $C/test_ws_ab2097152.txt 2>&1 &
ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=2101248 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $C/test_ws_base_ab2101248.txt 2>&1 &
for t in racecheck synccheck memcheck; do
  ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=2097152 FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout $T "$cs" --tool $t --error-exitcode 3 ./bin/test_fused_gpu > $C/san_ws_${t}_base_ab2097152.txt 2>&1 &
done
wait
for f in $C/*.txt; do echo "== $(basename $f)"; grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|shapes" $f | tail -5; done
echo "== versus D64 ($SECONDS s in)"
PYTHONUNBUFFERED=1 timeout 40 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so --reps 10 --no-wgmma --d 64 --max-s 1024 --var split=2097152 --var fma8=4096 --var splitfma8=2101248 --control --rounds 6 > $O/ws_versus_d64.txt 2>&1
echo "rc $?"; sed -n '/^summary:/,$p' $O/ws_versus_d64.txt
echo "== ncu ($SECONDS s in)"
N=/tmp/fa3g_ncu; mkdir -p $N
if [ "$SECONDS" -lt 95 ]; then
  FUSED_STEPS=ncu NCU_TIMEOUT=45 NCU_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,2097152,2101248" timeout 52 bash ../scripts/device.d/fused.sh $N
  echo "rc $?"; grep -E "gpu__time|inst_executed.sum|no_instruction|branch_resolving|wait_per|dispatch_stall|barrier_per|gmma_per|imc_miss|math_pipe|mio_throttle|short_score" $N/ncu_compare.txt | head -24
else
  echo "ncu: not run (time)"
fi
tar -czf $O/checks_ncu.tgz -C /tmp fa3g_chk fa3g_ncu
echo "($SECONDS s in)"
