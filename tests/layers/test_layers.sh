#!/usr/bin/env bash
# The layers hold, and both guards can fail: scripts/check_layers.sh passes on
# the tree and rejects a planted cross-layer include; the build's view of a
# layer (cmake/layers.cmake) compiles an include of its own folders and
# rejects one of a folder it may not see.
# Usage: test_layers.sh CC SOURCE_DIR BUILD_DIR
set -euo pipefail
cc=$1
src=$2
build=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_layers: $*" >&2; exit 1; }

bash "$src/scripts/check_layers.sh" "$src" || fail "check_layers.sh fails on the tree"

# A planted tree: the CLI reaching into the profiler must be refused.
for d in core attn prof measure cp testing cli; do mkdir -p "$tmp/tree/src/$d"; done
mkdir -p "$tmp/tree/include/attnprof"
echo '#include "cli/cli.h"' >"$tmp/tree/src/cli/good.c"
bash "$src/scripts/check_layers.sh" "$tmp/tree" >/dev/null || fail "a CLI file including cli/ was refused"
echo '#include "prof/analysis/nest.h"' >"$tmp/tree/src/cli/bad.c"
if bash "$src/scripts/check_layers.sh" "$tmp/tree" 2>/dev/null; then
  fail "check_layers.sh let src/cli include prof/"
fi
echo "check_layers.sh: passes on the tree, refuses a planted include"

# The build's views: what each layer may include compiles, the rest does not.
see() { # LAYER_TARGET HEADER -> 0 when it compiles
  echo "#include \"$2\"" >"$tmp/probe.c"
  "$cc" -std=c11 -D_GNU_SOURCE -fsyntax-only -I"$src/include" -I"$build/layers/$1" \
    "$tmp/probe.c" 2>/dev/null
}
see attnprof_cli cli/cli.h || fail "the CLI's view lacks src/cli"
see attnprof_cli core/error.h || fail "the CLI's view lacks src/core"
for pair in attnprof_cli:prof/analysis/nest.h attnprof_cli:attn/backend.h \
            attnprof_objects:prof/analysis/nest.h attnprof_objects:cli/cli.h \
            attnprof_cp:attn/backend.h attnprof_prof:attn/backend.h; do
  ! see "${pair%%:*}" "${pair#*:}" || fail "${pair%%:*} compiles an include of ${pair#*:}"
done
echo "layer views: each compiles its own folders and refuses the others"
