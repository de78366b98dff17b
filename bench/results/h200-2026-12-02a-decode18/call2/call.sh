#!/bin/bash
# run 20 device call 2 (decode18), from build-gpu, the warps' merge by 4 the cluster kernel's
# default: the whole serving table beside PyTorch and the split stamps (with the early start)
# alone, then side by side test_seqs_gpu whole, memcheck on SEQS_TEST_QUICK=1 and racecheck on
# SEQS_TEST_QUICK=2; at most 6 files under $OUT
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=/tmp/san; mkdir -p $S
echo "start $(date +%T)"
SERVING_STEPS=table bash ../scripts/device.d/serving.sh $OUT > /dev/null 2>&1; echo "table rc=$? $(date +%T)"
timeout 20 bin/bench_decode_split_stamps 1024 50 16 > $OUT/split_stamps.txt 2>&1; echo "rc=$?" >> $OUT/split_stamps.txt
echo "benches done $(date +%T)"
(timeout 140 ctest -R '^test_seqs_gpu$' --timeout 145 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(SEQS_TEST_QUICK=1 timeout 70 $CS --tool memcheck --error-exitcode 9 bin/test_seqs_gpu > $S/memcheck_q1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_q1.txt) &
(SEQS_TEST_QUICK=2 timeout 70 $CS --tool racecheck --error-exitcode 9 bin/test_seqs_gpu > $S/racecheck_q2.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck_q2.txt) &
wait
echo "checks done $(date +%T)"
for f in memcheck_q1 racecheck_q2; do echo "== $f"; grep -E "SUMMARY|passed|FAIL|hazard" $S/$f.txt | tail -n 6; tail -n 1 $S/$f.txt; done > $OUT/checks.txt
echo "all done $(date +%T)"
grep -E "passed|FAIL|Test time|rc=" $OUT/ctest.txt | tail -6; cat $OUT/checks.txt
grep -E "^fix|rc=|first start" $OUT/split_stamps.txt
grep -E "new=|problem" $OUT/serving_table.txt | cut -c1-260
