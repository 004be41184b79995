/* Stage A (pipe_convert, src/pipeline/conc.c) against a plain reference built on
   lumen_spgr_signal_to_conc (double), one voxel at a time: the flags and unusable voxels are
   identical, and every concentration is within a few float ulps of the two terms it is the
   difference of (R1 / r1 and R10 / r1: the stage computes in float, conc_f32.h); the curves are
   the same bit for bit at every vector level (baseline 4 lanes, AVX2, AVX-512 where the CPU has
   them; the one-lane kernel as reference) and for every thread count. Contiguous and scattered voxel lists, bad T10 / B1 / baselines,
   flagged samples, and concentration input (bit for bit). The float kernel alone over a sweep of
   signals, flip angles and T10 (pipe_conc_spgr_row, pipe_conc_spgr_one) against the same double
   formula. The mean curve summed during the conversion equals the sum it promises (groups of 4096
   curves in 16 lanes, lanes and groups added in order) bit for bit, for any thread count, and
   asking for it changes no curve; the conversion in place equals the curve array, with and
   without blocks that have a NaN sample. The baseline's sampled mean signal (pipe_mean_signal_sample) equals a
   plain voxel-by-voxel sum bit for bit. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "test_support.h"
#include "lumen/aif.h"
#include "pipeline/conc_f32.h"
#include "pipeline/pipe_conc.h"

enum { NVOX = 1500, NT = 43 }; /* neither a multiple of the vector widths */
/* The bound of a float concentration against the double conversion, in units of
   2^-24 (|R1| + |R10|) / r1 (R1 / r1 - R10 / r1 is the concentration): the float roundings of x,
   u, the logarithm (its polynomial < 0.12 of a unit) and the last multiply-add. Measured: at most
   3.6 on make_inputs' voxels, 1.3 beyond kernel_sweep's range. */
#define CONC_F32_BOUND 6.0

/* The reference: the library's conversion of one voxel, then the stage's flag rules. */
static void reference_voxel(const float *sig, int64_t v, double t10, double b1, const pipe_spgr *sp, int input_conc,
                            float *dst, int32_t *ninv, uint8_t *bad) {
  double s[NT], c[NT];
  uint8_t flag[NT];
  int64_t nbad = 0;
  for (int i = 0; i < NT; ++i) s[i] = sig[(int64_t)i * NVOX + v];
  *bad = 0;
  if (input_conc) {
    for (int i = 0; i < NT; ++i) { c[i] = s[i]; flag[i] = !isfinite(s[i]); nbad += flag[i]; }
  } else {
    lumen_spgr_options o;
    lumen_spgr_options_init(&o);
    o.flip_angle = sp->fa_rad; o.tr = sp->tr; o.r1 = sp->r1; o.b1 = b1;
    o.baseline_start = sp->b0; o.baseline_end = sp->b1;
    int ok = t10 > 0 && isfinite(t10) && b1 > 0 && sp->fa_rad * b1 < 3.14159 &&
             lumen_spgr_signal_to_conc(NULL, &o, t10, NT, s, c, flag, &nbad) == LUMEN_OK;
    for (int i = 0; ok && i < NT; ++i) {
      if (flag[i] == LUMEN_CONC_BAD_BASELINE) ok = 0;
      flag[i] = flag[i] != LUMEN_CONC_OK;
    }
    if (!ok) nbad = NT;
  }
  *ninv = (int32_t)nbad;
  *bad = nbad == NT || (double)nbad > sp->max_invalid_fraction * NT;
  for (int i = 0; i < NT; ++i) {
    if (*bad) { dst[i] = NAN; continue; }
    double ci = c[i];
    if (flag[i]) {
      int a = i - 1, b = i + 1;
      while (a >= 0 && flag[a]) --a;
      while (b < NT && flag[b]) ++b;
      ci = a >= 0 && b < NT ? c[a] + (c[b] - c[a]) * (double)(i - a) / (double)(b - a) : a >= 0 ? c[a] : c[b];
    }
    dst[i] = (float)ci;
  }
}

