#!/usr/bin/env bash
# The C/CUDA sources match .clang-format (clang-format 14, Debian 12's; see
# scripts/install-deps.sh). Generated files are skipped. Fix with
#   git ls-files '*.c' '*.h' '*.cu' '*.cuh' | grep -v -e '\.pb-c\.' -e '/instances/' | xargs clang-format -i
# Usage: scripts/check_format.sh [ROOT]
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
fmt=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$fmt" ]; then
  echo "check_format: clang-format not found (scripts/install-deps.sh installs clang-format-14)" >&2
  exit 1
fi
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cu' '*.cuh' | grep -v -e '\.pb-c\.' -e '/instances/')
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  for f in "${bad[@]:0:20}"; do echo "  not formatted: $f"; done
  if [ ${#bad[@]} -gt 20 ]; then echo "  ... and $((${#bad[@]} - 20)) more"; fi
  echo "check_format: ${#bad[@]} of ${#files[@]} files differ from .clang-format ($fmt)" >&2
  exit 1
fi
echo "check_format: ok (${#files[@]} files)"
