/* Rows of `lumen backends` for the parts outside the core library: MPI (a module the CLI's
   dist layer loads under mpirun), the Python binding and the MEX files. Part of the command line, not the library (it runs python and octave): the CLI and install.sh (through
   `lumen backends --json`) share this one answer. */
#ifndef LUMEN_CLI_HEALTH_BINDINGS_H
#define LUMEN_CLI_HEALTH_BINDINGS_H

#include "lumen/health.h"

/* have_mpi: 1 when this build has MPI and its module loads (mpi_module: the module's path), -1
   when the module does not load (mpi_module: why), 0 without MPI in the build; exe: the path of
   the running lumen (its PREFIX/share/lumen/bindings.conf, written by install.sh, names the
   venv's python and the MEX folder), or NULL. Appends the rows "mpi", "python", "mex" to rows
   [*count .. capacity) and adds them to *count (as lumen_health_checks, rows past capacity are
   counted, not written). */
void lumen_cli_health_binding_checks(int have_mpi, const char *mpi_module, const char *exe, lumen_check *rows, int capacity, int *count);

#endif
