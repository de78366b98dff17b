#!/usr/bin/env bash
# The search for what makes traced processes slower after the first ones
# (91a2132:bench/TRACE_COST.md, eighth pass): the host's settings, then
# trace_cost_rounds.sh's SEQ with nvidia-smi sampling the GPU beside it, then
# what /tmp and /dev/shm hold. Run from the build folder.
# Usage: persist_probe.sh OUTDIR   (SEQ and LIMIT_S, the sequence's time limit)
set -uo pipefail
out=$1 here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
state() {
  echo "== $1: $(date -u +%T.%N) uptime $(cut -d' ' -f1 /proc/uptime)"
  ls -la /dev/shm | tail -n +2 | wc -l | sed 's/^/dev_shm entries /'
  find /tmp -maxdepth 1 | wc -l | sed 's/^/tmp entries /'
  du -sh /tmp /dev/shm 2>/dev/null
  grep -E '^(MemFree|Cached|Dirty|Writeback|AnonHugePages|Shmem):' /proc/meminfo
  nvidia-smi --query-gpu=pstate,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
}
{
  uname -r; nproc
  df -hT / /tmp /dev/shm; grep -E ' / | /tmp ' /proc/mounts
  for f in /proc/sys/vm/dirty_ratio /proc/sys/vm/dirty_background_ratio /proc/sys/vm/dirty_expire_centisecs \
    /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag \
    /sys/devices/system/cpu/cpuidle/current_driver /sys/devices/system/cpu/cpuidle/current_governor \
    /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor /sys/module/haltpoll/parameters/guest_halt_poll_ns; do
    echo "$f: $(cat "$f" 2>/dev/null || echo absent)"
  done
  nvidia-smi -q -d PERFORMANCE | grep -v '^$' | head -30
  nvidia-smi --query-gpu=persistence_mode --format=csv,noheader
  state start
} >"$out/host.txt" 2>&1
nvidia-smi --query-gpu=timestamp,pstate,clocks.sm,clocks.mem,temperature.gpu,power.draw,utilization.gpu \
  --format=csv,noheader -lms 500 >"$out/smi.csv" 2>&1 &
smi=$!
timeout "${LIMIT_S:-110}" bash "$here/trace_cost_rounds.sh" "$out/seq" >"$out/seq_stdout.txt" 2>&1
echo "sequence exit $?" >>"$out/host.txt"
kill "$smi"
state end >>"$out/host.txt" 2>&1
cp "$out/seq/seq.txt" "$out/seq.txt"
tar -czf "$out/logs.tar.gz" -C "$out" seq && rm -rf "$out/seq"
