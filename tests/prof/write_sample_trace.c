/* Writes one trace to each path given, the format by its name (.json,
 * .json.gz, .pftrace), for test_prof_perfetto.py: synth_gpu_sample()
 * (prof_test.h) plus a few hostile names (a GPU trace with flows, without a
 * GPU), or with --loop N the synthetic launch loop of N launches
 * (synth_launches.h): about 1.1 KB of JSON per launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prof/prof_test.h"
#include "prof/synth_launches.h"

static prof_trace *sample(void) {
  prof_trace *t = synth_gpu_sample();
  const char *hostile[] = {"quote\" back\\slash", "tab\there\nnewline", "</script>",
                           "caf\xc3\xa9 \xf0\x9f\x9a\x80", "void k<float, 8>(int)"};
  for (int i = 0; i < 5; i++)
    synth_op(t, hostile[i], PROF_KIND_OTHER, 13, T0 + 100000 * (i + 1), 1000);
  return t;
}

int main(int argc, char **argv) {
  int first = 1;
  prof_trace *t;
  if (argc > 2 && !strcmp(argv[1], "--loop")) {
    t = synth_launch_loop(atoll(argv[2]), 16);
    first = 3;
  } else {
    t = sample();
  }
  if (first >= argc || !t) {
    fprintf(stderr, "usage: write_sample_trace [--loop N] OUT.json|OUT.json.gz|OUT.pftrace...\n");
    return 2;
  }
  attn_status st = ATTN_STATUS_OK;
  for (int i = first; i < argc && !st; i++)
    if ((st = prof_write_trace(t, argv[i], NULL))) fprintf(stderr, "%s\n", attn_last_error());
  prof_trace_destroy(t);
  return st ? 1 : 0;
}
