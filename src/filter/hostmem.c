/* Host memory hints for the large buffers of filters: ask Linux for transparent huge pages, so
 * that first touching a fresh 50 MB output costs a few hundred page faults instead of ~13000
 * (the kernel default here is THP "madvise"). A hint only: ignored where unsupported. */
#define _DEFAULT_SOURCE 1
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif
#include "filter/filter_internal.h"

void lf_advise_huge(void *ptr, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (!ptr || bytes < 2 * huge) return;
  uintptr_t lo = ((uintptr_t)ptr + huge - 1) & ~(huge - 1);
  uintptr_t hi = ((uintptr_t)ptr + bytes) & ~(huge - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)ptr;
  (void)bytes;
#endif
}

void *lf_malloc_big(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  lf_advise_huge(p, bytes);
  return p;
}
