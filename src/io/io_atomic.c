/* Atomic file writing (temporary name, fsync, rename, folder fsync), memory limits, slurping. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "lumen_build_config.h"
#include "io/gz_members.h"
#include "io/io_internal.h"

#define PLAIN_BUFFER (256 * 1024)

struct lumen_atomic_file {
  lumen_ctx *ctx;
  char *final_path;
  char *tmp_path;
  char *dir;
  int fd;
  gzFile gz;               /* gzip through zlib (built without libdeflate) */
  lumen_gz_members *gzm;   /* gzip as parallel members (libdeflate; gz_members.h) */
  int overwrite;
  unsigned char *buf;
  size_t used;
  int failed;
};

static atomic_long g_tmp_counter;
static _Atomic int64_t g_inject_after = -1;
static _Atomic int64_t g_inject_written = 0;

void lumen_io_inject_write_failure(int64_t after_bytes) {
  atomic_store(&g_inject_written, 0);
  atomic_store(&g_inject_after, after_bytes);
}

/* Returns 1 when the injected failure fires for n more bytes. */
static int inject_fires(size_t n) {
  int64_t after = atomic_load(&g_inject_after);
  if (after < 0) return 0;
  int64_t done = atomic_fetch_add(&g_inject_written, (int64_t)n) + (int64_t)n;
  return done > after;
}

int64_t lumen_io_default_max_bytes(void) {
  int64_t limit = INT64_C(16) << 30;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    int64_t phys;
    if (!lumen_mul_i64((int64_t)pages, (int64_t)page, &phys) && phys < limit) limit = phys;
  }
  return limit;
}

int64_t lumen_io_resolve_max_bytes(int64_t requested) {
  int64_t def = lumen_io_default_max_bytes();
  if (requested <= 0) return def;
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  int64_t phys;
  if (pages > 0 && page > 0 && !lumen_mul_i64((int64_t)pages, (int64_t)page, &phys) && requested > phys)
    return phys;
  return requested;
}

static void free_file(lumen_atomic_file *f) {
  if (!f) return;
  free(f->final_path);
  free(f->tmp_path);
  free(f->dir);
  free(f->buf);
  free(f);
}

/* Closes everything and removes the temporary file. */
static void discard(lumen_atomic_file *f) {
  lumen_gz_members_free(f->gzm);
  f->gzm = NULL;
  if (f->gz) {
    gzclose(f->gz);
    f->gz = NULL;
  }
  if (f->fd >= 0) {
    close(f->fd);
    f->fd = -1;
  }
  if (f->tmp_path) unlink(f->tmp_path);
}

const char *lumen_atomic_tmp_path(const lumen_atomic_file *f) { return f ? f->tmp_path : NULL; }

/* Test hook for whole programs, in test builds only (LUMEN_TEST_HOOKS;
   tests/cli/test_resume_faults.sh): LUMEN_TEST_ENOSPC_AFTER=N makes the atomic writes of this
   process fail with ENOSPC once N bytes have been written in total. */
#if LUMEN_TEST_HOOKS
static void env_inject_once(void) {
  static atomic_int done;
  if (atomic_exchange(&done, 1)) return;
  const char *e = getenv("LUMEN_TEST_ENOSPC_AFTER");
  if (e && *e) lumen_io_inject_write_failure(strtoll(e, NULL, 10));
}
#else
static void env_inject_once(void) {}
#endif

/* What may stand at the final name: nothing, or (with overwrite) a regular file. A symlink, FIFO,
   device node, socket or folder is never replaced, overwrite or not: rename() would swap it for a
   regular file (`--out /dev/null` run as root would replace /dev/null, issue 15). An lstat error
   other than "no such file" is left to the create or the rename, which report it. */
static lumen_status check_final_name(lumen_ctx *ctx, const char *path, int overwrite) {
  struct stat st;
  if (lstat(path, &st) != 0) return LUMEN_OK;
  if (!S_ISREG(st.st_mode))
    return lumen_fail(ctx, LUMEN_ERR_IO, "cannot write '%s': it is %s, and only a regular file is replaced "
                      "(remove it or choose another name)", path, lumen_io_kind_name((unsigned)st.st_mode));
  if (!overwrite)
    return lumen_fail(ctx, LUMEN_ERR_IO, "'%s' exists and is not replaced without overwrite (--overwrite)", path);
  return LUMEN_OK;
}

