/* lumen_filter_label and lumen_filter_largest_component (run-based union-find, cpu_label.c)
 * against a plain flood-fill reference: random masks of several densities, every connectivity,
 * 2-D and 3-D, uint8 and float32 inputs, batches (spatial_dims below the image's dims: labels
 * continue across the batch, the largest component is over all of it), and edge cases (empty,
 * full, one voxel, one row and one column); images above 2^16 voxels take the threaded path
 * (rows scanned in parallel, bands united in parallel and joined). */
#include <stdlib.h>
#include <string.h>
#include "test_support.h"

typedef struct ref_geom {
  int64_t n[3];  /* x, y, z of one spatial block */
  int spatial;
  int64_t batch;
} ref_geom;

/* flood fill of one block in raster order; labels after first; returns the block's count */
static int64_t ref_block(const uint8_t *m, int32_t *lab, const ref_geom *g, int conn, int64_t first, int64_t *queue) {
  const int64_t n0 = g->n[0], n1 = g->n[1], n2 = g->n[2], nb = n0 * n1 * n2;
  int64_t label = first;
  memset(lab, 0, (size_t)nb * sizeof *lab);
  for (int64_t s = 0; s < nb; s++) {
    if (!m[s] || lab[s]) continue;
    int64_t head = 0, tail = 0;
    queue[tail++] = s;
    lab[s] = (int32_t)++label;
    while (head < tail) {
      int64_t i = queue[head++];
      int64_t x = i % n0, y = (i / n0) % n1, z = i / (n0 * n1);
      for (int dz = -1; dz <= 1; dz++)
        for (int dy = -1; dy <= 1; dy++)
          for (int dx = -1; dx <= 1; dx++) {
            int d = abs(dx) + abs(dy) + abs(dz);
            if (d == 0 || d > conn || (g->spatial < 3 && dz) || (g->spatial < 2 && dy)) continue;
            int64_t xx = x + dx, yy = y + dy, zz = z + dz;
            if (xx < 0 || xx >= n0 || yy < 0 || yy >= n1 || zz < 0 || zz >= n2) continue;
            int64_t j = (zz * n1 + yy) * n0 + xx;
            if (m[j] && !lab[j]) {
              lab[j] = (int32_t)label;
              queue[tail++] = j;
            }
          }
    }
  }
  return label - first;
}

static int64_t ref_label(const uint8_t *m, int32_t *lab, const ref_geom *g, int conn) {
  const int64_t nb = g->n[0] * g->n[1] * g->n[2];
  int64_t *queue = malloc((size_t)nb * sizeof *queue);
  assert_non_null(queue);
  int64_t count = 0;
  for (int64_t b = 0; b < g->batch; b++) count += ref_block(m + b * nb, lab + b * nb, g, conn, count, queue);
  free(queue);
  return count;
}

static void random_mask(uint8_t *m, int64_t n, double density, uint64_t *seed) {
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    m[i] = (double)(*seed >> 11) * (1.0 / 9007199254740992.0) < density;
  }
}

/* the image of the mask in dtype (0/1, or 0/v for float32 so that "!= 0" is what counts) */
static lumen_image *mask_image(lumen_ctx *ctx, const uint8_t *m, int ndim, const int64_t *dims, lumen_dtype dt) {
  lumen_image *im = lumen_test_image(ctx, ndim, dims, dt);
  int64_t n = 1;
  for (int a = 0; a < ndim; a++) n *= dims[a];
  if (dt == LUMEN_DTYPE_UINT8) {
    uint8_t *p = lumen_image_data(im);
    for (int64_t i = 0; i < n; i++) p[i] = m[i] ? (uint8_t)(1 + i % 7) : 0;
  } else {
    float *p = lumen_image_data(im);
    for (int64_t i = 0; i < n; i++) p[i] = m[i] ? (i % 3 ? 0.25f : -3.0f) : 0.0f;
  }
  return im;
}

/* label and largest component of m against the reference */
static void check_case(lumen_ctx *ctx, const uint8_t *m, int ndim, const int64_t *dims, int spatial_dims,
                       const ref_geom *g, int conn, lumen_dtype dt) {
  const int64_t n = g->n[0] * g->n[1] * g->n[2] * g->batch;
  int32_t *ref = malloc((size_t)n * sizeof *ref);
  assert_non_null(ref);
  int64_t rc = ref_label(m, ref, g, conn);
  lumen_image *in = mask_image(ctx, m, ndim, dims, dt), *lab = NULL, *big = NULL;
  lumen_region_opts o;
  lumen_region_opts_init(&o);
  o.connectivity = conn;
  o.spatial_dims = spatial_dims;
  int64_t count = -1;
  assert_int_equal(lumen_filter_label(ctx, in, &o, &lab, &count), LUMEN_OK);
  assert_int_equal(count, rc);
  const int32_t *got = lumen_image_const_data(lab);
  for (int64_t i = 0; i < n; i++) assert_int_equal(got[i], ref[i]);
  int64_t *sz = calloc((size_t)rc + 1, sizeof *sz);
  assert_non_null(sz);
  for (int64_t i = 0; i < n; i++) sz[ref[i]]++;
  sz[0] = 0;
  int64_t best = 0;
  for (int64_t l = 1; l <= rc; l++)
    if (sz[l] > sz[best]) best = l;
  assert_int_equal(lumen_filter_largest_component(ctx, in, &o, &big), LUMEN_OK);
  assert_int_equal(lumen_image_dtype(big), LUMEN_DTYPE_UINT8);
  const uint8_t *bm = lumen_image_const_data(big);
  for (int64_t i = 0; i < n; i++) assert_int_equal(bm[i], best != 0 && ref[i] == best);
  free(sz);
  free(ref);
  lumen_image_free(big);
  lumen_image_free(lab);
  lumen_image_free(in);
}

