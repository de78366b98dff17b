#!/usr/bin/env bash
# Regenerates the checked-in C of src/prof/io/proto/perfetto_trace.proto with
# protobuf-c's compiler (Debian: protobuf-c-compiler). Run after editing the
# .proto; the build itself needs only libprotobuf-c-dev.
set -euo pipefail
cd "$(dirname "$0")/../src/prof/io/proto"
protoc-c --c_out=. perfetto_trace.proto
echo "gen_perfetto_proto: wrote $(ls perfetto_trace.pb-c.*)"
