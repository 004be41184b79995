/* JSON objects and BIDS sidecars: getters, setters, atomic round trip, bad JSON, dcm2niix TR keys. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "test_support.h"
#include "lumen/io.h"

static char g_dir[64];

static void write_text(const char *p, const char *text) {
  FILE *fp = fopen(p, "wb");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
}

static void sidecar_values(void **state) {
  lumen_ctx *ctx = *state;
  const char *nii = lumen_test_join(g_dir, "sub-01_dce.nii.gz");
  char js[128];
  assert_int_equal(lumen_sidecar_path(ctx, nii, js, sizeof js), LUMEN_OK);
  assert_non_null(strstr(js, "/sub-01_dce.json"));
  char small[8];
  assert_int_equal(lumen_sidecar_path(ctx, nii, small, sizeof small), LUMEN_ERR_INVALID_ARGUMENT);
  lumen_acquisition acq;
  int found = 1;
  assert_int_equal(lumen_sidecar_read_for(ctx, nii, &acq, NULL, &found), LUMEN_OK);
  assert_int_equal(found, 0);
  assert_true(isnan(acq.flip_angle_deg));
  write_text(js, "{\"FlipAngle\": 15, \"RepetitionTime\": 0.0045, \"EchoTime\": [0.001, 0.002],\n"
                 " \"FrameTimesStart\": [0, 4.5, 9], \"Manufacturer\": \"GE\", \"Nested\": {\"a\": [1, 2]}}\n");
  lumen_json *j = NULL;
  assert_int_equal(lumen_sidecar_read_for(ctx, nii, &acq, &j, &found), LUMEN_OK);
  assert_int_equal(found, 1);
  assert_true(acq.flip_angle_deg == 15 && acq.repetition_time_s == 0.0045 && acq.echo_time_s == 0.001);
  assert_true(isnan(acq.inversion_time_s));
  assert_int_equal(acq.n_frame_times, 3);
  assert_true(acq.frame_times_s[1] == 4.5);
  assert_string_equal(acq.frame_times_key, "FrameTimesStart");
  lumen_acquisition_clear(&acq);
  assert_int_equal(lumen_json_count(j), 6);
  assert_string_equal(lumen_json_key(j, 4), "Manufacturer");
  assert_null(lumen_json_key(j, 6));
  char *str = NULL;
  assert_int_equal(lumen_json_get_string(ctx, j, "Manufacturer", &str, &found), LUMEN_OK);
  assert_string_equal(str, "GE");
  free(str);
  assert_int_equal(lumen_json_get_text(ctx, j, "Nested", &str, &found), LUMEN_OK);
  assert_string_equal(str, "{\"a\":[1,2]}");
  free(str);
  double v = -1;
  assert_int_equal(lumen_json_get_number(ctx, j, "Missing", &v, &found), LUMEN_OK);
  assert_int_equal(found, 0);
  assert_true(v == -1);
  assert_int_equal(lumen_json_get_number(ctx, j, "Manufacturer", &v, &found), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "Manufacturer"));
  assert_non_null(strstr(lumen_ctx_last_error(ctx), js));
  lumen_json_free(j);

  /* AcquisitionTime as clock strings; a wrong type for FlipAngle */
  write_text(js, "{\"AcquisitionTime\": [\"09:54:00.5\", \"09:54:05\"], \"FlipAngle\": \"30\"}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "FlipAngle"));
  write_text(js, "{\"AcquisitionTime\": [\"09:54:00.5\", \"09:54:05\"]}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_OK);
  assert_int_equal(acq.n_frame_times, 2);
  lumen_test_assert_close(acq.frame_times_s[0], 9 * 3600 + 54 * 60 + 0.5, 1e-9, 0, "clock time");
  lumen_test_assert_close(acq.frame_times_s[1] - acq.frame_times_s[0], 4.5, 1e-9, 0, "clock difference");
  lumen_acquisition_clear(&acq);
  write_text(js, "{\"AcquisitionTime\": [\"9h54\"]}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_ERR_FORMAT);
  /* a single AcquisitionTime string (dcm2niix) is not a frame list */
  write_text(js, "{\"AcquisitionTime\": \"09:54:0.000000\"}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_OK);
  assert_int_equal(acq.n_frame_times, 0);
  assert_null(acq.frame_times_key);
  unlink(js);
}

/* dcm2niix 4-D series: RepetitionTime is the volume time, RepetitionTimeExcitation the TR. */
static void sidecar_tr(void **state) {
  lumen_ctx *ctx = *state;
  const char *js = lumen_test_join(g_dir, "tr.json");
  lumen_acquisition acq;
  write_text(js, "{\"RepetitionTime\": 0.5, \"RepetitionTimeExcitation\": 0.005, \"FlipAngle\": 25}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_OK);
  assert_true(acq.repetition_time_s == 0.005 && acq.volume_time_s == 0.5 && acq.flip_angle_deg == 25);
  assert_string_equal(acq.repetition_time_key, "RepetitionTimeExcitation");
  lumen_acquisition_clear(&acq);
  assert_true(isnan(acq.volume_time_s) && isnan(acq.repetition_time_s));
  assert_null(acq.repetition_time_key);
  /* the excitation TR alone: no volume time */
  write_text(js, "{\"RepetitionTimeExcitation\": [0.004, 0.004]}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_OK);
  assert_true(acq.repetition_time_s == 0.004 && isnan(acq.volume_time_s));
  assert_string_equal(acq.repetition_time_key, "RepetitionTimeExcitation");
  /* plain RepetitionTime alone keeps working */
  write_text(js, "{\"RepetitionTime\": 0.0045}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_OK);
  assert_true(acq.repetition_time_s == 0.0045 && isnan(acq.volume_time_s));
  assert_string_equal(acq.repetition_time_key, "RepetitionTime");
  /* neither */
  write_text(js, "{\"FlipAngle\": 10}");
  assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_OK);
  assert_true(isnan(acq.repetition_time_s) && isnan(acq.volume_time_s));
  assert_null(acq.repetition_time_key);
  /* numbers that are no valid angle or TR: refused naming the key and the value, not "missing" */
  static const struct {
    const char *text, *msg;
  } bad[] = {
      {"{\"FlipAngle\": 1e999}", "FlipAngle is inf: expected a positive angle in degrees"},
      {"{\"FlipAngle\": -1e999}", "FlipAngle is -inf: expected a positive angle"},
      {"{\"FlipAngle\": 0}", "FlipAngle is 0: expected a positive angle"},
      {"{\"RepetitionTime\": 1e999}", "RepetitionTime is inf: expected a positive TR in seconds"},
      {"{\"RepetitionTime\": -0.005}", "RepetitionTime is -0.005: expected a positive TR"},
      {"{\"RepetitionTime\": 0.5, \"RepetitionTimeExcitation\": 0}",
       "RepetitionTimeExcitation is 0: expected a positive excitation TR"},
      {"{\"RepetitionTimeExcitation\": [1e999]}", "RepetitionTimeExcitation is inf"},
      {"{\"RepetitionTimeExcitation\": 0.005, \"RepetitionTime\": -1e999}", "RepetitionTime is -inf"},
      {"{\"EchoTime\": 1e999}", "EchoTime is inf: expected a finite time"},
      {"{\"RepetitionTimeExcitation\": \"5 ms\"}", "\"RepetitionTimeExcitation\" is not a number"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    write_text(js, bad[k].text);
    acq.repetition_time_s = 1;
    assert_int_equal(lumen_sidecar_read(ctx, js, &acq, NULL), LUMEN_ERR_FORMAT);
    const char *msg = lumen_ctx_last_error(ctx);
    if (!strstr(msg, bad[k].msg) || !strstr(msg, js)) {
      print_error("%s: message '%s', expected '%s'\n", bad[k].text, msg, bad[k].msg);
      fail();
    }
    assert_true(isnan(acq.repetition_time_s) && acq.frame_times_s == NULL);
  }
  unlink(js);
  /* the QIBA v4 DRO's dcm2niix sidecar (this part only with reference data) */
  char *q4 = lumen_test_refdata_path("qiba/v4_etm_vfa/q4_dce.json");
  if (q4) {
    assert_int_equal(lumen_sidecar_read(ctx, q4, &acq, NULL), LUMEN_OK);
    lumen_test_assert_close(acq.repetition_time_s, 0.005, 0, 1e-12, "q4 TR");
    lumen_test_assert_close(acq.volume_time_s, 0.5, 0, 1e-12, "q4 volume time");
    assert_string_equal(acq.repetition_time_key, "RepetitionTimeExcitation");
    lumen_test_assert_close(acq.flip_angle_deg, 25, 0, 0, "q4 FlipAngle");
    lumen_acquisition_clear(&acq);
    free(q4);
  } else {
    printf("reference data qiba/v4_etm_vfa/q4_dce.json not found (LUMEN_REFDATA): that check skipped\n");
  }
}

static void bad_json(void **state) {
  lumen_ctx *ctx = *state;
  const char *p = lumen_test_join(g_dir, "bad.json");
  write_text(p, "{\n  \"FlipAngle\": 15,\n  \"TR\": 0.0.4\n}\n");
  lumen_json *j = (lumen_json *)0x1;
  assert_int_equal(lumen_json_read(ctx, p, &j), LUMEN_ERR_FORMAT);
  assert_null(j);
  const char *msg = lumen_ctx_last_error(ctx);
  if (!strstr(msg, p) || !strstr(msg, ":3:")) {
    print_error("message: %s\n", msg);
    fail();
  }
  write_text(p, "{\"a\": [1, 2");
  assert_int_equal(lumen_json_read(ctx, p, &j), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), ":1:11: bad JSON"));
  write_text(p, "[1, 2]");
  assert_int_equal(lumen_json_read(ctx, p, &j), LUMEN_ERR_FORMAT);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "object"));
  write_text(p, "");
  assert_int_equal(lumen_json_read(ctx, p, &j), LUMEN_ERR_FORMAT);
  /* deep nesting is refused by cJSON's limit, not a stack overflow */
  char *deep = malloc(200002);
  deep[0] = '{';
  strcpy(deep + 1, "\"a\":");
  size_t k = 5;
  for (int i = 0; i < 100000; i++) deep[k++] = '[';
  deep[k] = '\0';
  assert_int_equal(lumen_json_parse(ctx, deep, k, "deep", &j), LUMEN_ERR_FORMAT);
  free(deep);
  const char *missing = lumen_test_join(g_dir, "none.json");
  assert_int_equal(lumen_json_read(ctx, missing, &j), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), missing));
  unlink(p);
}

