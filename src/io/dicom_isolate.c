/* Runs the GDCM decode of compressed pixel data in another process (docs/DICOM.md, "Hostile files").
   Debian's GDCM is built with assert() on and a malformed codestream can make a codec abort();
   the C pre-check refuses what it can see, and the other process turns the rest into an error.
   With one thread: a forked child inherits the file bytes (copy-on-write), decodes into a
   MAP_SHARED anonymous mapping sized from the pre-checked header, and leaves with _exit. fork()
   is only safe in a single-threaded process (another thread may hold a lock, e.g. malloc's, that
   the child would then wait on forever), so with several threads (Python after any lumen call,
   MATLAB, lumen's thread pools) the helper program lumen-dicom-decoder is started with
   posix_spawn (fork + exec, safe with threads) on a shared memory file holding the request. */
#define _GNU_SOURCE 1  /* MAP_ANONYMOUS, memfd_create */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "core/internal.h"
#include "io/dicom_internal.h"
#include "lumen_build_config.h"


#define MSG_BYTES 256

#if LUMEN_TEST_HOOKS
void lumen_dicom_test_spin(void) {
  for (volatile unsigned long i = 0;; i = i + 1) {
  }
}
#endif

void lumen_dicom_limit_cpu(int64_t decoded_bytes) {
  rlim_t cpu = (rlim_t)LUMEN_DECODER_CPU_S(decoded_bytes);
  struct rlimit r;
  if (getrlimit(RLIMIT_CPU, &r) == 0 && r.rlim_cur != RLIM_INFINITY && r.rlim_cur < cpu) return; /* already lower */
  r.rlim_cur = cpu;
  if (r.rlim_max == RLIM_INFINITY || r.rlim_max > cpu + 1) r.rlim_max = cpu + 1;
  (void)setrlimit(RLIMIT_CPU, &r);
}

int lumen_dicom_single_threaded(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  int threads = 0;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "Threads:", 8) == 0) {
      threads = atoi(line + 8);
      break;
    }
  fclose(f);
  return threads == 1;
}

#ifdef LUMEN_HAVE_DICOM

static lumen_status in_process(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                               const lumen_dicom_header *hdr, void *dst) {
  char msg[MSG_BYTES] = "";
  const lumen_dicom_info *in = &hdr->info;
  if (lumen_dicom_gdcm_decode(data, size, hdr, dst, (size_t)hdr->decoded_bytes, msg, sizeof msg) != 0)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: GDCM failed decoding '%s' (%s): %s", path,
                      in->transfer_syntax, msg);
  return LUMEN_OK;
}

#ifndef LUMEN_DECODER_BUILD_PATH
#define LUMEN_DECODER_BUILD_PATH NULL
#endif

extern char **environ;

/* The outcome of a decoder process (forked or spawned) as a status naming path. */
static lumen_status decoder_outcome(lumen_ctx *ctx, const char *path, const lumen_dicom_info *in, pid_t pid,
                                    int64_t budget_bytes, char *msg, size_t msg_size) {
  int status = 0;
  pid_t got;
  do got = waitpid(pid, &status, 0);
  while (got < 0 && errno == EINTR);
  msg[msg_size - 1] = 0;
  if (got < 0)
    return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lumen_dicom_read: waiting for the decoder of '%s': %s", path,
                      strerror(errno));
  if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_read: GDCM failed decoding '%s' (%s): malformed pixel data (the decoder ran past "
                      "its CPU budget of %ld s for %lld decoded bytes)",
                      path, in->transfer_syntax, LUMEN_DECODER_CPU_S(budget_bytes), (long long)budget_bytes);
  if (WIFSIGNALED(status))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_read: GDCM failed decoding '%s' (%s): malformed pixel data "
                      "(decoder aborted, signal %d)",
                      path, in->transfer_syntax, WTERMSIG(status));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: GDCM failed decoding '%s' (%s): %s", path,
                      in->transfer_syntax, msg[0] ? msg : "the decoder process failed");
  return LUMEN_OK;
}

