/* Optional parts of lumen built as modules and loaded on first use (core/internal.h): GDCM's
   decoder (liblumen_gdcm.so) and MPI (liblumen_mpi.so). A process that needs neither never loads
   their libraries, whose start-up costs every command (GDCM builds its dictionaries: ~20 ms;
   Open MPI's seven libraries: ~1 ms of dynamic linking), and the helper programs found the same way. */
#define _GNU_SOURCE /* dladdr */
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/internal.h"

/* The folder of the object holding lumen's code (liblumen.so, the lumen program, a helper): its
   length in *dir, 0 when dladdr cannot tell. */
static const char *self_path(int *dir) {
  Dl_info self;
  *dir = 0;
  if (!dladdr((void *)(uintptr_t)self_path, &self) || !self.dli_fname) return NULL;
  const char *slash = strrchr(self.dli_fname, '/');
  if (!slash) return NULL;
  *dir = (int)(slash - self.dli_fname);
  return self.dli_fname;
}

/* dlopen + dlsym of one candidate; the reason of a failure appended to why. */
static void *try_module(const char *path, const char *symbol, int global, char *why, size_t why_size) {
  void *h = dlopen(path, RTLD_NOW | (global ? RTLD_GLOBAL : RTLD_LOCAL));
  const char *err = NULL;
  if (h) {
    void *sym = dlsym(h, symbol);
    if (sym) return sym;
    err = "the entry point is missing";
    dlclose(h);
  } else {
    err = dlerror();
  }
  size_t len = strlen(why);
  if (len + 1 < why_size)
    snprintf(why + len, why_size - len, "%s%s: %s", len ? "; " : "", path, err ? err : "?");
  return NULL;
}

void *lumen_module_load(const char *name, const char *symbol, const char *build_path, int global, char *from,
                        size_t from_size, char *why, size_t why_size) {
  char path[4096];
  void *sym = NULL;
  if (why_size) why[0] = '\0';
  /* beside the object holding this code: liblumen.so (Python, MEX, installs) or the lumen program
     (in the build tree; installed, the program is in PREFIX/bin and the modules in PREFIX/lib) */
  static const char *const beside[] = {"", "../lib/", "../lib64/"};
  int dir = 0;
  const char *self = self_path(&dir);
  for (size_t k = 0; self && !sym && k < sizeof beside / sizeof *beside; k++)
    if (snprintf(path, sizeof path, "%.*s/%s%s", dir, self, beside[k], name) < (int)sizeof path)
      sym = try_module(path, symbol, global, why, why_size);
  if (!sym) snprintf(path, sizeof path, "%s", name);
  if (!sym) sym = try_module(name, symbol, global, why, why_size); /* RUNPATH, LD_LIBRARY_PATH, ldconfig */
  if (!sym && build_path && build_path[0]) {  /* the build tree's: test programs outside it */
    snprintf(path, sizeof path, "%s", build_path);
    sym = try_module(build_path, symbol, global, why, why_size);
  }
  if (sym && from_size) snprintf(from, from_size, "%s", path);
  return sym;
}

int lumen_module_find_program(const char *name, const char *build_path, char *out, size_t size) {
  /* beside liblumen.so (Python's package, PREFIX/lib) or the lumen program (the build tree), or in
     PREFIX/libexec seen from PREFIX/lib or PREFIX/bin */
  static const char *const beside[] = {"", "../libexec/"};
  struct stat st;
  int dir = 0;
  const char *self = self_path(&dir);
  for (size_t k = 0; self && k < sizeof beside / sizeof *beside; k++)
    if (snprintf(out, size, "%.*s/%s%s", dir, self, beside[k], name) < (int)size && stat(out, &st) == 0 &&
        S_ISREG(st.st_mode) && access(out, X_OK) == 0)
      return 1;
  if (build_path && build_path[0] && stat(build_path, &st) == 0 && S_ISREG(st.st_mode) && access(build_path, X_OK) == 0 &&
      snprintf(out, size, "%s", build_path) < (int)size)
    return 1;
  if (size) out[0] = '\0';
  return 0;
}
