/* Writing a run's maps (map_output.c): float32 NIfTI on the run's grid with intent, JSON sidecar,
   statistics and figure for the report; many maps at once on the context's threads. */
#ifndef LUMEN_PIPE_MAPS_H
#define LUMEN_PIPE_MAPS_H

#include <stdint.h>
#include "pipeline/pipe_run.h"

/* One map to write by itself (pipe_write_map), built with designated initializers. */
typedef struct pipe_map_desc {
  const char *name;        /* file name inside the output folder */
  const float *data;       /* nvox values */
  const char *param, *unit, *model, *backend_used, *description;
  int figure;              /* 1: a figure PNG and report row */
} pipe_map_desc;
/* Writes a 3-D float map (nvox values) as DIR/NAME with intent, sidecar, figures. */
lumen_status pipe_write_map(pipe_run *run, const pipe_map_desc *m);
/* One map of pipe_write_maps: what pipe_write_map takes. */
typedef struct pipe_map_out {
  char name[400];
  const float *data;       /* nvox values */
  char param[48];
  const char *unit, *model, *backend_used;
  char description[256];
  int figure;
  /* the fit state of each voxel (nvox, LUMEN_FIT_*; 255 not fitted) for a model's maps, or NULL: the
     figure's window comes from the converged voxels and voxels at a bound are hatched */
  const uint8_t *state;
} pipe_map_out;
/* Writes maps[0..n) as pipe_write_map one after the other would, with the same files, outputs,
   report rows, figures, log messages and error (that of the first map in the list that failed),
   but the NIfTI files and sidecars on up to the context's threads at once (each file's compression
   on the threads left over): their compression and fsyncs overlap. The bookkeeping (outputs,
   statistics, figures) follows in the list's order. Maps after a failed one may have been written
   (whole files: every write is atomic). One thread, or no memory for the threads' contexts: one at
   a time, as pipe_write_map. */
lumen_status pipe_write_maps(pipe_run *run, const pipe_map_out *maps, int n);
/* A list of maps filled on demand, for pipe_write_map_list: fill(user, i, map) writes map i's nvox
   values (called on several threads at once, for different i); keep(user, i, map), when not NULL,
   runs after it on the calling thread, in the list's order (copies the caller keeps). */
typedef struct pipe_map_fill {
  void (*fill)(void *user, int i, float *map);
  void (*keep)(void *user, int i, const float *map);
  void *user;
} pipe_map_fill;
/* Fills and writes maps[0..n) (data NULL: filled by f; else written as it is; n at most
   PIPE_MAX_OUTPUTS) in batches that pipe_write_maps writes: the maps of a batch are in memory
   together, up to 2 x the context's threads of them (nvox floats each). scratch (nvox floats,
   required) is the first buffer; the others are allocated here, as many as memory allows: with
   none, the maps go one at a time through scratch. Stops at the first error. */
lumen_status pipe_write_map_list(pipe_run *run, pipe_map_out *maps, int n, float *scratch, const pipe_map_fill *f);

#endif
