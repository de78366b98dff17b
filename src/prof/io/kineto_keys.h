/* Every key and fixed value of Kineto's Chrome-trace JSON that attnprof writes
 * (and a trace reader reads), declared once. Names are as torch.profiler
 * writes them (Kineto's output_json.cpp; checked against torch.profiler traces
 * from an H200, tests/prof/fixtures). Keys of our own are marked ATTNPROF_. */
#ifndef ATTNPROF_SRC_PROF_KINETO_KEYS_H
#define ATTNPROF_SRC_PROF_KINETO_KEYS_H

/* ---- top level, in Kineto's order ---- */
#define KINETO_SCHEMA_VERSION "schemaVersion"
#define KINETO_SCHEMA_VERSION_VALUE 1
#define KINETO_DEVICE_PROPERTIES "deviceProperties"
#define KINETO_DISPLAY_TIME_UNIT "displayTimeUnit"
#define KINETO_DISPLAY_TIME_UNIT_VALUE "ms"
#define KINETO_BASE_TIME_NS "baseTimeNanoseconds"
#define KINETO_TRACE_EVENTS "traceEvents"
#define KINETO_TRACE_NAME "traceName"
#define ATTNPROF_KEY_VERSION "attnprof_version"
#define ATTNPROF_KEY_DROPPED "attnprof_dropped_events" /* records a collector lost */

/* ---- deviceProperties entries (cudaDeviceProp names) ---- */
#define KINETO_DEV_ID "id"
#define KINETO_DEV_NAME "name"
#define KINETO_DEV_TOTAL_GLOBAL_MEM "totalGlobalMem"
#define KINETO_DEV_COMPUTE_MAJOR "computeMajor"
#define KINETO_DEV_COMPUTE_MINOR "computeMinor"
#define KINETO_DEV_MAX_THREADS_PER_BLOCK "maxThreadsPerBlock"
#define KINETO_DEV_MAX_THREADS_PER_SM "maxThreadsPerMultiprocessor"
#define KINETO_DEV_REGS_PER_BLOCK "regsPerBlock"
#define KINETO_DEV_WARP_SIZE "warpSize"
#define KINETO_DEV_SHARED_MEM_PER_BLOCK "sharedMemPerBlock"
#define KINETO_DEV_NUM_SMS "numSms"
#define KINETO_DEV_REGS_PER_SM "regsPerMultiprocessor"
#define KINETO_DEV_SHARED_MEM_PER_BLOCK_OPTIN "sharedMemPerBlockOptin"
#define KINETO_DEV_SHARED_MEM_PER_SM "sharedMemPerMultiprocessor"
#define ATTNPROF_DEV_MAX_BLOCKS_PER_SM "maxBlocksPerMultiProcessor"
#define ATTNPROF_DEV_RESERVED_SHARED_MEM "reservedSharedMemPerBlock"

/* ---- event fields ---- */
#define KINETO_PH "ph"
#define KINETO_CAT "cat"
#define KINETO_NAME "name"
#define KINETO_PID "pid"
#define KINETO_TID "tid"
#define KINETO_TS "ts"
#define KINETO_DUR "dur"
#define KINETO_ARGS "args"
#define KINETO_ID "id"
#define KINETO_BP "bp"
#define KINETO_PH_COMPLETE "X"
#define KINETO_PH_METADATA "M"
#define KINETO_PH_FLOW_START "s"
#define KINETO_PH_FLOW_END "f"
#define KINETO_BP_ENCLOSING "e"
/* Flow from a launch call to its GPU activity: name and cat. */
#define KINETO_FLOW_LAUNCH "ac2g"

/* ---- args ---- */
#define KINETO_ARG_EXTERNAL_ID "External id"
#define KINETO_ARG_CORRELATION "correlation"
#define KINETO_ARG_CBID "cbid"
#define KINETO_ARG_DEVICE "device"
#define KINETO_ARG_CONTEXT "context"
#define KINETO_ARG_STREAM "stream"
#define KINETO_ARG_QUEUED "queued"
#define KINETO_ARG_GRID "grid"
#define KINETO_ARG_BLOCK "block"
#define KINETO_ARG_REGISTERS "registers per thread"
#define KINETO_ARG_SHARED_MEMORY "shared memory" /* static + dynamic */
#define KINETO_ARG_BLOCKS_PER_SM "blocks per SM" /* grid blocks / SMs: work, not residency */
#define KINETO_ARG_WARPS_PER_SM "warps per SM"
#define KINETO_ARG_OCCUPANCY "est. achieved occupancy %"
#define KINETO_ARG_BYTES "bytes"
#define KINETO_ARG_BANDWIDTH "memory bandwidth (GB/s)"
#define ATTNPROF_ARG_OP_KIND "op kind"
#define ATTNPROF_ARG_FLOPS "flops"
/* The roofline point of a backend's group annotation (prof_roof). */
#define ATTNPROF_ARG_ROOF_TIME_US "time per forward (us)"
#define ATTNPROF_ARG_ROOF_COPY_GBPS "copy roof (GB/s)"
#define ATTNPROF_ARG_ROOF_PEAK_TFLOPS "matmul peak (TFLOP/s)"
#define ATTNPROF_ARG_CLUSTER "cluster"
#define ATTNPROF_ARG_STATIC_SHARED "static shared memory"
#define ATTNPROF_ARG_DYNAMIC_SHARED "dynamic shared memory"
/* Kernel footprint beyond Kineto's (CUPTI Kernel10 fields) and our occupancy. */
#define ATTNPROF_ARG_SMEM_EXECUTED "shared memory executed" /* the carveout, bytes */
#define ATTNPROF_ARG_SMEM_OPTIN "shared memory opt-in"      /* 1: past the 48 KiB default */
#define ATTNPROF_ARG_MAX_ACTIVE_CLUSTERS "max active clusters"
#define ATTNPROF_ARG_GRAPH_ID "graph id" /* the CUDA graph a kernel ran in */
#define ATTNPROF_ARG_THEORETICAL_OCCUPANCY "theoretical occupancy %"
/* Kineto (main) writes "occupancy": {activeBlocksPerMultiprocessor, limitingFactors}. */
#define KINETO_ARG_OCCUPANCY_DETAIL "occupancy"
#define KINETO_OCC_ACTIVE_BLOCKS "activeBlocksPerMultiprocessor"
#define KINETO_OCC_LIMITING "limitingFactors"

/* ---- metadata rows (ph "M") and their args ---- */
#define KINETO_META_PROCESS_NAME "process_name"
#define KINETO_META_PROCESS_LABELS "process_labels"
#define KINETO_META_PROCESS_SORT_INDEX "process_sort_index"
#define KINETO_META_THREAD_NAME "thread_name"
#define KINETO_META_THREAD_SORT_INDEX "thread_sort_index"
#define KINETO_META_ARG_NAME "name"
#define KINETO_META_ARG_LABELS "labels"
#define KINETO_META_ARG_SORT_INDEX "sort_index"
#define KINETO_LABEL_CPU "CPU"
#define KINETO_LABEL_GPU "GPU %d"                 /* device ordinal */
#define KINETO_THREAD_NAME_CPU "thread %lld (%s)" /* tid, process name */
#define KINETO_THREAD_NAME_GPU "stream %lld "     /* stream id; the trailing space is Kineto's */
#define KINETO_GPU_SORT_INDEX_BASE 5000000        /* GPU lanes sort after every CPU pid */

#endif
