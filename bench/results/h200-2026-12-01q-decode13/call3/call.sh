#!/bin/bash
# run 15 device call 3, from build-gpu: validation first (side by side), then the bench alone
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
(timeout 76 ctest -R '^test_seqs_gpu$' -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(SEQS_TEST_QUICK=4 timeout 76 $CS --tool racecheck bin/test_seqs_gpu > $OUT/racecheck.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/racecheck.txt) &
(for t in memcheck synccheck; do SEQS_TEST_QUICK=2 timeout 30 $CS --tool $t bin/test_seqs_gpu > $OUT/$t.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/$t.txt; done
 ATTNPROF_DECODE_CL_WIDE=0 ATTNPROF_DECODE_CL_RELAX=0 SEQS_TEST_QUICK=2 timeout 30 $CS --tool memcheck bin/test_seqs_gpu > $OUT/memcheck_wide0.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/memcheck_wide0.txt) &
wait
echo "checks done $(date +%T)"
timeout 10 bin/bench_decode_stamps 2048 50 > $OUT/stamps_2k.txt 2>&1
timeout 8 bin/bench_decode_stamps 1024 50 > $OUT/stamps_1k.txt 2>&1
timeout 24 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --reps 20 --cells 1x2048,1x1024,2x2048 > $OUT/knobs.txt 2>&1
echo "all done $(date +%T)"
