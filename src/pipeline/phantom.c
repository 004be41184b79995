/* The embedded synthetic phantom of `lumen demo`: 4 x 3 patches of 6 x 6 voxels with known
   Ktrans (0.05, 0.1, 0.2, 0.4 /min) and ve (0.1, 0.25, 0.5), two slices with vp 0.02 and 0.08,
   a 6 x 6 vessel (whole blood) beside them, Parker AIF (hematocrit 0.45, arrival 0.5 min),
   80 frames of 5 s, SPGR FA 20 deg, TR 5 ms, r1 4.5 /mM/s, tissue T1 1.2 s, blood T1 1.44 s,
   M0 5000, Gaussian noise SD 5 on the signal (tissue baseline about 110: SNR about 22). The curves
   come from lumen's extended-Tofts model code (exact convolution). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "lumen/io.h"
#include "pipeline/pipe_util.h"
#include "models/models_f64.h"

#define NX 32
#define NY 24
#define NZ 2
#define NT 80
#define PS 6
static const double KT[4] = {0.05, 0.1, 0.2, 0.4};
static const double VE[3] = {0.1, 0.25, 0.5};
static const double VP[NZ] = {0.02, 0.08};

static uint64_t rng = 0x1234ABCDULL;
static double unif(void) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return ((double)(rng >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}
static double gauss(void) { return sqrt(-2.0 * log(unif())) * cos(6.283185307179586 * unif()); }

static lumen_status write_vol(lumen_ctx *ctx, const char *path, int ndim, const int64_t *dims, float *data, int ow,
                              double dt) {
  lumen_image *im = NULL;
  lumen_status st = lumen_image_wrap(ctx, data, ndim, dims, LUMEN_DTYPE_FLOAT32, lumen_device_cpu(), &im);
  if (st != LUMEN_OK) return st;
  double sp[4] = {2, 2, 4, dt};
  lumen_image_set_spacing(ctx, im, sp, ndim);
  lumen_nifti_write_opts wo;
  memset(&wo, 0, sizeof wo);
  wo.overwrite = ow;
  st = lumen_nifti_write(ctx, path, im, &wo);
  lumen_image_free(im);
  return st;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The phantom's four volumes in memory: signal (x, y, z, t), T1 (s), tissue mask, true parameters. */
typedef struct {
  float *sig, *t1, *mask;
  double *truth;
} phantom;

static void phantom_free(phantom *ph) {
  free(ph->sig); free(ph->t1); free(ph->mask); free(ph->truth);
  ph->sig = ph->t1 = ph->mask = NULL;
  ph->truth = NULL;
}

/* One voxel: its concentration curve y (extended Tofts in the patches, whole blood in the vessel,
   none elsewhere) turned into a noisy SPGR signal. */
static void synth_voxel(lumen_ctx *ctx, phantom *ph, int64_t v, int x, int yy, int z, const lumen_grid_f64 *g,
                        const double *cb, const lumen_spgr_options *so) {
  const int64_t nv = (int64_t)NX * NY * NZ;
  double y[NT], r1v[NT], s[NT];
  int px = x / PS, py = yy / PS;
  double T10 = 1.2;
  ph->truth[3 * v] = ph->truth[3 * v + 1] = ph->truth[3 * v + 2] = NAN;
  ph->mask[v] = 0;
  if (px < 4 && py < 3) {
    double p[3] = {KT[px], VE[py], VP[z]};
    lumen_model_eval_f64(LUMEN_MODEL_ETOFTS, g, NULL, p, y, NULL, NULL);
    ph->truth[3 * v] = p[0]; ph->truth[3 * v + 1] = p[1]; ph->truth[3 * v + 2] = p[2];
    ph->mask[v] = 1;
  } else if (px == 4 && py == 3) {
    for (int i = 0; i < NT; ++i) y[i] = cb[i];
    T10 = 1.44;
  } else {
    for (int i = 0; i < NT; ++i) y[i] = 0;
    T10 = 1.5;
  }
  ph->t1[v] = (float)T10; /* seconds, BIDS's unit for a T1map: the demo's own run needs no unit correction */
  for (int i = 0; i < NT; ++i) r1v[i] = 1 / T10 + LUMEN_DEFAULT_RELAXIVITY * y[i];
  lumen_spgr_r1_to_signal(ctx, so, 5000, NT, r1v, s);
  for (int i = 0; i < NT; ++i) ph->sig[(int64_t)i * nv + v] = (float)(s[i] + 5 * gauss());
}

