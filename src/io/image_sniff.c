/* The content tests of the image formats (image_formats_internal.h): a file's first bytes, and
   for a gzip file the first bytes of its stream, compared with each format's signature. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "io/image_formats_internal.h"

#define SNIFF_GZIP_MAX (64 * 1024) /* compressed bytes read at most to fill s->plain */

/* Inflates the start of the gzip stream of fd into s->plain. */
static void inflate_head(int fd, lumen_sniff *s) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, 15 + 16) != Z_OK) return;
  unsigned char in[16384];
  off_t offset = 0;
  z.next_out = s->plain;
  z.avail_out = sizeof s->plain;
  int rc = Z_OK;
  while (rc == Z_OK && z.avail_out > 0 && offset < SNIFF_GZIP_MAX) {
    ssize_t got = pread(fd, in, sizeof in, offset);
    if (got <= 0) break;
    offset += got;
    z.next_in = in;
    z.avail_in = (uInt)got;
    while (rc == Z_OK && z.avail_in > 0 && z.avail_out > 0) rc = inflate(&z, Z_NO_FLUSH);
  }
  s->plain_n = sizeof s->plain - z.avail_out;
  inflateEnd(&z);
}

int lumen_sniff_read(const char *path, lumen_sniff *s) {
  memset(s, 0, sizeof *s);
  /* O_NONBLOCK: a FIFO or device is never waited on; only a regular file is read */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return 0;
  }
  while (s->n < sizeof s->head) {
    ssize_t got = pread(fd, s->head + s->n, sizeof s->head - s->n, (off_t)s->n);
    if (got <= 0) break;
    s->n += (size_t)got;
  }
  s->gzip = s->n >= 2 && s->head[0] == 0x1f && s->head[1] == 0x8b;
  if (s->gzip) inflate_head(fd, s);
  close(fd);
  return 1;
}

int lumen_sniff_png(const lumen_sniff *s) {
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  return !s->gzip && s->n >= 8 && memcmp(s->head, sig, 8) == 0;
}

/* sizeof_hdr (the first int32) is want in either byte order */
static int header_size_is(const unsigned char *b, unsigned want) {
  unsigned le = (unsigned)b[0] | (unsigned)b[1] << 8 | (unsigned)b[2] << 16 | (unsigned)b[3] << 24;
  unsigned be = (unsigned)b[3] | (unsigned)b[2] << 8 | (unsigned)b[1] << 16 | (unsigned)b[0] << 24;
  return le == want || be == want;
}

/* A NIfTI-1 header (348 bytes, magic "n+1" or "ni1" at 344) or NIfTI-2 (540 bytes, magic "n+2" or
   "ni2" at 4): the .hdr of a .hdr/.img pair counts too (the NIfTI reader reads the pair). */
int lumen_sniff_nifti(const lumen_sniff *s) {
  const unsigned char *b = s->gzip ? s->plain : s->head;
  size_t n = s->gzip ? s->plain_n : s->n;
  if (n >= 348 && header_size_is(b, 348) && (!memcmp(b + 344, "n+1", 4) || !memcmp(b + 344, "ni1", 4))) return 1;
  return n >= 540 && header_size_is(b, 540) && (!memcmp(b + 4, "n+2", 4) || !memcmp(b + 4, "ni2", 4));
}

int lumen_sniff_dicom(const lumen_sniff *s) {
  return !s->gzip && s->n >= 132 && memcmp(s->head + 128, "DICM", 4) == 0;
}
