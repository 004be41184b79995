/* CPU connected-component labelling (scipy.ndimage.label) and the largest component, run-based
 * with union-find.
 *
 * Per spatial block: (1) every row (x line) is scanned for runs of mask != 0, rows in parallel:
 * a count pass, a prefix sum, a fill pass; runs are numbered in raster order. (2) Every row's runs
 * are merged with the runs of its earlier neighbour rows ((y - 1, z), and (y - 1..y + 1, z - 1) in
 * 3-D, those within the connectivity), two pointers over the sorted runs, with an x tolerance of 1
 * where the row offset leaves room for a diagonal step (else 0). Union-find links the larger root
 * under the smaller, so a set's root is its first run in raster order, and path halving keeps
 * every parent at or below its child. (3) Runs in ascending order take their label from their
 * parent (already final), roots a new one: labels number the components in the raster order of
 * their first voxel, as the flood fill they replace did, continuing across the blocks of a batch.
 * (4) The labels (or the largest component's mask) are written row by row in parallel.
 * Masks are read as bytes where the dispatcher hands the uint8 input over (no float32 copy). */
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"

typedef struct lb_src {
  const float *f;   /* float input (mask = value != 0), or NULL */
  const uint8_t *u; /* uint8 input (mask = value != 0), or NULL */
} lb_src;

typedef struct lb_runs {
  int64_t nrows, nruns;
  int64_t *row0;   /* nrows + 1: the first run of every row */
  void *buf;       /* scratch holding xs, xe, par */
  int32_t *xs;     /* run start (inclusive) */
  int32_t *xe;     /* run end (exclusive) */
  int32_t *par;    /* union-find parent; after lb_resolve: -(label) */
} lb_runs;

static int64_t row_count_u8(const uint8_t *p, int64_t n) {
  int64_t c = p[0] != 0;
  for (int64_t x = 1; x < n; x++) c += (p[x] != 0) > (p[x - 1] != 0);
  return c;
}

static int64_t row_count_f32(const float *p, int64_t n) {
  int64_t c = p[0] != 0.0f;
  for (int64_t x = 1; x < n; x++) c += (p[x] != 0.0f) > (p[x - 1] != 0.0f);
  return c;
}

/* the cnt runs of a row, branch-free (random masks mispredict a branchy scan): every x is
   written to the next start (end) slot, which advances on a 0->1 (1->0) step; writes past the
   row's cnt slots go to a sink */
#define ROW_FILL_DENSE(NAME, T)                                                           \
  static void NAME(const T *p, int32_t n, int32_t cnt, int32_t *xs, int32_t *xe) {  \
    int32_t ks = 0, ke = 0, prev = 0, sink = 0;                                     \
    for (int32_t x = 0; x < n; x++) {                                               \
      const int32_t v = p[x] != 0;                                                  \
      *(ks < cnt ? xs + ks : &sink) = x;                                            \
      *(ke < cnt ? xe + ke : &sink) = x;                                            \
      ks += v & !prev;                                                              \
      ke += prev & !v;                                                              \
      prev = v;                                                                     \
    }                                                                               \
    if (prev) xe[ke] = n;                                                           \
    (void)sink;                                                                     \
  }
ROW_FILL_DENSE(row_fill_dense_u8, uint8_t)
ROW_FILL_DENSE(row_fill_dense_f32, float)

/* the first x >= from with (p[x] != 0) == want, else n; 8 bytes a step through uniform words */
static int32_t next_u8(const uint8_t *p, int32_t from, int32_t n, int want) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  int32_t x = from;
  for (; x + 8 <= n; x += 8) {
    uint64_t w;
    memcpy(&w, p + x, 8);
    const int any_zero = ((w - ones) & ~w & highs) != 0;
    if (want ? w != 0 : any_zero) break;
  }
  while (x < n && (p[x] != 0) != want) x++;
  return x;
}

static int32_t next_f32(const float *p, int32_t from, int32_t n, int want) {
  int32_t x = from;
  while (x < n && (p[x] != 0.0f) != want) x++;
  return x;
}

/* the runs of a row with few of them (long runs: a scan from edge to edge) */
#define ROW_FILL_SPARSE(NAME, T, NEXT)                                              \
  static void NAME(const T *p, int32_t n, int32_t cnt, int32_t *xs, int32_t *xe) {  \
    int32_t x = 0;                                                                  \
    for (int32_t k = 0; k < cnt; k++) {                                             \
      xs[k] = x = NEXT(p, x, n, 1);                                                 \
      xe[k] = x = NEXT(p, x, n, 0);                                                 \
    }                                                                               \
  }
ROW_FILL_SPARSE(row_fill_sparse_u8, uint8_t, next_u8)
ROW_FILL_SPARSE(row_fill_sparse_f32, float, next_f32)

