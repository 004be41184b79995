/* The inputs of a run: reading them (float32, recorded with checksums), the grid check, the mask. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "io/io_internal.h"
#include "pipeline/pipe_checksum.h"
#include "pipeline/pipe_inputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_util.h"

/* Appends input (role, path, hex checksum) to the run log's list (PIPE_MAX_INPUTS at most). */
static void add_input(pipe_run *run, const char *role, const char *path, uint64_t hash) {
  if (run->n_inputs >= PIPE_MAX_INPUTS) return;
  pipe_input *in = &run->inputs[run->n_inputs++];
  snprintf(in->role, sizeof in->role, "%s", role);
  snprintf(in->path, sizeof in->path, "%s", path);
  pipe_checksum_hex(hash, in->checksum);
}

void pipe_record_input_hash(pipe_run *run, const char *role, const char *path, uint64_t hash) {
  add_input(run, role, path, hash);
}

lumen_status pipe_record_input(pipe_run *run, const char *role, const char *path) {
  if (run->n_inputs >= PIPE_MAX_INPUTS) return LUMEN_OK;
  uint64_t h = 0;
  int err = pipe_checksum_path(path, &h);
  if (err) return pipe_checksum_report(run->ctx, path, err);
  add_input(run, role, path, h);
  return LUMEN_OK;
}

/* The checksum of an input, computed by a thread of its own while the input is read. */
typedef struct checksum_job { const char *path; uint64_t hash; int err; } checksum_job;

static void *checksum_thread(void *arg) {
  checksum_job *job = arg;
  job->err = pipe_checksum_path(job->path, &job->hash);
  return NULL;
}

lumen_status pipe_read_input(pipe_run *run, const char *role, const char *path, lumen_image **im,
                             lumen_nifti_info *info) {
  *im = NULL;
  if (!pipe_file_exists(path))
    return lumen_fail(run->ctx, LUMEN_ERR_IO, "%s '%s': file not found", role, path);
  lumen_format_info f; /* the io table says what the file holds: another format is named, not misread */
  if (lumen_image_probe(run->ctx, path, &f) == LUMEN_OK && f.by_content && f.format != LUMEN_IMAGE_FORMAT_NIFTI)
    return lumen_fail(run->ctx, LUMEN_ERR_FORMAT, "%s '%s' holds a %s image, expected NIfTI (.nii, .nii.gz)%s", role,
                      path, f.name, f.format == LUMEN_IMAGE_FORMAT_PNG ? "" : " or, where the option takes one, a DICOM series");
  lumen_ctx_clear_error(run->ctx); /* a file the probe cannot tell: the NIfTI reader says why */
  checksum_job job = {path, 0, 0};
  pthread_t th;
  int threaded = pthread_create(&th, NULL, checksum_thread, &job) == 0;
  lumen_image_read_opts o = {.format = LUMEN_IMAGE_FORMAT_NIFTI};
  lumen_image_read_info ri;
  lumen_status st = lumen_image_read_any(run->ctx, path, &o, im, &ri);
  if (st == LUMEN_OK) *info = ri.nifti;
  if (threaded) pthread_join(th, NULL);
  else checksum_thread(&job);
  if (st != LUMEN_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", lumen_ctx_last_error(run->ctx));
    return lumen_fail(run->ctx, st, "%s: %s", role, msg);
  }
  if (job.err) return pipe_checksum_report(run->ctx, path, job.err);
  add_input(run, role, path, job.hash);
  return LUMEN_OK;
}

lumen_status pipe_check_grid(pipe_run *run, const char *role, const char *path, const lumen_image *im,
                             const char *ref_path) {
  int64_t d[3] = {lumen_image_dim(im, 0), lumen_image_dim(im, 1), lumen_image_dim(im, 2)};
  if (d[0] != run->nx || d[1] != run->ny || d[2] != run->nz)
    return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                      "%s '%s' is on another grid: %lldx%lldx%lld voxels, the series '%s' has %lldx%lldx%lld",
                      role, path, (long long)d[0], (long long)d[1], (long long)d[2], ref_path, (long long)run->nx,
                      (long long)run->ny, (long long)run->nz);
  double a[16];
  lumen_image_get_affine(im, a);
  double scale = 0;
  for (int i = 0; i < 16; ++i) scale = fmax(scale, fabs(run->affine[i]));
  for (int i = 0; i < 12; ++i)
    if (fabs(a[i] - run->affine[i]) > 1e-3 * fmax(scale, 1.0))
      return lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                        "%s '%s' is on another grid: its voxel-to-world affine differs from the series '%s' "
                        "(element %d: %g, expected %g)",
                        role, path, ref_path, i, a[i], run->affine[i]);
  return LUMEN_OK;
}

lumen_status pipe_load_mask(pipe_run *run, const char *ref_path) {
  run->mask = malloc((size_t)run->nvox);
  if (!run->mask) return lumen_fail(run->ctx, LUMEN_ERR_OUT_OF_MEMORY, "mask: out of memory");
  if (!run->cfg->mask) {
    memset(run->mask, 1, (size_t)run->nvox);
    run->n_mask = run->nvox;
    return LUMEN_OK;
  }
  lumen_image *m = NULL;
  lumen_nifti_info info;
  lumen_status st = pipe_read_input(run, "mask", run->cfg->mask, &m, &info);
  if (st == LUMEN_OK && lumen_image_count(m) != run->nvox)
    st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT,
                    "mask '%s' is on another grid: %lld voxels (%lldx%lldx%lldx%lld), the series '%s' has %lldx%lldx%lld",
                    run->cfg->mask, (long long)lumen_image_count(m), (long long)lumen_image_dim(m, 0),
                    (long long)lumen_image_dim(m, 1), (long long)lumen_image_dim(m, 2),
                    (long long)lumen_image_dim(m, 3), ref_path, (long long)run->nx, (long long)run->ny,
                    (long long)run->nz);
  if (st == LUMEN_OK) st = pipe_check_grid(run, "mask", run->cfg->mask, m, ref_path);
  if (st == LUMEN_OK) {
    const float *v = lumen_image_const_data(m);
    run->n_mask = 0;
    for (int64_t i = 0; i < run->nvox; ++i) {
      run->mask[i] = v[i] > 0.5f;
      run->n_mask += run->mask[i];
    }
    if (run->n_mask == 0)
      st = lumen_fail(run->ctx, LUMEN_ERR_INVALID_ARGUMENT, "mask '%s' selects no voxel (no value > 0.5)",
                      run->cfg->mask);
  }
  lumen_image_free(m);
  return st;
}