static int gz_sink(void *user, const unsigned char *p, size_t n);

lumen_status lumen_atomic_open(lumen_ctx *ctx, const char *path, int overwrite, int gzip_level,
                               lumen_atomic_file **out) {
  LUMEN_REQUIRE_NOT_NULL(ctx, out);
  env_inject_once();
  *out = NULL;
  LUMEN_REQUIRE_NOT_NULL(ctx, path);
  LUMEN_REQUIRE(ctx, path[0] != '\0', "cannot write a file with an empty name");
  size_t len = strlen(path);
  LUMEN_REQUIRE(ctx, path[len - 1] != '/', "cannot write '%s': the name is a folder", path);
  lumen_status cs = check_final_name(ctx, path, overwrite);
  if (cs != LUMEN_OK) return cs;
  lumen_atomic_file *f = calloc(1, sizeof *f);
  if (!f) return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory opening '%s'", path);
  f->ctx = ctx;
  f->fd = -1;
  f->overwrite = overwrite;
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dlen = slash ? (size_t)(slash - path) : 1;
  f->final_path = malloc(len + 1);
  f->dir = malloc(dlen + 1);
  size_t tlen = len + 64;
  f->tmp_path = malloc(tlen);
  if (!f->final_path || !f->dir || !f->tmp_path) {
    free_file(f);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory opening '%s'", path);
  }
  memcpy(f->final_path, path, len + 1);
  if (slash) {
    memcpy(f->dir, path, dlen);
    f->dir[dlen] = '\0';
    if (dlen == 0) strcpy(f->dir, "/");
  } else {
    strcpy(f->dir, ".");
  }
  /* ".NAME.tmp-PID-TAG": the PID lets a later run remove a killed run's leftovers
     (lumen_io_remove_stale_temporaries); TAG is random so that nobody can plant a name in advance
     (O_EXCL refuses an existing name or symlink anyway). */
  unsigned long long tag = 0;
  if (getrandom(&tag, sizeof tag, GRND_NONBLOCK) != (ssize_t)sizeof tag) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    tag = (unsigned long long)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (unsigned long long)ts.tv_sec;
  }
  tag ^= (unsigned long long)atomic_fetch_add(&g_tmp_counter, 1);
  snprintf(f->tmp_path, tlen, "%.*s.%s.tmp-%ld-%016llx", (int)(base - path), path, base, (long)getpid(), tag);
  f->fd = open(f->tmp_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (f->fd < 0) {
    int e = errno;
    lumen_status s = lumen_fail(ctx, LUMEN_ERR_IO, "cannot write '%s': cannot create '%s' in folder '%s': %s", path,
                                f->tmp_path, f->dir, strerror(e));
    free_file(f);
    return s;
  }
  if (gzip_level > 0 && lumen_gz_members_available()) {
    f->gzm = lumen_gz_members_create(gzip_level > 9 ? 9 : gzip_level, lumen_ctx_threads(ctx), gz_sink, f);
    if (!f->gzm) {
      discard(f);
      free_file(f);
      return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "cannot write '%s': out of host memory for gzip compression", path);
    }
  } else if (gzip_level > 0) {
    int fd2 = dup(f->fd);
    char mode[8];
    snprintf(mode, sizeof mode, "wb%d", gzip_level > 9 ? 9 : gzip_level);
    f->gz = fd2 >= 0 ? gzdopen(fd2, mode) : NULL;
    if (!f->gz) {
      if (fd2 >= 0) close(fd2);
      discard(f);
      free_file(f);
      return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "cannot write '%s': cannot start gzip compression", path);
    }
    gzbuffer(f->gz, 256 * 1024);
  } else {
    f->buf = malloc(PLAIN_BUFFER);
    if (!f->buf) {
      discard(f);
      free_file(f);
      return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "out of host memory opening '%s'", path);
    }
  }
  *out = f;
  return LUMEN_OK;
}

