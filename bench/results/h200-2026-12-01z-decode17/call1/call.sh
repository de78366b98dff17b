#!/bin/bash
# run 19 device call 1 (decode17), from build-gpu: the A/B bench alone first, then validation
# side by side (test_seqs_gpu whole; memcheck, racecheck, synccheck on SEQS_TEST_QUICK=5, the
# split kernel's A/B cases, every form); at most 4 files under $OUT
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=/tmp/san; mkdir -p $S
echo "start $(date +%T)"
timeout 55 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --knob-set split --reps 20 --cells 16x1024,64x1024,16x8192,16x32768 > $OUT/knobs.txt 2>&1
echo "bench done $(date +%T)"
(timeout 105 ctest -R '^test_seqs_gpu$' --timeout 110 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(SEQS_TEST_QUICK=5 timeout 60 $CS --tool racecheck bin/test_seqs_gpu > $S/racecheck.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck.txt) &
(SEQS_TEST_QUICK=5 timeout 45 $CS --tool memcheck bin/test_seqs_gpu > $S/memcheck.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck.txt
 SEQS_TEST_QUICK=5 timeout 45 $CS --tool synccheck bin/test_seqs_gpu > $S/synccheck.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/synccheck.txt) &
wait
echo "checks done $(date +%T)"
for f in racecheck memcheck synccheck; do echo "== $f"; grep -E "SUMMARY|passed|FAIL" $S/$f.txt | tail -n 8; tail -n 1 $S/$f.txt; done > $OUT/sanitizers.txt
echo "all done $(date +%T)"
grep -E "passed|FAIL|Test time|rc=" $OUT/ctest.txt | tail -8; cat $OUT/sanitizers.txt
grep -E "^B=|default|fix=" $OUT/knobs.txt | cut -c1-170
