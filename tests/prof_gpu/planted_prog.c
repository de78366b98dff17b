/* A CUDA program for `attnprof trace` tests, traced from outside (no
 * attnprof calls): the planted work inside NVTX ranges, then an ending
 * chosen by argv[1]:
 *   normal  return from main
 *   crash   SIGSEGV after the work
 *   thread  exit(3) called from a second thread while main waits
 *   nocuda  no CUDA at all
 * Each run prints the figures a test compares with the trace. */
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planted.h"

static void *exit_from_thread(void *arg) {
  (void)arg;
  exit(3);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "normal";
  if (!strcmp(mode, "nocuda")) return puts("no CUDA used"), 0;
  planted_result r;
  for (int i = 0; i < 3; i++) { /* three calls of the range */
    nvtxRangePushA("planted_fwd");
    if (planted_run("unused_cpu_range", NULL, &r)) return 1;
    nvtxRangePop();
  }
  printf("planted: 3 calls, %d kernels + 2 memcpy + 1 memset each\n", PLANTED_KERNELS);
  fflush(stdout);
  if (!strcmp(mode, "crash")) raise(SIGSEGV);
  if (!strcmp(mode, "thread")) {
    pthread_t th;
    pthread_create(&th, NULL, exit_from_thread, NULL);
    pause();
  }
  return 0;
}
