/* Random access into lumen's gzip members (gz_index.h). The file is untrusted: every size in a
   member header is checked against the file before it is used, and a member that inflates to
   anything but its stated size (or whose CRC-32 differs) is an error, never data. */
#define _POSIX_C_SOURCE 200809L
#include "io/gz_index.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/gz_members.h"
#include "lumen_build_config.h"

#ifdef LUMEN_HAVE_LIBDEFLATE
#include <libdeflate.h>

/* A member may hold more than the writer's GZ_MEMBER_BYTES (a later writer's choice), not more than this. */
enum { MAX_MEMBER_BYTES = 16 << 20 };

typedef struct member {
  uint64_t file_offset, data_offset; /* where it starts in the file and in the uncompressed bytes */
  uint32_t file_size, data_size;
} member;

typedef struct slot {
  int member;                        /* -1 when empty */
  uint64_t last_use;
  unsigned char *data;
  size_t cap;
} slot;

struct lumen_gz_index {
  int fd;
  member *m;
  int n;
  uint64_t total;
  slot *slots;
  int n_slots;
  int *slot_of;                      /* per member: its slot, -1 when not inflated */
  uint64_t tick;
  unsigned char *in;                 /* one member's compressed bytes */
  size_t in_cap;
  struct libdeflate_decompressor *d;
};

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t at) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t k = pread(fd, p, n, (off_t)at);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return errno;
    if (k == 0) return EINVAL; /* the file ends inside a member */
    p += k;
    n -= (size_t)k;
    at += (uint64_t)k;
  }
  return 0;
}

/* The member headers are read through a small window of the file: a 600 MB file has ~10,000
   members, whose headers are all that opening it reads. */
typedef struct window {
  unsigned char *p;
  uint64_t at, len;
} window;
enum { WINDOW_BYTES = 4096 }; /* several headers of well-compressed members, one otherwise */

/* The header of the member at `at`: its sizes, or EINVAL / ENOTSUP (no 'LM' subfield). */
static int read_header(int fd, window *w, uint64_t at, uint64_t file_size, member *out) {
  if (file_size - at < GZ_MEMBER_HEADER + 8) return EINVAL;
  if (at < w->at || at + GZ_MEMBER_HEADER > w->at + w->len) {
    const uint64_t n = file_size - at < WINDOW_BYTES ? file_size - at : WINDOW_BYTES;
    int e = pread_all(fd, w->p, (size_t)n, at);
    if (e) return e;
    w->at = at;
    w->len = n;
  }
  const unsigned char *h = w->p + (at - w->at);
  if (h[0] != 0x1f || h[1] != 0x8b || h[2] != 8) return at == 0 ? ENOTSUP : EINVAL;
  if (h[3] != 4 || h[10] != 12 || h[11] != 0 || h[12] != 'L' || h[13] != 'M' || h[14] != 8 || h[15] != 0) return ENOTSUP;
  out->file_offset = at;
  out->file_size = le32(h + 16);
  out->data_size = le32(h + 20);
  if (out->file_size < GZ_MEMBER_HEADER + 8 + 1 || out->file_size > file_size - at || out->data_size > MAX_MEMBER_BYTES)
    return EINVAL;
  return 0;
}

static int walk_members(lumen_gz_index *g, uint64_t file_size) {
  int cap = 0, e = 0;
  window w = {malloc(WINDOW_BYTES), 0, 0};
  if (!w.p) return ENOMEM;
  for (uint64_t at = 0; !e && at < file_size;) {
    if (g->n == cap) {
      if (cap > (1 << 28)) { e = EINVAL; break; }
      cap = cap ? 2 * cap : 256;
      member *m = realloc(g->m, sizeof *m * (size_t)cap);
      if (!m) { e = ENOMEM; break; }
      g->m = m;
    }
    member *m = &g->m[g->n];
    e = read_header(g->fd, &w, at, file_size, m);
    if (e) break;
    m->data_offset = g->total;
    g->total += m->data_size;
    at += m->file_size;
    g->n++;
  }
  free(w.p);
  return e ? e : g->n ? 0 : EINVAL;
}

