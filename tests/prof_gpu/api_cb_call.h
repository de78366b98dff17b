/* One CUDA call as CUPTI's callback API reports it, enter then exit, for the
 * tests that drive cupti_api_cb.c by hand (no GPU): its first parameter
 * (a stream, for the sync calls), return value and correlation id. */
#ifndef ATTNPROF_TESTS_PROF_GPU_API_CB_CALL_H
#define ATTNPROF_TESTS_PROF_GPU_API_CB_CALL_H

#include <stdint.h>
#include <string.h>

#include "prof/collect/cupti_api_cb.h"

static inline void api_cb_call(CUpti_CallbackDomain dom, uint32_t cbid, void *first, uint32_t ret,
                               uint32_t corr) {
  uint64_t slot = 0;
  CUpti_CallbackData d;
  memset(&d, 0, sizeof d);
  d.context = (CUcontext)(uintptr_t)0x1000;
  d.correlationId = corr;
  d.correlationData = &slot;
  d.functionParams = &first;
  d.functionReturnValue = &ret;
  d.callbackSite = CUPTI_API_ENTER;
  cupti_api_cb_on(dom, cbid, &d);
  d.callbackSite = CUPTI_API_EXIT;
  cupti_api_cb_on(dom, cbid, &d);
}

#endif