/* A signal series with enhancing curves, noise-like ripples and some defects. */
static void make_inputs(float *sig, float *t10, float *b1) {
  for (int64_t v = 0; v < NVOX; ++v) {
    double m0 = 800 + (double)(v % 97) * 13, k = 0.02 * (double)(v % 11);
    for (int i = 0; i < NT; ++i)
      sig[(int64_t)i * NVOX + v] = (float)(m0 * (1 + (i > 5 ? k * (1 - exp(-0.3 * (i - 5))) : 0) + 0.01 * sin(v * 0.7 + i)));
    t10[v] = (float)(0.6 + 0.001 * (double)(v % 700));
    b1[v] = (float)(0.8 + 0.0005 * (double)(v % 800));
  }
  for (int64_t v = 3; v < NVOX; v += 37) sig[(int64_t)(v % NT) * NVOX + v] = NAN;     /* one flagged sample */
  for (int64_t v = 5; v < NVOX; v += 41) sig[(int64_t)(NT - 1) * NVOX + v] = 1e9f;   /* out of range at the end */
  for (int64_t v = 7; v < NVOX; v += 53)
    for (int i = 10; i < 30; ++i) sig[(int64_t)i * NVOX + v] = -1;                    /* too many flagged */
  for (int64_t v = 11; v < NVOX; v += 59) sig[(int64_t)1 * NVOX + v] = 0;             /* bad baseline */
  for (int64_t v = 13; v < NVOX; v += 61) t10[v] = v % 2 ? 0 : NAN;                   /* bad T10 */
  for (int64_t v = 17; v < NVOX; v += 67) b1[v] = v % 2 ? -1 : 40;                    /* bad B1 */
}

/* The totals pipe_convert and pipe_convert_in_place hand back are those of their flags. */
static void check_counts(const int32_t *ninv, const uint8_t *bad, int64_t n, const int64_t count[3]) {
  int64_t want[3] = {0, 0, 0};
  for (int64_t k = 0; k < n; ++k) {
    want[0] += bad[k];
    want[1] += ninv[k];
    want[2] += !bad[k] && ninv[k] > 0;
  }
  assert_memory_equal(count, want, sizeof want);
}

static void check_list(const float *sig, const float *t10, const float *b1, const int64_t *list, int64_t n,
                       int input_conc) {
  pipe_spgr sp = {15 * 3.14159265358979323846 / 180, 0.005, 4.5, 1, 4, 0.3};
  float *want = malloc(sizeof(float) * NT * (size_t)n), *got = malloc(sizeof(float) * NT * (size_t)n);
  int32_t *ninv_w = malloc(sizeof(int32_t) * (size_t)n), *ninv_g = malloc(sizeof(int32_t) * (size_t)n);
  uint8_t *bad_w = malloc((size_t)n), *bad_g = malloc((size_t)n);
  assert_non_null(want); assert_non_null(got); assert_non_null(ninv_w); assert_non_null(ninv_g);
  assert_non_null(bad_w); assert_non_null(bad_g);
  int64_t n_bad = 0, n_flagged = 0;
  for (int64_t k = 0; k < n; ++k) {
    reference_voxel(sig, list[k], t10[list[k]], b1[list[k]], &sp, input_conc, want + k * NT, &ninv_w[k], &bad_w[k]);
    n_bad += bad_w[k];
    n_flagged += !bad_w[k] && ninv_w[k] > 0;
  }
  assert_true(n_bad > 10 && n_flagged > 10); /* the defects are exercised */
  float *first = malloc(sizeof(float) * NT * (size_t)n);
  assert_non_null(first);
  const lumen_cpu_simd limits[] = {LUMEN_CPU_SIMD_OFF, LUMEN_CPU_SIMD_AVX2, LUMEN_CPU_SIMD_AUTO};
  double worst = 0; /* the largest difference from the reference, in units of the bound's scale */
  for (int li = 0; li < 3; ++li) {
    for (int threads = 1; threads <= 4; ++threads) {
      memset(got, 0, sizeof(float) * NT * (size_t)n);
      int64_t count[3] = {-1, -1, -1};
      assert_int_equal(pipe_convert(&(pipe_convert_in){.sig = sig, .nvox = NVOX, .nt = NT, .list = list, .nlist = n,
                                                       .t10 = t10, .t10_const = NAN, .b1 = b1, .sp = &sp,
                                                       .input_conc = input_conc, .threads = threads,
                                                       .simd = limits[li]}, &(pipe_convert_out){.conc = got,
                                                       .ninvalid = ninv_g, .bad = bad_g, .mean = NULL, .used = NULL,
                                                       .count = count}), 0);
      check_counts(ninv_g, bad_g, n, count);
      assert_memory_equal(ninv_g, ninv_w, sizeof(int32_t) * (size_t)n);
      assert_memory_equal(bad_g, bad_w, (size_t)n);
      if (li == 0 && threads == 1) memcpy(first, got, sizeof(float) * NT * (size_t)n);
      else assert_memory_equal(got, first, sizeof(float) * NT * (size_t)n); /* neither level nor threads change a bit */
      if (input_conc) {
        assert_memory_equal(got, want, sizeof(float) * NT * (size_t)n); /* bit for bit, NaN included */
        continue;
      }
      for (int64_t k = 0; k < n; ++k) {
        /* the scale: |R1 / r1| and |R10 / r1| of the voxel's largest sample (interpolated samples
           mix two neighbours) */
        const double c10 = 1.0 / ((double)t10[list[k]] * sp.r1);
        double top = 0;
        for (int i = 0; i < NT; ++i)
          if (fabs((double)want[k * NT + i]) > top) top = fabs((double)want[k * NT + i]);
        const double scale = 0x1p-24 * (top + 2 * c10);
        for (int i = 0; i < NT; ++i) {
          const float w = want[k * NT + i], g = got[k * NT + i];
          assert_int_equal(isnan(g) != 0, isnan(w) != 0);
          if (isnan(w)) continue;
          const double d = fabs((double)g - (double)w) / scale;
          if (d > worst) worst = d;
          assert_true(d <= CONC_F32_BOUND);
        }
      }
    }
  }
  if (!input_conc) printf("stage A against the double reference: at most %.2f x 2^-24 (|R1| + |R10|) / r1\n", worst);
  free(first);
  free(want); free(got); free(ninv_w); free(ninv_g); free(bad_w); free(bad_g);
}

