#!/usr/bin/env bash
# fa3f, call 2 (from build-gpu, ablation build): checks of WS_ROLLED | WS_PV_FIRST (AB 1572864),
# the whole grid with the default (dynamic schedule compiled out), main's kernel (dyncode),
# WS_ROLLED and WS_PV_FIRST, then ncu's pages of the default and WS_PV_FIRST on the two D64
# causal cells (one tarball: the device tool brings back few files).
O=$1; T=55
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
mkdir -p /tmp/fa3f_chk
ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=1572864 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > /tmp/fa3f_chk/test_ws_base_ab1572864.txt 2>&1 &
ATTNPROF_FLASH_WS_AB=1572864 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > /tmp/fa3f_chk/test_ws_ab1572864.txt 2>&1 &
for t in racecheck synccheck memcheck; do
  ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=1572864 FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout $T "$cs" --tool $t --error-exitcode 3 ./bin/test_fused_gpu > /tmp/fa3f_chk/san_ws_${t}_base_ab1572864.txt 2>&1 &
done
wait
for f in /tmp/fa3f_chk/*.txt; do echo "== $(basename $f)"; grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|shapes" $f | tail -5; done
echo "== versus grid ($SECONDS s in)"
PYTHONUNBUFFERED=1 timeout 90 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so --reps 10 --no-wgmma --control --rounds 3 --var dyncode=262144 --var rolled=524288 --var pvfirst=1572864 > $O/ws_versus_grid.txt 2>&1
echo "rc $?"; sed -n '/^control:/,$p' $O/ws_versus_grid.txt
echo "== ncu ($SECONDS s in)"
mkdir -p /tmp/fa3f_ncu
if [ "$SECONDS" -lt 140 ]; then
  FUSED_STEPS=ncu NCU_TIMEOUT=40 NCU_ARGS="--cells 8x16x1024x64c,16x32x1024x64c --ab 0,1572864" timeout 50 bash ../scripts/device.d/fused.sh /tmp/fa3f_ncu
  echo "rc $?"; grep -E "gpu__time|inst_executed.sum|no_instruction|branch_resolving|wait_per|dispatch_stall|barrier_per|gmma_per|imc_miss" /tmp/fa3f_ncu/ncu_compare.txt | head -12
else
  echo "ncu: not run (time)"
fi
tar -czf $O/checks_ncu.tgz -C /tmp fa3f_chk fa3f_ncu
echo "($SECONDS s in)"
