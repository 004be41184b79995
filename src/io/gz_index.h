/* Random access into a .nii.gz that lumen wrote as gzip members (gz_members.h): each member's
   header names its own size, so the members are found by reading their headers only, and any
   byte range is read by inflating the members that hold it (libdeflate; the CRC-32 and length of
   each member are checked). `lumen view` reads one voxel's 80 frames of a 670 MB concentration
   series this way without inflating the whole file. Files from other writers (one gzip stream)
   do not open: callers fall back to reading the whole file. Not thread-safe (one caller at a time). */
#ifndef LUMEN_IO_GZ_INDEX_H
#define LUMEN_IO_GZ_INDEX_H
#include <stddef.h>
#include <stdint.h>

typedef struct lumen_gz_index lumen_gz_index;

/* Opens `path` and walks its member headers. cache_bytes bounds the inflated members kept for the
   next reads (at least one member is kept). NULL with errno: ENOTSUP (not lumen's members, or
   built without libdeflate), EINVAL (a member header is malformed or the members do not end with
   the file), ENOMEM, or the open/read error. */
lumen_gz_index *lumen_gz_index_open(const char *path, size_t cache_bytes);

/* The uncompressed size of the whole file. */
uint64_t lumen_gz_index_size(const lumen_gz_index *g);
int lumen_gz_index_members(const lumen_gz_index *g);

/* Copies the uncompressed bytes [offset, offset + n) to dst. 0, or ERANGE (beyond the end),
   EIO (a member does not inflate to its stated size or its CRC differs), ENOMEM, a read error. */
int lumen_gz_index_read(lumen_gz_index *g, uint64_t offset, size_t n, void *dst);

void lumen_gz_index_close(lumen_gz_index *g);

#endif
