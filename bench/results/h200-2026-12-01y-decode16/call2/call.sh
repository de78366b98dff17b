#!/bin/bash
# run 18 device call 2, from build-gpu: the benches alone first, then validation side by side;
# at most 6 files under $OUT
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=/tmp/san; mkdir -p $S
echo "start $(date +%T)"
timeout 60 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --reps 20 --cells 1x2048,1x1024,1x4096,2x2048,16x1024,64x1024 > $OUT/knobs.txt 2>&1
timeout 25 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --table --reps 20 --rows 8,9 > $OUT/table.txt 2>&1
echo "benches done $(date +%T)"
(timeout 100 ctest -R '^test_seqs_gpu$' --timeout 110 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(for t in 1 0; do ATTNPROF_DECODE_CL_TMA=$t SEQS_TEST_QUICK=4 timeout 30 $CS --tool racecheck bin/test_seqs_gpu > $S/racecheck_tma$t.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck_tma$t.txt; done
 SEQS_TEST_QUICK=2 timeout 30 $CS --tool racecheck bin/test_seqs_gpu > $S/racecheck2_tma1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck2_tma1.txt) &
(SEQS_TEST_QUICK=2 timeout 25 $CS --tool memcheck bin/test_seqs_gpu > $S/memcheck_tma1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_tma1.txt
 SEQS_TEST_QUICK=2 timeout 25 $CS --tool synccheck bin/test_seqs_gpu > $S/synccheck_tma1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/synccheck_tma1.txt
 SEQS_TEST_QUICK=1 timeout 40 $CS --tool memcheck bin/test_seqs_gpu > $S/memcheck_q1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_q1.txt) &
wait
echo "checks done $(date +%T)"
for f in racecheck_tma1 racecheck_tma0 racecheck2_tma1 memcheck_tma1 synccheck_tma1 memcheck_q1; do echo "== $f"; grep -E "SUMMARY|passed|FAIL" $S/$f.txt | tail -n 6; tail -n 1 $S/$f.txt; done > $OUT/sanitizers.txt
echo "all done $(date +%T)"
grep -E "passed|FAIL|Test time|rc=" $OUT/ctest.txt | tail -6; cat $OUT/sanitizers.txt
grep -E "^B=|default|tma|vhalf|cluster=0" $OUT/knobs.txt | cut -c1-150
grep -E "new=1" $OUT/table.txt | cut -c1-220
