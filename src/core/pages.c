/* Mapping fresh pages before a bulk write (lumen_populate_pages, core/internal.h). */
#define _DEFAULT_SOURCE 1 /* madvise */
#include <stdint.h>
#include "core/internal.h"
#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

void lumen_populate_pages(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  const long pg = sysconf(_SC_PAGESIZE);
  if (pg <= 0) return;
  const uintptr_t page = (uintptr_t)pg, lo = ((uintptr_t)p + page - 1) & ~(page - 1);
  const uintptr_t hi = ((uintptr_t)p + bytes) & ~(page - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}