/* With several threads: the helper program on a shared memory file (dicom_internal.h's request). */
static lumen_status spawned(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                            const lumen_dicom_header *hdr, void *dst) {
  char helper[4096];
  if (!lumen_module_find_program(LUMEN_DECODER_PROGRAM, LUMEN_DECODER_BUILD_PATH, helper, sizeof helper))
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT,
                      "lumen_dicom_read: '%s' (%s): compressed pixel data are decoded in a separate process, and "
                      "with several threads that is lumen's helper program " LUMEN_DECODER_PROGRAM ", which was "
                      "found neither beside liblumen nor in ../libexec from it: reinstall lumen",
                      path, hdr->info.transfer_syntax);
  const size_t page = 4096, head = (sizeof(lumen_dicom_decode_request) + page - 1) / page * page;
  const size_t pixels_at = head + (size + page - 1) / page * page, bytes = (size_t)hdr->decoded_bytes;
  const size_t total = pixels_at + bytes;
  int fd = memfd_create("lumen-dicom-decode", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)total) != 0) {
    int e = errno;
    if (fd >= 0) close(fd);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': cannot make %zu bytes of shared memory "
                      "for the decoder: %s", path, total, strerror(e));
  }
  void *map = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED) {
    int e = errno;
    close(fd);
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': cannot map %zu bytes for decoding: %s",
                      path, total, strerror(e));
  }
  lumen_dicom_decode_request *rq = map;
  memset(rq, 0, sizeof *rq);
  rq->magic = LUMEN_DECODER_MAGIC;
  rq->header_bytes = (uint32_t)sizeof *rq;
  rq->data_offset = (int64_t)head;
  rq->data_size = (int64_t)size;
  rq->pixels_offset = (int64_t)pixels_at;
  rq->pixels_size = (int64_t)bytes;
  rq->pixel_offset = hdr->pixel_offset;
  rq->info = hdr->info;
  rq->info.spacing_source = NULL;
  memcpy((uint8_t *)map + head, data, size);
  posix_spawn_file_actions_t fa;
  lumen_status s = LUMEN_OK;
  pid_t pid = -1;
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc == 0) {
    /* the request on descriptor 3 (dup2 clears its close-on-exec flag); GDCM's messages are ours to report */
    rc = posix_spawn_file_actions_adddup2(&fa, fd, LUMEN_DECODER_FD);
    if (rc == 0) rc = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {helper, NULL};
    if (rc == 0) rc = posix_spawn(&pid, helper, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
  }
  if (rc != 0)
    s = lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lumen_dicom_read: '%s': cannot start the decoder %s: %s", path, helper,
                   strerror(rc));
  else
    s = decoder_outcome(ctx, path, &hdr->info, pid, hdr->decoded_bytes, rq->msg, sizeof rq->msg);
  if (s == LUMEN_OK) memcpy(dst, (uint8_t *)map + pixels_at, bytes);
  munmap(map, total);
  close(fd);
  return s;
}

lumen_status lumen_dicom_decode_isolated(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                         const lumen_dicom_header *hdr, lumen_dicom_isolation isolation, void *dst,
                                         int *isolated) {
  *isolated = 0;
  char why[MSG_BYTES];
  if (!lumen_dicom_gdcm_load(why, sizeof why))  /* loaded here, before a fork: the child inherits it */
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "lumen_dicom_read: '%s' (%s): compressed pixel data need GDCM: %s", path,
                      hdr->info.transfer_syntax, why);
  if (isolation == LUMEN_DICOM_ISOLATE_NEVER) return in_process(ctx, path, data, size, hdr, dst);
  if (isolation == LUMEN_DICOM_ISOLATE_HELPER ||
      (isolation == LUMEN_DICOM_ISOLATE_AUTO && !lumen_dicom_single_threaded())) {
    lumen_status s = spawned(ctx, path, data, size, hdr, dst);
    *isolated = s == LUMEN_OK;
    return s;
  }
  const lumen_dicom_info *in = &hdr->info;
  size_t bytes = (size_t)hdr->decoded_bytes;
  size_t map_bytes = MSG_BYTES + bytes;
  void *map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return lumen_fail(ctx, LUMEN_ERR_OUT_OF_MEMORY, "lumen_dicom_read: '%s': cannot map %zu bytes for decoding: %s",
                      path, map_bytes, strerror(errno));
  char *msg = map;
  unsigned char *pixels = (unsigned char *)map + MSG_BYTES;
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    munmap(map, map_bytes);
    return lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lumen_dicom_read: '%s': cannot start the decoder process: %s", path,
                      strerror(e));
  }
  if (pid == 0) {
    /* the child: default handlers, so an abort ends it plainly (never the parent's clean-up) */
    int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    lumen_dicom_limit_cpu(hdr->decoded_bytes);
    int null_fd = open("/dev/null", O_WRONLY);  /* an assert() message is ours to report, not GDCM's */
    if (null_fd >= 0) dup2(null_fd, 2);
#if LUMEN_TEST_HOOKS
    /* test builds: a decoder that aborts ("1": every decoder process, "child": the forked ones) */
    const char *ab = getenv("LUMEN_TEST_DICOM_CHILD_ABORT");
    if (ab && (!strcmp(ab, "1") || !strcmp(ab, "child"))) abort();
    if (getenv("LUMEN_TEST_DICOM_CHILD_SPIN")) lumen_dicom_test_spin(); /* ... or never ends */
#endif
    int r = lumen_dicom_gdcm_decode(data, size, hdr, pixels, bytes, msg, MSG_BYTES);
    _exit(r == 0 ? 0 : 3);
  }
  lumen_status s = decoder_outcome(ctx, path, in, pid, hdr->decoded_bytes, msg, MSG_BYTES);
  if (s == LUMEN_OK) {
    memcpy(dst, pixels, bytes);
    *isolated = 1;
  }
  munmap(map, map_bytes);
  return s;
}

#endif
