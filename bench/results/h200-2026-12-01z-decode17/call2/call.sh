#!/bin/bash
# run 19 device call 2 (decode17), from build-gpu, merge by 4 columns the default (FIX 11):
# the A/B on cells with several splits and repeats, the table rows, then test_seqs_gpu whole
# and memcheck on SEQS_TEST_QUICK=1 side by side; at most 5 files under $OUT
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=/tmp/san; mkdir -p $S
echo "start $(date +%T)"
timeout 40 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --knob-set split --reps 20 --cells 16x1024,1x4096,2x2048,1x8192,1x131072,64x8192 > $OUT/knobs.txt 2>&1
timeout 25 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --table --reps 20 --rows 8,9 > $OUT/table.txt 2>&1
echo "benches done $(date +%T)"
(timeout 105 ctest -R '^test_seqs_gpu$' --timeout 110 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(SEQS_TEST_QUICK=1 timeout 60 $CS --tool memcheck bin/test_seqs_gpu > $S/memcheck_q1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_q1.txt
 SEQS_TEST_QUICK=5 timeout 40 $CS --tool racecheck bin/test_seqs_gpu > $S/racecheck_q5.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck_q5.txt) &
wait
echo "checks done $(date +%T)"
for f in memcheck_q1 racecheck_q5; do echo "== $f"; grep -E "SUMMARY|passed|FAIL" $S/$f.txt | tail -n 8; tail -n 1 $S/$f.txt; done > $OUT/sanitizers.txt
echo "all done $(date +%T)"
grep -E "passed|FAIL|Test time|rc=" $OUT/ctest.txt | tail -8; cat $OUT/sanitizers.txt
grep -E "^B=|default|fix=" $OUT/knobs.txt | cut -c1-170
grep -E "new=1|problem" $OUT/table.txt | cut -c1-240
