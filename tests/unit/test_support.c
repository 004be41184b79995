#include "test_support.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lumen/aif.h"
#include "models/models_f64.h"
#include "lumen/device.h"
#include "fit/fit_cuda.h"
#include "scale/batch_ops.h"

const char *lumen_test_refdata(void) {
  const char *dir = getenv("LUMEN_REFDATA"); /* set when ctest runs; else the configure-time folder */
  if (!dir || !dir[0]) dir = getenv("LUMEN_REFDATA_DEFAULT");
  struct stat st;
  if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
  return dir;
}

char *lumen_test_refdata_path(const char *relative) {
  const char *dir = lumen_test_refdata();
  if (!dir) return NULL;
  size_t n = strlen(dir) + strlen(relative) + 2;
  char *path = malloc(n);
  if (!path) return NULL;
  snprintf(path, n, "%s/%s", dir, relative);
  struct stat st;
  if (stat(path, &st) != 0) { free(path); return NULL; }
  return path;
}

void lumen_test_assert_close(double a, double b, double atol, double rtol, const char *what) {
  double tol = atol + rtol * (b < 0 ? -b : b);
  double diff = a - b;
  if (diff < 0) diff = -diff;
  if (!(diff <= tol)) {
    print_error("%s: got %.9g, expected %.9g (|diff| %.3g > tol %.3g)\n", what, a, b, diff, tol);
    fail();
  }
}

void lumen_test_assert_images_equal(const lumen_image *a, const lumen_image *b) {
  assert_non_null(a);
  assert_non_null(b);
  assert_int_equal(lumen_image_dtype(a), lumen_image_dtype(b));
  assert_true(lumen_image_nbytes(a) == lumen_image_nbytes(b));
  assert_memory_equal(lumen_image_const_data(a), lumen_image_const_data(b), (size_t)lumen_image_nbytes(a));
}

void lumen_test_assert_affines_equal(const lumen_image *a, const lumen_image *b) {
  assert_non_null(a);
  assert_non_null(b);
  double aa[16], ba[16];
  assert_int_equal(lumen_image_get_affine(a, aa), LUMEN_OK);
  assert_int_equal(lumen_image_get_affine(b, ba), LUMEN_OK);
  assert_memory_equal(aa, ba, sizeof aa);
}

void lumen_test_free_images(lumen_image *const *images, size_t count) {
  for (size_t i = 0; i < count; ++i) lumen_image_free(images[i]);
}

lumen_ctx *lumen_test_ctx(void) {
  lumen_ctx *ctx = NULL;
  assert_int_equal(lumen_ctx_create(&ctx), LUMEN_OK);
  assert_non_null(ctx);
  return ctx;
}

int lumen_test_ctx_setup(void **state) { /* no assertion here: a fixture reports by its return value */
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK || !ctx) return -1;
  *state = ctx;
  return 0;
}

int lumen_test_ctx_teardown(void **state) {
  lumen_ctx_destroy(*state);
  return 0;
}

char *lumen_test_join(const char *dir, const char *name) {
  static char buf[32][256];
  static int k;
  char *p = buf[k++ % 32];
  snprintf(p, 256, "%s/%s", dir, name);
  return p;
}

int lumen_test_dir_setup(void **state) {
  char *dir = *state;
  snprintf(dir, LUMEN_TEST_DIR_SIZE, "/tmp/lumen-test-XXXXXX");
  return mkdtemp(dir) ? 0 : -1;
}

int lumen_test_dir_teardown(void **state) {
  const char *dir = *state;
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
      if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
      snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
      unlink(p);
    }
    closedir(d);
  }
  rmdir(dir);
  return 0;
}

int lumen_test_dir_teardown_empty(void **state) { return rmdir((const char *)*state); }

int lumen_test_run_in_dir(char *dir, size_t size, const char *name, const struct CMUnitTest *tests, size_t count,
                          CMFixtureFunction setup, CMFixtureFunction teardown) {
  snprintf(dir, size, "/tmp/lumen-test-%s-XXXXXX", name);
  if (!mkdtemp(dir)) return 1;
  int rc = _cmocka_run_group_tests("tests", tests, count, setup, teardown);
  rmdir(dir);
  return rc;
}

lumen_image *lumen_test_image(lumen_ctx *ctx, int ndim, const int64_t *dims, lumen_dtype dtype) {
  lumen_image *im = NULL;
  assert_int_equal(lumen_image_create(ctx, ndim, dims, dtype, lumen_device_cpu(), 0, &im), LUMEN_OK);
  return im;
}

