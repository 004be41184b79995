/* Reading a large uncompressed block of a file on several threads (lumen_io_pread_parallel,
   io_internal.h). A serial read of a 670 MB series from the page cache is one thread copying
   (and, into a fresh buffer, one thread taking every first-touch page fault); here each thread
   preads its own slices straight into the destination (or, when the stored type is converted,
   into a slice buffer of its own and converts from there), so the copy, the conversion and the
   page zeroing are shared. Slices are read in rounds between progress reports (the callback may cancel).
   A short read is a truncated file and an errno a read error, reported at the lowest slice that
   came short, in the words of the serial readers. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "io/io_internal.h"
#include "lumen_build_config.h"
#if LUMEN_HAVE_OPENMP
#include <omp.h>
#endif

/* bytes a thread reads at once (multiples of every element size): straight into the destination,
   or into its own buffer when converting; threads beyond MAX_THREADS add nothing but buffers */
enum { SLICE = 16 << 20, CONVERT_SLICE = 4 << 20, MAX_THREADS = 16 };

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

/* Slices [k0, k1) of slice bytes each, by the threads; *bad: the lowest slice that came short
   (-1: none), with the bytes read before it (*bad_got) and errno (*bad_err). */
static void read_round(const lumen_io_pread_job *job, int threads, int64_t slice, int64_t k0, int64_t k1,
                       unsigned char *scratch, int64_t *bad, int64_t *bad_got, int *bad_err) {
  *bad = -1;
  (void)threads;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
#endif
  for (int64_t k = k0; k < k1; ++k) {
    const int64_t off = k * slice, n = job->bytes - off < slice ? job->bytes - off : slice;
#if LUMEN_HAVE_OPENMP
    const int t = omp_get_thread_num();
#else
    const int t = 0;
#endif
    unsigned char *buf = job->convert ? scratch + (int64_t)t * slice : job->dst + off;
    if (!job->convert) lumen_populate_pages(buf, (size_t)n); /* no fault per page in the read */
    int err = 0;
    const int64_t got = pread_full(job->fd, buf, job->offset + off, n, &err);
    if (got == n && job->swap) job->swap(n / job->elem, job->elem, buf);
    if (got == n && job->convert) job->convert(job->user, buf, off / job->elem, n / job->elem);
    if (got < n) {
#if LUMEN_HAVE_OPENMP
#pragma omp critical(lumen_io_pread_bad)
#endif
      if (*bad < 0 || k < *bad) {
        *bad = k;
        *bad_got = off + got;
        *bad_err = err;
      }
    }
  }
}

lumen_status lumen_io_pread_parallel(const lumen_io_pread_job *job) {
  lumen_ctx *ctx = job->ctx;
  /* a converting read's slice buffers are per thread: smaller slices, at most MAX_THREADS */
  const int64_t slice = job->convert ? CONVERT_SLICE : SLICE;
  const int threads = job->threads < 1 ? 1 : job->threads > MAX_THREADS ? MAX_THREADS : job->threads;
  const int64_t nslice = (job->bytes + slice - 1) / slice;
  const int64_t per_round = (int64_t)threads * (job->convert ? 16 : 4); /* 64 MB a thread between reports */
  unsigned char *scratch = job->convert ? malloc((size_t)(threads * slice)) : NULL;
  if (job->convert && !scratch)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory reading '%s'", job->fn, job->path);
  lumen_status s = LUMEN_OK;
  for (int64_t r0 = 0; r0 < nslice && s == LUMEN_OK; r0 += per_round) {
    const int64_t r1 = r0 + per_round < nslice ? r0 + per_round : nslice;
    int64_t bad = -1, bad_got = 0;
    int bad_err = 0;
    read_round(job, threads, slice, r0, r1, scratch, &bad, &bad_got, &bad_err);
    if (bad >= 0 && bad_err)
      s = lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot read '%s' (%s): %s", job->fn, job->path, job->what, strerror(bad_err));
    else if (bad >= 0)
      s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' is truncated: the %s ends after %lld of %lld bytes", job->fn,
                     job->path, job->what, (long long)bad_got, (long long)job->bytes);
    else if (job->stage && r1 < nslice)
      s = lumen_progress(ctx, (double)(r1 * slice) / (double)job->bytes, job->stage);
  }
  free(scratch);
  return s;
}