static void write_round_trip(void **state) {
  lumen_ctx *ctx = *state;
  const char *p = lumen_test_join(g_dir, "out.json");
  lumen_json *j = NULL;
  assert_int_equal(lumen_json_create(ctx, &j), LUMEN_OK);
  const double times[3] = {0, 1.5, NAN};
  const char *const models[2] = {"tofts", "patlak"};
  assert_int_equal(lumen_json_set_string(ctx, j, "Parameter", "Ktrans"), LUMEN_OK);
  assert_int_equal(lumen_json_set_string(ctx, j, "Units", "1/min"), LUMEN_OK);
  assert_int_equal(lumen_json_set_number(ctx, j, "Relaxivity", 4.5), LUMEN_OK);
  assert_int_equal(lumen_json_set_int(ctx, j, "Voxels", INT64_C(9007199254740993)), LUMEN_OK);
  assert_int_equal(lumen_json_set_bool(ctx, j, "Converged", 1), LUMEN_OK);
  assert_int_equal(lumen_json_set_numbers(ctx, j, "Times", times, 3), LUMEN_OK);
  assert_int_equal(lumen_json_set_strings(ctx, j, "Models", models, 2), LUMEN_OK);
  assert_int_equal(lumen_json_set_text(ctx, j, "Backend", "{\"requested\": \"auto\", \"used\": \"cpu\"}"), LUMEN_OK);
  assert_int_equal(lumen_json_set_text(ctx, j, "Bad", "{nope"), LUMEN_ERR_FORMAT);
  assert_int_equal(lumen_json_set_number(ctx, j, "Units", 7), LUMEN_OK);  /* replaced in place */
  assert_string_equal(lumen_json_key(j, 1), "Units");
  assert_int_equal(lumen_json_set_string(ctx, j, "Temp", "x"), LUMEN_OK);
  assert_int_equal(lumen_json_remove(ctx, j, "Temp"), LUMEN_OK);
  assert_false(lumen_json_has(j, "Temp"));
  assert_int_equal(lumen_json_write(ctx, j, p, 0), LUMEN_OK);
  assert_int_equal(lumen_json_write(ctx, j, p, 0), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "exists"));
  assert_int_equal(lumen_json_write(ctx, j, p, 1), LUMEN_OK);
  lumen_json_free(j);
  assert_int_equal(lumen_json_read(ctx, p, &j), LUMEN_OK);
  assert_int_equal(lumen_json_count(j), 8);
  char *s = NULL;
  int found = 0;
  assert_int_equal(lumen_json_get_string(ctx, j, "Parameter", &s, &found), LUMEN_OK);
  assert_string_equal(s, "Ktrans");
  free(s);
  double *v = NULL;
  int64_t n = 0;
  assert_int_equal(lumen_json_get_numbers(ctx, j, "Times", &v, &n, &found), LUMEN_ERR_FORMAT); /* NaN -> null */
  assert_int_equal(lumen_json_get_text(ctx, j, "Times", &s, &found), LUMEN_OK);
  assert_string_equal(s, "[0,1.5,null]");
  free(s);
  FILE *fp = fopen(p, "rb");
  char text[2048];
  size_t got = fread(text, 1, sizeof text - 1, fp);
  fclose(fp);
  text[got] = '\0';
  assert_non_null(strstr(text, "9007199254740993"));  /* written exactly (read back as a double) */
  assert_true(got > 0 && text[got - 1] == '\n');
  assert_int_equal(lumen_json_get_numbers(ctx, j, "Relaxivity", &v, &n, &found), LUMEN_OK);
  assert_true(n == 1 && v[0] == 4.5);
  free(v);
  assert_int_equal(lumen_json_get_text(ctx, j, "Backend", &s, &found), LUMEN_OK);
  assert_string_equal(s, "{\"requested\":\"auto\",\"used\":\"cpu\"}");
  free(s);
  lumen_json_free(j);
  unlink(p);
}

