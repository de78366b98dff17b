/* The core's reading of host memory: what the S x S backends check before
 * allocating, and what the command line checks before filling inputs. */
#include <stdio.h>
#include <unistd.h>

#include "core/error.h"

size_t attn_host_memory_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[256];
  unsigned long long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  if (f) fclose(f);
  if (kb) return (size_t)kb * 1024;
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? (size_t)pages * (size_t)page : 0;
}
