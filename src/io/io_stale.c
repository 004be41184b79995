/* Removing the temporaries of killed runs. The atomic writer names its temporary
 * ".NAME.tmp-PID-TAG" beside NAME; a process killed with SIGKILL (or a power cut) cannot remove
 * it. The next run into that folder removes those whose PID is no longer a running process. A
 * live PID (even a reused one) keeps its file: removing too little is harmless, too much is not. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/io_internal.h"

/* PID of a ".NAME.tmp-PID-TAG" entry, or -1 when the name is not one of ours. */
static long temporary_owner(const char *name) {
  if (name[0] != '.') return -1;
  const char *t = NULL;
  for (const char *p = strstr(name, ".tmp-"); p; p = strstr(p + 1, ".tmp-")) t = p;  /* the last one */
  if (!t || t == name) return -1;
  const char *d = t + 5;
  char *end = NULL;
  errno = 0;
  long pid = strtol(d, &end, 10);
  if (errno || end == d || *end != '-' || end[1] == '\0' || pid <= 0) return -1;
  for (const char *q = end + 1; *q; ++q)
    if (!((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'f'))) return -1;
  return pid;
}

int lumen_io_remove_stale_temporaries(const char *dir) {
  DIR *d = opendir(dir && *dir ? dir : ".");
  if (!d) return 0;
  int removed = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    long pid = temporary_owner(e->d_name);
    if (pid < 0 || pid == (long)getpid()) continue;
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;  /* alive, or not ours to judge */
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : ".", e->d_name) >= (int)sizeof path) continue;
    struct stat st;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;  /* never a link, folder or device */
    if (unlink(path) == 0) ++removed;
  }
  closedir(d);
  return removed;
}
