/* Reading a large uncompressed block of a file on several threads (lumen_io_pread_parallel,
   io_internal.h). A serial read of a 670 MB series from the page cache is one thread copying
   (and, into a fresh buffer, one thread taking every first-touch page fault); here each thread
   preads its own slices straight into the destination, so both the copy and the page zeroing
   are shared. Slices are read in rounds between progress reports (the callback may cancel).
   A short read is a truncated file and an errno a read error, reported at the lowest slice that
   came short, in the words of the serial readers. */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "io/io_internal.h"
#include "lumen_build_config.h"

enum { SLICE = 16 << 20 }; /* bytes a thread reads at once: a multiple of every element size */

/* Reads [off, off + n) of fd into dst; *err gets errno or 0. Returns the bytes read (< n at the
   end of the file or on an error). */
static int64_t pread_full(int fd, unsigned char *dst, int64_t off, int64_t n, int *err) {
  int64_t got = 0;
  *err = 0;
  while (got < n) {
    ssize_t k = pread(fd, dst + got, (size_t)(n - got), (off_t)(off + got));
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      *err = errno;
      break;
    }
    if (k == 0) break;
    got += (int64_t)k;
  }
  return got;
}

lumen_status lumen_io_pread_parallel(const lumen_io_pread_job *job) {
  lumen_ctx *ctx = job->ctx;
  const int64_t nslice = (job->bytes + SLICE - 1) / SLICE;
  const int threads = job->threads > 1 ? job->threads : 1;
  const int64_t per_round = (int64_t)threads * 4; /* 64 MB a thread between progress reports */
  lumen_status s = LUMEN_OK;
  for (int64_t r0 = 0; r0 < nslice && s == LUMEN_OK; r0 += per_round) {
    const int64_t r1 = r0 + per_round < nslice ? r0 + per_round : nslice;
    int64_t bad = -1, bad_got = 0; /* the lowest slice of this round that came short */
    int bad_err = 0;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
    for (int64_t k = r0; k < r1; ++k) {
      const int64_t off = k * SLICE, n = job->bytes - off < SLICE ? job->bytes - off : SLICE;
      int err = 0;
      const int64_t got = pread_full(job->fd, job->dst + off, job->offset + off, n, &err);
      if (got == n && job->swap) job->swap((int64_t)(n / job->elem), job->elem, job->dst + off);
      if (got < n) {
#if LUMEN_HAVE_OPENMP
#pragma omp critical(lumen_io_pread_bad)
#endif
        if (bad < 0 || k < bad) {
          bad = k;
          bad_got = off + got;
          bad_err = err;
        }
      }
    }
    if (bad >= 0 && bad_err)
      s = lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot read '%s' (%s): %s", job->fn, job->path, job->what, strerror(bad_err));
    else if (bad >= 0)
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is truncated: the %s ends after %lld of %lld bytes", job->fn,
                     job->path, job->what, (long long)bad_got, (long long)job->bytes);
    else if (job->stage && r1 < nslice)
      s = lumen_progress(ctx, (double)(r1 * SLICE) / (double)job->bytes, job->stage);
  }
  return s;
}
