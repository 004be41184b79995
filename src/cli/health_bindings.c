/* The mpi, python and mex rows of `lumen backends` (health_bindings.h). The bindings are looked
   for where install.sh put them: PREFIX/share/lumen/bindings.conf next to the running lumen
   ("python=PATH" and "mex=DIR" lines); without it, python3 and Octave's path as they are. */
#define _POSIX_C_SOURCE 200809L /* popen */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/health_bindings.h"
#include "diag/check_rows.h"

enum { CONF_MAX = 1024 };

typedef struct bindings_conf {
  char python[CONF_MAX], mex[CONF_MAX], file[CONF_MAX + 32];
} bindings_conf;

/* Runs a short shell command and keeps the first line it prints; returns its exit status
   (-1 when it could not run). */
static int probe_command(const char *cmd, char *line, size_t size) {
  line[0] = '\0';
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  if (fgets(line, (int)size, p)) line[strcspn(line, "\n")] = '\0';
  char rest[256];
  while (fgets(rest, sizeof rest, p)) {
  }
  return pclose(p);
}

/* a path safe to put inside single (shell) or double (Octave) quotes */
static int plain_path(const char *p) { return p[0] && !strpbrk(p, "'\"\\`$\n"); }

/* PREFIX/share/lumen/bindings.conf for exe = PREFIX/bin/lumen */
static void read_conf(const char *exe, bindings_conf *c) {
  memset(c, 0, sizeof *c);
  if (!exe) return;
  char dir[CONF_MAX];
  snprintf(dir, sizeof dir, "%s", exe);
  for (int up = 0; up < 2; ++up) {
    char *s = strrchr(dir, '/');
    if (!s) return;
    *s = '\0';
  }
  snprintf(c->file, sizeof c->file, "%s/share/lumen/bindings.conf", dir);
  FILE *f = fopen(c->file, "r");
  if (!f) { c->file[0] = '\0'; return; }
  char line[CONF_MAX + 16];
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = '\0';
    if (!strncmp(line, "python=", 7)) snprintf(c->python, sizeof c->python, "%.1000s", line + 7);
    else if (!strncmp(line, "mex=", 4)) snprintf(c->mex, sizeof c->mex, "%.1000s", line + 4);
  }
  fclose(f);
}

static void check_mpi(int have_mpi, const char *module, lumen_check *rows, int capacity, int *count) {
  if (!have_mpi) {
    lumen_check_append(rows, capacity, count, "mpi", LUMEN_CHECK_SKIP,
                       "this build has no MPI (rebuild with libopenmpi-dev installed, CMake option LUMEN_MPI=ON)");
    return;
  }
  if (have_mpi < 0) {
    lumen_check_append(rows, capacity, count, "mpi", LUMEN_CHECK_FAIL, "built with MPI, but %.900s", module);
    return;
  }
  char line[512];
  int st = probe_command("command -v mpirun 2>/dev/null", line, sizeof line);
  lumen_check_append(rows, capacity, count, "mpi", LUMEN_CHECK_PASS,
                     "built with MPI (module %.600s): 'mpirun -np N lumen batch|dce' splits the work%s%s", module,
                     st == 0 && line[0] ? "; mpirun at " : "; mpirun is not on PATH", st == 0 ? line : "");
}

static void check_python(const bindings_conf *c, lumen_check *rows, int capacity, int *count) {
  const char *py = c->python[0] ? c->python : "python3";
  if (!plain_path(py)) {
    lumen_check_append(rows, capacity, count, "python", LUMEN_CHECK_FAIL, "%s: python=%.200s has quote characters",
                       c->file, py);
    return;
  }
  char cmd[CONF_MAX + 128], line[LUMEN_CHECK_DETAIL_MAX - 120];
  snprintf(cmd, sizeof cmd, "cd / && '%s' -c 'import lumen; print(lumen.__file__)' 2>/dev/null", py);
  int st = probe_command(cmd, line, sizeof line);
  if (st == 0 && line[0])
    lumen_check_append(rows, capacity, count, "python", LUMEN_CHECK_PASS, "%s imports lumen from %s", py, line);
  else if (c->python[0])  /* the installer put it there: it should work */
    lumen_check_append(rows, capacity, count, "python", LUMEN_CHECK_FAIL, "%.150s (from %.150s) cannot import lumen",
                       py, c->file);
  else
    lumen_check_append(rows, capacity, count, "python", LUMEN_CHECK_SKIP,
                       "python3 cannot import the lumen package (install it with ./install.sh, or pip install . at the repository root)");
}

static void check_mex(const bindings_conf *c, lumen_check *rows, int capacity, int *count) {
  char line[LUMEN_CHECK_DETAIL_MAX - 120], cmd[CONF_MAX + 200];
  int st = probe_command("command -v octave-cli 2>/dev/null", line, sizeof line);
  if (st != 0 || !line[0]) {
    lumen_check_append(rows, capacity, count, "mex", LUMEN_CHECK_SKIP,
                       "Octave not found (MATLAB users: build with matlab/build_mex.sh)%s%s",
                       c->mex[0] ? "; MEX folder " : "", c->mex);
    return;
  }
  if (c->mex[0] && !plain_path(c->mex)) {
    lumen_check_append(rows, capacity, count, "mex", LUMEN_CHECK_FAIL, "%s: mex=%.200s has quote characters", c->file,
                       c->mex);
    return;
  }
  char add[CONF_MAX + 16] = "";
  if (c->mex[0]) snprintf(add, sizeof add, "addpath(\"%s\"); ", c->mex);
  snprintf(cmd, sizeof cmd, "cd / && octave-cli --no-gui --norc --quiet --eval '%sdisp(which(\"lumen_fit\"))' 2>/dev/null", add);
  st = probe_command(cmd, line, sizeof line);
  if (st == 0 && line[0])
    lumen_check_append(rows, capacity, count, "mex", LUMEN_CHECK_PASS, "Octave finds lumen_fit at %s", line);
  else if (c->mex[0])
    lumen_check_append(rows, capacity, count, "mex", LUMEN_CHECK_FAIL,
                       "Octave does not find lumen_fit in %.150s (from %.150s)", c->mex, c->file);
  else
    lumen_check_append(rows, capacity, count, "mex", LUMEN_CHECK_SKIP,
                       "Octave is installed but lumen_fit is not on its path (build with matlab/build_mex.sh or ./install.sh)");
}

void lumen_cli_health_binding_checks(int have_mpi, const char *mpi_module, const char *exe, lumen_check *rows, int capacity, int *count) {
  bindings_conf c;
  read_conf(exe, &c);
  check_mpi(have_mpi, mpi_module, rows, capacity, count);
  check_python(&c, rows, capacity, count);
  check_mex(&c, rows, capacity, count);
}
