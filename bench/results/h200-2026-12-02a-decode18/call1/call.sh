#!/bin/bash
# run 20 device call 1 (decode18), from build-gpu: the benches alone (the cluster kernel's stamps
# at 2k and 1k, the split kernel's stamps at B=16 KV=1k, the knob A/B beside cuDNN), then side by
# side test_seqs_gpu whole, the new knobs under test_seqs_gpu quick and the sanitizers on the new
# paths; at most 7 files under $OUT
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=/tmp/san; mkdir -p $S
echo "start $(date +%T)"
timeout 20 bin/bench_decode_stamps 2048 50 > $OUT/stamps_2k.txt 2>&1; echo "rc=$?" >> $OUT/stamps_2k.txt
timeout 15 bin/bench_decode_stamps 1024 50 > $OUT/stamps_1k.txt 2>&1; echo "rc=$?" >> $OUT/stamps_1k.txt
timeout 20 bin/bench_decode_split_stamps 1024 50 16 > $OUT/split_stamps.txt 2>&1; echo "rc=$?" >> $OUT/split_stamps.txt
timeout 50 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --knob-set cols --reps 20 --cells 1x2048,1x1024,16x1024 > $OUT/knobs.txt 2>&1; echo "rc=$?" >> $OUT/knobs.txt
echo "benches done $(date +%T)"
(timeout 100 ctest -R '^test_seqs_gpu$' --timeout 105 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(ATTNPROF_DECODE_CL_COLS=1 SEQS_TEST_QUICK=1 timeout 40 bin/test_seqs_gpu > $S/test_cols1_q1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/test_cols1_q1.txt
 ATTNPROF_DECODE_FIX=3 SEQS_TEST_QUICK=1 timeout 40 bin/test_seqs_gpu > $S/test_fix3_q1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/test_fix3_q1.txt) &
(SEQS_TEST_QUICK=4 timeout 30 $CS --tool racecheck --error-exitcode 9 bin/test_seqs_gpu > $S/racecheck_q4.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck_q4.txt
 ATTNPROF_DECODE_CL_COLS=1 SEQS_TEST_QUICK=4 timeout 30 $CS --tool racecheck --error-exitcode 9 bin/test_seqs_gpu > $S/racecheck_q4_cols1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck_q4_cols1.txt) &
(SEQS_TEST_QUICK=2 timeout 30 $CS --tool memcheck --error-exitcode 9 bin/test_seqs_gpu > $S/memcheck_q2.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_q2.txt
 ATTNPROF_DECODE_CL_COLS=1 SEQS_TEST_QUICK=2 timeout 30 $CS --tool memcheck --error-exitcode 9 bin/test_seqs_gpu > $S/memcheck_q2_cols1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_q2_cols1.txt
 ATTNPROF_DECODE_CL_COLS=1 SEQS_TEST_QUICK=2 timeout 30 $CS --tool synccheck --error-exitcode 9 bin/test_seqs_gpu > $S/synccheck_q2_cols1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/synccheck_q2_cols1.txt
 SEQS_TEST_QUICK=2 timeout 30 $CS --tool synccheck --error-exitcode 9 bin/test_seqs_gpu > $S/synccheck_q2.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/synccheck_q2.txt) &
wait
echo "checks done $(date +%T)"
for f in test_cols1_q1 test_fix3_q1 racecheck_q4 racecheck_q4_cols1 memcheck_q2 memcheck_q2_cols1 synccheck_q2_cols1 synccheck_q2; do echo "== $f"; grep -E "SUMMARY|passed|FAIL|hazard|error" $S/$f.txt | tail -n 6; tail -n 1 $S/$f.txt; done > $OUT/checks.txt
echo "all done $(date +%T)"
grep -E "passed|FAIL|Test time|rc=" $OUT/ctest.txt | tail -5; cat $OUT/checks.txt
grep -E "^C=8|rc=" $OUT/stamps_2k.txt $OUT/stamps_1k.txt | cut -c1-200
grep -E "^fix|floor|rc=|first start" $OUT/split_stamps.txt
grep -E "^B=|default|cols=1|fix=3|rc=" $OUT/knobs.txt | cut -c1-170
