#!/bin/bash
# run 18 device call 1, from build-gpu: the benches alone first, then validation side by side;
# at most 6 files under $OUT (the tool returns 8)
CS=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
S=/tmp/san; mkdir -p $S
echo "start $(date +%T)"
timeout 14 bin/bench_decode_stamps 2048 50 > $OUT/stamps_2k.txt 2>&1
timeout 10 bin/bench_decode_stamps 1024 50 > $S/stamps_1k.txt 2>&1
timeout 80 python3 ../bench/serving/serving_vs_torch.py --lib ./lib/libattnprof.so --knobs --reps 20 --cells 16x1024,1x2048,1x1024,16x8192,64x1024,16x32768,64x8192 > $OUT/knobs.txt 2>&1
echo "benches done $(date +%T)"
(timeout 95 ctest -R '^test_seqs_gpu$' --timeout 100 -V > $OUT/ctest.txt 2>&1; echo "rc=$? $(date +%T)" >> $OUT/ctest.txt) &
(for v in 1 0; do ATTNPROF_DECODE_CL_VHALF=$v SEQS_TEST_QUICK=4 timeout 30 $CS --tool racecheck bin/test_seqs_gpu > $S/racecheck_vhalf$v.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck_vhalf$v.txt; done
 ATTNPROF_DECODE_CL_VHALF=1 SEQS_TEST_QUICK=2 timeout 30 $CS --tool racecheck bin/test_seqs_gpu > $S/racecheck2_vhalf1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/racecheck2_vhalf1.txt) &
(ATTNPROF_DECODE_CL_VHALF=1 SEQS_TEST_QUICK=2 timeout 25 $CS --tool memcheck bin/test_seqs_gpu > $S/memcheck_vhalf1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/memcheck_vhalf1.txt
 ATTNPROF_DECODE_CL_VHALF=1 SEQS_TEST_QUICK=2 timeout 25 $CS --tool synccheck bin/test_seqs_gpu > $S/synccheck_vhalf1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/synccheck_vhalf1.txt
 SEQS_TEST_QUICK=1 timeout 40 $CS --tool synccheck bin/test_seqs_gpu > $S/synccheck_q1.txt 2>&1; echo "rc=$? $(date +%T)" >> $S/synccheck_q1.txt) &
wait
echo "checks done $(date +%T)"
for f in racecheck_vhalf1 racecheck_vhalf0 racecheck2_vhalf1 memcheck_vhalf1 synccheck_vhalf1 synccheck_q1; do echo "== $f"; grep -E "SUMMARY|passed|FAIL|lock" $S/$f.txt | tail -n 6; tail -n 1 $S/$f.txt; done > $OUT/sanitizers.txt
cp $S/stamps_1k.txt $OUT/
echo "all done $(date +%T)"
grep -E "passed|FAIL|Test time|rc=|lock" $OUT/ctest.txt | tail -6; cat $OUT/sanitizers.txt
grep -E "^C=" $OUT/stamps_2k.txt $OUT/stamps_1k.txt
grep -E "^B=|default|vhalf|lock|deep|waves|cluster=0" $OUT/knobs.txt | cut -c1-150
