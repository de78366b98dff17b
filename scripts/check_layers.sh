#!/usr/bin/env bash
# The include layers (docs/architecture.md): a folder of src/ includes the
# public headers (include/attnprof) and, of src/, only the folders it may use;
# cmake/layers.cmake gives each layer's build the same view, so this is the
# same rule read from the sources, with the reason in words. The test kit's
# headers (attnprof/testing.h, attnprof/device.h) are for measure, testing
# and cli only; no include climbs out of its folder with "../".
# Usage: check_layers.sh [ROOT]   (ROOT: the checkout, default this one)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
declare -A sees=(
  [core]="core"
  [attn]="core attn"
  [prof]="core prof"
  [measure]="core attn measure"
  [cp]="core cp"
  [testing]="core attn testing"
  [cli]="core cli"
)
kit_users=" measure testing cli "
bad=0
fail() { echo "check_layers: $1" >&2; bad=1; }

for dir in src/*/; do
  layer=$(basename "$dir")
  [ -n "${sees[$layer]+x}" ] || fail "src/$layer is in no layer: add it to scripts/check_layers.sh and cmake/layers.cmake"
done

while IFS= read -r hit; do
  file=${hit%%:*}
  rest=${hit#*:}
  line=${rest%%:*}
  [[ $rest =~ \"([^\"]+)\" ]] && inc=${BASH_REMATCH[1]}
  where="$file:$line: \"$inc\""
  case $inc in
  ../* | */../*) fail "$where climbs out of its folder"; continue ;;
  */*) ;;
  *) continue ;; # a header beside the file
  esac
  top=${inc%%/*}
  if [[ $file == include/* ]]; then
    [ "$top" = attnprof ] || fail "$where: a public header includes only attnprof/ headers"
    continue
  fi
  layer=${file#src/}
  layer=${layer%%/*}
  [ -n "${sees[$layer]+x}" ] || continue
  if [ "$top" = attnprof ]; then
    case $inc in
    attnprof/testing.h | attnprof/device.h)
      [[ $kit_users == *" $layer "* ]] || fail "$where: the test kit is not for src/$layer" ;;
    esac
  elif [[ " ${sees[$layer]} " != *" $top "* ]]; then
    fail "$where: src/$layer sees only include/ and src/{${sees[$layer]// /,}}"
  fi
done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src include \
           --include='*.c' --include='*.h' --include='*.cu' --include='*.cuh' || true)

[ "$bad" = 0 ] && echo "check_layers: every include within its layer"
exit "$bad"
