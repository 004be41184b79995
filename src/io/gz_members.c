/* Parallel gzip members (gz_members.h). A batch holds up to `threads` members; the members of a
   batch are compressed in parallel (OpenMP), then written in order, so memory stays at about
   2 x threads x GZ_MEMBER_BYTES whatever the file size. */
#include "io/gz_members.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lumen_build_config.h"

#ifdef LUMEN_HAVE_LIBDEFLATE
#include <libdeflate.h>

struct lumen_gz_members {
  int level, threads;
  lumen_gz_sink sink;
  void *user;
  unsigned char *in;      /* threads x GZ_MEMBER_BYTES */
  size_t used;
  unsigned char **out;    /* per member: its compressed bytes */
  size_t *out_len, out_cap;
  int wrote;              /* at least one member written */
};

int lumen_gz_members_available(void) { return 1; }

lumen_gz_members *lumen_gz_members_create(int level, int threads, lumen_gz_sink sink, void *user) {
  lumen_gz_members *z = calloc(1, sizeof *z);
  if (!z) return NULL;
  z->level = level < 1 ? 1 : level > 12 ? 12 : level;
  z->threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
  z->sink = sink;
  z->user = user;
  z->in = malloc((size_t)z->threads * GZ_MEMBER_BYTES);
  z->out = calloc((size_t)z->threads, sizeof *z->out);
  z->out_len = calloc((size_t)z->threads, sizeof *z->out_len);
  if (!z->in || !z->out || !z->out_len) {
    lumen_gz_members_free(z);
    return NULL;
  }
  return z;
}

/* Compresses and writes the buffered bytes as ceil(used / GZ_MEMBER_BYTES) members (one empty
   member when nothing was ever written and `finish` is set). */
static int flush_batch(lumen_gz_members *z, int finish) {
  int nm = (int)((z->used + GZ_MEMBER_BYTES - 1) / GZ_MEMBER_BYTES);
  if (nm == 0 && !(finish && !z->wrote)) return 0;
  if (nm == 0) nm = 1;
  int failed = 0;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(nm < z->threads ? nm : z->threads) schedule(static, 1) reduction(| : failed)
#endif
  for (int m = 0; m < nm; ++m) {
    size_t off = (size_t)m * GZ_MEMBER_BYTES;
    size_t len = z->used > off ? z->used - off : 0;
    if (len > GZ_MEMBER_BYTES) len = GZ_MEMBER_BYTES;
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(z->level);
    size_t bound = c ? libdeflate_gzip_compress_bound(c, len) : 0;
    if (c && !z->out[m]) z->out[m] = malloc(libdeflate_gzip_compress_bound(c, GZ_MEMBER_BYTES));
    z->out_len[m] = c && z->out[m] ? libdeflate_gzip_compress(c, z->in + off, len, z->out[m], bound) : 0;
    if (!z->out_len[m]) failed = 1;
    libdeflate_free_compressor(c);
  }
  if (failed) return ENOMEM;
  for (int m = 0; m < nm; ++m) {
    int e = z->sink(z->user, z->out[m], z->out_len[m]);
    if (e) return e;
  }
  z->used = 0;
  z->wrote = 1;
  return 0;
}

int lumen_gz_members_write(lumen_gz_members *z, const void *data, size_t n) {
  const unsigned char *p = data;
  const size_t cap = (size_t)z->threads * GZ_MEMBER_BYTES;
  while (n > 0) {
    size_t k = cap - z->used < n ? cap - z->used : n;
    memcpy(z->in + z->used, p, k);
    z->used += k;
    p += k;
    n -= k;
    if (z->used == cap) {
      int e = flush_batch(z, 0);
      if (e) return e;
    }
  }
  return 0;
}

int lumen_gz_members_finish(lumen_gz_members *z) { return flush_batch(z, 1); }

void lumen_gz_members_free(lumen_gz_members *z) {
  if (!z) return;
  for (int m = 0; z->out && m < z->threads; ++m) free(z->out[m]);
  free(z->out);
  free(z->out_len);
  free(z->in);
  free(z);
}

#else /* !LUMEN_HAVE_LIBDEFLATE */

int lumen_gz_members_available(void) { return 0; }
lumen_gz_members *lumen_gz_members_create(int level, int threads, lumen_gz_sink sink, void *user) {
  (void)level; (void)threads; (void)sink; (void)user;
  return NULL;
}
int lumen_gz_members_write(lumen_gz_members *z, const void *data, size_t n) {
  (void)z; (void)data; (void)n;
  return ENOSYS;
}
int lumen_gz_members_finish(lumen_gz_members *z) {
  (void)z;
  return ENOSYS;
}
void lumen_gz_members_free(lumen_gz_members *z) { (void)z; }
#endif
