/* gzip output compressed in parallel (libdeflate): the bytes are cut into members of
   GZ_MEMBER_BYTES, compressed on their own, a chunk of GZ_CHUNK_BYTES by each of the context's
   threads, and written in order. Concatenated members are one valid gzip file (RFC 1952, 2.2); zlib's gzread, nifti_clib,
   Python's gzip and pigz read them as one stream. Without libdeflate (LUMEN_HAVE_LIBDEFLATE 0)
   lumen_gz_members_available() is 0 and the atomic writer streams through zlib instead. */
#ifndef LUMEN_IO_GZ_MEMBERS_H
#define LUMEN_IO_GZ_MEMBERS_H
#include <stddef.h>
#include "lumen/lumen.h"

/* 64 KiB members (as BGZF's): deflate looks back 32 KiB, so larger members compress hardly
   better, and a reader reaching one byte (gz_index.h) inflates at most 64 KiB for it. */
enum { GZ_MEMBER_BYTES = 64 << 10, GZ_CHUNK_BYTES = 1 << 20 };

/* Every member's header (RFC 1952 FLG.FEXTRA) carries one extra subfield, SI1 'L' SI2 'M', LEN 8:
   the member's whole size in the file (header to trailer) and its uncompressed size, both
   uint32 little-endian (as BGZF's 'BC' subfield does for BAM files). Readers that do not know it
   skip it (RFC 1952, 2.3.1.1); gz_index.h uses it to reach any byte by inflating one member. */
enum { GZ_MEMBER_HEADER = 24 };

typedef struct lumen_gz_members lumen_gz_members;

/* Writes compressed bytes; returns 0 on success, an errno value otherwise. */
typedef int (*lumen_gz_sink)(void *user, const unsigned char *p, size_t n);

int lumen_gz_members_available(void);

/* level 1..12 (libdeflate's; 1..9 as zlib's), threads >= 1. NULL when out of memory. */
lumen_gz_members *lumen_gz_members_create(int level, int threads, lumen_gz_sink sink, void *user);

/* Appends n bytes; compresses and writes whole batches of members. 0 or an errno value
   (ENOMEM: a compressor or buffer could not be allocated). */
int lumen_gz_members_write(lumen_gz_members *z, const void *data, size_t n);

/* Compresses and writes what is left (an empty input still gives one valid empty member). */
int lumen_gz_members_finish(lumen_gz_members *z);

void lumen_gz_members_free(lumen_gz_members *z);

#endif
