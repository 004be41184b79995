/* Parallel gzip members (src/io/gz_members.c) and the atomic writer's use of them: every size
   (empty, one byte, a member exactly, a member and a byte, several batches) decompresses with
   zlib's own inflate, member after member, to the bytes written; the number of members is
   ceil(n / 64 KiB) (one for an empty input); the bytes do not depend on the thread count; a
   .nii.gz of several members reads back through lumen_nifti_read and zlib's gzread.
   The random-access reader (src/io/gz_index.c) over such files: any byte range equals the data,
   a damaged member fails alone (EIO), one-stream gzip and truncated or lying headers do not open. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "test_support.h"
#include "io/gz_index.h"
#include "io/gz_members.h"
#include "io/io_internal.h"
#include "lumen/io.h"

static char g_dir[256];

typedef struct sinkbuf { unsigned char *p; size_t n, cap; int calls; } sinkbuf;

static int to_memory(void *user, const unsigned char *p, size_t n) {
  sinkbuf *b = user;
  if (b->n + n > b->cap) {
    size_t cap = (b->n + n) * 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) return ENOMEM;
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, p, n);
  b->n += n;
  b->calls++;
  return 0;
}

/* zlib's inflate in gzip mode over every member; returns the bytes, *members the member count. */
static unsigned char *inflate_members(const unsigned char *in, size_t n, size_t expect, int *members) {
  unsigned char *out = malloc(expect + 1);
  assert_non_null(out);
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  assert_int_equal(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
  zs.next_in = (unsigned char *)in;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)(expect + 1);
  *members = 0;
  for (;;) {
    int rc = inflate(&zs, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) {
      ++*members;
      if (zs.avail_in == 0) break;
      assert_int_equal(inflateReset(&zs), Z_OK);
      continue;
    }
    assert_int_equal(rc, Z_OK);
    assert_true(zs.avail_in > 0 || zs.avail_out > 0);
  }
  assert_int_equal((size_t)(zs.next_out - out), expect);
  inflateEnd(&zs);
  return out;
}

static unsigned char *pattern(size_t n) {
  unsigned char *d = malloc(n ? n : 1);
  assert_non_null(d);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; ++i) { /* compressible, not constant */
    x = x * 1664525u + 1013904223u;
    d[i] = (unsigned char)((i / 97) % 13 + (x >> 29));
  }
  return d;
}

static void sizes_and_threads(void **state) {
  (void)state;
  const size_t mb = GZ_MEMBER_BYTES;
  const size_t sizes[] = {0, 1, 1000, mb, mb + 1, 5 * mb + 123, GZ_CHUNK_BYTES, 3 * GZ_CHUNK_BYTES + 7};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
    const size_t n = sizes[si];
    unsigned char *data = pattern(n);
    sinkbuf first = {0};
    for (int threads = 1; threads <= 3; threads += 2) {
      sinkbuf b = {0};
      lumen_gz_members *z = lumen_gz_members_create(1, threads, to_memory, &b);
      assert_non_null(z);
      for (size_t off = 0; off < n; off += 7777) /* pieces that straddle members and batches */
        assert_int_equal(lumen_gz_members_write(z, data + off, n - off < 7777 ? n - off : 7777), 0);
      assert_int_equal(lumen_gz_members_finish(z), 0);
      lumen_gz_members_free(z);
      int members = 0;
      unsigned char *back = inflate_members(b.p, b.n, n, &members);
      assert_memory_equal(back, data, n ? n : 0);
      assert_int_equal(members, n ? (int)((n + mb - 1) / mb) : 1);
      assert_true(n < 4096 || b.n < n); /* it compresses */
      free(back);
      if (threads == 1) {
        first = b;
      } else {
        assert_int_equal(b.n, first.n); /* the thread count changes nothing */
        assert_memory_equal(b.p, first.p, b.n);
        free(b.p);
      }
    }
    free(first.p);
    free(data);
  }
}