static void threads_match_reference(void **state) {
  (void)state;
  float *sig = malloc(sizeof(float) * NVOX * NT), *t10 = malloc(sizeof(float) * NVOX), *b1 = malloc(sizeof(float) * NVOX);
  int64_t *list = malloc(sizeof(int64_t) * NVOX);
  assert_non_null(sig); assert_non_null(t10); assert_non_null(b1); assert_non_null(list);
  make_inputs(sig, t10, b1);
  for (int64_t v = 0; v < NVOX; ++v) list[v] = v;
  check_list(sig, t10, b1, list, NVOX, 0);                 /* contiguous blocks */
  int64_t n = 0;
  for (int64_t v = 0; v < NVOX; ++v) if (v % 5 != 2 || v > 1200) list[n++] = v;
  check_list(sig, t10, b1, list, n, 0);                    /* scattered and contiguous blocks */
  for (int64_t i = 0; i < (int64_t)NVOX * NT; ++i) sig[i] = sig[i] < 0 ? NAN : sig[i] * 1e-3f;
  check_list(sig, t10, b1, list, n, 1);                    /* concentration input */
  free(sig); free(t10); free(b1); free(list);
}

/* The float kernel alone: x = s / (M0 sin a) from 1e-6 to 1.2, flip angles 2-170 deg, T10
   0.2-5 s, TR 2-10 ms; against the same formula in double (E1 = (1 - x) / (1 - x cos a),
   C = log(E1) (-1 / (TR r1)) - (1 / T10) / r1) over x and x cos a each moved by 4 float ulps. Valid samples (0 < E1 < 1, away from the ends by 1e-5 where float rounding may
   decide either way) are within the bound of that range, the others are NaN at every level; every
   level and pipe_conc_spgr_one give the same bits. */
