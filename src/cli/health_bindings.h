/* Rows of `lumen backends` for the parts outside the core library: MPI (a link of the CLI's
   dist layer), the Python binding and the MEX files. Part of the command line, not the library (it runs python and octave): the CLI and install.sh (through
   `lumen backends --json`) share this one answer. */
#ifndef LUMEN_CLI_HEALTH_BINDINGS_H
#define LUMEN_CLI_HEALTH_BINDINGS_H

#include "lumen/health.h"

/* have_mpi: whether the caller was linked with MPI (lumen_dist_have_mpi()); exe: the path of
   the running lumen (its PREFIX/share/lumen/bindings.conf, written by install.sh, names the
   venv's python and the MEX folder), or NULL. Appends the rows "mpi", "python", "mex" to rows
   [*count .. capacity) and adds them to *count (as lumen_health_checks, rows past capacity are
   counted, not written). */
void lumen_cli_health_binding_checks(int have_mpi, const char *exe, lumen_check *rows, int capacity, int *count);

#endif
