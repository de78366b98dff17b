/* Faults without a GPU collector (runs everywhere; CI has no GPU): asking
 * for GPU collection where it cannot run gives a clear reason and a working
 * CPU session. Here libcupti is also pointed at a file that does not exist,
 * so on a GPU machine the reason is the missing CUPTI, elsewhere the
 * missing driver or GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnprof/prof.h"
#include "gpu_test.h"

int main(void) {
  setenv("ATTNPROF_CUPTI_LIB", "/nonexistent/libcupti.so.13", 1);
  prof_trace *t = NULL;
  prof_trace_create(&t);
  CHECK(prof_start(t, PROF_COLLECT_CPU | PROF_COLLECT_GPU, NULL) == ATTN_STATUS_OK);
  const char *why = attn_last_error();
  printf("reason given: %s\n", why);
  CHECK(!(prof_collecting() & PROF_COLLECT_GPU));
  CHECK(prof_collecting() & PROF_COLLECT_CPU);
  CHECK(strstr(why, "GPU collection unavailable") != NULL);
  const char *names[8];
  size_t n = prof_collector_list(names, 8);
  int has_cupti = 0;
  for (size_t i = 0; i < n && i < 8; i++) has_cupti |= !strcmp(names[i], "cupti");
  if (has_cupti)
    CHECK(strstr(why, "ATTNPROF_CUPTI_LIB=/nonexistent") || strstr(why, "no NVIDIA driver") ||
          strstr(why, "no usable GPU"));
  else CHECK(strstr(why, "built without CUPTI") != NULL);
  prof_range_push("still_recorded");
  prof_range_pop();
  prof_stop();
  CHECK(prof_trace_count(t) == 1);
  CHECK(!strcmp(prof_trace_at(t, 0)->name, "still_recorded"));
  prof_trace_destroy(t);
  printf("ok\n");
  return 0;
}
