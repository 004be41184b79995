/* NIfTI .hdr/.img pairs (magic "ni1" / "ni2"; FSL's NIFTI_PAIR, older SPM): which file of a pair a
   path names, and the other one. The reader (nifti.c) takes the header from the .hdr and the voxels
   from the .img, whichever of the two the user named; the probe (image_formats.c) sends a .img whose
   content no format claims to the NIfTI reader when its .hdr is there. */
#include <stdlib.h>
#include <string.h>
#include "io/io_internal.h"

/* 1: PATH ends with .hdr or .hdr.gz, 2: with .img or .img.gz (any case), 0: neither. */
int lumen_nifti_pair_member(const char *path) {
  if (lumen_ends_with_nocase(path, ".hdr") || lumen_ends_with_nocase(path, ".hdr.gz")) return 1;
  if (lumen_ends_with_nocase(path, ".img") || lumen_ends_with_nocase(path, ".img.gz")) return 2;
  return 0;
}

/* The other file of the pair PATH belongs to, as an allocated string, when it is a regular file:
   the same compression first (x.hdr -> x.img, x.hdr.gz -> x.img.gz), then the other; the suffix
   keeps the case of PATH's ("X.HDR" -> "X.IMG"). NULL when PATH is no pair member or the other is
   not there (or out of memory). */
char *lumen_nifti_pair_sibling(const char *path) {
  int member = lumen_nifti_pair_member(path);
  if (!member) return NULL;
  size_t n = strlen(path);
  int gz = lumen_ends_with_nocase(path, ".gz");
  size_t stem = n - (gz ? 7 : 4); /* up to the dot of .hdr / .img */
  int upper = path[stem + 1] >= 'A' && path[stem + 1] <= 'Z';
  const char *other = member == 1 ? (upper ? ".IMG" : ".img") : (upper ? ".HDR" : ".hdr");
  char *out = malloc(n + 4);
  if (!out) return NULL;
  for (int attempt = 0; attempt < 2; attempt++) {
    int with_gz = attempt == 0 ? gz : !gz;
    memcpy(out, path, stem);
    strcpy(out + stem, other);
    if (with_gz) strcat(out, upper ? ".GZ" : ".gz");
    if (lumen_io_is_regular_file(out)) return out;
  }
  free(out);
  return NULL;
}
