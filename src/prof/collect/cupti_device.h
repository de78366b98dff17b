/* Device limits read through the driver (cuDeviceGetAttribute), for the
 * trace's deviceProperties and the occupancy calculator. */
#ifndef ATTNPROF_SRC_PROF_CUPTI_DEVICE_H
#define ATTNPROF_SRC_PROF_CUPTI_DEVICE_H

#include <stddef.h>

#include "attnprof/prof.h"

/* Adds every device the driver sees to t. The driver must be initialized
 * (cuInit done: by us in library mode, by the program when injected).
 * Returns the number of devices, or -1 with why filled in. */
int cupti_add_devices(prof_trace *t, char *why, size_t why_len);

/* Reads one device's limits; 0, or -1. */
int cupti_read_device(int ordinal, prof_device *out);

#endif