static void kernel_sweep(void **state) {
  (void)state;
  enum { NS = 997 };
  float s[NS], a[NS], ca[NS], om[NS], c0[NS], out[3][NS];
  const double r1 = 4.5;
  double worst = 0;
  int64_t nvalid = 0, ninvalid = 0;
  for (int q = 0; q < 600; ++q) {
    const double fa = (q % 5 ? 2 + 58 * (double)(q % 29) / 28 : 60 + 110 * (double)(q % 23) / 22) * 3.14159265358979323846 / 180;
    const double t10 = 0.2 + 4.8 * (double)((q * 7) % 31) / 30, tr = 0.002 + 0.008 * (double)((q * 13) % 17) / 16;
    const double cad = cos(fa), e10 = exp(-tr / t10), m0sa = 1000 * sin(fa) * (1 + 0.3 * sin(q));
    const double c0d = -(1.0 / t10) / r1, kd = -1.0 / (tr * r1);
    (void)e10;
    for (int j = 0; j < NS; ++j) {
      /* x = s / M0sa from 1e-6 to 1.2 (log-spaced), a few defects */
      const double x = pow(10, -6 + 6.08 * (double)((j * 389 + q) % NS) / (NS - 1));
      s[j] = (float)(x * m0sa);
      if (j % 101 == 7) s[j] = NAN;
      if (j % 103 == 9) s[j] = -s[j];
      a[j] = (float)(1.0 / m0sa);
      ca[j] = (float)cad;
      om[j] = (float)(1 - cad);
      c0[j] = (float)c0d;
    }
    const float k = (float)kd;
    const lumen_cpu_simd limits[3] = {LUMEN_CPU_SIMD_OFF, LUMEN_CPU_SIMD_AVX2, LUMEN_CPU_SIMD_AUTO};
    for (int li = 0; li < 3; ++li) /* the levels this CPU has: a lower one where it lacks one */
      pipe_conc_spgr_row(pipe_conc_level(limits[li]), NS, s, a, ca, om, c0, k, out[li], li % 2 ? s : NULL);
    for (int j = 0; j < NS; ++j) {
      assert_memory_equal(&out[1][j], &out[0][j], sizeof(float));
      assert_memory_equal(&out[2][j], &out[0][j], sizeof(float));
      const float one = pipe_conc_spgr_one(s[j], a[j], ca[j], om[j], c0[j], k);
      assert_memory_equal(&one, &out[0][j], sizeof(float));
      const double xd = (double)s[j] * (double)a[j];
      const double e1 = (1 - xd) / (1 - xd * (double)ca[j]);
      if (!(e1 > 0 && e1 < 1)) {
        assert_true(isnan(out[0][j]));
        ++ninvalid;
        continue;
      }
      if (e1 < 1e-5 || e1 > 1 - 1e-5) continue; /* float decides the ends: either is right */
      assert_false(isnan(out[0][j]));
      /* backward: the double conversion with x in the numerator and x cos a in the denominator
         each moved by up to 4 float ulps (near x = 1 with a small flip angle, 1 - x cos a cancels
         and the conversion is ill-conditioned: a float rounding of cos a or of x cos a then weighs
         as much as a change of the flip angle in its ninth digit) */
      const double want = log(e1) * kd + c0d;
      double lo = want, hi = want;
      for (int sn = -1; sn <= 1; sn += 2)
        for (int sd = -1; sd <= 1; sd += 2) {
          const double e1p = (1 - xd * (1 + sn * 4 * 0x1p-24)) / (1 - xd * (double)ca[j] * (1 + sd * 4 * 0x1p-24));
          const double cp = e1p > 0 && e1p < 1 ? log(e1p) * kd + c0d : want;
          if (cp < lo) lo = cp;
          if (cp > hi) hi = cp;
        }
      const double scale = 0x1p-24 * (fabs(want) + 2 * fabs(c0d)), g = (double)out[0][j];
      const double d = (g < lo ? lo - g : g > hi ? g - hi : 0) / scale;
      if (d > worst) worst = d;
      assert_true(d <= CONC_F32_BOUND);
      ++nvalid;
    }
  }
  printf("float kernel: %lld valid samples within %.2f x 2^-24 (|R1| + |R10|) / r1 of the range, %lld NaN\n",
         (long long)nvalid,
         worst, (long long)ninvalid);
  assert_true(nvalid > 300000 && ninvalid > 10000);
}

/* The mean pipe_convert promises, from its curves: in each group of 4096 curves, 16 lanes, lane l
   the sum of the usable curves k with (k - group start) % 16 == l in list order; a group's lanes
   added in lane order, the groups' sums in group order (conc_sum.h). */
static void blocked_mean(const float *conc, const uint8_t *bad, int64_t n, int64_t nt, double *mean, int64_t *used) {
  double lane[16][NT], part[NT];
  *used = 0;
  for (int64_t i = 0; i < nt; ++i) mean[i] = 0;
  for (int64_t g = 0; g < n; g += 4096) {
    memset(lane, 0, sizeof lane);
    for (int64_t k = g; k < n && k < g + 4096; ++k) {
      if (bad[k]) continue;
      ++*used;
      for (int64_t i = 0; i < nt; ++i) lane[(k - g) % 16][i] += conc[k * nt + i];
    }
    for (int64_t i = 0; i < nt; ++i) {
      part[i] = 0;
      for (int l = 0; l < 16; ++l) part[i] += lane[l][i];
      mean[i] += part[i];
    }
  }
  for (int64_t i = 0; i < nt; ++i) mean[i] = *used ? mean[i] / (double)*used : 0;
}

