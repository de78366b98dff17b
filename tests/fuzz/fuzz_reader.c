/* libFuzzer target for the trace reader (built with clang when
 * -DATTNPROF_FUZZ=ON; see tests/fuzz/README.md for how to run it). */
#include "fuzz/fuzz_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  attnprof_fuzz_one(data, size);
  return 0;
}
