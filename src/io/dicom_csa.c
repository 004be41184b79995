/* Siemens' CSA image header (private tag (0029,1010), creator "SIEMENS CSA HEADER"): a list of
   named items, each a list of text values. lumen takes two: NumberOfImagesInMosaic (the slices of
   a mosaic) and SliceNormalVector (the direction in which a mosaic's slices follow each other,
   which the image orientation's cross product gives only up to its sign). The layout ("SV10"
   form, or the older one without the signature): a header, then per item a 64-byte name, VM,
   VR, a type and the item count, then each value as 4 integers (the second its length) and its
   bytes padded to 4. Every length is checked against the value; anything unexpected stops the
   walk and leaves the tags unset. */
#include <stdlib.h>
#include <string.h>
#include "io/dicom_internal.h"

#define CSA_MAX_ITEMS 512
#define CSA_MAX_VALUES 512

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

/* The value's text as a number (a value is a NUL-padded decimal string). */
static int csa_number(const uint8_t *v, uint32_t len, double *out) {
  char buf[64];
  uint32_t m = 0;
  for (uint32_t i = 0; i < len && v[i] && m + 1 < sizeof buf; i++) buf[m++] = (char)v[i];
  buf[m] = 0;
  return lumen_dicom_numbers((const uint8_t *)buf, m, out, 1) == 1;
}

void lumen_dicom_csa_image(const uint8_t *v, uint32_t len, lumen_dicom_series_tags *t) {
  size_t pos = 0;
  if (len >= 16 && !memcmp(v, "SV10", 4)) pos = 8;
  if (len < pos + 8) return;
  uint32_t items = le32(v + pos);
  pos += 8;
  if (items == 0 || items > CSA_MAX_ITEMS) return;
  double normal[3];
  int have_normal = 0;
  for (uint32_t i = 0; i < items; i++) {
    if (len - pos < 84) return;
    char name[65];
    memcpy(name, v + pos, 64);
    name[64] = 0;
    uint32_t values = le32(v + pos + 76);
    pos += 84;
    if (values > CSA_MAX_VALUES) return;
    for (uint32_t k = 0; k < values; k++) {
      if (len - pos < 16) return;
      uint32_t n = le32(v + pos + 4);
      pos += 16;
      uint64_t padded = ((uint64_t)n + 3u) & ~(uint64_t)3u;
      if (padded > len - pos) return;
      double x;
      if (n > 0 && !strcmp(name, "SliceNormalVector") && k < 3 && csa_number(v + pos, n, &x)) {
        normal[k] = x;
        have_normal |= 1 << k;
      }
      if (n > 0 && k == 0 && !strcmp(name, "NumberOfImagesInMosaic") && csa_number(v + pos, n, &x) && x >= 1 &&
          x <= 65535 && !t->mosaic_images)
        t->mosaic_images = (int)x;
      pos += (size_t)padded;
    }
  }
  if (have_normal == 7) {
    memcpy(t->csa_normal, normal, sizeof normal);
    t->has_csa_normal = 1;
  }
}