/* One input of the mean's check: the curves with and without the mean, the mean against
   blocked_mean bit for bit and the same for every thread count. Returns whether a plain sum in
   curve order would have given other bits for some frame (the grouping is then exercised). */
static int check_mean(const float *sig, const float *t10, const float *b1, const int64_t *list, int64_t n, int input_conc,
                      lumen_cpu_simd simd) {
  pipe_spgr sp = {15 * 3.14159265358979323846 / 180, 0.005, 4.5, 1, 4, 0.3};
  float *plain = malloc(sizeof(float) * (size_t)n * NT), *got = malloc(sizeof(float) * (size_t)n * NT);
  int32_t *ninv = malloc(sizeof(int32_t) * (size_t)n);
  uint8_t *bad = malloc((size_t)n);
  assert_true(plain && got && ninv && bad);
  double want[NT], mean[NT], first[NT], direct[NT] = {0};
  int64_t used_want = 0, used = 0;
  for (int th = 1; th <= 3; ++th) {
    assert_int_equal(pipe_convert(&(pipe_convert_in){.sig = sig, .nvox = n, .nt = NT, .list = list, .nlist = n,
                                                     .t10 = t10, .t10_const = NAN, .b1 = b1, .sp = &sp,
                                                     .input_conc = input_conc, .threads = th, .simd = simd},
                                                     &(pipe_convert_out){.conc = plain, .ninvalid = ninv, .bad = bad,
                                                     .mean = NULL, .used = NULL, .count = NULL}), 0);
    assert_int_equal(pipe_convert(&(pipe_convert_in){.sig = sig, .nvox = n, .nt = NT, .list = list, .nlist = n,
                                                     .t10 = t10, .t10_const = NAN, .b1 = b1, .sp = &sp,
                                                     .input_conc = input_conc, .threads = th, .simd = simd},
                                                     &(pipe_convert_out){.conc = got, .ninvalid = ninv, .bad = bad,
                                                     .mean = mean, .used = &used, .count = NULL}), 0);
    assert_memory_equal(got, plain, sizeof(float) * (size_t)n * NT); /* the mean changes no curve */
    blocked_mean(got, bad, n, NT, want, &used_want);
    assert_int_equal(used, used_want);
    assert_memory_equal(mean, want, sizeof mean); /* bit for bit */
    if (th == 1) memcpy(first, mean, sizeof mean);
    else assert_memory_equal(mean, first, sizeof mean);
  }
  for (int64_t k = 0; k < n; ++k) /* and it is the mean: a plain sum agrees to rounding */
    for (int i = 0; !bad[k] && i < NT; ++i) direct[i] += got[k * NT + i];
  assert_true(used > n / 2 && used < n);
  int grouping_matters = 0;
  for (int i = 0; i < NT; ++i) {
    double d = direct[i] / (double)used;
    assert_true(fabs(d - mean[i]) <= 1e-12 * fabs(mean[i]) + 1e-300);
    grouping_matters |= d != mean[i];
  }
  free(plain); free(got); free(ninv); free(bad);
  return grouping_matters;
}

static void mean_is_the_blocked_sum(void **state) {
  (void)state;
  enum { NV = 9 * NVOX }; /* 13500 voxels: four groups of 4096, the last one partial */
  float *base = malloc(sizeof(float) * NVOX * NT), *t10s = malloc(sizeof(float) * NVOX), *b1s = malloc(sizeof(float) * NVOX);
  float *sig = malloc(sizeof(float) * NV * NT), *t10 = malloc(sizeof(float) * NV), *b1 = malloc(sizeof(float) * NV);
  int64_t *list = malloc(sizeof(int64_t) * NV);
  assert_true(base && t10s && b1s && sig && t10 && b1 && list);
  make_inputs(base, t10s, b1s);
  for (int64_t v = 0; v < NV; ++v) { /* the phantom repeated with a per-copy gain */
    for (int i = 0; i < NT; ++i) sig[(int64_t)i * NV + v] = base[(int64_t)i * NVOX + v % NVOX] * (1 + 0.01f * (float)(v / NVOX));
    t10[v] = t10s[v % NVOX];
    b1[v] = b1s[v % NVOX];
    list[v] = v;
  }
  check_mean(sig, t10, b1, list, NV, 0, LUMEN_CPU_SIMD_OFF);
  check_mean(sig, t10, b1, list, NV, 0, LUMEN_CPU_SIMD_AUTO);
  /* concentrations from 1e-10 to 1e4 mM: a double sum of them rounds, so the grouping shows */
  for (int64_t v = 0; v < NV; ++v)
    for (int i = 0; i < NT; ++i) {
      float *x = &sig[(int64_t)i * NV + v];
      *x = isfinite(*x) && *x > 0 ? (float)(pow(10, (double)((v * 7919) % 1400) / 100.0 - 10) * (1.5 + sin(0.3 * i + (double)v)))
                                  : NAN; /* the defects stay flagged */
    }
  assert_true(check_mean(sig, t10, b1, list, NV, 1, LUMEN_CPU_SIMD_AUTO));
  free(base); free(t10s); free(b1s); free(sig); free(t10); free(b1); free(list);
}

