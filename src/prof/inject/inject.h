/* Shared by the injection library's two entry points (inject.c for the CUDA
 * driver, nvtx_guard.c for NVTX): collection starts at whichever comes first. */
#ifndef ATTNPROF_SRC_PROF_INJECT_H
#define ATTNPROF_SRC_PROF_INJECT_H

/* Starts the collector and the streamed trace once per process (only in the
 * process attnprof trace started). Safe to call from both entries. */
void attnprof_inject_start(void);

#endif