static void nifti_of_several_members(void **state) {
  lumen_ctx *ctx = *state;
  lumen_ctx_set_threads(ctx, 2);
  const int64_t dims[3] = {700, 600, 2}; /* 3.36 MB of float: 4 members */
  lumen_image *im = lumen_test_image(ctx, 3, dims, LUMEN_DTYPE_FLOAT32);
  float *v = lumen_image_data(im);
  for (int64_t i = 0; i < dims[0] * dims[1] * dims[2]; ++i) v[i] = (float)((i % 1001) * 0.25 - (i % 7));
  lumen_nifti_write_opts wo;
  memset(&wo, 0, sizeof wo);
  wo.compress_level = 1;
  const char *path = lumen_test_join(g_dir, "several.nii.gz");
  assert_int_equal(lumen_nifti_write(ctx, path, im, &wo), LUMEN_OK);
  lumen_image *back = NULL;
  assert_int_equal(lumen_nifti_read(ctx, path, NULL, &back, NULL), LUMEN_OK);
  lumen_test_assert_images_equal(im, back);
  lumen_image_free(back);
  /* zlib's gzread (what nifti_clib and most readers use) reads the members as one stream */
  gzFile gz = gzopen(path, "rb");
  assert_non_null(gz);
  const size_t total = 352 + sizeof(float) * 700 * 600 * 2;
  unsigned char *all = malloc(total + 16);
  assert_non_null(all);
  size_t got = 0;
  int k;
  while ((k = gzread(gz, all + got, (unsigned)(total + 16 - got))) > 0) got += (size_t)k;
  gzclose(gz);
  assert_int_equal(got, total);
  assert_memory_equal(all + 352, v, total - 352);
  free(all);
  remove(path);
  lumen_image_free(im);
}

/* data -> a file of lumen's members (2 threads) at path */
static void write_members(const char *path, const unsigned char *data, size_t n) {
  sinkbuf b = {0};
  lumen_gz_members *z = lumen_gz_members_create(1, 2, to_memory, &b);
  assert_non_null(z);
  assert_int_equal(lumen_gz_members_write(z, data, n), 0);
  assert_int_equal(lumen_gz_members_finish(z), 0);
  lumen_gz_members_free(z);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(b.p, 1, b.n, f), b.n);
  fclose(f);
  free(b.p);
}

static void index_reads_any_range(void **state) {
  (void)state;
  const size_t n = 3 * GZ_CHUNK_BYTES + 4321;
  unsigned char *data = pattern(n), *got = malloc(n);
  assert_non_null(got);
  const char *path = lumen_test_join(g_dir, "indexed.gz");
  write_members(path, data, n);
  for (size_t cache = 0; cache <= ((size_t)8 << 20); cache += (size_t)8 << 20) { /* one slot, and all */
    lumen_gz_index *g = lumen_gz_index_open(path, cache);
    assert_non_null(g);
    assert_int_equal(lumen_gz_index_size(g), n);
    assert_int_equal(lumen_gz_index_members(g), (int)((n + GZ_MEMBER_BYTES - 1) / GZ_MEMBER_BYTES));
    assert_int_equal(lumen_gz_index_read(g, 0, n, got), 0); /* everything, across every member */
    assert_memory_equal(got, data, n);
    uint32_t x = 7;
    for (int k = 0; k < 300; ++k) { /* ranges anywhere, in any order, some across a member's end */
      x = x * 1664525u + 1013904223u;
      const size_t off = x % n, len = (x >> 7) % 200000 % (n - off) + 1;
      assert_int_equal(lumen_gz_index_read(g, off, len, got), 0);
      assert_memory_equal(got, data + off, len);
    }
    assert_int_equal(lumen_gz_index_read(g, n - 1, 1, got), 0);
    assert_int_equal(got[0], data[n - 1]);
    assert_int_equal(lumen_gz_index_read(g, n, 0, got), 0);
    assert_int_equal(lumen_gz_index_read(g, n - 1, 2, got), ERANGE);
    assert_int_equal(lumen_gz_index_read(g, UINT64_MAX, 2, got), ERANGE);
    lumen_gz_index_close(g);
  }
  free(got);
  free(data);
  remove(path);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *p = malloc(*n + 1);
  assert_non_null(p);
  assert_int_equal(fread(p, 1, *n, f), *n);
  fclose(f);
  return p;
}

