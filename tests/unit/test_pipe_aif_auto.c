/* The checks of --aif auto (pipe_aif_judge_vessels, src/pipeline/aif_auto.c) on analytic curves:
   a vessel curve that peaks early, high and washes out is accepted against a slowly enhancing
   tissue curve; each check refuses it on its own side of its threshold (plasma peak 3x the tissue
   peak, peak no later than the tissue's, late mean at most 70 % of the peak, at least 3 voxels)
   and passes it just on the other side; concentration input is refused with its own reason. */
#include <math.h>
#include <string.h>
#include "test_support.h"
#include "pipeline/pipe_aif.h"

enum { NT = 60, ARRIVAL = 10 };
static const double HCT = 0.45;

/* Tissue: slow uptake after the arrival, highest at the last frame. */
static void tissue_curve(double *c) {
  for (int i = 0; i < NT; ++i) c[i] = i > ARRIVAL ? 0.5 * (1 - exp(-(i - ARRIVAL) / 15.0)) : 0;
}

/* Blood: a first pass peaking at `peak` mM two frames after the arrival, then a level `late` mM
   from frame ARRIVAL + 10 on (the washout). */
static void vessel_curve(double *c, double peak, double late) {
  for (int i = 0; i < NT; ++i) {
    const double x = (i - ARRIVAL) / 2.0;
    c[i] = i <= ARRIVAL ? 0 : i >= ARRIVAL + 10 ? late : peak * x * exp(1 - x);
  }
}

static void judge(const double *cb, const double *tissue, int64_t used, int input_conc, char *why, size_t size) {
  const pipe_aif_vessel_curves c = {.cb = cb, .tissue_mean = tissue, .nt = NT, .used = used, .hct = HCT,
                                    .input_conc = input_conc};
  pipe_aif_judge_vessels(&c, why, size);
}

/* An arterial curve (peak 4 mM, washout to 0.5) and the tissue curve. */
static void artery_and_tissue(double *cb, double *tissue) {
  tissue_curve(tissue);
  vessel_curve(cb, 4.0, 0.5);
}

/* The judgement of the vessel curve cb against the tissue curve: its reason, exactly want ("":
   accepted), or, with expect_reason_has, a reason holding words. */
static void expect_reason(const double *cb, const double *tissue, int64_t used, int input_conc, const char *want) {
  char why[256] = "not cleared";
  judge(cb, tissue, used, input_conc, why, sizeof why);
  assert_string_equal(why, want);
}
static void expect_reason_has(const double *cb, const double *tissue, const char *words) {
  char why[256];
  judge(cb, tissue, 50, 0, why, sizeof why);
  assert_non_null(strstr(why, words));
}

static void artery_accepted(void **state) {
  (void)state;
  double cb[NT], tissue[NT];
  artery_and_tissue(cb, tissue);
  expect_reason(cb, tissue, 50, 0, "");
}

/* plasma peak = blood peak / (1 - hct) against 3 x the tissue peak, on either side by 0.1 % */
static void peak_threshold(void **state) {
  (void)state;
  double cb[NT], tissue[NT];
  tissue_curve(tissue);
  const double tissue_peak = tissue[NT - 1], blood_at_threshold = 3 * tissue_peak * (1 - HCT);
  vessel_curve(cb, blood_at_threshold * 0.999, 0.1 * blood_at_threshold);
  expect_reason_has(cb, tissue, "below 3x the tissue peak");
  vessel_curve(cb, blood_at_threshold * 1.001, 0.1 * blood_at_threshold);
  expect_reason(cb, tissue, 50, 0, "");
}

/* a vessel that peaks after the tissue is no artery */
static void late_peak(void **state) {
  (void)state;
  double cb[NT], tissue[NT];
  for (int i = 0; i < NT; ++i) tissue[i] = i == 20 ? 0.4 : 0.1; /* tissue peaks at frame 20 */
  for (int i = 0; i < NT; ++i) cb[i] = i == 21 ? 5.0 : 0.2;      /* the vessel at 21 */
  expect_reason(cb, tissue, 50, 0, "candidate peaks (frame 21) after the tissue (frame 20)");
  cb[21] = 0.2;
  cb[20] = 5.0; /* the same frame as the tissue: accepted */
  expect_reason(cb, tissue, 50, 0, "");
}

/* washout: the mean of the last quarter of the frames at most 70 % of the peak */
static void washout_threshold(void **state) {
  (void)state;
  double cb[NT], tissue[NT];
  tissue_curve(tissue);
  vessel_curve(cb, 4.0, 0.7 * 4.0 * 1.001);
  expect_reason_has(cb, tissue, "no washout");
  vessel_curve(cb, 4.0, 0.7 * 4.0 * 0.999);
  expect_reason(cb, tissue, 50, 0, "");
}

static void voxel_count_and_input(void **state) {
  (void)state;
  double cb[NT], tissue[NT];
  artery_and_tissue(cb, tissue);
  expect_reason(cb, tissue, 2, 0, "fewer than 3 usable vascular candidate voxels (2)");
  expect_reason(cb, tissue, 3, 0, "");
  expect_reason(cb, tissue, 50, 1, "concentration input: no signal to find vessels in");
  char small[8]; /* a short buffer gets the reason cut, terminated */
  judge(cb, tissue, 2, 0, small, sizeof small);
  assert_string_equal(small, "fewer t");
}

LUMEN_TEST_MAIN(cmocka_unit_test(artery_accepted), cmocka_unit_test(peak_threshold), cmocka_unit_test(late_peak),
                cmocka_unit_test(washout_threshold), cmocka_unit_test(voxel_count_and_input))
