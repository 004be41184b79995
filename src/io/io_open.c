/* Opening an input for reading without hanging: a FIFO, a terminal or a device node as an input
 * would block open() or read() forever (issue 15), so inputs are opened with O_NONBLOCK, checked
 * with fstat to be regular files, and only then switched back to blocking reads. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/io_internal.h"

const char *lumen_io_kind_name(unsigned mode) {
  mode_t m = (mode_t)mode;
  if (S_ISREG(m)) return "a regular file";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO (named pipe)";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

lumen_status lumen_io_open_regular(lumen_ctx *ctx, const char *fn, const char *path, int *fd_out,
                                   int64_t *size_out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, fd_out);
  *fd_out = -1;
  if (size_out) *size_out = 0;
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot open '%s': %s", fn, path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot read '%s': %s", fn, path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_IO, "%s: '%s' is %s, expected a regular file", fn, path,
                      lumen_io_kind_name((unsigned)st.st_mode));
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    int e = errno;
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot read '%s': %s", fn, path, strerror(e));
  }
  *fd_out = fd;
  if (size_out) *size_out = (int64_t)st.st_size;
  return LUMEN_OK;
}

lumen_status lumen_io_fopen_regular(lumen_ctx *ctx, const char *fn, const char *path, FILE **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  *out = NULL;
  int fd = -1;
  lumen_status s = lumen_io_open_regular(ctx, fn, path, &fd, NULL);
  if (s != LUMEN_OK) return s;
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: cannot read '%s': %s", fn, path, strerror(e));
  }
  *out = f;
  return LUMEN_OK;
}

int lumen_io_is_regular_file(const char *path) {
  struct stat st;
  return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
