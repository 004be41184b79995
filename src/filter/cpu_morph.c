/* CPU morphology (grey and binary erosion, dilation, opening, closing, white top-hat with disk,
 * square, ball and cube elements) and hole filling (labelling and the largest component:
 * cpu_label.c).
 *
 * Erosion/dilation: the element is a list of x-runs (dz, dy, half-width); the image is padded
 * with the identity (+inf for erosion, -inf for dilation), which equals scikit-image's behaviour
 * for these symmetric elements (pixels outside the image never win), and every run is a
 * vectorised min/max over contiguous rows. Binary morphology runs the same code on 0/1 values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "filter/filter_internal.h"

/* erosion (is_max = 0) or dilation (is_max = 1) of every block: in -> out */
static lumen_status minmax(lumen_ctx *ctx, const float *in, float *out, const lf_geom *g, const lumen_morph_opts *o,
                           int is_max, int threads) {
  int nr = 0, ry, rz, rx;
  const int maxruns = lf_element_runs_max(o);
  lf_run3 *runs = malloc((size_t)maxruns * sizeof *runs);
  if (!runs) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_morphology: out of host memory");
  nr = lf_element_runs(o, runs, maxruns, &ry, &rz, &rx);
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  const int S3 = g->spatial == 3;
  if (!S3) rz = 0;
  const int64_t pw = n0 + 2 * rx, ph = n1 + 2 * ry, pd = n2 + 2 * rz;
  const float ident = is_max ? -INFINITY : INFINITY;
  /* 2-D elements on a 3-D image: process each z-slice as its own block (pd = n2, rz = 0) */
  float *pad = lf_malloc_big((size_t)(pw * ph * pd) * sizeof *pad);
  if (!pad) {
    free(runs);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_morphology: out of host memory for padding");
  }
  for (int64_t b = 0; b < g->batch; b++) {
    const float *src = in + b * g->block;
    float *dst = out + b * g->block;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t r = 0; r < ph * pd; r++) {
      int64_t py = r % ph, pz = r / ph;
      int64_t y = py - ry, z = pz - rz;
      float *prow = pad + r * pw;
      if (y < 0 || y >= n1 || z < 0 || z >= n2) {
        for (int64_t i = 0; i < pw; i++) prow[i] = ident;
        continue;
      }
      for (int64_t i = 0; i < rx; i++) prow[i] = prow[pw - 1 - i] = ident;
      memcpy(prow + rx, src + (z * n1 + y) * n0, (size_t)n0 * sizeof(float));
    }
    const int64_t rows = n1 * n2;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t r = 0; r < rows; r++) {
      const int64_t y = r % n1, z = r / n1;
      float *restrict acc = dst + r * n0;
      for (int64_t i = 0; i < n0; i++) acc[i] = ident;
      for (int k = 0; k < nr; k++) {
        const float *row = pad + ((z + rz + runs[k].dz) * ph + (y + ry + runs[k].dy)) * pw + rx;
        for (int dx = -runs[k].hw; dx <= runs[k].hw; dx++) {
          const float *restrict s = row + dx;
          if (is_max)
            for (int64_t i = 0; i < n0; i++) acc[i] = s[i] > acc[i] ? s[i] : acc[i];
          else
            for (int64_t i = 0; i < n0; i++) acc[i] = s[i] < acc[i] ? s[i] : acc[i];
        }
      }
    }
  }
  free(pad);
  free(runs);
  return LUMEN_OK;
}

/* ------------------------------------------------ binary square/cube fast path */

/* Binary erosion/dilation with a box element (pixels outside the image ignored) is separable:
 * dilation = "any 1 in the clipped window" per axis; erosion = NOT dilation(NOT x). Each axis is a
 * running count of ones over the window, O(1) per voxel whatever the size. */

/* x axis: out[x] = any(in[x-h .. x+h]) within the row */
static void bin_any_x(const uint8_t *in, uint8_t *out, int64_t rows, int64_t n0, int64_t h, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t r = 0; r < rows; r++) {
    const uint8_t *s = in + r * n0;
    uint8_t *d = out + r * n0;
    int64_t cnt = 0, x = 0;
    for (int64_t i = 0; i < h && i < n0; i++) cnt += s[i];
    /* head: nothing leaves the window yet */
    for (; x < n0 && x <= h; x++) {
      if (x + h < n0) cnt += s[x + h];
      d[x] = cnt != 0;
    }
    /* body: one enters, one leaves */
    for (; x + h < n0; x++) {
      cnt += (int64_t)s[x + h] - s[x - h - 1];
      d[x] = cnt != 0;
    }
    /* tail: nothing enters any more */
    for (; x < n0; x++) {
      cnt -= s[x - h - 1];
      d[x] = cnt != 0;
    }
  }
}