static lumen_status synth_phantom(lumen_ctx *ctx, phantom *ph) {
  const int64_t nv = (int64_t)NX * NY * NZ;
  ph->sig = malloc(sizeof(float) * (size_t)(nv * NT));
  ph->t1 = malloc(sizeof(float) * (size_t)nv);
  ph->mask = malloc(sizeof(float) * (size_t)nv);
  ph->truth = malloc(sizeof(double) * (size_t)nv * 3);
  if (!ph->sig || !ph->t1 || !ph->mask || !ph->truth) {
    phantom_free(ph);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "demo: out of memory");
  }
  double t[NT], cp[NT], cb[NT];
  for (int i = 0; i < NT; ++i) t[i] = i * 5.0 / 60.0;
  lumen_aif_options ao;
  lumen_aif_options_init(&ao);
  ao.delay = 0.5;
  ao.hct = 0.45;
  lumen_aif_population(ctx, &ao, NT, t, cp);
  ao.plasma = 0;
  lumen_aif_population(ctx, &ao, NT, t, cb);
  double dtv[NT], icp[NT];
  lumen_grid_f64 g;
  lumen_grid_setup_f64(&g, NT, t, cp, dtv, icp);
  lumen_spgr_options so;
  lumen_spgr_options_init(&so);
  so.flip_angle = 20 * 3.14159265358979323846 / 180;
  so.tr = 0.005;
  for (int z = 0; z < NZ; ++z)
    for (int yy = 0; yy < NY; ++yy)
      for (int x = 0; x < NX; ++x) synth_voxel(ctx, ph, ((int64_t)z * NY + yy) * NX + x, x, yy, z, &g, cb, &so);
  return LUMEN_OK;
}

/* The BIDS-style sidecar of the phantom's DCE series. */
static lumen_status write_sidecar(lumen_ctx *ctx, const char *path, int overwrite) {
  lumen_json *j = NULL;
  lumen_status st = lumen_json_create(ctx, &j);
  if (st == LUMEN_OK) {
    lumen_json_set_number(ctx, j, "FlipAngle", 20);
    lumen_json_set_number(ctx, j, "RepetitionTime", 0.005);
    lumen_json_set_number(ctx, j, "ContrastAgentRelaxivity", LUMEN_DEFAULT_RELAXIVITY);
    double ft[NT];
    for (int i = 0; i < NT; ++i) ft[i] = i * 5.0;
    lumen_json_set_numbers(ctx, j, "FrameTimesStart", ft, NT);
    lumen_json_set_string(ctx, j, "Description", "lumen demo phantom (synthetic, extended Tofts, Parker AIF)");
    st = lumen_json_write(ctx, j, path, overwrite);
  }
  lumen_json_free(j);
  return st;
}

/* Where the phantom's inputs go in out_dir. */
typedef struct {
  char dce[LUMEN_PIPE_PATH_MAX], t1[LUMEN_PIPE_PATH_MAX], mask[LUMEN_PIPE_PATH_MAX], json[LUMEN_PIPE_PATH_MAX];
} demo_paths;

static lumen_status write_phantom(lumen_ctx *ctx, const phantom *ph, const demo_paths *p, int overwrite) {
  int64_t d4[4] = {NX, NY, NZ, NT}, d3[3] = {NX, NY, NZ};
  lumen_status st = write_vol(ctx, p->dce, 4, d4, ph->sig, overwrite, 5.0);
  if (st == LUMEN_OK) st = write_vol(ctx, p->t1, 3, d3, ph->t1, overwrite, 1);
  if (st == LUMEN_OK) st = write_vol(ctx, p->mask, 3, d3, ph->mask, overwrite, 1);
  if (st == LUMEN_OK) st = write_sidecar(ctx, p->json, overwrite);
  return st;
}

