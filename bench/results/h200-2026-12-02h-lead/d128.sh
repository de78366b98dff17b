#!/usr/bin/env bash
# Per profiled forward kernel durations at D128 (run --trace), flash and cudnn.
o=$1; mkdir -p "$o"; cd /work/main/build-gpu || exit 1
for cell in "16x16x1024x128 --causal=none" "8x16x2048x128 --causal=none" "16x16x1024x128 --causal" "8x16x1024x64 --causal"; do
  for be in flash flash cudnn; do
    # shellcheck disable=SC2086
    ./bin/attnprof run --device cuda --backend $be --flash-kernel ws --shape $cell --no-check --trace "$o/t.json" --json >"$o/r.json" 2>/dev/null
    python3 - "$o/t.json" "$o/r.json" "$be" "$cell" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
r = json.load(open(sys.argv[2]))["backend"]
k = [round(e["dur"], 1) for e in sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: e["ts"])]
print(f"{sys.argv[4]:<30} {sys.argv[3]:<6} kernels {k}  device_us {r['device_us']:.1f} time_us {r['time_us']:.1f}")
PY
  done
done
