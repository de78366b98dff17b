#!/usr/bin/env bash
# The lead's closing call (h200-2026-12-02h-lead): grid, blog shape by attnprof run, tile footprints.
o=$1; mkdir -p "$o/d"; cd /work/main/build-gpu || exit 1
SECONDS=0
FUSED_STEPS=versus VERSUS_TIMEOUT=300 VERSUS_ARGS="--control --rounds 3" bash ../scripts/device.d/fused.sh "$o/d" >"$o/versus_log.txt" 2>&1
echo "versus done ($SECONDS s)"; tail -5 "$o/versus_log.txt"
for r in 1 2 3; do ./bin/attnprof run --device cuda --backend flash --flash-kernel ws --shape 8x16x1024x64 --causal --iters 200 --json >"$o/run_flash_$r.json"; done
./bin/attnprof run --device cuda --backend cudnn --shape 8x16x1024x64 --causal --iters 200 --json >"$o/run_cudnn.json"
for f in "$o"/run_*.json; do python3 -c "import json,sys; r=json.load(open(sys.argv[1]))['backend']; print(sys.argv[1].split('/')[-1], 'device_us %.2f time_us %.2f' % (r['device_us'], r['time_us']))" "$f"; done | tee "$o/run_blog.txt"
i=0
for cell in "16x32x1024x64 --causal=none" "8x16x1024x64 --causal" "16x16x1024x128 --causal=none" "8x16x2048x128 --causal=none" "16x8x1024x256 --causal=none" "16x8x1024x256 --causal"; do
  i=$((i+1)); # shellcheck disable=SC2086
  ./bin/attnprof compare --device cuda --shape $cell --flash-kernel ws >"$o/compare_$i.txt" 2>&1
  echo "== $cell"; grep -E "^(flash|cudnn) " "$o/compare_$i.txt"
done >"$o/compare_rows.txt"
grep -E "^==|_Z|cudnn_gen" "$o/compare_rows.txt"
echo "all done ($SECONDS s)"
cd "$o" && tar -czf ../final.tgz . && rm -rf "$o"