/* lumen dce on the phantom: Tofts and extended Tofts, the better by AIC, the AIF found automatically. */
static lumen_status run_demo_pipeline(lumen_ctx *ctx, const demo_paths *p, const char *out_dir, int overwrite,
                                      const char *backend, lumen_pipe_config *cfg, lumen_pipe_summary *sum) {
  cfg->dce = strdup(p->dce);
  cfg->t1map = strdup(p->t1);
  cfg->mask = strdup(p->mask);
  cfg->out = strdup(out_dir);
  cfg->models = strdup("tofts,etofts");
  cfg->select = strdup("aic");
  cfg->aif = strdup("auto");
  if (backend) cfg->backend = strdup(backend);
  cfg->overwrite = overwrite;
  return lumen_pipeline_dce(ctx, cfg, sum);
}

/* The fitted maps read back: [0] etofts Ktrans, ve, vp; [1] tofts Ktrans, ve (its [1][2] stays NULL). */
static lumen_status read_maps(lumen_ctx *ctx, const char *out_dir, const char *prefix, float *maps[2][3]) {
  const int64_t nv = (int64_t)NX * NY * NZ;
  const char *mods[2] = {"etofts", "tofts"};
  const char *pn[3] = {"Ktrans", "ve", "vp"};
  lumen_status st = LUMEN_OK;
  for (int m = 0; m < 2 && st == LUMEN_OK; ++m)
    for (int k = 0; k < (m == 0 ? 3 : 2) && st == LUMEN_OK; ++k) {
      char name[300], path[LUMEN_PIPE_PATH_MAX];
      snprintf(name, sizeof name, "%s_model-%s_param-%s.nii.gz", prefix, mods[m], pn[k]);
      pipe_join(path, sizeof path, out_dir, name);
      lumen_image *im = NULL;
      st = lumen_nifti_read(ctx, path, NULL, &im, NULL);
      if (st == LUMEN_OK) {
        maps[m][k] = malloc(sizeof(float) * (size_t)nv);
        if (maps[m][k]) memcpy(maps[m][k], lumen_image_const_data(im), sizeof(float) * (size_t)nv);
        lumen_image_free(im);
      }
    }
  return st;
}

/* The median of a map's finite values in patch (px, py) of slice z; NaN when there are none. */
static double patch_median(const float *map, int z, int py, int px) {
  double buf[PS * PS];
  int c = 0;
  for (int yy = py * PS; yy < (py + 1) * PS; ++yy)
    for (int x = px * PS; x < (px + 1) * PS; ++x) {
      float f = map[((int64_t)z * NY + yy) * NX + x];
      if (isfinite(f)) buf[c++] = f;
    }
  if (!c) return NAN;
  qsort(buf, (size_t)c, sizeof(double), cmpd);
  return c % 2 ? buf[c / 2] : 0.5 * (buf[c / 2 - 1] + buf[c / 2]);
}

/* One line a patch: the truth beside the median of each fitted map. */
static void print_patches(FILE *out, float *maps[2][3]) {
  fprintf(out, "%-3s %7s %6s %6s | %9s %9s %9s | %9s %9s\n", "z", "Ktrans", "ve", "vp", "etofts_K", "etofts_ve",
          "etofts_vp", "tofts_K", "tofts_ve");
  for (int z = 0; z < NZ; ++z)
    for (int py = 0; py < 3; ++py)
      for (int px = 0; px < 4; ++px) {
        double med[2][3];
        for (int m = 0; m < 2; ++m)
          for (int k = 0; k < 3; ++k) med[m][k] = maps[m][k] ? patch_median(maps[m][k], z, py, px) : NAN;
        fprintf(out, "%-3d %7.3f %6.2f %6.2f | %9.4f %9.4f %9.4f | %9.4f %9.4f\n", z, KT[px], VE[py], VP[z], med[0][0],
                med[0][1], med[0][2], med[1][0], med[1][1]);
      }
}

