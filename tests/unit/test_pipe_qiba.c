/* QIBA DROs through the whole `lumen dce` / `lumen t1` pipeline (skipped with 77 without
   ../shared/data). Patches are located in the NIfTI orientation described in
   shared/data/README.md (y flipped against the DICOM rows): v6: y 0..9 vessel, tissue patch
   (row band b = (y-10)/10, column band c = x/10) has Ktrans {0.35,0.2,0.1,0.05,0.02,0.01}[b] and
   ve {0.01,0.05,0.1,0.2,0.5}[c]; v4: DICOM row yd = 199 - y, vessel yd 180..199, tissue band
   r = yd/10: ve {0.1,0.2,0.5}[r%3], vp {0.001,0.005,0.01,0.02,0.05,0.1}[r/3], Ktrans
   {0,0.01,0.02,0.05,0.1,0.2}[x/10]. Patch medians over the central 6x6 voxels of each patch.
   Validation runs with the defaults a user gets (issue 14): no --aif (automatic vessel search over
   the whole image), no --bounds. v6: only the acquisition facts (the sidecar has TR 5 ms but no
   frame interval: --dt 0.5; T1 map of 1 s). v4: `dce --vfa <six VFA files> --models etofts
   --relaxivity 4.5`, nothing else (TR from RepetitionTimeExcitation, frames from pixdim[4]).
   r1 = 4.5 (cancels). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"
#include "lumen/io.h"
#include "lumen/pipeline.h"

static char tmpdir[256];

static void make_tmp(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/lumen-pipe-qiba-XXXXXX");
  assert_non_null(mkdtemp(tmpdir));
}
static void rm_tmp(void) {
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  assert_int_equal(system(cmd), 0);
}

/* Writes a 3-D mask on the grid of ref (affine kept) selecting y in [y0, y1). */
static char *write_map(lumen_ctx *ctx, const char *ref, const char *name, int y0, int y1, float value) {
  lumen_nifti_info info;
  assert_int_equal(lumen_nifti_read_header(ctx, ref, NULL, &info), LUMEN_OK);
  int64_t d[3] = {info.dims[0], info.dims[1], info.dims[2]};
  lumen_image *m = NULL;
  assert_int_equal(lumen_image_create(ctx, 3, d, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), LUMEN_IMAGE_ZERO, &m), LUMEN_OK);
  lumen_image_set_affine(ctx, m, info.affine);
  double sp[3] = {fabs(info.pixdim[1]), fabs(info.pixdim[2]), fabs(info.pixdim[3])};
  lumen_image_set_spacing(ctx, m, sp, 3);
  float *v = lumen_image_data(m);
  for (int64_t z = 0; z < d[2]; ++z)
    for (int64_t y = y0; y < y1; ++y)
      for (int64_t x = 0; x < d[0]; ++x) v[(z * d[1] + y) * d[0] + x] = value;
  char *path = malloc(512);
  snprintf(path, 512, "%s/%s", tmpdir, name);
  lumen_nifti_write_opts wo = {.sform_code = info.sform_code, .qform_code = info.qform_code};
  assert_int_equal(lumen_nifti_write(ctx, path, m, &wo), LUMEN_OK);
  lumen_image_free(m);
  return path;
}
static char *write_mask(lumen_ctx *ctx, const char *ref, const char *name, int y0, int y1) {
  return write_map(ctx, ref, name, y0, y1, 1.0f);
}

static float *read_map(lumen_ctx *ctx, const char *name, int64_t *nx) {
  char path[512];
  snprintf(path, sizeof path, "%s/out/%s", tmpdir, name);
  lumen_image *im = NULL;
  if (lumen_nifti_read(ctx, path, NULL, &im, NULL) != LUMEN_OK) {
    print_error("%s\n", lumen_ctx_last_error(ctx));
    fail();
  }
  *nx = lumen_image_dim(im, 0);
  float *v = malloc(sizeof(float) * (size_t)lumen_image_count(im));
  memcpy(v, lumen_image_const_data(im), sizeof(float) * (size_t)lumen_image_count(im));
  lumen_image_free(im);
  return v;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}
