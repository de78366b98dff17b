#!/usr/bin/env bash
# The tracked tree holds code and documents, not data: no file over 1 MB, no
# raw results (dumps, logs, stamps, per-run scripts), under 10 MB in all. Raw results stay out
# of git (.gitignore); bench/RESULTS.md keeps one row per headline figure.
# Usage: scripts/check_tree.sh [ROOT]   (ROOT: a git work tree; the repository by default)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
limit=$((1024 * 1024))
total_limit=$((10 * 1000 * 1000))
bad=0
total=0
while IFS= read -r -d '' f; do
  [ -f "$f" ] || continue  # deleted in the work tree, not yet committed
  size=$(stat -c %s "$f")
  total=$((total + size))
  if [ "$size" -gt "$limit" ]; then
    echo "  too large ($size bytes, the limit is $limit): $f"
    bad=1
  fi
  case "$f" in
    *.npz | *.ncu-rep | *.nsys-rep | *.qdrep | *.log | */call.sh | \
      bench/results/* | bench/*/results/*)
      echo "  raw result: $f"
      bad=1
      ;;
  esac
done < <(git ls-files -z)
# A kernel file composes named pieces: none grows past 600 lines.
while IFS= read -r f; do
  [ -f "$f" ] || continue
  n=$(wc -l <"$f")
  if [ "$n" -gt 600 ]; then
    echo "  kernel file of $n lines (the limit is 600; split it by concern): $f"
    bad=1
  fi
done < <(git ls-files 'src/attn/cuda/*.cu' 'src/attn/cuda/*.cuh')
if [ $total -gt $total_limit ]; then
  echo "  the tracked tree is $total bytes, over $total_limit"
  bad=1
fi
if [ $bad = 1 ]; then
  echo "check_tree: the tree breaks a rule above (scripts/check_tree.sh)" >&2
  exit 1
fi
echo "check_tree: ok ($(git ls-files | wc -l) files, $total bytes, none over 1 MB, no raw results)"