const char *lumen_test_accel_tier(void) {
  const char *t = getenv("LUMEN_TEST_TIER");
  if (!t || !*t) return "cpu";
  int ok = !strcmp(t, "cpu") || !strcmp(t, "cpu_single") || !strcmp(t, "cuda") || !strncmp(t, "cuda:", 5);
  if (!ok) fprintf(stderr, "LUMEN_TEST_TIER=%s: expected cpu, cpu_single, cuda or cuda:N\n", t);
  assert_true(ok);
  return t;
}

int lumen_test_tier_usable(const char *tier) {
  if (strncmp(tier, "cuda", 4) != 0) return 1;
  if (getenv("LUMEN_TEST_FAKE_GPU")) { /* the test's own logic, on the fake device (CPU solver) */
    lumen_fitcu_fake f = {.devices = 1};
    lumen_fitcu_test_set_fake(&f);
    return 1;
  }
  int n = 0;
  char why[256] = "";
  if (lumen_cuda_probe(NULL, &n, why, sizeof why) == LUMEN_OK && n > 0) return 1;
  fprintf(stderr, "tier %s: no usable CUDA device (%s)\n", tier, why);
  return 0;
}

/* ---------------------------------------------------------------- OSIPI CSV files (array fields) */
static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  size_t n = strlen(s);
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == '\t')) s[--n] = 0;
  return s;
}

static int split(char *line, char **out, int max) {
  int n = 0;
  char *p = line;
  while (n < max) {
    char *c = strchr(p, ',');
    if (c) *c = 0;
    out[n++] = strdup(trim(p));
    if (!c) break;
    p = c + 1;
  }
  return n;
}

lumen_test_csv *lumen_test_csv_load(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  lumen_test_csv *t = calloc(1, sizeof *t);
  size_t cap = 1 << 20;
  char *line = malloc(cap);
  char *fields[64];
  int first = 1;
  while (fgets(line, (int)cap, f)) {
    char *l = line;
    if (first && (unsigned char)l[0] == 0xEF && (unsigned char)l[1] == 0xBB && (unsigned char)l[2] == 0xBF) l += 3;
    if (trim(l)[0] == 0) continue;
    int n = split(l, fields, 64);
    if (first) {
      t->ncols = n;
      t->names = malloc(sizeof(char *) * (size_t)n);
      for (int i = 0; i < n; ++i) t->names[i] = fields[i];
      first = 0;
      continue;
    }
    t->cells = realloc(t->cells, sizeof(char **) * (size_t)(t->nrows + 1));
    t->cells[t->nrows] = calloc((size_t)t->ncols, sizeof(char *));
    for (int i = 0; i < n; ++i) {
      if (i < t->ncols) t->cells[t->nrows][i] = fields[i];
      else free(fields[i]);
    }
    t->nrows++;
  }
  free(line);
  fclose(f);
  return t;
}

void lumen_test_csv_free(lumen_test_csv *t) {
  if (!t) return;
  for (int r = 0; r < t->nrows; ++r) {
    for (int c = 0; c < t->ncols; ++c) free(t->cells[r][c]);
    free(t->cells[r]);
  }
  for (int c = 0; c < t->ncols; ++c) free(t->names[c]);
  free(t->cells);
  free(t->names);
  free(t);
}

int lumen_test_csv_col(const lumen_test_csv *t, const char *name) {
  for (int c = 0; c < t->ncols; ++c)
    if (strcmp(t->names[c], name) == 0) return c;
  return -1;
}

double lumen_test_csv_num(const lumen_test_csv *t, int r, const char *name) {
  int c = lumen_test_csv_col(t, name);
  assert_true(c >= 0);
  return strtod(t->cells[r][c], NULL);
}

/* Parses the space-separated array in a cell; returns the count (malloc'ed *out). */
int lumen_test_csv_arr(const lumen_test_csv *t, int r, const char *name, double **out) {
  int c = lumen_test_csv_col(t, name);
  assert_true(c >= 0);
  const char *p = t->cells[r][c];
  int n = 0, cap = 64;
  double *v = malloc(sizeof(double) * (size_t)cap);
  char *end;
  for (;;) {
    double x = strtod(p, &end);
    if (end == p) break;
    if (n == cap) v = realloc(v, sizeof(double) * (size_t)(cap *= 2));
    v[n++] = x;
    p = end;
  }
  *out = v;
  return n;
}

