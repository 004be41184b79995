/* A DICOM series as a run input (docs/DICOM.md "Series"): the series reader of lumen_io, its
   geometry as the NIfTI reader would give it, its acquisition values as a sidecar would. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "pipeline/pipe_checksum.h"
#include "pipeline/pipe_inputs.h"
#include "pipeline/pipe_run.h"

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The checksum of the DICOM files of path (a folder: its files in name order; a file: itself). */
static lumen_status series_checksum(lumen_ctx *ctx, const char *path, uint64_t *hash) {
  struct stat st;
  *hash = 0;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    int err = pipe_checksum_path(path, hash);
    return err ? pipe_checksum_report(ctx, path, err) : LUMEN_OK;
  }
  DIR *d = opendir(path);
  if (!d) return lumen_fail(ctx, LUMEN_ERR_IO, "'%s': cannot open the folder", path);
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  lumen_status s = LUMEN_OK;
  char buf[4096];
  while (s == LUMEN_OK && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.') continue;
    if (snprintf(buf, sizeof buf, "%s/%s", path, e->d_name) >= (int)sizeof buf || !lumen_dicom_is_dicom_file(buf))
      continue;
    if (n == cap) {
      size_t c = cap ? 2 * cap : 256;
      char **p = realloc(names, c * sizeof *p);
      if (!p) { s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory"); break; }
      names = p;
      cap = c;
    }
    if (!(names[n] = strdup(buf))) s = lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of memory");
    else n++;
  }
  closedir(d);
  if (s == LUMEN_OK && n) qsort(names, n, sizeof *names, cmp_str);
  for (size_t i = 0; i < n; i++) {
    uint64_t h = 0;
    int err = s == LUMEN_OK ? pipe_checksum_path(names[i], &h) : 0;
    if (err) s = pipe_checksum_report(ctx, names[i], err);
    *hash = pipe_checksum_bytes(*hash, &h, sizeof h);
    free(names[i]);
  }
  free(names);
  return s;
}

lumen_status pipe_read_dicom_series(pipe_run *run, const char *role, const char *path, const char *series_uid,
                                    lumen_image **im, lumen_nifti_info *info, lumen_acquisition *acq) {
  *im = NULL;
  memset(info, 0, sizeof *info);
  memset(acq, 0, sizeof *acq);
  acq->volume_time_s = acq->echo_time_s = acq->inversion_time_s = NAN;
  lumen_dicom_series_opts o = {.max_bytes = 0, .series_uid = series_uid};
  lumen_dicom_series_info si;
  const char *paths[1] = {path};
  lumen_status st = lumen_dicom_series_read(run->ctx, paths, 1, &o, im, &si);
  if (st != LUMEN_OK) {
    char msg[2048];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(run->ctx));
    return lumen_fail(run->ctx, st, "%s: %s", role, msg);
  }
  info->ndim = lumen_image_ndim(*im);
  for (int a = 0; a < 4; a++) info->dims[a] = lumen_image_dim(*im, a);
  info->sform_code = info->qform_code = 1;  /* scanner anatomical, as dcm2niix writes */
  info->affine_source = "sform";
  memcpy(info->affine, si.affine, sizeof info->affine);
  info->time_step_s = NAN;
  info->space_unit = LUMEN_NIFTI_UNITS_MM;
  info->time_unit = LUMEN_NIFTI_UNITS_SEC;
  acq->flip_angle_deg = si.flip_angle_deg;
  acq->repetition_time_s = si.repetition_time_s;
  acq->repetition_time_key = "RepetitionTime";
  if (si.frame_times_s) {
    acq->frame_times_s = si.frame_times_s;  /* handed over: lumen_acquisition_clear frees it */
    si.frame_times_s = NULL;
    acq->n_frame_times = si.frames;
    /* static keys ("DICOM " + the tag lumen_dicom_series_read names, classic or enhanced) */
    static const char *const keys[] = {"DICOM TriggerTime", "DICOM AcquisitionTime", "DICOM ContentTime",
                                       "DICOM NominalCardiacTriggerDelayTime", "DICOM FrameAcquisitionDateTime",
                                       "DICOM FrameReferenceDateTime", "DICOM FrameReferenceTime",
                                       "DICOM AcquisitionDateTime", "DICOM AcquisitionDate+AcquisitionTime"};
    acq->frame_times_key = keys[2];
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
      if (!strcmp(si.frame_time_source, keys[k] + 6)) acq->frame_times_key = keys[k];
  }
  lumen_log(run->ctx, LUMEN_LOG_INFO, "%s '%s': DICOM series %s \"%s\", %lld files, %lld slices x %lld frames%s%s",
            role, path, si.series_uid, si.series_description, (long long)si.files, (long long)si.slices,
            (long long)si.frames, si.timing_note[0] ? ", " : "", si.timing_note);
  if (si.timing_disagree)  /* the sources disagree: the run log and the report say which one was used */
    pipe_warn(run, "%s '%s': the DICOM timing tags disagree: %s", role, path, si.timing_note);
  if (si.lossy_files > 0)  /* the run log and the report keep what the console said once */
    pipe_warn(run, "%s '%s': %lld of %lld DICOM files are lossy compressed: their values differ from the scanner's "
              "by the compression error, which these maps inherit", role, path, (long long)si.lossy_files,
              (long long)si.files);
  lumen_dicom_series_info_clear(&si);
  uint64_t h = 0;
  st = series_checksum(run->ctx, path, &h);
  if (st != LUMEN_OK) {
    lumen_image_free(*im);
    *im = NULL;
    return st;
  }
  pipe_record_input_hash(run, role, path, h);
  return LUMEN_OK;
}
