/* What an image op holds besides its input and its result while it runs (lumen_dist_op_scratch
   in src/scale/dist_internal.h): the scratch buffers the CPU paths of src/filter and src/segment
   allocate, in quarters of one float32 image of the batch's shape (F) plus MiB per CPU thread,
   keyed by the command-line names. Measured on a 1024 x 1024 float32 image, one image per run
   with 1 and 2 threads (peak RSS less the run on an 8 x 8 image, less input and result; the
   comments give the measured F), rounded up. A CUDA op's scratch lives on the device. */
#include <stdint.h>
#include <string.h>
#include "scale/dist_internal.h"

typedef struct op_scratch {
  const char *cmd, *op;
  int quarters;   /* scratch = quarters / 4 x F */
  int per_thread; /* plus MiB per CPU thread (line and plane buffers) */
} op_scratch;

static const op_scratch table[] = {
  /* separable filters: per-thread rings of filtered rows (and planes in 3-D) */
  {"filter", "gaussian", 0, 1},
  {"filter", "dog", 0, 1},
  {"filter", "convolve", 0, 1},
  {"filter", "log", 4, 1}, /* measured 1.0 F */
  /* the padded image (median: the scratch cache keeps one more after the op) */
  {"filter", "median", 8, 0}, /* 0.9 F */
  {"filter", "erode", 4, 0},  /* 0.9 F */
  {"filter", "dilate", 4, 0},
  {"filter", "open", 8, 0}, /* 1.9 F: a padded image and a temporary */
  {"filter", "close", 8, 0},
  {"filter", "tophat", 8, 0},
  {"filter", "bandpass", 13, 0}, /* 3.1 F: FFT real and complex buffers, the mask */
  {"filter", "sauvola", 20, 0},  /* 4.9 F: three double-precision running sums */
  {"filter", "local_variance", 20, 0},
  {"filter", "variance_binarize", 20, 0},
  {"filter", "fill_holes", 4, 0}, /* a mask and a queue (mostly untouched) */
  {"filter", "label", 9, 0},      /* 2.2 F: labels and sizes */
  {"filter", "largest_component", 9, 0},
  {"filter", "gamma", 0, 0}, /* point ops and statistics: histograms only */
  {"filter", "contrast", 0, 0},
  {"filter", "otsu", 1, 0},
  {"filter", "entropy", 1, 0},
  {"filter", "variance", 1, 0},
  {"filter", "mutual_information", 2, 0},
  {"segment", "febds", 9, 0}, /* 2.0 F: its intermediate images */
  {"segment", "tophat", 8, 0},
  {"segment", "kmeans", 1, 0},
  {"segment", "fcm", 1, 0},
  {"segment", "pfcm", 1, 0},
  {"segment", "breast_mask", 7, 0}, /* 1.6 F */
  {"segment", "window", 0, 0},
  {"segment", "normalize_bits", 0, 0},
  {"segment", "grail", 100, 0}, /* 24.7 F (512 x 512, 2 threads): 18 Gabor responses and temporaries */
  {"segment", "region_grow", 23, 0}, /* 5.6 F: queue and flags */
};

int64_t lumen_dist_op_scratch(const char *cmd, const char *op, int64_t count, int threads) {
  if (count < 0) count = 0;
  if (threads < 1) threads = 1;
  /* A count from a hostile header (0xFFFFFFFF^2 voxels) saturates: 4 * count, quarters (< 256)
     times it and the line buffers (<= 2 F) then all fit in int64_t for the counts below. */
  if (count > INT64_MAX / 1024) return INT64_MAX;
  const int64_t f = 4 * count;
  int quarters = 16, per_thread = 2; /* an op not in the table: 4 F and 2 MiB per thread */
  for (size_t k = 0; cmd && op && k < sizeof table / sizeof table[0]; k++)
    if (strcmp(table[k].cmd, cmd) == 0 && strcmp(table[k].op, op) == 0) {
      quarters = table[k].quarters;
      per_thread = table[k].per_thread;
      break;
    }
  int64_t line = (int64_t)threads * per_thread * 1048576;
  if (line > 2 * f) line = 2 * f; /* no more line buffers than the image */
  return quarters * f / 4 + line;
}

/* a * b, or INT64_MAX when it does not fit (sizes from hostile headers) */
static int64_t mul_sat(int64_t a, int64_t b) {
  if (a <= 0 || b <= 0) return 0;
  return a > INT64_MAX / b ? INT64_MAX : a * b;
}

static int64_t add_sat(int64_t a, int64_t b) {
  return a > INT64_MAX - b ? INT64_MAX : a + b;
}

int64_t lumen_dist_image_voxels(const int64_t dims[4]) {
  return mul_sat(mul_sat(dims[0], dims[1]), mul_sat(dims[2], dims[3]));
}

int lumen_dist_voxel_charge(int elem) {
  return elem + 4 + (elem != 4 ? 4 : 0);
}

int64_t lumen_dist_image_charge(const char *cmd, const char *op, int elem, int64_t count, int threads) {
  return add_sat(mul_sat(lumen_dist_voxel_charge(elem), count), lumen_dist_op_scratch(cmd, op, count, threads));
}
