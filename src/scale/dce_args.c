/* The command line of a distributed `lumen dce` run (src/scale/dist_internal.h): which run it is
   (a shard, an MPI rank or a plain run), the arguments rewritten for the pipeline and the part
   file, and the private folder of an MPI rank other than 0. */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "scale/dist_internal.h"

const char *lumen_dist_arg_value(int argc, char *const *argv, const char *name) {
  const char *value = NULL;
  for (int i = 1; i + 1 < argc; ++i)
    if (!strcmp(argv[i], name)) value = argv[i + 1];
  return value;
}

/* 1 when one of the arguments after argv[0] is a or b */
static int has_flag(int argc, char *const *argv, const char *a, const char *b) {
  for (int i = 1; i < argc; ++i)
    if (!strcmp(argv[i], a) || !strcmp(argv[i], b)) return 1;
  return 0;
}

int lumen_dist_quiet(int argc, char *const *argv) {
  return has_flag(argc, argv, "-q", "--quiet");
}

lumen_dist_dce_run lumen_dist_dce_run_of(int argc, char *const *argv, const char **shard) {
  *shard = lumen_dist_arg_value(argc, argv, "--shard");
  if (!*shard && !(lumen_dist_mpi_launched() && lumen_dist_have_mpi())) return LUMEN_DIST_DCE_PLAIN;
  if (has_flag(argc, argv, "-h", "--help")) return LUMEN_DIST_DCE_PLAIN; /* the help of lumen dce */
  return *shard ? LUMEN_DIST_DCE_SHARD : LUMEN_DIST_DCE_MPI;
}

char **lumen_dist_strip_args(int argc, char *const *argv, int drop_out, int *nargc) {
  char **a = calloc((size_t)argc + 8, sizeof *a);
  int n = 0;
  if (!a) return NULL;
  for (int i = 0; i < argc; ++i) {
    if (i > 0 && (!strcmp(argv[i], "--shard") || (drop_out && !strcmp(argv[i], "--out"))) && i + 1 < argc) {
      ++i; /* and its value */
      continue;
    }
    a[n++] = argv[i];
  }
  *nargc = n;
  return a;
}

void lumen_dist_part_path(char *buf, size_t size, const char *out, const char *prefix, int k, int n) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", out ? out : ".");
  snprintf(buf, size, "%s/%s_shard-%d-of-%d.part", dir, prefix, k, n);
}

void lumen_dist_absolute_path(char *buf, size_t size, const char *path) {
  char cwd[PATH_MAX];
  if (path[0] == '/') snprintf(buf, size, "%s", path);
  else if (getcwd(cwd, sizeof cwd)) snprintf(buf, size, "%.*s/%s", PATH_MAX - 300, cwd, path);
  else snprintf(buf, size, "%s", path);
}

int lumen_dist_rank_folder(char *buf, size_t size, const char *base) {
  snprintf(buf, size, "%.4000s/lumen-rank-XXXXXX", base && base[0] ? base : "/tmp");
  return mkdtemp(buf) != NULL;
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

void lumen_dist_remove_tree(const char *path) {
  nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
