/* File-name suffix tests shared by the readers, writers and command-line front ends. */
#include <string.h>
#include "core/internal.h"

int lumen_ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

int lumen_ends_with_nocase(const char *s, const char *lower_suffix) {
  size_t n = strlen(s), m = strlen(lower_suffix);
  if (n < m) return 0;
  for (size_t k = 0; k < m; k++) {
    char a = s[n - m + k];
    if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
    if (a != lower_suffix[k]) return 0;
  }
  return 1;
}
