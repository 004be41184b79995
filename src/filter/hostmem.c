/* Host memory hints for the large buffers of filters: ask Linux for transparent huge pages, so
 * that first touching a fresh 50 MB output costs a few hundred page faults instead of ~13000
 * (the kernel default here is THP "madvise"). A hint only: ignored where unsupported. */
#define _DEFAULT_SOURCE 1
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#include <stdatomic.h>
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

/* Scratch cache: a block carries its capacity in a 64-byte header. The slot holds at most one
   block (at most LF_SCRATCH_KEEP bytes); get takes it atomically, so concurrent callers simply
   allocate their own. */
#define LF_SCRATCH_HDR 64
#define LF_SCRATCH_KEEP ((size_t)1 << 30)
static _Atomic(void *) scratch_slot = NULL;

void *lf_scratch_get(size_t bytes) {
  if (bytes == 0) bytes = 1;
  char *blk = atomic_exchange(&scratch_slot, NULL);
  if (blk) {
    size_t cap;
    memcpy(&cap, blk, sizeof cap);
    if (cap >= bytes && cap / 2 <= bytes) return blk + LF_SCRATCH_HDR;
    free(blk);
  }
  if (bytes > SIZE_MAX - LF_SCRATCH_HDR) return NULL;
  blk = lf_malloc_big(bytes + LF_SCRATCH_HDR);
  if (!blk) return NULL;
  memcpy(blk, &bytes, sizeof bytes);
  return blk + LF_SCRATCH_HDR;
}

void lf_scratch_put(void *ptr) {
  if (!ptr) return;
  char *blk = (char *)ptr - LF_SCRATCH_HDR;
  size_t cap;
  memcpy(&cap, blk, sizeof cap);
  if (cap > LF_SCRATCH_KEEP) {
    free(blk);
    return;
  }
  void *old = atomic_exchange(&scratch_slot, (void *)blk);
  free(old);
}