static double patch_median(const float *m, int64_t nx, int x0, int y0) {
  double v[36];
  int n = 0;
  for (int y = y0 + 2; y < y0 + 8; ++y)
    for (int x = x0 + 2; x < x0 + 8; ++x)
      if (isfinite(m[(int64_t)y * nx + x])) v[n++] = m[(int64_t)y * nx + x];
  if (!n) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void set(lumen_ctx *ctx, lumen_pipe_config *cfg, const char *k, const char *v) {
  assert_int_equal(lumen_pipe_config_set(ctx, cfg, k, v, k, NULL), LUMEN_OK);
}

/* A fresh configuration with "out" = <tmpdir>/out, written to out. */
static void config_with_out(lumen_ctx *ctx, lumen_pipe_config *cfg, char *out, size_t size) {
  lumen_pipe_config_init(cfg);
  snprintf(out, size, "%s/out", tmpdir);
  set(ctx, cfg, "out", out);
}

/* The QIBA v4 VFA series at flip angle number i (of 6); NULL when the reference data lacks it. */
static char *v4_vfa_path(int i) {
  static const int fa[6] = {3, 6, 9, 15, 24, 35};
  char rel[128];
  snprintf(rel, sizeof rel, "qiba/v4_etm_vfa/q4_vfa_fa%d.nii.gz", fa[i]);
  return lumen_test_refdata_path(rel);
}

/* Runs v6 with the defaults and the acquisition facts; preset NULL = the default bounds. */
static lumen_status run_v6(lumen_ctx *ctx, const char *dce, const char *preset, lumen_pipe_summary *sum) {
  char *tissue = write_mask(ctx, dce, "tissue.nii.gz", 10, 70);
  char *t1 = write_map(ctx, dce, "t1.nii.gz", 0, 80, 1.0f); /* tissue T1 1000 ms */
  lumen_pipe_config cfg;
  char out[400];
  config_with_out(ctx, &cfg, out, sizeof out);
  set(ctx, &cfg, "dce", dce);
  set(ctx, &cfg, "t1map", t1);
  set(ctx, &cfg, "mask", tissue);
  set(ctx, &cfg, "relaxivity", "4.5");
  set(ctx, &cfg, "hematocrit", "0.45");
  set(ctx, &cfg, "blood-t1", "1.44");
  set(ctx, &cfg, "dt", "0.5");
  set(ctx, &cfg, "flip-angle", "30");
  set(ctx, &cfg, "tr", "0.005");
  set(ctx, &cfg, "baseline", "10");
  set(ctx, &cfg, "report", "0");
  if (preset) set(ctx, &cfg, "bounds-preset", preset);
  lumen_status st = lumen_pipeline_dce(ctx, &cfg, sum);
  if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
  free(tissue); free(t1);
  lumen_pipe_config_clear(&cfg);
  return st;
}

static void qiba_v6_tofts(void **state) {
  const char *dce = *state;
  lumen_ctx *ctx = lumen_test_ctx();
  make_tmp();
  lumen_pipe_summary sum;
  assert_int_equal(run_v6(ctx, dce, NULL, &sum), LUMEN_OK);
  /* the vessel band was found although the mask covers only tissue: no population fallback */
  assert_string_equal(sum.aif_method, "auto:detected-vessels");
  assert_int_equal(sum.aif_fallback, 0);
  int64_t nx;
  float *kt = read_map(ctx, "lumen_model-tofts_param-Ktrans.nii.gz", &nx);
  float *ve = read_map(ctx, "lumen_model-tofts_param-ve.nii.gz", &nx);
  static const double KT[6] = {0.35, 0.2, 0.1, 0.05, 0.02, 0.01}, VE[5] = {0.01, 0.05, 0.1, 0.2, 0.5};
  double tk[30], ek[30], tv[30], ev[30], worst_k = 0, worst_v = 0;
  int n = 0;
  for (int b = 0; b < 6; ++b)
    for (int c = 0; c < 5; ++c, ++n) {
      tk[n] = KT[b]; tv[n] = VE[c];
      ek[n] = patch_median(kt, nx, c * 10, 10 + b * 10);
      ev[n] = patch_median(ve, nx, c * 10, 10 + b * 10);
      worst_k = fmax(worst_k, fabs(ek[n] - tk[n]) / tk[n]);
      worst_v = fmax(worst_v, fabs(ev[n] - tv[n]) / tv[n]);
    }
  double ck = lumen_pipe_ccc(ek, tk, n), cv = lumen_pipe_ccc(ev, tv, n);
  printf("QIBA v6 Tofts, defaults: CCC Ktrans %.6f, ve %.6f; worst patch error Ktrans %.3f %%, ve %.3f %% (AIF %s, "
         "backend %s, %.0f fits/s)\n",
         ck, cv, 100 * worst_k, 100 * worst_v, sum.aif_method, sum.models[0].backend_used, sum.models[0].fits_per_s);
  assert_true(ck >= 0.9999);
  assert_true(cv >= 0.9999);
  assert_true(worst_k <= 0.01);
  assert_true(worst_v <= 0.01);
  assert_int_equal(sum.models[0].at_bound, 0);
  assert_int_equal(sum.models[0].failed, 0);
  free(kt); free(ve);
  rm_tmp();
  lumen_ctx_destroy(ctx);
}

/* ROCKETSHIP's bounds (ve >= 0.02) pin the ve = 0.01 column: those voxels keep the bound as their
   value and say so (state at_bound), where they used to be "converged". */
static void qiba_v6_rocketship_preset_at_bound(void **state) {
  const char *dce = *state;
  lumen_ctx *ctx = lumen_test_ctx();
  make_tmp();
  lumen_pipe_summary sum;
  assert_int_equal(run_v6(ctx, dce, "rocketship", &sum), LUMEN_OK);
  int64_t nx;
  float *ve = read_map(ctx, "lumen_model-tofts_param-ve.nii.gz", &nx);
  float *stm = read_map(ctx, "lumen_model-tofts_param-state.nii.gz", &nx);
  int pinned = 0, flagged = 0, others = 0;
  for (int y = 10; y < 70; ++y)
    for (int x = 0; x < 50; ++x) {
      int64_t i = (int64_t)y * nx + x;
      if (x < 10) { /* ve = 0.01 */
        pinned += fabs(ve[i] - 0.02) < 1e-6;
        flagged += stm[i] == (float)LUMEN_FIT_AT_BOUND;
      } else {
        others += stm[i] != (float)LUMEN_FIT_CONVERGED;
      }
    }
  printf("QIBA v6, --bounds-preset rocketship: ve = 0.01 column: %d of 600 voxels at ve = 0.02, %d flagged at_bound; "
         "%d other voxels not converged; summary at_bound %lld\n",
         pinned, flagged, others, (long long)sum.models[0].at_bound);
  assert_int_equal(pinned, 600);
  assert_int_equal(flagged, 600);
  assert_int_equal(others, 0);
  assert_int_equal(sum.models[0].at_bound, 600);
  free(ve); free(stm);
  rm_tmp();
  lumen_ctx_destroy(ctx);
}

static void qiba_v4_etm(void **state) {
  char *dce = lumen_test_refdata_path("qiba/v4_etm_vfa/q4_dce.nii.gz");
  (void)state;
  if (!dce) skip();
  char *vfa[6];
  for (int i = 0; i < 6; ++i) {
    vfa[i] = v4_vfa_path(i);
    assert_non_null(vfa[i]);
  }
  lumen_ctx *ctx = lumen_test_ctx();
  make_tmp();
  lumen_pipe_config cfg;
  char out[400];
  config_with_out(ctx, &cfg, out, sizeof out);
  /* `lumen dce --dce q4_dce.nii.gz --vfa <six files> --models etofts --relaxivity 4.5` */
  set(ctx, &cfg, "dce", dce);
  for (int i = 0; i < 6; ++i) set(ctx, &cfg, "vfa", vfa[i]);
  set(ctx, &cfg, "models", "etofts");
  set(ctx, &cfg, "relaxivity", "4.5");
  set(ctx, &cfg, "report", "0");
  lumen_pipe_summary sum;
  lumen_status st = lumen_pipeline_dce(ctx, &cfg, &sum);
  if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  /* the run log is valid JSON (the T1 stage and the "read" object used to be joined without a comma) */
  char path[512];
  snprintf(path, sizeof path, "%s/lumen_runlog.json", out);
  lumen_json *j = NULL;
  assert_int_equal(lumen_json_read(ctx, path, &j), LUMEN_OK);
  lumen_json_free(j);
  int64_t nx;
  float *kt = read_map(ctx, "lumen_model-etofts_param-Ktrans.nii.gz", &nx);
  float *vp = read_map(ctx, "lumen_model-etofts_param-vp.nii.gz", &nx);
  static const double KT[6] = {0, 0.01, 0.02, 0.05, 0.1, 0.2}, VP[6] = {0.001, 0.005, 0.01, 0.02, 0.05, 0.1};
  double tk[108], ek[108], tv[108], ev[108];
  int n = 0;
  for (int r = 0; r < 18; ++r)
    for (int c = 0; c < 6; ++c, ++n) {
      int y0 = 199 - (r * 10 + 9); /* NIfTI y of the patch's first row */
      tk[n] = KT[c]; tv[n] = VP[r / 3];
      ek[n] = patch_median(kt, nx, c * 10, y0);
      ev[n] = patch_median(vp, nx, c * 10, y0);
      if (getenv("LUMEN_TEST_VERBOSE")) printf("r %2d c %d: Ktrans %.4f -> %.4f, vp %.4f -> %.4f\n", r, c, tk[n], ek[n], tv[n], ev[n]);
    }
  double ck = lumen_pipe_ccc(ek, tk, n), cv = lumen_pipe_ccc(ev, tv, n);
  printf("QIBA v4 extended Tofts as a user runs it: CCC Ktrans %.6f, vp %.6f (108 patches; AIF %s; T1 from VFA)\n", ck,
         cv, sum.aif_method);
  assert_true(ck >= 0.999);
  assert_true(cv >= 0.999);
  free(kt); free(vp); free(dce);
  for (int i = 0; i < 6; ++i) free(vfa[i]);
  lumen_pipe_config_clear(&cfg);
  rm_tmp();
  lumen_ctx_destroy(ctx);
}

static void qiba_v4_vfa(void **state) {
  (void)state;
  char *files[6];
  for (int i = 0; i < 6; ++i) {
    files[i] = v4_vfa_path(i);
    if (!files[i]) skip();
  }
  lumen_ctx *ctx = lumen_test_ctx();
  make_tmp();
  lumen_pipe_config cfg;
  char out[400];
  config_with_out(ctx, &cfg, out, sizeof out);
  set(ctx, &cfg, "method", "vfa");
  set(ctx, &cfg, "report", "0");
  for (int i = 0; i < 6; ++i) set(ctx, &cfg, "in", files[i]);
  lumen_pipe_summary sum;
  lumen_status st = lumen_pipeline_t1(ctx, &cfg, &sum);
  if (st != LUMEN_OK) print_error("%s\n", lumen_ctx_last_error(ctx));
  assert_int_equal(st, LUMEN_OK);
  int64_t nx;
  float *t1 = read_map(ctx, "lumen_T1map.nii.gz", &nx);
  /* tissue: y 20..199, vessel y 0..19 (NIfTI orientation); medians of the central voxels */
  double tis[5000], ves[5000];
  int nt = 0, nv = 0;
  for (int y = 5; y < 200; ++y)
    for (int x = 2; x < 58; x += 3) {
      float v = t1[(int64_t)y * nx + x];
      if (!isfinite(v)) continue;
      if (y >= 30 && nt < 5000) tis[nt++] = v;
      else if (y < 15 && nv < 5000) ves[nv++] = v;
    }
  qsort(tis, (size_t)nt, sizeof(double), cmpd);
  qsort(ves, (size_t)nv, sizeof(double), cmpd);
  double mt = tis[nt / 2], mv = ves[nv / 2];
  printf("QIBA v4 VFA: tissue T1 %.1f ms (truth 1000), vessel T1 %.1f ms (truth 1440); backend %s\n", mt * 1000,
         mv * 1000, sum.models[0].backend_used);
  assert_true(fabs(mt - 1.0) <= 0.03);
  assert_true(fabs(mv - 1.44) <= 0.03 * 1.44);
  free(t1);
  for (int i = 0; i < 6; ++i) free(files[i]);
  lumen_pipe_config_clear(&cfg);
  rm_tmp();
  lumen_ctx_destroy(ctx);
}

int main(void) {
  char *p = lumen_test_refdata_needed("qiba/v6_tofts/q6_dce.nii.gz");
  if (!p) return LUMEN_TEST_SKIP;
  const struct CMUnitTest tests[] = {cmocka_unit_test_prestate(qiba_v6_tofts, p),
                                     cmocka_unit_test_prestate(qiba_v6_rocketship_preset_at_bound, p),
                                     cmocka_unit_test(qiba_v4_etm),
                                     cmocka_unit_test(qiba_v4_vfa)};
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  free(p);
  return rc;
}
