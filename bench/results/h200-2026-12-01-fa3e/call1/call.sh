#!/usr/bin/env bash
# fa3e, call 1: checks of the WS_SERIAL instances, then the D64 S1k cells.
O=$1; T=50
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
FUSED_TEST_ONLY=flash timeout $T ./bin/test_fused_gpu > $O/test_flash.txt 2>&1 &
for ab in 65536 196608; do
  ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=$ab FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $O/test_ws_base_ab$ab.txt 2>&1 &
done
ATTNPROF_FLASH_WS_AB=65536 FUSED_TEST_ONLY=ws timeout $T ./bin/test_fused_gpu > $O/test_ws_ab65536.txt 2>&1 &
for t in racecheck synccheck; do
  ATTNPROF_FLASH_WS_TILE=base ATTNPROF_FLASH_WS_AB=65536 FUSED_TEST_ONLY=ws FUSED_TEST_QUICK=1 timeout $T "$cs" --tool $t --error-exitcode 3 ./bin/test_fused_gpu > $O/san_ws_${t}_base_ab65536.txt 2>&1 &
done
wait
for f in $O/test_*.txt $O/san_*.txt; do echo "== $(basename $f)"; grep -E "FAIL|ERROR SUMMARY|RACECHECK SUMMARY|passed|failed|shapes" $f | tail -5; done
echo "== versus ($SECONDS s in)"
PYTHONUNBUFFERED=1 timeout 55 python3 ../bench/fused/ws_vs_torch.py --lib ./lib/libattnprof.so --reps 10 --no-wgmma --d 64 --max-s 1024 --var serial=65536 --var swait=196608 --control --rounds 6 > $O/ws_versus.txt 2>&1
echo "rc $?"
cat $O/ws_versus.txt | tail -40
echo "($SECONDS s in)"