lumen_gz_index *lumen_gz_index_open(const char *path, size_t cache_bytes) {
  lumen_gz_index *g = calloc(1, sizeof *g);
  if (!g) return NULL;
  g->fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat st;
  int e = g->fd < 0 ? errno : fstat(g->fd, &st) ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;
  if (!e) e = walk_members(g, (uint64_t)st.st_size);
  if (!e) {
    uint32_t largest = 1;
    for (int i = 0; i < g->n; ++i)
      if (g->m[i].data_size > largest) largest = g->m[i].data_size;
    g->n_slots = (int)(cache_bytes / largest); /* the cache holds cache_bytes, whatever the headers say */
    if (g->n_slots < 1) g->n_slots = 1;
    if (g->n_slots > g->n) g->n_slots = g->n;
    g->slots = calloc((size_t)g->n_slots, sizeof *g->slots);
    g->slot_of = malloc(sizeof(int) * (size_t)g->n);
    g->d = libdeflate_alloc_decompressor();
    if (!g->slots || !g->slot_of || !g->d) e = ENOMEM;
    for (int i = 0; !e && i < g->n_slots; ++i) g->slots[i].member = -1;
    for (int i = 0; !e && i < g->n; ++i) g->slot_of[i] = -1;
  }
  if (e) {
    lumen_gz_index_close(g);
    errno = e;
    return NULL;
  }
  return g;
}

uint64_t lumen_gz_index_size(const lumen_gz_index *g) { return g->total; }
int lumen_gz_index_members(const lumen_gz_index *g) { return g->n; }

/* The member holding uncompressed byte `offset` (< total). */
static int member_of(const lumen_gz_index *g, uint64_t offset) {
  int lo = 0, hi = g->n - 1;
  while (lo < hi) {
    int mid = lo + (hi - lo + 1) / 2;
    if (g->m[mid].data_offset <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Member i inflated, from the cache or into its least recently used slot; NULL with *err set. */
static const unsigned char *inflated(lumen_gz_index *g, int i, int *err) {
  if (g->slot_of[i] >= 0) {
    slot *hit = &g->slots[g->slot_of[i]];
    hit->last_use = ++g->tick;
    return hit->data;
  }
  slot *s = &g->slots[0];
  for (int k = 1; k < g->n_slots; ++k)
    if (g->slots[k].last_use < s->last_use) s = &g->slots[k];
  if (s->member >= 0) g->slot_of[s->member] = -1;
  const member *m = &g->m[i];
  if (g->in_cap < m->file_size) {
    unsigned char *p = realloc(g->in, m->file_size);
    if (!p) return *err = ENOMEM, NULL;
    g->in = p;
    g->in_cap = m->file_size;
  }
  if (s->cap < m->data_size || !s->data) {
    unsigned char *p = realloc(s->data, m->data_size ? m->data_size : 1);
    if (!p) return *err = ENOMEM, NULL;
    s->data = p;
    s->cap = m->data_size;
  }
  s->member = -1;
  int e = pread_all(g->fd, g->in, m->file_size, m->file_offset);
  if (e) return *err = e, NULL;
  size_t got = 0;
  if (libdeflate_gzip_decompress(g->d, g->in, m->file_size, s->data, m->data_size, &got) != LIBDEFLATE_SUCCESS ||
      got != m->data_size)
    return *err = EIO, NULL;
  s->member = i;
  s->last_use = ++g->tick;
  g->slot_of[i] = (int)(s - g->slots);
  return s->data;
}

int lumen_gz_index_read(lumen_gz_index *g, uint64_t offset, size_t n, void *dst) {
  if (offset > g->total || n > g->total - offset) return ERANGE;
  unsigned char *out = dst;
  while (n > 0) {
    const int i = member_of(g, offset);
    int err = 0;
    const unsigned char *p = inflated(g, i, &err);
    if (!p) return err;
    const uint64_t within = offset - g->m[i].data_offset;
    size_t k = (size_t)(g->m[i].data_size - within);
    if (k > n) k = n;
    memcpy(out, p + within, k);
    out += k;
    offset += k;
    n -= k;
  }
  return 0;
}

void lumen_gz_index_close(lumen_gz_index *g) {
  if (!g) return;
  if (g->fd >= 0) close(g->fd);
  for (int k = 0; g->slots && k < g->n_slots; ++k) free(g->slots[k].data);
  free(g->slots);
  free(g->slot_of);
  free(g->m);
  free(g->in);
  if (g->d) libdeflate_free_decompressor(g->d);
  free(g);
}

#else /* !LUMEN_HAVE_LIBDEFLATE: lumen wrote one zlib stream, nothing to index */

lumen_gz_index *lumen_gz_index_open(const char *path, size_t cache_bytes) {
  (void)path;
  (void)cache_bytes;
  errno = ENOTSUP;
  return NULL;
}
uint64_t lumen_gz_index_size(const lumen_gz_index *g) { (void)g; return 0; }
int lumen_gz_index_members(const lumen_gz_index *g) { (void)g; return 0; }
int lumen_gz_index_read(lumen_gz_index *g, uint64_t offset, size_t n, void *dst) {
  (void)g; (void)offset; (void)n; (void)dst;
  return ENOTSUP;
}
void lumen_gz_index_close(lumen_gz_index *g) { (void)g; }
#endif