lumen_convolve_opts lumen_test_convolve_2d(const float *k, int64_t nx, int64_t ny) {
  lumen_convolve_opts o;
  lumen_convolve_opts_init(&o);
  o.kernel = k;
  o.kernel_ndim = 2;
  o.kernel_dims[0] = nx;
  o.kernel_dims[1] = ny;
  return o;
}

const struct lumen_batch_named_op *lumen_test_batch_op(const char *name, unsigned char *o, size_t size,
                                                       const double *values, int count) {
  const lumen_batch_named_op *b = lumen_batch_named_op_find(name);
  const lumen_op_info *op = lumen_op_find(name);
  assert_non_null(b);
  assert_non_null(op);
  assert_true(b->opts_size <= size);
  memset(o, 0, size);
  b->init(o);
  for (int k = 0; k < count; ++k) memcpy(o + op->options[k].offset, &values[k], sizeof values[k]);
  return b;
}

void lumen_test_parker_grid(int n, double delay, int plasma, double *t, double *cp) {
  for (int i = 0; i < n; ++i) t[i] = i * 5.0 / 60.0;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.hct = 0.42;
  ao.delay = delay;
  if (plasma) ao.plasma = 1;
  assert_int_equal(lumen_aif_population(NULL, &ao, n, t, cp), LUMEN_OK);
}

void lumen_test_noisy_curves(lumen_model model, int n, int nc, const double *t, const double *cp, const double *lo,
                             const double *span, const int *mod, double noise, uint64_t seed, float *y) {
  double *dt = malloc(sizeof(double) * (size_t)n), *icp = malloc(sizeof(double) * (size_t)n);
  double *f = malloc(sizeof(double) * (size_t)n);
  assert_true(dt && icp && f);
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, n, t, cp, dt, icp);
  uint64_t s = seed;
  for (int c = 0; c < nc; ++c) {
    double p[LUMEN_FIT_MAX_PARAMS] = {0};
    for (int k = 0; k < lumen_model_param_count(model); ++k) p[k] = lo[k] + span[k] * (c % mod[k]) / (double)mod[k];
    lumen_model_eval_f64(model, &g, NULL, p, f, NULL, NULL);
    for (int i = 0; i < n; ++i) {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      double u = (double)(s >> 11) * (1.0 / 9007199254740992.0) - 0.5;
      y[(size_t)c * (size_t)n + (size_t)i] = (float)(f[i] + noise * u);
    }
  }
  free(dt);
  free(icp);
  free(f);
}

uint64_t lumen_test_splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double lumen_test_uniform(uint64_t *state) { return (double)(lumen_test_splitmix64(state) >> 11) * 0x1.0p-53; }

int lumen_test_record_progress(void *user, double fraction, const char *stage) {
  lumen_test_progress *p = user;
  (void)stage;
  if (p->calls > 0 && !(fraction > p->last)) p->rising = 0;
  p->last = fraction;
  return p->calls++ == p->cancel_at_call || fraction >= p->cancel_at_fraction;
}

int lumen_test_cuda_devices(char *reason, size_t size) {
  lumen_ctx *ctx = NULL;
  int ndev = 0;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) return -1;
  lumen_status s = lumen_cuda_probe(ctx, &ndev, reason, size);
  lumen_ctx_destroy(ctx);
  return s == LUMEN_OK && ndev > 0 ? ndev : 0;
}

int lumen_test_skip_without_cuda(const char *test, const char *reason) {
  printf("%s: skipped, no CUDA device (%s)\n", test, reason);
  return LUMEN_TEST_SKIP;
}

int lumen_test_skip(const char *why) {
  printf("%s: skipped\n", why);
  return LUMEN_TEST_SKIP;
}

char *lumen_test_refdata_needed(const char *relative) {
  char *path = lumen_test_refdata_path(relative);
  if (!path) printf("reference data %s not found (LUMEN_REFDATA): skipped\n", relative);
  return path;
}

int lumen_test_refdata_has(const char *relative, const char *what) {
  char *probe = lumen_test_refdata_path(relative);
  if (!probe) {
    fprintf(stderr, "%s reference data not found (LUMEN_REFDATA): skipping\n", what);
    return 0;
  }
  free(probe);
  return 1;
}
