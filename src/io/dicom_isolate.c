/* Runs the GDCM decode of compressed pixel data in a child process (docs/DICOM.md, "Hostile files").
   Debian's GDCM is built with assert() on and a malformed codestream can make a codec abort();
   the C pre-check refuses what it can see, and the child turns the rest into an error. The child
   inherits the file bytes (copy-on-write), decodes into a MAP_SHARED anonymous mapping sized
   from the pre-checked header, and leaves with _exit. fork() is only safe in a single-threaded process (another thread may
   hold a lock, e.g. malloc's, that the child would then wait on forever), so with several
   threads the decode runs in-process after the pre-check. */
#define _DEFAULT_SOURCE 1  /* MAP_ANONYMOUS */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include "io/dicom_internal.h"
#include "lumen_build_config.h"


#define MSG_BYTES 256

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

lumen_status lumen_dicom_decode_isolated(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                         const lumen_dicom_header *hdr, lumen_dicom_isolation isolation, void *dst,
                                         int *isolated) {
  *isolated = 0;
  char why[MSG_BYTES];
  if (!lumen_dicom_gdcm_load(why, sizeof why))  /* loaded here, before a fork: the child inherits it */
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "lumen_dicom_read: '%s' (%s): compressed pixel data need GDCM: %s", path,
                      hdr->info.transfer_syntax, why);
  if (isolation == LUMEN_DICOM_ISOLATE_NEVER ||
      (isolation == LUMEN_DICOM_ISOLATE_AUTO && !lumen_dicom_single_threaded()))
    return in_process(ctx, path, data, size, hdr, dst);
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
    lumen_log(ctx, LUMEN_LOG_DEBUG, "lumen_dicom_read: fork failed (%s), decoding '%s' in-process", strerror(e), path);
    return in_process(ctx, path, data, size, hdr, dst);
  }
  if (pid == 0) {
    /* the child: default handlers, so an abort ends it plainly (never the parent's clean-up) */
    int sigs[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal(sigs[i], SIG_DFL);
    int null_fd = open("/dev/null", O_WRONLY);  /* an assert() message is ours to report, not GDCM's */
    if (null_fd >= 0) dup2(null_fd, 2);
#if LUMEN_TEST_HOOKS
    if (getenv("LUMEN_TEST_DICOM_CHILD_ABORT")) abort();  /* test builds: a decoder that aborts */
#endif
    int r = lumen_dicom_gdcm_decode(data, size, hdr, pixels, bytes, msg, MSG_BYTES);
    _exit(r == 0 ? 0 : 3);
  }
  int status = 0;
  pid_t got;
  do got = waitpid(pid, &status, 0);
  while (got < 0 && errno == EINTR);
  lumen_status s = LUMEN_OK;
  msg[MSG_BYTES - 1] = 0;
  if (got < 0) {
    s = lumen_fail(ctx, LUMEN_ERR_INTERNAL, "lumen_dicom_read: waiting for the decoder of '%s': %s", path,
                   strerror(errno));
  } else if (WIFSIGNALED(status)) {
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT,
                   "lumen_dicom_read: GDCM failed decoding '%s' (%s): malformed pixel data "
                   "(decoder aborted, signal %d)",
                   path, in->transfer_syntax, WTERMSIG(status));
  } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: GDCM failed decoding '%s' (%s): %s", path,
                   in->transfer_syntax, msg[0] ? msg : "the decoder process failed");
  } else {
    memcpy(dst, pixels, bytes);
    *isolated = 1;
  }
  munmap(map, map_bytes);
  return s;
}

#endif