/* A FIFO as a JSON file or sidecar is refused at once (issue 15: reading it would block forever);
   alarm() turns a hang into a failure. */
static void non_regular_sidecar(void **state) {
  lumen_ctx *ctx = *state;
  const char *nii = lumen_test_join(g_dir, "sub-02_dce.nii.gz");
  char js[128];
  assert_int_equal(lumen_sidecar_path(ctx, nii, js, sizeof js), LUMEN_OK);
  assert_int_equal(mkfifo(js, 0600), 0);
  alarm(20);
  lumen_json *j = NULL;
  assert_int_equal(lumen_json_read(ctx, js, &j), LUMEN_ERR_IO);
  assert_null(j);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), js));
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "is a FIFO (named pipe), expected a regular file"));
  lumen_acquisition acq;
  int found = 0;
  assert_int_equal(lumen_sidecar_read_for(ctx, nii, &acq, NULL, &found), LUMEN_ERR_IO);
  assert_non_null(strstr(lumen_ctx_last_error(ctx), "FIFO"));
  alarm(0);
  unlink(js);
}

LUMEN_TEST_MAIN_IN_DIR(g_dir, "json", NULL, NULL, LUMEN_TEST_WITH_CTX(sidecar_values), LUMEN_TEST_WITH_CTX(sidecar_tr),
                       LUMEN_TEST_WITH_CTX(bad_json), LUMEN_TEST_WITH_CTX(write_round_trip),
                       LUMEN_TEST_WITH_CTX(non_regular_sidecar))