/* middle axis of [outer][n][inner]: out = any over the window along n, vectorised over inner */
static int bin_any_mid(const uint8_t *in, uint8_t *out, int64_t outer, int64_t n, int64_t inner, int64_t h,
                       int threads) {
  const int64_t chunk = 2 * h + 2 > 64 ? 2 * h + 2 : 64;
  const int64_t nch = (n + chunk - 1) / chunk;
  int fail = 0;
#pragma omp parallel num_threads(threads) reduction(| : fail)
  {
    int32_t *cnt = malloc((size_t)inner * sizeof *cnt);
    if (!cnt) fail = 1;
#pragma omp for schedule(static)
    for (int64_t t = 0; t < outer * nch; t++) {
      if (!cnt) continue;
      const int64_t o = t / nch, y0 = (t % nch) * chunk;
      const int64_t y1 = y0 + chunk < n ? y0 + chunk : n;
      const uint8_t *base = in + o * n * inner;
      uint8_t *obase = out + o * n * inner;
      for (int64_t i = 0; i < inner; i++) cnt[i] = 0;
      const int64_t lo = y0 - h < 0 ? 0 : y0 - h, hi = y0 + h < n - 1 ? y0 + h : n - 1;
      for (int64_t y = lo; y <= hi; y++) { /* full window of y0 */
        const uint8_t *restrict s = base + y * inner;
        for (int64_t i = 0; i < inner; i++) cnt[i] += s[i];
      }
      for (int64_t y = y0; y < y1; y++) {
        if (y > y0 && y + h < n) {
          const uint8_t *restrict s = base + (y + h) * inner;
          for (int64_t i = 0; i < inner; i++) cnt[i] += s[i];
        }
        if (y > y0 && y - h - 1 >= 0) {
          const uint8_t *restrict s = base + (y - h - 1) * inner;
          for (int64_t i = 0; i < inner; i++) cnt[i] -= s[i];
        }
        uint8_t *restrict d = obase + y * inner;
        for (int64_t i = 0; i < inner; i++) d[i] = cnt[i] != 0;
      }
    }
    free(cnt);
  }
  return fail;
}

/* dilation (inv = 0) or erosion (inv = 1) of a 0/1 mask: a -> b, tmp scratch (all g->total bytes) */
static int bin_box(const uint8_t *a, uint8_t *b, uint8_t *tmp, const lf_geom *g, const lumen_morph_opts *o, int inv,
                   int th) {
  const int64_t n = g->total, n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  const int64_t h = o->size / 2;
  const int three = o->element == LUMEN_ELEMENT_CUBE && g->spatial == 3;
  const uint8_t *src = a;
  if (inv) {
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) b[i] = a[i] ^ 1;
    src = b;
  }
  /* x: src -> tmp; y: tmp -> b (per z-slice, per batch block); z: b -> tmp -> copy */
  bin_any_x(src, tmp, n / n0, n0, h, th);
  int fail = 0;
  if (n1 > 1) {
    fail |= bin_any_mid(tmp, b, g->batch * n2, n1, n0, h, th);
  } else {
    memcpy(b, tmp, (size_t)n);
  }
  if (three && !fail) {
    fail |= bin_any_mid(b, tmp, g->batch, n2, n0 * n1, h, th);
    memcpy(b, tmp, (size_t)n);
  }
  if (inv) {
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) b[i] ^= 1;
  }
  return fail;
}