static const double densities[] = {0.05, 0.3, 0.5, 0.593, 0.75, 0.97};

static void test_random_2d(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t shapes[][2] = {{53, 41}, {257, 3}, {1, 64}, {64, 1}, {130, 97}, {37, 301}, {300, 260}};
  uint64_t seed = 42;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++) {
      const int64_t *dims = shapes[s];
      uint8_t *m = malloc((size_t)(dims[0] * dims[1]));
      random_mask(m, dims[0] * dims[1], densities[d], &seed);
      ref_geom g = {{dims[0], dims[1], 1}, 2, 1};
      for (int conn = 1; conn <= 2; conn++) {
        check_case(ctx, m, 2, dims, 0, &g, conn, LUMEN_DTYPE_UINT8);
        check_case(ctx, m, 2, dims, 0, &g, conn, LUMEN_DTYPE_FLOAT32);
      }
      free(m);
    }
}

static void test_random_3d(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t shapes[][3] = {{17, 13, 11}, {31, 2, 9}, {5, 29, 23}, {41, 40, 41}};
  uint64_t seed = 7;
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
    for (size_t d = 0; d < sizeof densities / sizeof densities[0]; d++) {
      const int64_t *dims = shapes[s];
      const int64_t n = dims[0] * dims[1] * dims[2];
      uint8_t *m = malloc((size_t)n);
      random_mask(m, n, densities[d], &seed);
      ref_geom g = {{dims[0], dims[1], dims[2]}, 3, 1};
      for (int conn = 1; conn <= 3; conn++) {
        check_case(ctx, m, 3, dims, 0, &g, conn, LUMEN_DTYPE_UINT8);
        check_case(ctx, m, 3, dims, 0, &g, conn, LUMEN_DTYPE_FLOAT32);
      }
      /* a batch of 2-D slices, and of 1-D rows: labels continue across the batch */
      ref_geom g2 = {{dims[0], dims[1], 1}, 2, dims[2]};
      for (int conn = 1; conn <= 2; conn++) check_case(ctx, m, 3, dims, 2, &g2, conn, LUMEN_DTYPE_UINT8);
      ref_geom g1 = {{dims[0], 1, 1}, 1, dims[1] * dims[2]};
      check_case(ctx, m, 3, dims, 1, &g1, 1, LUMEN_DTYPE_FLOAT32);
      free(m);
    }
}

/* shapes the random masks rarely make: empty, full, one voxel, spirals and combs that merge late */
static void test_edge_cases(void **state) {
  lumen_ctx *ctx = *state;
  const int64_t dims[2] = {40, 30};
  uint8_t m[40 * 30];
  ref_geom g = {{40, 30, 1}, 2, 1};
  for (int k = 0; k < 5; k++) {
    for (int i = 0; i < 40 * 30; i++) {
      int x = i % 40, y = i / 40;
      m[i] = k == 0   ? 0
             : k == 1 ? 1
             : k == 2 ? i == 40 * 30 - 1
             : k == 3 ? (x % 4 == 0 && y < 29) || y == 29                      /* comb joined at the bottom */
                      : (x + y) % 2 == 0;                                        /* checkerboard */
    }
    for (int conn = 1; conn <= 2; conn++) check_case(ctx, m, 2, dims, 0, &g, conn, LUMEN_DTYPE_UINT8);
  }
  /* ties: two equal components in separate batch blocks, the first wins */
  const int64_t d3[3] = {8, 8, 3};
  uint8_t t[8 * 8 * 3];
  memset(t, 0, sizeof t);
  t[3] = t[4] = 1;
  t[64 + 10] = 1;
  t[128 + 20] = t[128 + 21] = 1;
  ref_geom gb = {{8, 8, 1}, 2, 3};
  check_case(ctx, t, 3, d3, 2, &gb, 1, LUMEN_DTYPE_UINT8);
}

LUMEN_TEST_MAIN(LUMEN_TEST_WITH_CTX(test_random_2d), LUMEN_TEST_WITH_CTX(test_random_3d), LUMEN_TEST_WITH_CTX(test_edge_cases))