static void print_models(FILE *out, const lumen_pipe_summary *sum) {
  for (int m = 0; m < sum->n_models; ++m)
    fprintf(out, "# %s: backend requested %s, selected %s, used %s (%s); %lld voxels, %lld converged, %lld at a "
                 "bound, %lld failed, %.0f fits/s\n",
            lumen_model_name(sum->models[m].model), sum->models[m].backend_requested, sum->models[m].backend_selected,
            sum->models[m].backend_used, sum->models[m].backend_reason, (long long)sum->models[m].fitted,
            (long long)sum->models[m].converged, (long long)sum->models[m].at_bound, (long long)sum->models[m].failed,
            sum->models[m].fits_per_s);
}

/* Reads back the etofts and tofts maps and compares them with the truth. */
static lumen_status print_comparison(lumen_ctx *ctx, const char *out_dir, const lumen_pipe_summary *sum, FILE *out) {
  float *maps[2][3] = {{NULL}};
  lumen_status st = read_maps(ctx, out_dir, sum->prefix, maps);
  if (st == LUMEN_OK) {
    fprintf(out, "lumen demo: synthetic phantom %dx%dx%d, %d frames of 5 s, extended Tofts truth, Parker AIF; "
                 "noise SD 5 on a tissue baseline of about 110\n", NX, NY, NZ, NT);
    fprintf(out, "AIF used: %s\n", sum->aif_method);
    print_patches(out, maps);
    print_models(out, sum);
    fprintf(out, "(fits/s: each model's timed fit, after an untimed warm-up fit of its first curves, so the\n"
                 " backend's one-off setup is not counted in the first model)\n");
    fprintf(out, "(medians over each 6x6 patch; Tofts ignores vp, so it is biased where vp is large: where the\n"
                 " data want Ktrans above the 5 /min bound the estimate is the bound, state at_bound)\n");
    fprintf(out, "report: %s\nrun log: %s\n", sum->report, sum->runlog);
  }
  for (int m = 0; m < 2; ++m) for (int k = 0; k < 3; ++k) free(maps[m][k]);
  return st;
}

lumen_status lumen_pipeline_demo(lumen_ctx *ctx, const char *out_dir, int overwrite, const char *backend, FILE *out,
                                 lumen_pipe_summary *summary) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out_dir);
  lumen_status st = pipe_mkdir_p(ctx, out_dir);
  if (st != LUMEN_OK) return st;
  rng = 0x1234ABCDULL;
  phantom ph = {NULL, NULL, NULL, NULL};
  st = synth_phantom(ctx, &ph);
  if (st != LUMEN_OK) return st;
  demo_paths p;
  pipe_join(p.dce, sizeof p.dce, out_dir, "sub-demo_dce.nii.gz");
  pipe_join(p.json, sizeof p.json, out_dir, "sub-demo_dce.json");
  pipe_join(p.t1, sizeof p.t1, out_dir, "sub-demo_T1map.nii.gz");
  pipe_join(p.mask, sizeof p.mask, out_dir, "sub-demo_mask.nii.gz");
  st = write_phantom(ctx, &ph, &p, overwrite);
  phantom_free(&ph);
  lumen_pipe_summary sum;
  lumen_pipe_config cfg;
  lumen_pipe_config_init(&cfg);
  /* the run log records the command that made it: the demo's own */
  const char *line[] = {"lumen", "demo", "--out", out_dir, "--backend", backend};
  if (st == LUMEN_OK) st = lumen_pipe_config_set_command_line(ctx, &cfg, backend ? 6 : 4, line);
  if (st == LUMEN_OK) st = run_demo_pipeline(ctx, &p, out_dir, overwrite, backend, &cfg, &sum);
  if (st == LUMEN_OK && summary) *summary = sum;
  if (st == LUMEN_OK && out) st = print_comparison(ctx, out_dir, &sum, out);
  lumen_pipe_config_clear(&cfg);
  return st;
}
