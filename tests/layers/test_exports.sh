#!/usr/bin/env bash
# libattnprof.so exports the product's API only: attn_* and prof_* names, and
# none of the test kit's (the functions attnprof/testing.h and
# attnprof/device.h declare).
# Usage: test_exports.sh LIBRARY SOURCE_DIR
set -euo pipefail
lib=$1
src=$2
exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort)
[ -n "$exports" ] || { echo "test_exports: $lib exports nothing" >&2; exit 1; }
other=$(grep -vE '^(attn|prof)_' <<<"$exports" | grep -vE '^(_init|_fini|_end|_edata|__bss_start)$' || true)
[ -z "$other" ] || { echo "test_exports: exported beside attn_*/prof_*: $other" >&2; exit 1; }
# Declarations only (a line that starts with a type), not names in comments.
kit=$(grep -hE '^[a-z].*\b(attn|prof)_[a-z0-9_]+\(' "$src/include/attnprof/testing.h" \
        "$src/include/attnprof/device.h" | grep -oE '\b(attn|prof)_[a-z0-9_]+\(' |
        tr -d '(' | sort -u)
[ -n "$kit" ] || { echo "test_exports: no test-kit declarations found" >&2; exit 1; }
leaked=$(comm -12 <(echo "$exports") <(echo "$kit"))
[ -z "$leaked" ] || { echo "test_exports: the test kit is exported: $leaked" >&2; exit 1; }
echo "test_exports: $(wc -l <<<"$exports") exports, none of the kit's $(wc -l <<<"$kit") functions"