static lumen_status binary_box_morphology(lumen_ctx *ctx, lf_call *call) {
  const lumen_morph_opts *o = call->opts;
  const lf_geom *g = &call->geom;
  const int64_t n = g->total;
  const int th = call->threads;
  const float *src = call->in_f32[0];
  const uint8_t *src8 = call->in_u8[0];
  uint8_t *m = lumen_image_data(call->out);
  uint8_t *x = lf_malloc_big((size_t)n), *t1 = lf_malloc_big((size_t)n), *t2 = lf_malloc_big((size_t)n);
  lumen_status s = LUMEN_OK;
  if (!x || !t1 || !t2) {
    s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_morphology: out of host memory");
    goto done;
  }
  if (src8) {
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) x[i] = src8[i] != 0;
  } else {
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) x[i] = src[i] != 0.0f;
  }
  int fail = 0;
  switch (o->op) {
    case LUMEN_MORPH_ERODE: fail = bin_box(x, m, t1, g, o, 1, th); break;
    case LUMEN_MORPH_DILATE: fail = bin_box(x, m, t1, g, o, 0, th); break;
    case LUMEN_MORPH_OPEN:
      fail = bin_box(x, t2, t1, g, o, 1, th);
      if (!fail) fail = bin_box(t2, m, t1, g, o, 0, th);
      break;
    case LUMEN_MORPH_CLOSE:
      fail = bin_box(x, t2, t1, g, o, 0, th);
      if (!fail) fail = bin_box(t2, m, t1, g, o, 1, th);
      break;
    default: /* white top-hat: x and not opening(x) */
      fail = bin_box(x, t2, t1, g, o, 1, th);
      if (!fail) fail = bin_box(t2, m, t1, g, o, 0, th);
      if (!fail) {
#pragma omp parallel for schedule(static) num_threads(th)
        for (int64_t i = 0; i < n; i++) m[i] = x[i] & (m[i] ^ 1);
      }
      break;
  }
  if (fail) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_morphology: out of host memory");
done:
  free(x);
  free(t1);
  free(t2);
  return s;
}

lumen_status lf_cpu_morphology(lumen_ctx *ctx, lf_call *call) {
  const lumen_morph_opts *o = call->opts;
  const lf_geom *g = &call->geom;
  const int64_t n = g->total;
  const int th = call->threads;
  if (o->binary && (o->element == LUMEN_ELEMENT_SQUARE || o->element == LUMEN_ELEMENT_CUBE))
    return binary_box_morphology(ctx, call);
  float *src = (float *)call->in_f32[0];
  float *bin = NULL;
  if (o->binary) {
    bin = lf_malloc_big((size_t)n * sizeof *bin);
    if (!bin) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_morphology: out of host memory");
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) bin[i] = src[i] != 0.0f ? 1.0f : 0.0f;
    src = bin;
  }
  float *res = o->binary ? lf_malloc_big((size_t)n * sizeof *res) : lumen_image_data(call->out);
  float *tmp = (o->op >= LUMEN_MORPH_OPEN) ? lf_malloc_big((size_t)n * sizeof *tmp) : NULL;
  lumen_status s = LUMEN_OK;
  if (!res || (o->op >= LUMEN_MORPH_OPEN && !tmp)) {
    s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_morphology: out of host memory");
  } else {
    switch (o->op) {
      case LUMEN_MORPH_ERODE: s = minmax(ctx, src, res, g, o, 0, th); break;
      case LUMEN_MORPH_DILATE: s = minmax(ctx, src, res, g, o, 1, th); break;
      case LUMEN_MORPH_OPEN:
        s = minmax(ctx, src, tmp, g, o, 0, th);
        if (s == LUMEN_OK) s = minmax(ctx, tmp, res, g, o, 1, th);
        break;
      case LUMEN_MORPH_CLOSE:
        s = minmax(ctx, src, tmp, g, o, 1, th);
        if (s == LUMEN_OK) s = minmax(ctx, tmp, res, g, o, 0, th);
        break;
      default: /* white top-hat */
        s = minmax(ctx, src, tmp, g, o, 0, th);
        if (s == LUMEN_OK) s = minmax(ctx, tmp, res, g, o, 1, th);
        if (s == LUMEN_OK) {
#pragma omp parallel for schedule(static) num_threads(th)
          for (int64_t i = 0; i < n; i++) {
            float d = src[i] - res[i];
            res[i] = d > 0.0f ? d : 0.0f;
          }
        }
        break;
    }
  }
  if (s == LUMEN_OK && o->binary) {
    uint8_t *m = lumen_image_data(call->out);
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) m[i] = res[i] > 0.5f;
  }
  if (o->binary) free(res);
  free(tmp);
  free(bin);
  return s;
}

/* ------------------------------------------------------------------ regions */

/* Hole filling (scipy.ndimage.binary_fill_holes): background reachable from the border through
 * background (with the given connectivity) stays background, everything else becomes foreground.
 * Scanline flood fill on uint8 with an explicit stack of seeds. State per voxel in the output:
 * 1 = foreground, 2 = unvisited background, 0 = background reached from the border. */
typedef struct span_stack {
  int64_t *v;
  int64_t n, cap;
} span_stack;

