/* Writes synth_gpu_sample() (prof_test.h) plus a few hostile names to the path
 * given, for test_prof_perfetto.py: a GPU trace with flows, without a GPU. */
#include <stdio.h>

#include "prof/prof_test.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: write_sample_trace OUT.json\n");
    return 2;
  }
  prof_trace *t = synth_gpu_sample();
  const char *hostile[] = {"quote\" back\\slash", "tab\there\nnewline", "</script>",
                           "caf\xc3\xa9 \xf0\x9f\x9a\x80", "void k<float, 8>(int)"};
  for (int i = 0; i < 5; i++)
    synth_op(t, hostile[i], PROF_KIND_OTHER, 13, T0 + 100000 * (i + 1), 1000);
  attn_status st = prof_write_chrome_trace(t, argv[1]);
  if (st) fprintf(stderr, "%s\n", attn_last_error());
  prof_trace_destroy(t);
  return st ? 1 : 0;
}
