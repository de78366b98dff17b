#!/usr/bin/env bash
# Which files under src/ read the environment. The library decides what a call
# does from the handle's options and the call's arguments; only the places
# below may call getenv (docs/design/README.md, "Configuration"). Prints each
# file's getenv calls; fails on a file not in the allow-list.
# Usage: scripts/check_getenv.sh [ROOT]   (ROOT defaults to the repository)
set -euo pipefail
root=${1:-"$(dirname "$0")/.."}
cd "$root"
allowed=(
  # loaders: where a shared library is found
  'src/*/cupti_lib.c' 'src/*/cudnn_loader.c' 'src/*/blas_loader.c' 'src/*/nccl_loader.c'
  # the injection protocol: the injected library and the CLI files that set it up
  'src/prof/inject/*'
  'src/cli/cmd_trace.c' 'src/cli/trace_spawn.c' 'src/cli/trace_finish.c' 'src/cli/trace_children.c'
  'src/cli/cmd_cp.c' 'src/cli/cp_rank.c' 'src/cli/cp_launch.c'
  # the yardsticks' cache directory (XDG_CACHE_HOME, HOME): a path, like the loaders'
  'src/*/roofline.c'
  # attn_ctx_opts_from_env, which the CLI calls on purpose
  'src/attn/ctx.c'
)
bad=0
while IFS= read -r f; do
  ok=0
  for pat in "${allowed[@]}"; do
    # shellcheck disable=SC2053  # the pattern is a glob on purpose
    [[ $f == $pat ]] && ok=1 && break
  done
  vars=$(grep -oE 'getenv *\([^)]*\)' "$f" | sed -E 's/getenv *\((.*)\)/\1/' | sort -u | paste -sd' ')
  if [ $ok = 1 ]; then
    echo "  allowed  $f: $vars"
  else
    echo "  REFUSED  $f: $vars"
    bad=1
  fi
done < <(grep -rlE '\bgetenv *\(' src/ | sort)
if [ $bad = 1 ]; then
  echo "check_getenv: src/ reads the environment outside the allow-list (scripts/check_getenv.sh)" >&2
  exit 1
fi
echo "check_getenv: ok"
