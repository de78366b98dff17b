/* Writes synth_gpu_sample() (prof_test.h) plus a few hostile names to each
 * path given, the format by its name (.json, .json.gz, .pftrace), for
 * test_prof_perfetto.py: one GPU trace with flows, without a GPU, in every
 * format. */
#include <stdio.h>

#include "prof/prof_test.h"

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: write_sample_trace OUT.json|OUT.json.gz|OUT.pftrace...\n");
    return 2;
  }
  prof_trace *t = synth_gpu_sample();
  const char *hostile[] = {"quote\" back\\slash", "tab\there\nnewline", "</script>",
                           "caf\xc3\xa9 \xf0\x9f\x9a\x80", "void k<float, 8>(int)"};
  for (int i = 0; i < 5; i++)
    synth_op(t, hostile[i], PROF_KIND_OTHER, 13, T0 + 100000 * (i + 1), 1000);
  attn_status st = ATTN_STATUS_OK;
  for (int i = 1; i < argc && !st; i++)
    if ((st = prof_write_trace(t, argv[i], PROF_FORMAT_AUTO))) fprintf(stderr, "%s\n", attn_last_error());
  prof_trace_destroy(t);
  return st ? 1 : 0;
}
