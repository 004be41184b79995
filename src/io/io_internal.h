/* Internal helpers of lumen_io: atomic file writing, limits, fault injection for tests. */
#ifndef LUMEN_IO_INTERNAL_H
#define LUMEN_IO_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/internal.h"
#include "lumen/io.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The atomic writer (lumen_atomic_open ... lumen_atomic_abort) is public: include/lumen/io.h. */
/* The temporary path (for messages and tests). */
const char *lumen_atomic_tmp_path(const lumen_atomic_file *f);

/* A block of an uncompressed file read by several threads (src/io/io_pread.c): bytes at offset
   of fd into dst (or through convert), each thread preading 16 MiB slices (and taking the
   first-touch page faults of the pages it fills), swap (may be NULL) applied to each slice of elem-byte elements,
   lumen_progress(stage) between rounds when stage is not NULL. Errors name fn, path and what
   ("voxel data") as the serial readers do: "is truncated: the WHAT ends after N of M bytes" or
   "cannot read ... (WHAT): strerror". */
typedef struct lumen_io_pread_job {
  lumen_ctx *ctx;
  int fd;
  int64_t offset, bytes;
  unsigned char *dst;
  int elem;
  void (*swap)(int64_t n, int elem, void *buf);
  /* NULL: the bytes land in dst as they are; else each slice (n elements from element first,
     swapped) is handed to convert, which writes them into the caller's destination */
  void (*convert)(void *user, const unsigned char *src, int64_t first, int64_t n);
  void *user;
  int threads;
  const char *fn, *path, *what, *stage;
} lumen_io_pread_job;
lumen_status lumen_io_pread_parallel(const lumen_io_pread_job *job);

/* Caller's max_bytes resolved: 0 -> default, capped at physical memory. */
int64_t lumen_io_resolve_max_bytes(int64_t requested);

/* Test hook: the next atomic writes fail with ENOSPC ("No space left on device") once
   `after_bytes` bytes have been written in total; -1 (the default) disables it. */
void lumen_io_inject_write_failure(int64_t after_bytes);

/* Opens an input for reading: never blocks on a FIFO or device (O_NONBLOCK open, fstat), refuses
   anything but a regular file ("FN: 'PATH' is a FIFO (named pipe), expected a regular file"),
   then reads block normally. size_out (may be NULL) gets the file's size. Every input a command
   reads goes through these (src/io/io_open.c). */
lumen_status lumen_io_open_regular(lumen_ctx *ctx, const char *fn, const char *path, int *fd_out,
                                   int64_t *size_out);
lumen_status lumen_io_fopen_regular(lumen_ctx *ctx, const char *fn, const char *path, FILE **out);
/* lumen_io_kind_name: public (include/lumen/io.h). */
/* 1 when PATH (after symlinks) is a regular file; for pre-checks before a third-party reader. */
int lumen_io_is_regular_file(const char *path);

/* NIfTI .hdr/.img pairs (src/io/nifti_pair.c): 1 when PATH ends with .hdr(.gz), 2 with .img(.gz),
   0 otherwise; the other file of its pair when it is a regular file (allocated), else NULL. */
int lumen_nifti_pair_member(const char *path);
char *lumen_nifti_pair_sibling(const char *path);

/* lumen_io_remove_stale_temporaries: public (include/lumen/io.h). */

/* Reads a whole (small) file into a NUL-terminated buffer; refuses files over max_bytes. */
lumen_status lumen_io_slurp(lumen_ctx *ctx, const char *fn, const char *path, int64_t max_bytes, char **out,
                            size_t *length);

#ifdef __cplusplus
}
#endif
#endif