static int sp_push(span_stack *st, int64_t i) {
  if (st->n == st->cap) {
    int64_t nc = st->cap ? 2 * st->cap : 4096;
    int64_t *nv = realloc(st->v, (size_t)nc * sizeof *nv);
    if (!nv) return 1;
    st->v = nv;
    st->cap = nc;
  }
  st->v[st->n++] = i;
  return 0;
}

/* neighbour rows (dy, dz) and whether they reach diagonally in x (extend = 1) */
typedef struct row_nb {
  int n;
  int dy[8], dz[8], ext[8];
} row_nb;

static int fill_from(uint8_t *m, int64_t seed, const lf_geom *g, const row_nb *rn, span_stack *st) {
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  if (m[seed] != 2) return 0;
  st->n = 0;
  if (sp_push(st, seed)) return 1;
  while (st->n > 0) {
    int64_t i = st->v[--st->n];
    if (m[i] != 2) continue;
    const int64_t row = i / n0, x = i - row * n0;
    uint8_t *r = m + row * n0;
    int64_t l = x, rr = x;
    while (l > 0 && r[l - 1] == 2) l--;
    while (rr < n0 - 1 && r[rr + 1] == 2) rr++;
    memset(r + l, 0, (size_t)(rr - l + 1));
    const int64_t y = row % n1, z = row / n1;
    for (int k = 0; k < rn->n; k++) {
      const int64_t yy = y + rn->dy[k], zz = z + rn->dz[k];
      if (yy < 0 || yy >= n1 || zz < 0 || zz >= n2) continue;
      int64_t a = l - rn->ext[k], b = rr + rn->ext[k];
      if (a < 0) a = 0;
      if (b > n0 - 1) b = n0 - 1;
      const int64_t nrow = zz * n1 + yy;
      const uint8_t *q = m + nrow * n0;
      for (int64_t xx = a; xx <= b; xx++) {
        if (q[xx] != 2) continue;
        if (sp_push(st, nrow * n0 + xx)) return 1;
        while (xx <= b && q[xx] == 2) xx++;
      }
    }
  }
  return 0;
}

lumen_status lf_cpu_fill_holes(lumen_ctx *ctx, lf_call *call) {
  const lumen_region_opts *o = call->opts;
  const lf_geom *g = &call->geom;
  const int th = call->threads;
  row_nb rn;
  rn.n = 0;
  {
    int zr = g->spatial > 2 ? 1 : 0, yr = g->spatial > 1 ? 1 : 0;
    for (int dz = -zr; dz <= zr; dz++)
      for (int dy = -yr; dy <= yr; dy++) {
        int d = abs(dy) + abs(dz);
        if (d == 0 || d > o->connectivity) continue;
        rn.dy[rn.n] = dy;
        rn.dz[rn.n] = dz;
        rn.ext[rn.n] = d + 1 <= o->connectivity;
        rn.n++;
      }
  }
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2];
  uint8_t *out = lumen_image_data(call->out);
  const float *in = call->in_f32[0];
  const uint8_t *in8 = call->in_u8[0];
  const int64_t n = g->total;
  if (in8) {
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) out[i] = in8[i] != 0 ? 1 : 2;
  } else {
#pragma omp parallel for schedule(static) num_threads(th)
    for (int64_t i = 0; i < n; i++) out[i] = in[i] != 0.0f ? 1 : 2;
  }
  span_stack st = {NULL, 0, 0};
  int fail = 0;
  for (int64_t b = 0; b < g->batch && !fail; b++) {
    uint8_t *m = out + b * g->block;
    /* seeds: background voxels on the border */
    for (int64_t z = 0; z < n2 && !fail; z++)
      for (int64_t y = 0; y < n1 && !fail; y++) {
        const int64_t row = (z * n1 + y) * n0;
        const int full = (g->spatial > 1 && (y == 0 || y == n1 - 1)) || (g->spatial > 2 && (z == 0 || z == n2 - 1));
        if (full) {
          for (int64_t x = 0; x < n0 && !fail; x++)
            if (m[row + x] == 2) fail = fill_from(m, row + x, g, &rn, &st);
        } else {
          if (m[row] == 2) fail = fill_from(m, row, g, &rn, &st);
          if (!fail && m[row + n0 - 1] == 2) fail = fill_from(m, row + n0 - 1, g, &rn, &st);
        }
      }
  }
  free(st.v);
  if (fail) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_filter_fill_holes: out of host memory");
#pragma omp parallel for schedule(static) num_threads(th)
  for (int64_t i = 0; i < n; i++) out[i] = out[i] != 0;
  return LUMEN_OK;
}
