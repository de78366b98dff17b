/* CUPTI and the CUDA driver, opened at run time (dlopen) so that a machine
 * without them still runs everything else and is told what is missing.
 *
 * The entry points the collector uses are resolved into one table; a missing
 * library or symbol makes cupti_lib_load fail with a sentence naming what was
 * looked for and where. */
#ifndef ATTNPROF_SRC_PROF_CUPTI_LIB_H
#define ATTNPROF_SRC_PROF_CUPTI_LIB_H

#include <stddef.h>

#include <cupti.h>

typedef struct {
  CUptiResult (*GetVersion)(uint32_t *);
  CUptiResult (*GetResultString)(CUptiResult, const char **);
  CUptiResult (*Subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
  /* Names the tool already holding CUPTI when it refuses; NULL before CUDA 12.6. */
  CUptiResult (*Subscribe_v2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *,
                              CUpti_SubscriberParams *);
  CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle);
  CUptiResult (*EnableCallback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                CUpti_CallbackId);
  CUptiResult (*GetCallbackName)(CUpti_CallbackDomain, uint32_t, const char **);
  CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc,
                                           CUpti_BuffersCallbackCompleteFunc);
  CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc);
  CUptiResult (*ActivityEnable)(CUpti_ActivityKind);
  CUptiResult (*ActivityDisable)(CUpti_ActivityKind);
  CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId, uint8_t);
  CUptiResult (*ActivityEnableDriverApi)(CUpti_CallbackId, uint8_t);
  CUptiResult (*ActivityGetNextRecord)(uint8_t *, size_t, CUpti_Activity **);
  CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext, uint32_t, size_t *);
  CUptiResult (*ActivityFlushAll)(uint32_t);
  CUptiResult (*ActivitySetAttribute)(CUpti_ActivityAttribute, size_t *, void *);
  CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType);
  CUptiResult (*GetContextId)(CUcontext, uint32_t *);
  CUptiResult (*GetStreamIdEx)(CUcontext, CUstream, uint8_t, uint32_t *);
  CUptiResult (*Finalize)(void);
  uint32_t version; /* cuptiGetVersion: the API version, e.g. 130001 */
  char path[512];   /* where it was found */
} cupti_fns;

/* The driver calls used for device limits (no context needed). */
typedef struct {
  CUresult (*Init)(unsigned int);
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetAttribute)(int *, CUdevice_attribute, CUdevice);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*DeviceTotalMem)(size_t *, CUdevice);
  CUresult (*DriverGetVersion)(int *);
} cuda_drv_fns;

/* Loads libcupti once (ATTNPROF_CUPTI_LIB if set, then libcupti.so.13 on the
 * loader's path, then the toolkit's lib and extras/CUPTI/lib64). Returns the
 * table, or NULL with why filled in. Thread-safe; later calls return the same. */
const cupti_fns *cupti_lib_load(char *why, size_t why_len);
/* Loads libcuda.so.1 once; NULL with why when there is no driver. */
const cuda_drv_fns *cuda_drv_load(char *why, size_t why_len);

/* "CUPTI_ERROR_..." text of r (or its number when CUPTI is not loaded). */
const char *cupti_error(CUptiResult r);

#endif