/* The baseline's sampled mean signal: the voxels of every step-th group of 16 list entries whose
   frames are all finite, summed voxel by voxel in list order, bit for bit, for any thread count. */
static void mean_signal_sample_is_the_voxel_loop(void **state) {
  (void)state;
  float *sig = malloc(sizeof(float) * NVOX * NT), *t10 = malloc(sizeof(float) * NVOX), *b1 = malloc(sizeof(float) * NVOX);
  int64_t *list = malloc(sizeof(int64_t) * NVOX);
  assert_true(sig && t10 && b1 && list);
  make_inputs(sig, t10, b1); /* NaN samples in some voxels */
  int64_t n = 0;
  for (int64_t v = 0; v < NVOX; ++v) if (v % 4 != 1) list[n++] = v;
  for (int64_t step = 1; step <= 7; step += 3) {
    double want[NT] = {0}, got[NT];
    int64_t used_want = 0, nan_voxels = 0;
    for (int64_t m = 0; m < n; ++m) {
      if ((m / 16) % step) continue;
      int ok = 1;
      for (int i = 0; i < NT; ++i) ok &= isfinite(sig[(int64_t)i * NVOX + list[m]]) != 0;
      nan_voxels += !ok;
      if (!ok) continue;
      for (int i = 0; i < NT; ++i) want[i] += sig[(int64_t)i * NVOX + list[m]];
      ++used_want;
    }
    assert_true(nan_voxels > 0);
    for (int th = 1; th <= 3; ++th) {
      assert_int_equal(pipe_mean_signal_sample(sig, NVOX, NT, list, n, step, th, got), used_want);
      assert_memory_equal(got, want, sizeof want);
    }
  }
  for (int64_t k = 0; k < (int64_t)NVOX * NT; ++k) if (!isfinite(sig[k])) sig[k] = 1; /* all finite: the fast path */
  double want[NT] = {0}, got[NT];
  int64_t used_want = 0;
  for (int64_t m = 0; m < n; ++m) {
    if ((m / 16) % 5) continue;
    for (int i = 0; i < NT; ++i) want[i] += sig[(int64_t)i * NVOX + list[m]];
    ++used_want;
  }
  assert_true(used_want > n / 5 - 16 && used_want < n / 5 + 16);
  assert_int_equal(pipe_mean_signal_sample(sig, NVOX, NT, list, n, 5, 2, got), used_want);
  assert_memory_equal(got, want, sizeof want);
  free(sig); free(t10); free(b1); free(list);
}

/* One list: pipe_convert_in_place leaves in the series, at every listed voxel, the curve
   pipe_convert writes (bit for bit, NaN included), the same flags, mean and count, and the voxels
   not listed as they were; pipe_curves_get reads the curves back. Every level, 1-3 threads. */
