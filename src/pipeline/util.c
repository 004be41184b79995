/* Pipeline utilities without a run: paths, time, statistics, bolus arrival (checksums: checksum.c). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "io/io_internal.h"
#include "pipeline/pipe_util.h"

/* ------------------------------------------------------------------ paths, time */
double pipe_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lumen_status pipe_mkdir_p(lumen_ctx *ctx, const char *dir) {
  char buf[LUMEN_PIPE_PATH_MAX];
  if (strlen(dir) >= sizeof buf) return lumen_fail(ctx, LUMEN_ERR_INVALID_ARGUMENT, "output folder '%s': path too long", dir);
  snprintf(buf, sizeof buf, "%s", dir);
  for (char *p = buf + 1;; ++p) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      struct stat st;
      if (stat(buf, &st) != 0) {
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
          return lumen_fail(ctx, LUMEN_ERR_IO, "output folder '%s': cannot create '%s': %s", dir, buf, strerror(errno));
      } else if (!S_ISDIR(st.st_mode)) {
        return lumen_fail(ctx, LUMEN_ERR_IO, "output folder '%s': '%s' exists and is not a folder", dir, buf);
      }
      *p = c;
      if (c == '\0') break;
    }
  }
  return LUMEN_OK;
}

lumen_pipe_summary *pipe_summary_start(lumen_pipe_summary *sum, lumen_pipe_summary *dummy) {
  if (!sum) sum = dummy;
  memset(sum, 0, sizeof *sum);
  return sum;
}

void pipe_join(char *buf, size_t size, const char *dir, const char *name) {
  size_t n = strlen(dir);
  snprintf(buf, size, "%s%s%s", dir, (n && dir[n - 1] == '/') ? "" : "/", name);
}

const char *pipe_basename(const char *path) {
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

/* BIDS entities sub-XX and ses-YY of the input's file name, else "lumen". */
void pipe_prefix_from(const char *path, char *out, size_t size) {
  char sub[128] = "", ses[128] = "";
  const char *b = path ? pipe_basename(path) : "";
  for (const char *p = b; *p; ++p) {
    if ((p == b || p[-1] == '_') && (strncmp(p, "sub-", 4) == 0 || strncmp(p, "ses-", 4) == 0)) {
      char *dst = p[1] == 'u' ? sub : ses;
      size_t k = 0;
      while (p[k] && p[k] != '_' && p[k] != '.' && k + 1 < 128) { dst[k] = p[k]; ++k; }
      dst[k] = '\0';
    }
  }
  if (sub[0] && ses[0]) snprintf(out, size, "%s_%s", sub, ses);
  else if (sub[0]) snprintf(out, size, "%s", sub);
  else if (ses[0]) snprintf(out, size, "%s", ses);
  else snprintf(out, size, "lumen");
}

int pipe_file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double pipe_median(double *v, int64_t n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double pipe_percentile(double *v, int64_t n, double p) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  double pos = p / 100.0 * (double)(n - 1);
  int64_t i = (int64_t)floor(pos);
  if (i >= n - 1) return v[n - 1];
  double f = pos - (double)i;
  return v[i] * (1 - f) + v[i + 1] * f;
}

double lumen_pipe_ccc(const double *a, const double *b, int64_t n) {
  if (!a || !b || n < 2) return NAN;
  double ma = 0, mb = 0;
  for (int64_t i = 0; i < n; ++i) { ma += a[i]; mb += b[i]; }
  ma /= (double)n;
  mb /= (double)n;
  double va = 0, vb = 0, cov = 0;
  for (int64_t i = 0; i < n; ++i) {
    va += (a[i] - ma) * (a[i] - ma);
    vb += (b[i] - mb) * (b[i] - mb);
    cov += (a[i] - ma) * (b[i] - mb);
  }
  va /= (double)n; vb /= (double)n; cov /= (double)n;
  double den = va + vb + (ma - mb) * (ma - mb);
  return den > 0 ? 2 * cov / den : NAN;
}

int64_t pipe_detect_arrival_frac(const double *y, int64_t n, int64_t b0, int64_t b1, double frac) {
  if (!y || n < 3) return -1;
  if (b0 < 0) b0 = 0;
  if (b1 <= b0 || b1 > n) b1 = b0 + 1;
  double m = 0, s = 0;
  for (int64_t i = b0; i < b1; ++i) m += y[i];
  m /= (double)(b1 - b0);
  for (int64_t i = b0; i < b1; ++i) s += (y[i] - m) * (y[i] - m);
  s = b1 - b0 > 1 ? sqrt(s / (double)(b1 - b0 - 1)) : 0;
  double peak = -INFINITY;
  for (int64_t i = 0; i < n; ++i) if (isfinite(y[i]) && y[i] > peak) peak = y[i];
  double thr = fmax(4 * s, frac * (peak - m));
  if (!(thr > 0)) return -1;
  for (int64_t i = b0; i < n; ++i)
    if (isfinite(y[i]) && y[i] - m > thr) return i > 0 ? i - 1 : 0;
  return -1;
}

int64_t lumen_pipe_detect_arrival(const double *y, int64_t n, int64_t b0, int64_t b1) {
  return pipe_detect_arrival_frac(y, n, b0, b1, 0.02);
}