/* the cnt runs of row r: per voxel when they are many, else run by run */
static void row_fill(lb_src src, int64_t r, int32_t n0, int32_t cnt, int32_t *xs, int32_t *xe) {
  const int dense = (int64_t)cnt * 16 >= n0;
  if (src.u) {
    const uint8_t *p = src.u + r * n0;
    if (dense)
      row_fill_dense_u8(p, n0, cnt, xs, xe);
    else
      row_fill_sparse_u8(p, n0, cnt, xs, xe);
  } else {
    const float *p = src.f + r * n0;
    if (dense)
      row_fill_dense_f32(p, n0, cnt, xs, xe);
    else
      row_fill_sparse_f32(p, n0, cnt, xs, xe);
  }
}

static void runs_free(lb_runs *R) {
  free(R->row0);
  lf_scratch_put(R->buf);
  memset(R, 0, sizeof *R);
}

/* the run arrays for R->nruns runs; 0 or -1 */
static int runs_alloc(lb_runs *R) {
  lf_scratch_put(R->buf);
  const size_t n = (size_t)(R->nruns > 0 ? R->nruns : 1);
  R->buf = lf_scratch_get(3 * n * sizeof(int32_t));
  if (!R->buf) return -1;
  R->xs = R->buf;
  R->xe = R->xs + n;
  R->par = R->xe + n;
  return 0;
}

/* (1): the runs of one block, rows in parallel; 0, -1 (allocation) or -2 (int32 range) */
static int lb_scan(lb_runs *R, lb_src src, const lf_geom *g, int threads) {
  const int64_t n0 = g->n[0], nrows = g->n[1] * g->n[2];
  if (n0 >= INT32_MAX) return -2;
  R->nrows = nrows;
  int64_t *r0 = realloc(R->row0, (size_t)(nrows + 1) * sizeof *r0);
  if (!r0) return -1;
  R->row0 = r0;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < nrows; r++)
    r0[r + 1] = src.u ? row_count_u8(src.u + r * n0, n0) : row_count_f32(src.f + r * n0, n0);
  r0[0] = 0;
  for (int64_t r = 0; r < nrows; r++) r0[r + 1] += r0[r];
  R->nruns = r0[nrows];
  if (R->nruns >= INT32_MAX) return -2;
  if (runs_alloc(R) != 0) return -1;
  int32_t *xs = R->xs, *xe = R->xe, *par = R->par;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < nrows; r++) {
    const int64_t k0 = r0[r];
    const int32_t k = (int32_t)(r0[r + 1] - k0);
    if (k == 0) continue;
    row_fill(src, r, (int32_t)n0, k, xs + k0, xe + k0);
    for (int32_t i = 0; i < k; i++) par[k0 + i] = (int32_t)(k0 + i);
  }
  return 0;
}

static inline int32_t uf_find(int32_t *p, int32_t x) {
  while (p[x] != x) {
    p[x] = p[p[x]];
    x = p[x];
  }
  return x;
}

static inline void uf_unite(int32_t *p, int32_t a, int32_t b) {
  a = uf_find(p, a);
  b = uf_find(p, b);
  if (a < b)
    p[b] = a;
  else if (b < a)
    p[a] = b;
}

/* unites the runs of row ra with the touching runs of row rb ([s, e) and [ps, pe) touch when
   ps < e + tol and s < pe + tol) */
static void union_rows(lb_runs *R, int64_t ra, int64_t rb, int32_t tol) {
  int32_t i = (int32_t)R->row0[ra], iend = (int32_t)R->row0[ra + 1];
  int32_t j = (int32_t)R->row0[rb], jend = (int32_t)R->row0[rb + 1];
  const int32_t *xs = R->xs, *xe = R->xe;
  while (i < iend && j < jend) {
    if (xe[j] + tol <= xs[i]) {
      j++;
    } else if (xe[i] + tol <= xs[j]) {
      i++;
    } else {
      uf_unite(R->par, i, j);
      if (xe[j] < xe[i])
        j++;
      else
        i++;
    }
  }
}

/* row ra = (y, z) against its earlier neighbour rows within the connectivity: those at or after
   row lo (lo_side = 1) or before it (lo_side = 0) */
static void union_row(lb_runs *R, const lf_geom *g, int connectivity, int64_t ra, int64_t lo, int lo_side) {
  const int64_t n1 = g->n[1], y = ra % n1, z = ra / n1;
  const int zr = g->spatial > 2 ? 1 : 0, yr = g->spatial > 1 ? 1 : 0;
  if (R->row0[ra] == R->row0[ra + 1]) return;
  for (int dz = -zr; dz <= 0; dz++)
    for (int dy = -yr; dy <= yr; dy++) {
      if (dz == 0 && dy >= 0) continue;
      const int m = abs(dy) + abs(dz);
      if (m > connectivity || z + dz < 0 || y + dy < 0 || y + dy >= n1) continue;
      const int64_t rb = (z + dz) * n1 + y + dy;
      if ((rb >= lo) == lo_side) union_rows(R, ra, rb, connectivity - m >= 1 ? 1 : 0);
    }
}