static void check_in_place(const float *sig, const float *t10, const float *b1, int64_t nv, const int64_t *list,
                           int64_t n, int input_conc, int with_mean) {
  pipe_spgr sp = {15 * 3.14159265358979323846 / 180, 0.005, 4.5, 1, 4, 0.3};
  float *conc = malloc(sizeof(float) * NT * (size_t)n), *work = malloc(sizeof(float) * NT * (size_t)nv);
  float *back = malloc(sizeof(float) * NT * (size_t)n);
  int32_t *ninv_w = malloc(sizeof(int32_t) * (size_t)n), *ninv_g = malloc(sizeof(int32_t) * (size_t)n);
  uint8_t *bad_w = malloc((size_t)n), *bad_g = malloc((size_t)n), *listed = calloc((size_t)nv, 1);
  assert_true(conc && work && back && ninv_w && ninv_g && bad_w && bad_g && listed);
  double mean_w[NT], mean_g[NT];
  int64_t used_w = 0, used_g = 0;
  assert_int_equal(pipe_convert(&(pipe_convert_in){.sig = sig, .nvox = nv, .nt = NT, .list = list, .nlist = n,
                                                   .t10 = t10, .t10_const = NAN, .b1 = b1, .sp = &sp,
                                                   .input_conc = input_conc, .threads = 1,
                                                   .simd = LUMEN_CPU_SIMD_OFF}, &(pipe_convert_out){.conc = conc,
                                                   .ninvalid = ninv_w, .bad = bad_w,
                                                   .mean = with_mean ? mean_w : NULL, .used = &used_w,
                                                   .count = NULL}), 0);
  for (int64_t k = 0; k < n; ++k) listed[list[k]] = 1;
  const lumen_cpu_simd limits[] = {LUMEN_CPU_SIMD_OFF, LUMEN_CPU_SIMD_AVX2, LUMEN_CPU_SIMD_AUTO};
  for (int li = 0; li < 3; ++li)
    for (int threads = 1; threads <= 3; ++threads) {
      memcpy(work, sig, sizeof(float) * NT * (size_t)nv);
      int64_t count[3] = {-1, -1, -1};
      assert_int_equal(pipe_convert_in_place(work, &(pipe_convert_in){.nvox = nv, .nt = NT, .list = list, .nlist = n,
                                                                      .t10 = t10, .t10_const = NAN, .b1 = b1,
                                                                      .sp = &sp, .input_conc = input_conc,
                                                                      .threads = threads, .simd = limits[li]},
                                                                      &(pipe_convert_out){.ninvalid = ninv_g,
                                                                      .bad = bad_g, .mean = with_mean ? mean_g : NULL,
                                                                      .used = &used_g, .count = count}), 0);
      assert_memory_equal(ninv_g, ninv_w, sizeof(int32_t) * (size_t)n);
      assert_memory_equal(bad_g, bad_w, (size_t)n);
      check_counts(ninv_g, bad_g, n, count);
      if (with_mean) {
        assert_memory_equal(mean_g, mean_w, sizeof mean_w);
        assert_int_equal(used_g, used_w);
      }
      for (int64_t k = 0; k < n; ++k)
        for (int i = 0; i < NT; ++i)
          assert_memory_equal(&work[(int64_t)i * nv + list[k]], &conc[k * NT + i], sizeof(float));
      for (int64_t v = 0; v < nv; ++v)
        if (!listed[v])
          for (int i = 0; i < NT; ++i) assert_memory_equal(&work[(int64_t)i * nv + v], &sig[(int64_t)i * nv + v], sizeof(float));
      const pipe_curves src = {work, nv, NT, list, n};
      const int64_t k0 = n / 3, m = n - k0 - 5; /* a range that starts and ends off the blocks */
      memset(back, 0, sizeof(float) * NT * (size_t)n);
      pipe_curves_get(&src, 0, n, back, threads, limits[li]);
      assert_memory_equal(back, conc, sizeof(float) * NT * (size_t)n);
      pipe_curves_get(&src, k0, m, back, threads, limits[li]);
      assert_memory_equal(back, conc + k0 * NT, sizeof(float) * NT * (size_t)m);
    }
  free(conc); free(work); free(back); free(ninv_w); free(ninv_g); free(bad_w); free(bad_g); free(listed);
}

/* A mask's rows over nv voxels into list: runs of 20 to 239 voxels (converted in place from 32
   on, in multiples of 16), gaps, strays. Returns the count. */
static int64_t mask_rows_list(int64_t nv, int64_t *list) {
  int64_t n = 0;
  for (int64_t v = 0; v < nv; ++v)
    if (v % 257 < 20 + (v / 257) * 37 % 220 || v % 97 == 5) list[n++] = v;
  return n;
}

/* `lumen dce`'s conversion in place (rows of up to 1024 consecutive voxels converted where they
   lie; scattered blocks gathered and written back) against the curve array of pipe_convert: over
   13500 voxels (units of 4096 with a partial last one), all voxels listed, a list with gaps in its
   first half, signal and concentration input, with and without the mean. */
