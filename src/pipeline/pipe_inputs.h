/* The inputs of a run (run_inputs.c, run_dicom.c): read, checked against the run's grid, and
   recorded with their checksums for the run log. */
#ifndef LUMEN_PIPE_INPUTS_H
#define LUMEN_PIPE_INPUTS_H

#include <stdint.h>
#include "pipeline/pipe_run.h"

/* Reads a NIfTI input as float32 and records it (with its checksum) in the run log. */
lumen_status pipe_read_input(pipe_run *run, const char *role, const char *path, lumen_image **im,
                             lumen_nifti_info *info);
/* A DICOM series (a folder or a file, lumen_dicom_series_read; series_uid may be NULL) read as the
   NIfTI inputs are: info gets the series' affine (sform and qform code 1) and no frame interval,
   acq the header's FlipAngle, RepetitionTime (s) and frame times (key "DICOM TriggerTime" ...);
   recorded in the run log with the checksum of its files. acq is overwritten (not freed first). */
lumen_status pipe_read_dicom_series(pipe_run *run, const char *role, const char *path, const char *series_uid,
                                    lumen_image **im, lumen_nifti_info *info, lumen_acquisition *acq);
lumen_status pipe_record_input(pipe_run *run, const char *role, const char *path);
/* Records an input whose checksum the caller computed. */
void pipe_record_input_hash(pipe_run *run, const char *role, const char *path, uint64_t hash);
/* Checks that im has the run's 3-D grid (dims and affine). */
lumen_status pipe_check_grid(pipe_run *run, const char *role, const char *path, const lumen_image *im,
                             const char *ref_path);
/* Loads the mask (or sets every voxel) */
lumen_status pipe_load_mask(pipe_run *run, const char *ref_path);

#endif