static lumen_status fail_write(lumen_atomic_file *f, int err) {
  f->failed = 1;
  discard(f);
  return lumen_fail(f->ctx, LUMEN_ERR_IO, "cannot write '%s': %s (nothing was written under that name)",
                    f->final_path, strerror(err));
}

static lumen_status write_fd(lumen_atomic_file *f, const unsigned char *p, size_t n) {
  while (n > 0) {
    size_t chunk = n > (size_t)1 << 30 ? (size_t)1 << 30 : n;
    if (inject_fires(chunk)) return fail_write(f, ENOSPC);
    ssize_t w = write(f->fd, p, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail_write(f, errno);
    }
    if (w == 0) return fail_write(f, ENOSPC);
    p += w;
    n -= (size_t)w;
  }
  return LUMEN_OK;
}

/* The compressed members' way to the temporary file (the injected failure counts the
   uncompressed bytes, in lumen_atomic_write, as with zlib). */
static int gz_sink(void *user, const unsigned char *p, size_t n) {
  lumen_atomic_file *f = user;
  while (n > 0) {
    ssize_t w = write(f->fd, p, n > (size_t)1 << 30 ? (size_t)1 << 30 : n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return errno ? errno : EIO;
    if (w == 0) return ENOSPC;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static lumen_status gz_members_failed(lumen_atomic_file *f, int e) {
  if (e != ENOMEM) return fail_write(f, e);
  f->failed = 1;
  discard(f);
  return lumen_fail(f->ctx, LUMEN_ERR_OUT_OF_MEMORY, "cannot write '%s': out of host memory for gzip compression "
                    "(nothing was written under that name)", f->final_path);
}

static lumen_status flush_plain(lumen_atomic_file *f) {
  if (f->used == 0) return LUMEN_OK;
  lumen_status s = write_fd(f, f->buf, f->used);
  f->used = 0;
  return s;
}

lumen_status lumen_atomic_write(lumen_atomic_file *f, const void *data, size_t n) {
  if (!f) return LUMEN_ERR_INVALID_ARGUMENT;
  if (f->failed) return lumen_fail(f->ctx, LUMEN_ERR_IO, "cannot write '%s': an earlier write failed", f->final_path);
  const unsigned char *p = data;
  if (f->gzm) {
    if (inject_fires(n)) return fail_write(f, ENOSPC);
    int e = lumen_gz_members_write(f->gzm, p, n);
    return e ? gz_members_failed(f, e) : LUMEN_OK;
  }
  if (f->gz) {
    while (n > 0) {
      unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
      if (inject_fires(chunk)) return fail_write(f, ENOSPC);
      int w = gzwrite(f->gz, p, chunk);
      if (w <= 0) {
        int zerr = 0;
        const char *msg = gzerror(f->gz, &zerr);
        int e = zerr == Z_ERRNO ? errno : EIO;
        if (zerr != Z_ERRNO) {
          f->failed = 1;
          discard(f);
          return lumen_fail(f->ctx, LUMEN_ERR_IO, "cannot write '%s': gzip: %s", f->final_path, msg ? msg : "error");
        }
        return fail_write(f, e ? e : EIO);
      }
      p += w;
      n -= (size_t)w;
    }
    return LUMEN_OK;
  }
  if (n >= PLAIN_BUFFER) {
    lumen_status s = flush_plain(f);
    if (s != LUMEN_OK) return s;
    return write_fd(f, p, n);
  }
  if (f->used + n > PLAIN_BUFFER) {
    lumen_status s = flush_plain(f);
    if (s != LUMEN_OK) return s;
  }
  memcpy(f->buf + f->used, p, n);
  f->used += n;
  return LUMEN_OK;
}

static void fsync_dir(const char *dir) {
  int dfd = open(dir, O_RDONLY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);  /* some file systems refuse folder fsync (EINVAL); the rename stands */
    close(dfd);
  }
}

lumen_status lumen_atomic_commit(lumen_atomic_file *f) {
  if (!f) return LUMEN_ERR_INVALID_ARGUMENT;
  lumen_ctx *ctx = f->ctx;
  lumen_status s = LUMEN_OK;
  if (f->failed) {
    s = lumen_fail(ctx, LUMEN_ERR_IO, "cannot write '%s': an earlier write failed", f->final_path);
    goto fail;
  }
  if (f->gzm) {
    if (inject_fires(0)) {
      s = fail_write(f, ENOSPC);
      goto fail;
    }
    int e = lumen_gz_members_finish(f->gzm);
    if (e) {
      s = gz_members_failed(f, e);
      goto fail;
    }
    lumen_gz_members_free(f->gzm);
    f->gzm = NULL;
  } else if (f->gz) {
    if (inject_fires(0)) {
      s = fail_write(f, ENOSPC);
      goto fail;
    }
    int rc = gzclose(f->gz);
    f->gz = NULL;
    if (rc != Z_OK) {
      s = fail_write(f, rc == Z_ERRNO ? errno : EIO);
      goto fail;
    }
  } else {
    s = flush_plain(f);
    if (s != LUMEN_OK) goto fail;
  }
  if (fsync(f->fd) != 0 && errno != EINVAL && errno != EROFS) {
    s = fail_write(f, errno);
    goto fail;
  }
  if (close(f->fd) != 0) {
    f->fd = -1;
    s = fail_write(f, errno);
    goto fail;
  }
  f->fd = -1;
  if (f->overwrite) {
    /* again right before the rename: the name may have changed while the data were written */
    s = check_final_name(ctx, f->final_path, 1);
    if (s != LUMEN_OK) goto fail;
    if (rename(f->tmp_path, f->final_path) != 0) {
      int e = errno;
      discard(f);
      s = lumen_fail(ctx, LUMEN_ERR_IO, "cannot write '%s': renaming '%s' failed: %s", f->final_path, f->tmp_path,
                     strerror(e));
      goto fail;
    }
  } else {
    /* link() refuses an existing name atomically; rename() would replace it. */
    if (link(f->tmp_path, f->final_path) == 0) {
      unlink(f->tmp_path);
    } else {
      int e = errno;
      if (e == EEXIST) {
        discard(f);
        s = lumen_fail(ctx, LUMEN_ERR_IO, "'%s' exists and is not replaced without overwrite (--overwrite)",
                       f->final_path);
        goto fail;
      }
      struct stat st;
      if (lstat(f->final_path, &st) == 0) {
        discard(f);
        s = lumen_fail(ctx, LUMEN_ERR_IO, "'%s' exists and is not replaced without overwrite (--overwrite)",
                       f->final_path);
        goto fail;
      }
      if (rename(f->tmp_path, f->final_path) != 0) {
        e = errno;
        discard(f);
        s = lumen_fail(ctx, LUMEN_ERR_IO, "cannot write '%s': renaming '%s' failed: %s", f->final_path,
                       f->tmp_path, strerror(e));
        goto fail;
      }
    }
  }
  fsync_dir(f->dir);
  free_file(f);
  return LUMEN_OK;
fail:
  discard(f);
  free_file(f);
  return s;
}

void lumen_atomic_abort(lumen_atomic_file *f) {
  if (!f) return;
  discard(f);
  free_file(f);
}

lumen_status lumen_io_slurp(lumen_ctx *ctx, const char *fn, const char *path, int64_t max_bytes, char **out,
                            size_t *length) {
  *out = NULL;
  if (length) *length = 0;
  int fd = -1;
  int64_t size = 0;
  lumen_status os = lumen_io_open_regular(ctx, fn, path, &fd, &size);
  if (os != LUMEN_OK) return os;
  if (size > max_bytes) {
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "%s: '%s' has %lld bytes, expected at most %lld", fn, path,
                      (long long)size, (long long)max_bytes);
  }
  size_t cap = (size_t)size + 1;
  char *buf = malloc(cap);
  if (!buf) {
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "%s: out of host memory reading '%s'", fn, path);
  }
  size_t got = 0;
  for (;;) {
    if (got + 1 >= cap) break;  /* the file grew: read what was announced */
    ssize_t r = read(fd, buf + got, cap - 1 - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      free(buf);
      close(fd);
      return lumen_fail(ctx, LUMEN_ERR_IO, "%s: cannot read '%s': %s", fn, path, strerror(e));
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  close(fd);
  buf[got] = '\0';
  *out = buf;
  if (length) *length = got;
  return LUMEN_OK;
}