static void spill(const char *path, const unsigned char *p, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(p, 1, n, f), n);
  fclose(f);
}

static void index_refuses_damage(void **state) {
  (void)state;
  const size_t n = 5 * GZ_MEMBER_BYTES;
  unsigned char *data = pattern(n), *got = malloc(n);
  assert_non_null(got);
  const char *path = lumen_test_join(g_dir, "damaged.gz");
  write_members(path, data, n);
  size_t fn;
  unsigned char *file = slurp(path, &fn);
  const uint32_t first = (uint32_t)file[16] | (uint32_t)file[17] << 8 | (uint32_t)file[18] << 16 | (uint32_t)file[19] << 24;
  /* a byte of member 2's compressed data flipped: member 2 fails, the others still read */
  unsigned char *bad = malloc(fn);
  assert_non_null(bad);
  memcpy(bad, file, fn);
  size_t at = 0;
  for (int m = 0; m < 2; ++m) at += (uint32_t)bad[at + 16] | (uint32_t)bad[at + 17] << 8 | (uint32_t)bad[at + 18] << 16;
  bad[at + GZ_MEMBER_HEADER + 40] ^= 0x5a;
  spill(path, bad, fn);
  lumen_gz_index *g = lumen_gz_index_open(path, 1 << 20);
  assert_non_null(g);
  assert_int_equal(lumen_gz_index_read(g, 2 * GZ_MEMBER_BYTES + 5, 10, got), EIO);
  assert_int_equal(lumen_gz_index_read(g, GZ_MEMBER_BYTES, GZ_MEMBER_BYTES, got), 0);
  assert_memory_equal(got, data + GZ_MEMBER_BYTES, GZ_MEMBER_BYTES);
  assert_int_equal(lumen_gz_index_read(g, 3 * GZ_MEMBER_BYTES, 100, got), 0);
  assert_memory_equal(got, data + 3 * GZ_MEMBER_BYTES, 100);
  lumen_gz_index_close(g);
  /* truncated: the last member ends past the file */
  spill(path, file, fn - 3);
  errno = 0;
  assert_null(lumen_gz_index_open(path, 1 << 20));
  assert_int_equal(errno, EINVAL);
  /* a header that claims more bytes than the file holds */
  memcpy(bad, file, fn);
  bad[19] = 0x7f;
  spill(path, bad, fn);
  assert_null(lumen_gz_index_open(path, 1 << 20));
  assert_int_equal(errno, EINVAL);
  /* a header that claims fewer: the next "member" starts inside member 0's data */
  memcpy(bad, file, fn);
  bad[16] = (unsigned char)(first - 100), bad[17] = (unsigned char)((first - 100) >> 8);
  spill(path, bad, fn);
  assert_null(lumen_gz_index_open(path, 1 << 20));
  /* empty, and not gzip at all */
  spill(path, file, 0);
  assert_null(lumen_gz_index_open(path, 1 << 20));
  spill(path, data, 1000);
  assert_null(lumen_gz_index_open(path, 1 << 20));
  assert_int_equal(errno, ENOTSUP);
  /* one zlib stream (another writer's .gz): not indexable, the caller reads it whole */
  gzFile gz = gzopen(path, "wb1");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, data, 100000), 100000);
  gzclose(gz);
  assert_null(lumen_gz_index_open(path, 1 << 20));
  assert_int_equal(errno, ENOTSUP);
  /* a folder */
  assert_null(lumen_gz_index_open(g_dir, 1 << 20));
  free(bad);
  free(file);
  free(got);
  free(data);
  remove(path);
}

int main(void) {
  if (!lumen_gz_members_available())
    return lumen_test_skip("lumen built without libdeflate (libdeflate-dev): .nii.gz is written by zlib");
  const struct CMUnitTest tests[] = {cmocka_unit_test(sizes_and_threads), LUMEN_TEST_WITH_CTX(nifti_of_several_members),
                                     cmocka_unit_test(index_reads_any_range), cmocka_unit_test(index_refuses_damage)};
  return lumen_test_run_in_dir(g_dir, sizeof g_dir, "gz_members", tests, LUMEN_TEST_COUNT(tests), NULL, NULL);
}