/* (2): the rows in `threads` bands in parallel, every band uniting only runs inside it (its sets
   and their roots stay inside it), then the pairs across band starts, serially */
static void lb_union(lb_runs *R, const lf_geom *g, int connectivity, int threads) {
  const int64_t nrows = R->nrows, back = g->spatial > 2 ? g->n[1] + 1 : 1;
  const int bands = nrows >= 64 * (int64_t)threads ? threads : 1;
#pragma omp parallel for schedule(static, 1) num_threads(bands)
  for (int t = 0; t < bands; t++) {
    const int64_t lo = nrows * t / bands, hi = nrows * (t + 1) / bands;
    for (int64_t ra = lo; ra < hi; ra++) union_row(R, g, connectivity, ra, lo, 1);
  }
  for (int t = 1; t < bands; t++) {
    const int64_t lo = nrows * t / bands, hi = nrows * (t + 1) / bands;
    for (int64_t ra = lo; ra < hi && ra < lo + back; ra++) union_row(R, g, connectivity, ra, lo, 0);
  }
}

/* (3): par[i] := -(label), labels first + 1.. in root order; the block's count, or -2 past int32 */
static int64_t lb_resolve(lb_runs *R, int64_t first) {
  int32_t *par = R->par;
  int64_t label = first;
  for (int32_t i = 0; i < (int32_t)R->nruns; i++) {
    if (par[i] == i) {
      if (label >= INT32_MAX) return -2;
      par[i] = (int32_t)-(++label);
    } else {
      par[i] = par[par[i]];
    }
  }
  return label - first;
}

/* one row's labels from its runs k0..k1 - 1: a fill per run (long runs) */
static void row_labels_runs(const lb_runs *R, int64_t k0, int64_t k1, int32_t n0, int32_t *row) {
  int32_t x = 0;
  for (int64_t k = k0; k < k1; k++) {
    const int32_t v = -R->par[k];
    for (; x < R->xs[k]; x++) row[x] = 0;
    for (; x < R->xe[k]; x++) row[x] = v;
  }
  for (; x < n0; x++) row[x] = 0;
}

/* the same per voxel, branch-free (many short runs): the run index advances on every 0->1 step
   of the mask; lab[0] = 0 stands for the background */
#define ROW_LABELS(NAME, T)                                                                      \
  static void NAME(const T *p, const int32_t *lab, int32_t n0, int32_t *row) {                   \
    int32_t k = 0, prev = 0;                                                                     \
    for (int32_t x = 0; x < n0; x++) {                                                           \
      const int32_t v = p[x] != 0;                                                               \
      k += v & !prev;                                                                            \
      row[x] = lab[k & -v];                                                                      \
      prev = v;                                                                                  \
    }                                                                                            \
  }
ROW_LABELS(row_labels_u8, uint8_t)
ROW_LABELS(row_labels_f32, float)

/* (4): int32 labels of one block (rows of many runs per voxel from a per-thread table of their labels) */
static void lb_write_labels(const lb_runs *R, lb_src s, int64_t n0, int32_t *lab, int threads) {
#pragma omp parallel num_threads(threads)
  {
    int32_t *tab = malloc(((size_t)n0 / 2 + 2) * sizeof *tab);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < R->nrows; r++) {
      const int64_t k0 = R->row0[r], k1 = R->row0[r + 1];
      if (!tab || (k1 - k0) * 16 < n0) {
        row_labels_runs(R, k0, k1, (int32_t)n0, lab + r * n0);
        continue;
      }
      tab[0] = 0;
      for (int64_t k = k0; k < k1; k++) tab[k - k0 + 1] = -R->par[k];
      if (s.u)
        row_labels_u8(s.u + r * n0, tab, (int32_t)n0, lab + r * n0);
      else
        row_labels_f32(s.f + r * n0, tab, (int32_t)n0, lab + r * n0);
    }
    free(tab);
  }
}

/* (4): uint8 mask of one label of one block */
static void lb_write_mask(const lb_runs *R, int64_t n0, uint8_t *m, int64_t label, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < R->nrows; r++) {
    uint8_t *row = m + r * n0;
    memset(row, 0, (size_t)n0);
    for (int64_t k = R->row0[r]; k < R->row0[r + 1]; k++)
      if (-(int64_t)R->par[k] == label) memset(row + R->xs[k], 1, (size_t)(R->xe[k] - R->xs[k]));
  }
}

