/* Parallel gzip members (gz_members.h). A batch holds up to `threads` chunks of GZ_CHUNK_BYTES;
   the chunks are compressed in parallel (OpenMP), each as consecutive members of GZ_MEMBER_BYTES,
   then written in order, so memory stays at about 2 x threads x GZ_CHUNK_BYTES whatever the file size. */
#include "io/gz_members.h"
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lumen_build_config.h"

#ifdef LUMEN_HAVE_LIBDEFLATE
#include <libdeflate.h>

struct lumen_gz_members {
  int level, threads;
  lumen_gz_sink sink;
  void *user;
  unsigned char *in;      /* threads x GZ_CHUNK_BYTES */
  size_t used;
  unsigned char **out;    /* per chunk: its members' compressed bytes */
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
  z->in = malloc((size_t)z->threads * GZ_CHUNK_BYTES);
  z->out = calloc((size_t)z->threads, sizeof *z->out);
  z->out_len = calloc((size_t)z->threads, sizeof *z->out_len);
  if (!z->in || !z->out || !z->out_len) {
    lumen_gz_members_free(z);
    return NULL;
  }
  return z;
}

static void put_le32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = (unsigned char)(v >> (8 * i));
}

/* One member: a gzip header whose extra field carries the 'LM' subfield (the member's compressed
   and uncompressed sizes, gz_members.h), the raw deflate stream, CRC-32 and length. 0 on failure. */
static size_t compress_member(struct libdeflate_compressor *c, const unsigned char *in, size_t len, unsigned char *out) {
  const size_t bound = libdeflate_deflate_compress_bound(c, len);
  const size_t n = libdeflate_deflate_compress(c, in, len, out + GZ_MEMBER_HEADER, bound);
  if (!n) return 0;
  const size_t total = GZ_MEMBER_HEADER + n + 8;
  static const unsigned char head[16] = {0x1f, 0x8b, 8, 4 /* FEXTRA */, 0, 0, 0, 0, 0, 255 /* OS unknown */,
                                         12, 0 /* XLEN */, 'L', 'M', 8, 0 /* subfield LEN */};
  memcpy(out, head, sizeof head);
  put_le32(out + 16, (uint32_t)total);
  put_le32(out + 20, (uint32_t)len);
  put_le32(out + total - 8, libdeflate_crc32(0, in, len));
  put_le32(out + total - 4, (uint32_t)len);
  return total;
}

/* Chunk m of the batch (its bytes [off, off + len)) as consecutive members into z->out[m]; an
   empty chunk is one empty member. 0 when a compressor or buffer cannot be had. */
static size_t compress_chunk(lumen_gz_members *z, int m, size_t off, size_t len) {
  struct libdeflate_compressor *c = libdeflate_alloc_compressor(z->level);
  const size_t per = GZ_MEMBER_HEADER + 8 + (c ? libdeflate_deflate_compress_bound(c, GZ_MEMBER_BYTES) : 0);
  if (c && !z->out[m]) z->out[m] = malloc(per * (GZ_CHUNK_BYTES / GZ_MEMBER_BYTES));
  size_t used = 0;
  for (size_t at = 0; c && z->out[m] && (at < len || at == 0); at += GZ_MEMBER_BYTES) {
    const size_t n = len - at < GZ_MEMBER_BYTES ? len - at : GZ_MEMBER_BYTES;
    const size_t k = compress_member(c, z->in + off + at, n, z->out[m] + used);
    if (!k) {
      used = 0;
      break;
    }
    used += k;
    if (len == 0) break;
  }
  libdeflate_free_compressor(c);
  return used;
}

/* Compresses and writes the buffered bytes, a chunk per thread (one empty member when nothing
   was ever written and `finish` is set). */
static int flush_batch(lumen_gz_members *z, int finish) {
  int nm = (int)((z->used + GZ_CHUNK_BYTES - 1) / GZ_CHUNK_BYTES);
  if (nm == 0 && !(finish && !z->wrote)) return 0;
  if (nm == 0) nm = 1;
  int failed = 0;
#if LUMEN_HAVE_OPENMP
#pragma omp parallel for num_threads(nm < z->threads ? nm : z->threads) schedule(static, 1) reduction(| : failed)
#endif
  for (int m = 0; m < nm; ++m) {
    size_t off = (size_t)m * GZ_CHUNK_BYTES;
    size_t len = z->used > off ? z->used - off : 0;
    if (len > GZ_CHUNK_BYTES) len = GZ_CHUNK_BYTES;
    z->out_len[m] = compress_chunk(z, m, off, len);
    if (!z->out_len[m]) failed = 1;
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
  const size_t cap = (size_t)z->threads * GZ_CHUNK_BYTES;
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
