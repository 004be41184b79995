/* The host work of a cuda-tier chunk, shared by the CUDA backend (src/cuda/fit_host.cu) and the
   fake device of fit_cuda.c: gathering the chunk's curves into a staging buffer and delivering
   its result rows. Its own file, so that the backend (a higher layer) and fit_cuda.c (which picks
   the backend) do not depend on each other. */
#include <string.h>
#include "fit/fit_cuda.h"
#include "fit/fit_internal.h"
#include "lumen_build_config.h"

/* ------------------------------------------------------------------ host work of a chunk */
/* below this many curves one thread does it (a parallel region costs more than it saves) */
#define HOST_PARALLEL_MIN 4096

void lumen_fitcu_gather(const lumen_fitcu_input *in, int64_t first, int64_t count, void *dst, size_t row,
                        void *cdst, size_t crow) {
  const unsigned char *src = in->data, *csrc = in->consts;
  unsigned char *d = dst, *cd = cdst;
  const int64_t *list = in->list + first;
  if (count <= 0) return;
  if (list[count - 1] - list[0] == count - 1) { /* contiguous: block copies */
    const int64_t c0 = list[0];
    const int nth = in->threads > 1 && count >= HOST_PARALLEL_MIN ? in->threads : 1;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
#endif
    for (int b = 0; b < nth; ++b) {
      int64_t lo = count * b / nth, hi = count * (b + 1) / nth;
      memcpy(d + (size_t)lo * row, src + (size_t)(c0 + lo) * row, (size_t)(hi - lo) * row);
      if (cd && csrc) memcpy(cd + (size_t)lo * crow, csrc + (size_t)(c0 + lo) * crow, (size_t)(hi - lo) * crow);
    }
    return;
  }
  const int nth = in->threads > 1 && count >= HOST_PARALLEL_MIN ? in->threads : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
#endif
  for (int64_t i = 0; i < count; ++i) {
    memcpy(d + (size_t)i * row, src + (size_t)list[i] * row, row);
    if (cd && csrc) memcpy(cd + (size_t)i * crow, csrc + (size_t)list[i] * crow, crow);
  }
}

void lumen_fitcu_deliver(const lumen_fitcu_input *in, int64_t first, int64_t count, const lumen_fitcu_row *rows) {
  const int nth = in->threads > 1 && count >= HOST_PARALLEL_MIN ? in->threads : 1;
  (void)nth;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(nth) schedule(static) if (nth > 1)
#endif
  for (int64_t i = 0; i < count; ++i) in->deliver(in->user, first + i, &rows[i]);
}
