/* The temporaries of killed runs swept from the output folders of a batch
   (lumen_dist_sweep_output_folders in src/scale/dist_internal.h). */
#include <stdlib.h>
#include <string.h>
#include "io/io_internal.h"
#include "scale/dist_internal.h"

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The folder of path into a new string ("." for a bare name); NULL when out of memory. */
static char *folder_of(const char *path) {
  const char *slash = strrchr(path, '/');
  size_t n = slash ? (size_t)(slash - path) : 1;
  if (slash && n == 0) n = 1; /* "/name": the root */
  char *d = malloc(n + 1);
  if (!d) return NULL;
  memcpy(d, slash ? path : ".", n);
  d[n] = 0;
  return d;
}

void lumen_dist_sweep_output_folders(char *const *paths, int64_t n,
                                     void (*removed)(void *user, const char *folder, int count), void *user) {
  char **dirs = n > 0 ? calloc((size_t)n, sizeof *dirs) : NULL;
  int64_t nd = 0;
  for (int64_t k = 0; dirs && k < n; k++)
    if ((dirs[nd] = folder_of(paths[k])) != NULL) nd++;
  if (dirs) qsort(dirs, (size_t)nd, sizeof *dirs, compare_strings); /* each folder once */
  for (int64_t k = 0; k < nd; k++) {
    if (k > 0 && strcmp(dirs[k], dirs[k - 1]) == 0) continue;
    int count = lumen_io_remove_stale_temporaries(dirs[k]);
    if (count > 0 && removed) removed(user, dirs[k], count);
  }
  for (int64_t k = 0; k < nd; k++) free(dirs[k]);
  free(dirs);
}
