#!/bin/bash
# run 17 device call 1, from build-gpu: validation first (side by side), then the benches alone
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
echo "start $(date +%T)"
(timeout 110 ctest -R '^test_seqs_gpu$' --timeout 120 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(for c in 1 0; do ATTNPROF_DECODE_CL_COLS=$c SEQS_TEST_QUICK=4 timeout 40 $CS --tool racecheck bin/test_seqs_gpu > $OUT/racecheck_cols$c.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/racecheck_cols$c.txt; done) &
(for c in 1 0; do ATTNPROF_DECODE_CL_COLS=$c SEQS_TEST_QUICK=2 timeout 30 $CS --tool memcheck bin/test_seqs_gpu > $OUT/memcheck_cols$c.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/memcheck_cols$c.txt; done
 ATTNPROF_DECODE_CL_COLS=1 SEQS_TEST_QUICK=2 timeout 30 $CS --tool synccheck bin/test_seqs_gpu > $OUT/synccheck_cols1.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/synccheck_cols1.txt) &
wait
echo "checks done $(date +%T)"
timeout 15 bin/bench_decode_stamps 2048 50 > $OUT/stamps_2k.txt 2>&1
timeout 12 bin/bench_decode_stamps 1024 50 > $OUT/stamps_1k.txt 2>&1
timeout 40 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --reps 20 --cells 1x2048,1x1024,2x2048 > $OUT/knobs.txt 2>&1
echo "all done $(date +%T)"
for f in ctest racecheck_cols1 racecheck_cols0 memcheck_cols1 memcheck_cols0 synccheck_cols1; do echo "== $f"; grep -E "passed|SUMMARY|FAIL|Test time|rc=" $OUT/$f.txt | tail -5; done