/* (1)-(3) for block b: the runs and their labels after `first`; the block's count, -1 or -2 */
static int64_t lb_block(lb_runs *R, lb_src src, const lf_geom *g, int64_t b, int connectivity, int64_t first,
                        int threads) {
  lb_src s = {src.f ? src.f + b * g->block : NULL, src.u ? src.u + b * g->block : NULL};
  int r = lb_scan(R, s, g, threads);
  if (r != 0) return r;
  lb_union(R, g, connectivity, threads);
  return lb_resolve(R, first);
}

static int64_t label_any(lb_src src, int32_t *labels, const lf_geom *g, int connectivity, int threads) {
  lb_runs R;
  memset(&R, 0, sizeof R);
  int64_t count = 0;
  for (int64_t b = 0; b < g->batch; b++) {
    int64_t c = lb_block(&R, src, g, b, connectivity, count, threads);
    if (c < 0) {
      runs_free(&R);
      return c;
    }
    lb_src s = {src.f ? src.f + b * g->block : NULL, src.u ? src.u + b * g->block : NULL};
    lb_write_labels(&R, s, g->n[0], labels + b * g->block, threads);
    count += c;
  }
  runs_free(&R);
  return count;
}

int64_t lf_cpu_label_core(const float *in, int32_t *labels, const lf_geom *g, int connectivity) {
  lb_src src = {in, NULL};
  return label_any(src, labels, g, connectivity, 1);
}

static lb_src call_src(const lf_call *call) {
  lb_src src = {call->in_u8[0] ? NULL : call->in_f32[0], call->in_u8[0]};
  return src;
}

/* the call's threads; one below 2^16 voxels, where starting a team costs more than it saves */
static int threads_of(const lf_call *call) {
  return call->threads > 1 && call->geom.block >= ((int64_t)1 << 16) ? call->threads : 1;
}

lumen_status lf_cpu_label(lumen_ctx *ctx, lf_call *call) {
  const lumen_region_opts *o = call->opts;
  int64_t c = label_any(call_src(call), lumen_image_data(call->out), &call->geom, o->connectivity, threads_of(call));
  if (c == -1) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_label: out of host memory");
  if (c < 0) return lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "lumen_filter_label: more than 2^31 - 1 components or runs, or rows of 2^31 - 1 voxels");
  call->count = c;
  return LUMEN_OK;
}

/* the largest component of the block's labels first + 1 .. first + c (ties: the lowest); its size
   in *best_size, 0 when none or on an allocation failure (-1 in *best_size) */
static int64_t block_largest(const lb_runs *R, int64_t first, int64_t c, int64_t *best_size) {
  *best_size = 0;
  if (c == 0) return 0;
  int64_t *size = calloc((size_t)c + 1, sizeof *size);
  if (!size) {
    *best_size = -1;
    return 0;
  }
  for (int64_t k = 0; k < R->nruns; k++) size[-(int64_t)R->par[k] - first] += R->xe[k] - R->xs[k];
  int64_t best = 0;
  for (int64_t l = 1; l <= c; l++)
    if (size[l] > size[best]) best = l;
  *best_size = size[best];
  free(size);
  return best == 0 ? 0 : first + best;
}

/* the mask of the largest component over all blocks: every block is written with its own largest
   while it beats the earlier ones (the earlier winner's block cleared); 0, -1 or -2 */
static int largest_any(lb_src src, uint8_t *m, const lf_geom *g, int connectivity, int threads, int64_t *count) {
  lb_runs R;
  memset(&R, 0, sizeof R);
  int64_t total = 0, win_size = 0, win_block = -1;
  for (int64_t b = 0; b < g->batch; b++) {
    int64_t c = lb_block(&R, src, g, b, connectivity, total, threads), sz = 0;
    int64_t best = c > 0 ? block_largest(&R, total, c, &sz) : 0;
    if (c < 0 || sz < 0) {
      runs_free(&R);
      return c < 0 ? (int)c : -1;
    }
    total += c;
    uint8_t *mb = m + b * g->block;
    if (best != 0 && sz > win_size) {
      if (win_block >= 0) memset(m + win_block * g->block, 0, (size_t)g->block);
      lb_write_mask(&R, g->n[0], mb, best, threads);
      win_size = sz;
      win_block = b;
    } else {
      memset(mb, 0, (size_t)g->block);
    }
  }
  runs_free(&R);
  *count = total;
  return 0;
}

lumen_status lf_cpu_largest_component(lumen_ctx *ctx, lf_call *call) {
  const lumen_region_opts *o = call->opts;
  int64_t c = 0;
  int r = largest_any(call_src(call), lumen_image_data(call->out), &call->geom, o->connectivity, threads_of(call), &c);
  if (r == -1) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_largest_component: out of host memory");
  if (r < 0)
    return lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "lumen_filter_largest_component: more than 2^31 - 1 components or runs, or rows of 2^31 - 1 voxels");
  call->count = c;
  return LUMEN_OK;
}
