/* The output folder of a run (issue 15): one run at a time writes into it (a lock), and the run
   log of an earlier run goes before the first of its outputs is replaced. docs/RELIABILITY.md. */
#define _DEFAULT_SOURCE /* flock */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "lumen_build_config.h"
#include "pipeline/pipe_outputs.h"
#include "pipeline/pipe_run.h"
#include "pipeline/pipe_util.h"

/* The PID the holder wrote into the lock file, or -1. The holder writes it right after taking
   the lock: a run that loses the race may read an empty file for a moment, so it retries briefly. */
static long holder_pid(int fd) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    char buf[32];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n > 0) {
      buf[n] = '\0';
      char *end = NULL;
      long pid = strtol(buf, &end, 10);
      if (end != buf && pid > 0) return pid;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return -1;
}

static lumen_status refuse_busy(pipe_run *run, int fd) {
  long pid = holder_pid(fd);
  char who[48] = "PID unknown";
  if (pid > 0) snprintf(who, sizeof who, "PID %ld", pid);
  return lumen_fail(run->ctx, LUMEN_ERR_IO,
                    "output folder '%s' is being written by another lumen run (%s); wait for it or choose another "
                    "--out",
                    run->out, who);
}

/* Opens the lock file without following a link or blocking on a FIFO; refuses anything but a
   regular file of one name (a hard link to another file would be truncated). */
static lumen_status open_lock(pipe_run *run, const char *path, int *fd_out, struct stat *fs) {
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0) {
    int e = errno;
    if (e == ELOOP)
      return lumen_fail(run->ctx, LUMEN_ERR_IO,
                        "lock file '%s' is a symbolic link: lumen neither follows nor replaces it; remove it", path);
    return lumen_fail(run->ctx, LUMEN_ERR_IO, "output folder '%s': cannot open the lock file '%s': %s", run->out, path,
                      strerror(e));
  }
  if (fstat(fd, fs) != 0 || !S_ISREG(fs->st_mode) || fs->st_nlink != 1) {
    close(fd);
    return lumen_fail(run->ctx, LUMEN_ERR_IO,
                      "lock file '%s' is not a regular file of its own (a folder, FIFO, device or hard link): lumen "
                      "does not use it; remove it",
                      path);
  }
  *fd_out = fd;
  return LUMEN_OK;
}

/* Test hook, in test builds only (LUMEN_TEST_HOOKS; tests/cli/test_hostile_runs.sh):
   LUMEN_TEST_HOLD_LOCK=PATH makes a run that has just taken its lock create PATH.held and wait (up
   to 60 s) until PATH exists, so that a test can start a second run while the first one certainly
   holds the folder. */
#if !LUMEN_TEST_HOOKS
static void test_hold_hook(void) {}
#else
static void test_hold_hook(void) {
  const char *p = getenv("LUMEN_TEST_HOLD_LOCK");
  if (!p || !*p) return;
  char held[4096];
  snprintf(held, sizeof held, "%s.held", p);
  int fd = open(held, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
  for (int i = 0; i < 6000 && access(p, F_OK) != 0; ++i) {
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}
#endif

lumen_status pipe_lock_out(pipe_run *run) {
  char path[LUMEN_PIPE_PATH_MAX];
  pipe_join(path, sizeof path, run->out, PIPE_LOCK_NAME);
  /* a holder removes the file before it lets go: a run that opened the old file and then got
     the lock holds a file nobody else sees, so it checks the name still leads to its file */
  for (int attempt = 0; attempt < 16; ++attempt) {
    int fd = -1;
    struct stat fs, ps;
    lumen_status st = open_lock(run, path, &fd, &fs);
    if (st != LUMEN_OK) return st;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      if (e == EWOULDBLOCK) st = refuse_busy(run, fd);
      else st = lumen_fail(run->ctx, LUMEN_ERR_IO, "output folder '%s': cannot lock '%s': %s", run->out, path, strerror(e));
      close(fd);
      return st;
    }
    if (lstat(path, &ps) != 0 || ps.st_dev != fs.st_dev || ps.st_ino != fs.st_ino) {
      close(fd);
      continue;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
      int e = errno;
      unlink(path);
      close(fd);
      return lumen_fail(run->ctx, LUMEN_ERR_IO, "output folder '%s': cannot write the lock file '%s': %s", run->out,
                        path, strerror(e));
    }
    run->lock_fd = fd;
    run->locked = 1;
    test_hold_hook();
    return LUMEN_OK;
  }
  return lumen_fail(run->ctx, LUMEN_ERR_IO, "output folder '%s': the lock file '%s' keeps being replaced", run->out,
                    path);
}

void pipe_unlock_out(pipe_run *run) {
  if (!run->locked) return;
  char path[LUMEN_PIPE_PATH_MAX];
  pipe_join(path, sizeof path, run->out, PIPE_LOCK_NAME);
  unlink(path); /* still held: nobody else can be using this file (see pipe_lock_out) */
  close(run->lock_fd);
  run->locked = 0;
  run->lock_fd = -1;
}

/* Removes OUT/NAME (a missing one is fine). */
static lumen_status remove_old(pipe_run *run, const char *name, int *removed) {
  char path[LUMEN_PIPE_PATH_MAX];
  pipe_join(path, sizeof path, run->out, name);
  if (unlink(path) == 0) {
    ++*removed;
    return LUMEN_OK;
  }
  if (errno == ENOENT) return LUMEN_OK;
  return lumen_fail(run->ctx, LUMEN_ERR_IO,
                    "cannot remove the run log '%s' of the earlier run before replacing its outputs: %s", path,
                    strerror(errno));
}

lumen_status pipe_before_write(pipe_run *run) {
  if (run->old_runlog_removed) return LUMEN_OK;
  run->old_runlog_removed = 1;
  if (!run->cfg->overwrite) return LUMEN_OK; /* without --overwrite a run log there was refused at the start */
  char name[300];
  int removed = 0;
  snprintf(name, sizeof name, "%s_runlog.json", run->prefix);
  lumen_status st = remove_old(run, name, &removed);
  snprintf(name, sizeof name, "%s_runlog.txt", run->prefix);
  if (st == LUMEN_OK) st = remove_old(run, name, &removed);
  if (st != LUMEN_OK || !removed) return st;
  /* the removal reaches the disk before any new file does: a power cut cannot bring it back
     beside new maps */
  int dfd = open(run->out, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  lumen_log(run->ctx, LUMEN_LOG_INFO,
            "removed the run log of the earlier run under prefix '%s' in '%s': this run replaces its outputs and "
            "writes a new run log when it completes",
            run->prefix, run->out);
  return LUMEN_OK;
}