static void in_place_is_the_curve_array(void **state) {
  (void)state;
  enum { NV = 9 * NVOX };
  float *base = malloc(sizeof(float) * NVOX * NT), *t10s = malloc(sizeof(float) * NVOX), *b1s = malloc(sizeof(float) * NVOX);
  float *sig = malloc(sizeof(float) * NV * NT), *t10 = malloc(sizeof(float) * NV), *b1 = malloc(sizeof(float) * NV);
  int64_t *list = malloc(sizeof(int64_t) * NV);
  assert_true(base && t10s && b1s && sig && t10 && b1 && list);
  make_inputs(base, t10s, b1s);
  for (int64_t v = 0; v < NV; ++v) {
    for (int i = 0; i < NT; ++i) sig[(int64_t)i * NV + v] = base[(int64_t)i * NVOX + v % NVOX] * (1 + 0.01f * (float)(v / NVOX));
    t10[v] = t10s[v % NVOX];
    b1[v] = b1s[v % NVOX];
  }
  for (int input_conc = 0; input_conc <= 1; ++input_conc) {
    if (input_conc) /* concentrations with NaN and infinite samples */
      for (int64_t i = 0; i < (int64_t)NV * NT; ++i) sig[i] = sig[i] < 0 ? NAN : sig[i] > 1e8f ? INFINITY : sig[i] * 1e-3f;
    int64_t n = 0;
    for (int64_t v = 0; v < NV; ++v) list[n++] = v;
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 1);
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 0);
    n = 0;
    for (int64_t v = 0; v < NV; ++v) if (v >= NV / 2 || v % 700 != 3) list[n++] = v;
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 1);
    n = mask_rows_list(NV, list);
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 1);
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 0);
  }
  /* voxels [NV / 3, NV) without a defect: whole rows of 1024 with no NaN sample, whose flags and
     mean come from the sums made while converting (conc.c's clean path), beside blocks with defects */
  for (int input_conc = 0; input_conc <= 1; ++input_conc) {
    for (int64_t v = 0; v < NV; ++v) {
      const int64_t c = v % NVOX; /* the phantom's formula, no defect past NV / 3 */
      const double m0 = 800 + (double)(c % 97) * 13, k = 0.02 * (double)(c % 11);
      for (int i = 0; i < NT; ++i) {
        float x = v < NV / 3 ? base[(int64_t)i * NVOX + c]
                             : (float)(m0 * (1 + (i > 5 ? k * (1 - exp(-0.3 * (i - 5))) : 0) + 0.01 * sin((double)c * 0.7 + i)));
        sig[(int64_t)i * NV + v] = input_conc ? (x < 0 ? NAN : x > 1e8f ? INFINITY : x * 1e-3f) : x;
      }
      t10[v] = v < NV / 3 ? t10s[c] : (float)(0.6 + 0.001 * (double)(c % 700));
      b1[v] = v < NV / 3 ? b1s[c] : (float)(0.8 + 0.0005 * (double)(c % 800));
    }
    int64_t n = 0;
    for (int64_t v = 0; v < NV; ++v) list[n++] = v;
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 1);
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 0);
    n = mask_rows_list(NV, list);
    check_in_place(sig, t10, b1, NV, list, n, input_conc, 1);
  }
  /* concentrations from 1e-10 to 1e4 mM: their double sums round, so a voxel summed into another
     lane, or lanes added in another order, changes the mean's bits */
  for (int64_t v = 0; v < NV; ++v)
    for (int i = 0; i < NT; ++i)
      sig[(int64_t)i * NV + v] = (float)(pow(10, (double)((v * 7919) % 1400) / 100.0 - 10) * (1.5 + sin(0.3 * i + (double)v)));
  int64_t n = 0;
  for (int64_t v = 0; v < NV; ++v) list[n++] = v;
  check_in_place(sig, t10, b1, NV, list, n, 1, 1);
  n = mask_rows_list(NV, list);
  check_in_place(sig, t10, b1, NV, list, n, 1, 1);
  free(base); free(t10s); free(b1s); free(sig); free(t10); free(b1); free(list);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(threads_match_reference), cmocka_unit_test(kernel_sweep),
                                     cmocka_unit_test(mean_is_the_blocked_sum), cmocka_unit_test(in_place_is_the_curve_array),
                                     cmocka_unit_test(mean_signal_sample_is_the_voxel_loop)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
