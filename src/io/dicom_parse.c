/* The structural pre-check of a DICOM file (PS3.5 data element encoding, PS3.10 file format),
   in C, before GDCM sees the file: Debian's GDCM is built with assert() on, so a hostile header
   must be refused here (docs/DICOM.md). Everything is bounds-checked against the bytes in
   memory; nothing is allocated from a size the file gives. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "io/dicom_frame_start.h"
#include "io/dicom_internal.h"

#define MAX_DEPTH 16        /* nested sequences */
#define MAX_FRAMES 1000000  /* NumberOfFrames */
#define UNDEFINED 0xFFFFFFFFu

typedef struct walker {
  lumen_ctx *ctx;
  const char *path;
  const uint8_t *d;
  size_t n;
  int implicit, big;        /* encoding of the data set (the meta group is explicit little endian) */
  lumen_dicom_header *h;
  int have_rows, have_cols, have_bits, have_stored, have_pixrep, have_photo, have_pixel, have_high;
  int have_spacing, have_imager, have_wc, have_ww;
  /* ModalityLUTSequence (0028,3000): walking its items (in_mlut), how many, its one item's values */
  int have_modality_lut, in_mlut, mlut_items, have_lut_desc, have_lut_data;
  uint16_t lut_desc[3];
  size_t lut_data, lut_data_length;
  double imager[2];
  int planar;
  /* functional groups (dicom_frames.c): the top-level sequence being walked (5200,9229 or
     5200,9230), the frame its current item fills, the functional group sequence inside it */
  uint32_t top_seq, group_seq;
  lumen_dicom_frame *frame;
  /* headers only (lumen_dicom_precheck_headers): d holds the first n bytes of a file of file_size;
     the walk stops at a native top-level PixelData, whose value may lie beyond n */
  int headers_only, at_top;
  size_t file_size;
} walker;

typedef struct element {
  uint16_t group, elem;
  char vr[3];
  uint32_t length;          /* UNDEFINED for an undefined length */
  size_t value;             /* offset of the value */
} element;

static uint16_t rd16(const walker *w, size_t at, int big) {
  const uint8_t *p = w->d + at;
  return big ? (uint16_t)(p[0] << 8 | p[1]) : (uint16_t)(p[1] << 8 | p[0]);
}
static uint32_t rd32(const walker *w, size_t at, int big) {
  const uint8_t *p = w->d + at;
  return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
             : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static lumen_status bad(walker *w, size_t at, const char *fmt, const char *detail) {
  return lumen_fail(w->ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': %s (at byte %zu)%s%s", w->path, fmt, at,
                    detail ? ": " : "", detail ? detail : "");
}

/* VRs whose explicit encoding has 2 reserved bytes and a 32-bit length (PS3.5 7.1.2). */
static int long_vr(const char *vr) {
  static const char *const l[] = {"OB", "OD", "OF", "OL", "OV", "OW", "SQ", "SV", "UC", "UN", "UR", "UT", "UV", NULL};
  for (int i = 0; l[i]; i++)
    if (vr[0] == l[i][0] && vr[1] == l[i][1]) return 1;
  return 0;
}

/* Reads the element header at *pos (within [*pos, end)) in the given encoding. */
static lumen_status read_element(walker *w, size_t *pos, size_t end, int implicit, int big, element *e) {
  size_t p = *pos;
  memset(e, 0, sizeof *e);
  if (end - p < 8) return bad(w, p, "truncated element header", NULL);
  e->group = rd16(w, p, big);
  e->elem = rd16(w, p + 2, big);
  e->vr[0] = e->vr[1] = e->vr[2] = 0;
  int is_item = e->group == 0xFFFE;  /* items and delimiters have no VR in any encoding */
  if (implicit || is_item) {
    e->length = rd32(w, p + 4, big);
    p += 8;
  } else {
    e->vr[0] = (char)w->d[p + 4];
    e->vr[1] = (char)w->d[p + 5];
    if (e->vr[0] < 'A' || e->vr[0] > 'Z' || e->vr[1] < 'A' || e->vr[1] > 'Z')
      return bad(w, p + 4, "invalid value representation", NULL);
    if (long_vr(e->vr)) {
      if (end - p < 12) return bad(w, p, "truncated element header", NULL);
      e->length = rd32(w, p + 8, big);
      p += 12;
    } else {
      e->length = rd16(w, p + 6, big);
      p += 8;
    }
  }
  e->value = p;
  size_t room = end - p;
  if (w->headers_only && w->at_top && e->group == 0x7FE0 && e->elem == 0x0010) room = w->file_size - p;
  if (e->length != UNDEFINED && e->length > room) {
    char detail[96];
    snprintf(detail, sizeof detail, "element (%04X,%04X) has length %u, only %zu bytes remain", e->group, e->elem,
             e->length, end - p);
    return bad(w, *pos, "truncated file or wrong length", detail);
  }
  *pos = p;
  return LUMEN_OK;
}

static lumen_status walk_dataset(walker *w, size_t *pos, size_t end, int depth, int in_item_undefined);
static lumen_status check_description(walker *w);

/* The sequences whose values lumen reads: implicit VR names no VR, and a sequence of defined length
   (DCMTK's dcmconv +ti writes them so) is known by its tag alone, as the data dictionary of pydicom
   and DCMTK knows it; the other defined-length elements are skipped whole. */
static int read_sequence_tag(uint32_t tag) {
  return tag == LUMEN_DICOM_SHARED_GROUPS || tag == LUMEN_DICOM_PER_FRAME_GROUPS || tag == 0x00283000u ||
         lumen_dicom_is_frame_group(tag);
}

/* A sequence's value: items until the end (defined length) or the sequence delimiter. */
static lumen_status walk_sequence(walker *w, const element *sq, size_t *pos, size_t end, int depth) {
  if (depth >= MAX_DEPTH) return bad(w, sq->value, "sequences nested too deep", NULL);
  size_t stop = sq->length == UNDEFINED ? end : sq->value + sq->length;
  size_t p = sq->value;
  int implicit = w->implicit || (sq->vr[0] == 'U' && sq->vr[1] == 'N'); /* UN of undefined length: implicit LE */
  int big = (sq->vr[0] == 'U' && sq->vr[1] == 'N') ? 0 : w->big;
  int64_t items = 0;
  while (p < stop) {
    element it;
    size_t at = p;
    lumen_status s = read_element(w, &p, stop, 1, big, &it);
    if (s != LUMEN_OK) return s;
    if (it.group == 0xFFFE && it.elem == 0xE0DD) {  /* sequence delimiter */
      if (sq->length != UNDEFINED) return bad(w, at, "sequence delimiter in a sequence of defined length", NULL);
      *pos = p;
      return LUMEN_OK;
    }
    if (it.group != 0xFFFE || it.elem != 0xE000) return bad(w, at, "expected an item (FFFE,E000) in a sequence", NULL);
    if (depth == 0 && w->in_mlut) w->mlut_items++;
    if (depth == 0 && w->top_seq) {  /* an item of a functional groups sequence: one frame (or the shared values) */
      s = lumen_dicom_frame_item(w->ctx, w->path, w->h, w->top_seq, items++, &w->frame);
      if (s != LUMEN_OK) return s;
    }
    if (it.length == UNDEFINED) {
      int saved_i = w->implicit, saved_b = w->big;
      w->implicit = implicit;
      w->big = big;
      s = walk_dataset(w, &p, stop, depth + 1, 1);
      w->implicit = saved_i;
      w->big = saved_b;
      if (s != LUMEN_OK) return s;
    } else {
      size_t q = p;
      int saved_i = w->implicit, saved_b = w->big;
      w->implicit = implicit;
      w->big = big;
      s = walk_dataset(w, &q, p + it.length, depth + 1, 0);
      w->implicit = saved_i;
      w->big = saved_b;
      if (s != LUMEN_OK) return s;
      p += it.length;
    }
  }
  if (sq->length == UNDEFINED) return bad(w, sq->value, "sequence without its delimiter (truncated file)", NULL);
  *pos = p;
  return LUMEN_OK;
}

/* ---------------------------------------------------------------- values of the image tags */

static lumen_status us_value(walker *w, const element *e, const char *name, int *out) {
  if (e->length != 2) {
    char detail[96];
    snprintf(detail, sizeof detail, "%s has %u bytes, expected 2 (one US value)", name, e->length);
    return bad(w, e->value, "bad image header", detail);
  }
  *out = rd16(w, e->value, w->big);
  return LUMEN_OK;
}

/* The n-th backslash-separated number of a DS/IS value; 0 when absent or not a finite number. */
static int ds_value(const walker *w, const element *e, int index, double *out) {
  char buf[72];
  const char *v = (const char *)w->d + e->value;
  uint32_t len = e->length;
  int k = 0;
  uint32_t start = 0;
  for (uint32_t i = 0; i <= len; i++) {
    if (i == len || v[i] == '\\') {
      if (k == index) {
        uint32_t m = i - start;
        if (m == 0 || m >= sizeof buf) return 0;
        memcpy(buf, v + start, m);
        buf[m] = 0;
        char *endp;
        double x = strtod(buf, &endp);
        while (*endp == ' ' || *endp == '\0') {
          if (*endp == '\0') return isfinite(x) ? (*out = x, 1) : 0;
          endp++;
        }
        return 0;
      }
      k++;
      start = i + 1;
    }
  }
  return 0;
}

/* A short text value (CS/UI), trailing spaces and NULs removed. */
static void text_value(const walker *w, const element *e, char *out, size_t size) {
  size_t m = e->length < size - 1 ? e->length : size - 1;
  memcpy(out, w->d + e->value, m);
  out[m] = 0;
  while (m > 0 && (out[m - 1] == ' ' || out[m - 1] == 0)) out[--m] = 0;
  size_t s = 0;
  while (out[s] == ' ') s++;
  if (s) memmove(out, out + s, strlen(out + s) + 1);
}

static lumen_status number_field(walker *w, const element *e, const char *name, int index, double *out) {
  if (!ds_value(w, e, index, out)) {
    char text[33], detail[160];  /* the element as written (pydicom's badVR.dcm: NumberOfFrames "1A") */
    size_t m = e->length < sizeof text - 1 ? e->length : sizeof text - 1;
    for (size_t i = 0; i < m; i++) {
      uint8_t c = w->d[e->value + i];
      text[i] = c >= 32 && c < 127 ? (char)c : '?';
    }
    text[m] = 0;
    snprintf(detail, sizeof detail, "%s value %d of '%s' is not a finite number", name, index + 1, text);
    return bad(w, e->value, "bad image header", detail);
  }
  return LUMEN_OK;
}

/* The next item of encapsulated pixel data at *p (what names the data in a message): an item of
   defined length (*done 0), or the sequence delimiter (*done 1); *at is where it starts. */
static lumen_status next_fragment_item(walker *w, size_t *p, size_t end, const char *what, element *it, size_t *at,
                                       int *done) {
  *at = *p;
  lumen_status s = read_element(w, p, end, 1, w->big, it);
  if (s != LUMEN_OK) return s;
  *done = it->group == 0xFFFE && it->elem == 0xE0DD;
  if (!*done && (it->group != 0xFFFE || it->elem != 0xE000 || it->length == UNDEFINED))
    return bad(w, *at, what, "expected an item of defined length");
  return LUMEN_OK;
}

/* The 64-byte RLE header at p (PS3.5 G.5): as many segments as bytes a sample, offsets from 64 in
   increasing order inside the frame's bytes (total: its fragment, or, for a single frame that a
   writer split over several fragments, all of them), unused offsets 0. first: the bytes of the
   header's own fragment (at least 64); hint: appended to a refusal's detail. */
static lumen_status rle_header(walker *w, size_t p, uint32_t first, int64_t total, const char *hint) {
  char detail[320];
  if (first < 64) {
    snprintf(detail, sizeof detail, "fragment shorter than its 64-byte header%s", hint);
    return bad(w, p, "malformed RLE pixel data", detail);
  }
  uint32_t nseg = rd32(w, p, 0);
  uint32_t want = (uint32_t)(w->h->info.bits_allocated / 8);
  if (nseg != want) {
    snprintf(detail, sizeof detail, "%u segments, expected %u for BitsAllocated %d%s", nseg, want,
             w->h->info.bits_allocated, hint);
    return bad(w, p, "malformed RLE pixel data", detail);
  }
  uint32_t prev = 64;
  for (uint32_t k = 0; k < nseg; k++) {
    uint32_t off = rd32(w, p + 4 + 4 * k, 0);
    if (off < prev || (int64_t)off >= total || (k == 0 && off != 64)) {
      snprintf(detail, sizeof detail, "segment offsets out of order or outside the frame's fragments%s", hint);
      return bad(w, p, "malformed RLE pixel data", detail);
    }
    prev = off + 1;
  }
  for (uint32_t k = nseg; k < 15; k++)
    if (rd32(w, p + 4 + 4 * k, 0) != 0) return bad(w, p, "malformed RLE pixel data", "offset of an unused segment");
  return LUMEN_OK;
}

/* Encapsulated pixel data: the basic offset table item, then fragments, then the delimiter. */
static lumen_status walk_fragments(walker *w, const element *px, size_t *pos, size_t end) {
  size_t p = px->value;
  int64_t items = 0, bytes = 0;
  int rle = strcmp(w->h->info.transfer_syntax, "1.2.840.10008.1.2.5") == 0;
  size_t rle_first = 0;
  int64_t started = 0; /* fragments that start a frame (multi-frame JPEG family) */
  for (;;) {
    element it;
    size_t at;
    int done;
    lumen_status s = next_fragment_item(w, &p, end, "malformed encapsulated pixel data", &it, &at, &done);
    if (s != LUMEN_OK) return s;
    if (done) break;
    if (items > 0) {  /* a fragment */
      if (it.length == 0) return bad(w, at, "malformed encapsulated pixel data", "an empty fragment");
      if (rle && w->h->info.frames > 1) {  /* one fragment per frame, each with its header */
        /* DCMTK's dcmcrle --fragment-size splits every frame: its first fragment's offsets run past it */
        s = rle_header(w, p, it.length, it.length,
                       " (or the frames are split over several fragments each, which PS3.5 A.4.2 forbids: lumen "
                       "reads split RLE frames of single-frame images only)");
        if (s != LUMEN_OK) return s;
      } else if (rle && items == 1) {
        if (it.length < 64) return bad(w, at, "malformed RLE pixel data", "fragment shorter than its 64-byte header");
        rle_first = p;  /* a single frame's header: checked against all its fragments below */
      }
      /* the frame header of each frame: one fragment per frame, or a frame's fragments after the one
         with its start marker (dicom_frame_start.h), or every fragment of one frame */
      int64_t frame = items - 1;
      int starts = !rle && w->h->info.frames > 1 ? lumen_dicom_starts_frame(w->h->info.transfer_syntax, w->d + p, it.length) : -1;
      if (starts >= 0) {
        frame = starts ? started++ : started - 1;
        if (started == 0)
          return bad(w, at, "malformed encapsulated pixel data", "the first fragment starts no frame (no start marker)");
      }
      if (w->h->info.frames > 1 && frame >= w->h->info.frames) {
        char detail[120];
        snprintf(detail, sizeof detail, "more %s than frames (%lld)",
                 starts >= 0 ? "frame start markers" : "fragments", (long long)w->h->info.frames);
        return bad(w, at, "malformed encapsulated pixel data", detail);
      }
      if (!rle && starts != 0 && (w->h->info.frames > 1 || frame == 0)) {
        s = lumen_dicom_check_codestream(w->ctx, w->path, w->h, w->d + p, it.length, frame);
        if (s != LUMEN_OK) return s;
      }
      bytes += it.length;
    } else if (it.length % 4 != 0) {
      return bad(w, at, "malformed encapsulated pixel data", "basic offset table length not a multiple of 4");
    }
    items++;
    p += it.length;
  }
  int64_t fragments = items - 1;
  if (fragments < 1) return bad(w, px->value, "malformed encapsulated pixel data", "no fragment");
  if (rle && w->h->info.frames <= 1) {  /* a single frame, possibly split over fragments */
    lumen_status s = rle_header(w, rle_first, 64, bytes, ""); /* the first fragment's 64 bytes: checked above */
    if (s != LUMEN_OK) return s;
    w->h->rle_fragments = fragments;
  } else if (rle && fragments != w->h->info.frames) {
    char detail[96];
    snprintf(detail, sizeof detail, "%lld fragments, expected one per frame (%lld)", (long long)fragments,
             (long long)w->h->info.frames);
    return bad(w, px->value, "malformed RLE pixel data", detail);
  }
  const int64_t found = started > 0 ? started : fragments; /* frames the fragments hold */
  if (found < w->h->info.frames) {
    char detail[120];
    snprintf(detail, sizeof detail, "%lld %s for %lld frames (a missing frame)", (long long)found,
             started > 0 ? "frame start markers" : "fragments", (long long)w->h->info.frames);
    return bad(w, px->value, "malformed encapsulated pixel data", detail);
  }
  w->h->pixel_length = bytes;
  *pos = p;
  return LUMEN_OK;
}

/* A DS value that may be empty (then absent); *present set when given. */
static lumen_status optional_number(walker *w, const element *e, const char *name, double *out, int *present) {
  if (e->length == 0) return LUMEN_OK;
  *present = 1;
  return number_field(w, e, name, 0, out);
}

/* Encapsulated pixel data that is not the image's (inside a sequence): items up to the delimiter. */
static lumen_status skip_fragments(walker *w, const element *px, size_t *pos, size_t end) {
  size_t p = px->value;
  for (;;) {
    element it;
    size_t at;
    int done;
    lumen_status s = next_fragment_item(w, &p, end, "malformed encapsulated pixel data in a sequence", &it, &at, &done);
    if (s != LUMEN_OK) return s;
    if (done) break;
    p += it.length;
  }
  *pos = p;
  return LUMEN_OK;
}

/* A top-level element of the image description: remembers its value. */
static lumen_status take_value(walker *w, const element *e) {
  lumen_dicom_info *in = &w->h->info;
  uint32_t tag = (uint32_t)e->group << 16 | e->elem;
  int v = 0;
  lumen_status s = LUMEN_OK;
  double x = 0;
  switch (tag) {
  case 0x00280010u: s = us_value(w, e, "Rows", &v); in->rows = v; w->have_rows = 1; break;
  case 0x00280011u: s = us_value(w, e, "Columns", &v); in->columns = v; w->have_cols = 1; break;
  case 0x00280002u: s = us_value(w, e, "SamplesPerPixel", &v); in->samples_per_pixel = v; break;
  case 0x00280006u: s = us_value(w, e, "PlanarConfiguration", &v); w->planar = v; break;
  case 0x00280100u: s = us_value(w, e, "BitsAllocated", &v); in->bits_allocated = v; w->have_bits = 1; break;
  case 0x00280101u: s = us_value(w, e, "BitsStored", &v); in->bits_stored = v; w->have_stored = 1; break;
  case 0x00280102u: s = us_value(w, e, "HighBit", &v); in->high_bit = v; w->have_high = 1; break;
  case 0x00280103u:
    s = us_value(w, e, "PixelRepresentation", &v);
    in->pixel_representation = v;
    w->have_pixrep = 1;
    break;
  case 0x00280004u: text_value(w, e, in->photometric, sizeof in->photometric); w->have_photo = 1; break;
  case 0x00080060u: text_value(w, e, in->modality, sizeof in->modality); break;
  case 0x00280008u:
    if (e->length == 0) break;
    s = number_field(w, e, "NumberOfFrames", 0, &x);
    if (s == LUMEN_OK && (x < 1 || x > MAX_FRAMES || x != floor(x)))
      return bad(w, e->value, "bad image header", "NumberOfFrames is not an integer in 1..1000000");
    in->frames = (int64_t)x;
    break;
  case 0x00280030u:  /* PixelSpacing: row spacing (between rows, y) \ column spacing (x) */
    if (e->length == 0) break;
    if ((s = number_field(w, e, "PixelSpacing", 0, &in->spacing[1])) != LUMEN_OK) break;
    if ((s = number_field(w, e, "PixelSpacing", 1, &in->spacing[0])) != LUMEN_OK) break;
    w->have_spacing = 1;
    break;
  case 0x00181164u:
    if (e->length == 0) break;
    if ((s = number_field(w, e, "ImagerPixelSpacing", 0, &w->imager[1])) != LUMEN_OK) break;
    if ((s = number_field(w, e, "ImagerPixelSpacing", 1, &w->imager[0])) != LUMEN_OK) break;
    w->have_imager = 1;
    break;
  case 0x00281050u: s = optional_number(w, e, "WindowCenter", &in->window_center, &w->have_wc); break;
  case 0x00281051u: s = optional_number(w, e, "WindowWidth", &in->window_width, &w->have_ww); break;
  case 0x00281052u: s = optional_number(w, e, "RescaleIntercept", &in->rescale_intercept, &in->has_rescale); break;
  case 0x00281053u: s = optional_number(w, e, "RescaleSlope", &in->rescale_slope, &in->has_rescale); break;
  case 0x00282110u: {  /* LossyImageCompression: "01" once any lossy step touched the pixels */
    char lossy[8];
    text_value(w, e, lossy, sizeof lossy);
    w->h->lossy |= strcmp(lossy, "01") == 0;
    break;
  }
  default: s = lumen_dicom_series_tag(w->ctx, w->path, tag, w->d + e->value, e->length, &w->h->series); break;
  }
  return s;
}

/* A sequence, noting when it is one of the functional groups sequences (top level) or a
   functional group sequence inside one of their items (depth 1), whose values are read. */
static lumen_status walk_group_sequence(walker *w, const element *e, uint32_t tag, size_t *pos, size_t end, int depth) {
  int top = depth == 0 && (tag == LUMEN_DICOM_SHARED_GROUPS || tag == LUMEN_DICOM_PER_FRAME_GROUPS);
  int group = depth == 1 && w->top_seq && w->frame && lumen_dicom_is_frame_group(tag);
  if (top) {
    w->top_seq = tag;
    if (tag == LUMEN_DICOM_PER_FRAME_GROUPS) w->h->enhanced = 1;
  }
  if (group) w->group_seq = tag;
  lumen_status s = walk_sequence(w, e, pos, end, depth);
  if (top) w->top_seq = 0, w->frame = NULL;
  if (group) w->group_seq = 0;
  return s;
}

/* The elements of a data set (top level or an item) in [*pos, end); an item of undefined length
   ends at its delimiter. Top-level tags must ascend (PS3.5 7.1): each image tag comes once, before
   PixelData. Inside sequences the order is not checked; the only values read there are those of
   an enhanced file's functional groups (depth 2: top-level sequence > item > group sequence > item). */
static lumen_status walk_dataset(walker *w, size_t *pos, size_t end, int depth, int in_item_undefined) {
  size_t p = *pos;
  uint32_t last = 0;
  int first = 1;
  while (p < end) {
    element e;
    size_t at = p;
    w->at_top = depth == 0;
    lumen_status s = read_element(w, &p, end, w->implicit, w->big, &e);
    w->at_top = 0;
    if (s != LUMEN_OK) return s;
    uint32_t tag = (uint32_t)e.group << 16 | e.elem;
    if (in_item_undefined && tag == 0xFFFEE00Du) {  /* item delimiter */
      *pos = p;
      return LUMEN_OK;
    }
    if (e.group == 0xFFFE) return bad(w, at, "unexpected item or delimiter tag", NULL);
    if (depth == 0 && !first && tag <= last) {  /* the image description comes once, before PixelData */
      char detail[80];
      snprintf(detail, sizeof detail, "(%04X,%04X) after (%04X,%04X)", e.group, e.elem, last >> 16, last & 0xFFFF);
      return bad(w, at, "data elements out of order or repeated", detail);
    }
    first = 0;
    last = tag;
    if (depth == 0 && e.group == 0x0002) return bad(w, at, "a file meta element inside the data set", NULL);
    int is_sq = (e.vr[0] == 'S' && e.vr[1] == 'Q') || (e.vr[0] == 'U' && e.vr[1] == 'N' && e.length == UNDEFINED) ||
                (w->implicit && e.length != UNDEFINED && read_sequence_tag(tag));
    if (depth == 0 && tag == 0x7FE00010u) {
      if (w->have_pixel) return bad(w, at, "a second PixelData element", NULL);
      w->have_pixel = 1;
      w->h->pixel_offset = (int64_t)e.value;
      s = check_description(w);  /* complete here: it precedes PixelData (tag order) */
      if (s != LUMEN_OK) return s;
      if (e.length == UNDEFINED) {
        if (!w->h->encapsulated) return bad(w, at, "encapsulated pixel data in a native transfer syntax", NULL);
        s = walk_fragments(w, &e, &p, end);
        if (s != LUMEN_OK) return s;
        continue;
      }
      if (w->h->encapsulated) return bad(w, at, "native pixel data in an encapsulated transfer syntax", NULL);
      w->h->pixel_length = e.length;
      w->h->pixel_words = w->big && e.vr[0] == 'O' && e.vr[1] == 'W';
      if (w->headers_only) {  /* the headers are read: what follows is the full read's to check */
        *pos = end;
        return LUMEN_OK;
      }
      p += e.length;
      continue;
    }
    if (depth == 0 && (tag == 0x7FE00008u || tag == 0x7FE00009u))
      return lumen_fail(w->ctx, LUMEN_ERR_UNSUPPORTED,
                        "lumen_dicom_read: '%s': float pixel data (7FE0,%04X) are not supported, expected "
                        "PixelData (7FE0,0010)", w->path, e.elem);
    if (depth > 0 && tag == 0x7FE00010u && e.length == UNDEFINED) {  /* e.g. a compressed icon image */
      s = skip_fragments(w, &e, &p, end);
      if (s != LUMEN_OK) return s;
      continue;
    }
    if (e.length == UNDEFINED || is_sq) {
      if (!is_sq && !(w->implicit && e.length == UNDEFINED))
        return bad(w, at, "undefined length on an element that is not a sequence", NULL);
      int mlut = depth == 0 && tag == 0x00283000u;
      if (mlut && e.length != 0) w->have_modality_lut = 1;
      if (depth == 0) w->in_mlut = mlut;  /* its item's own values only (depth 1), not nested sequences' */
      s = walk_group_sequence(w, &e, tag, &p, end, depth);
      if (depth == 0) w->in_mlut = 0;
      if (s != LUMEN_OK) return s;
      continue;
    }
    if (depth == 0) {
      s = take_value(w, &e);
      if (s != LUMEN_OK) return s;
    } else if (depth == 1 && w->in_mlut && tag == 0x00283002u) {  /* LUTDescriptor: 3 x US/SS */
      if (e.length != 6) return bad(w, at, "bad image header", "LUTDescriptor (0028,3002) is not 3 16-bit values");
      for (int k = 0; k < 3; k++) w->lut_desc[k] = rd16(w, e.value + 2 * (size_t)k, w->big);
      w->have_lut_desc = 1;
    } else if (depth == 1 && w->in_mlut && tag == 0x00283006u) {  /* LUTData: 16-bit words, checked below */
      w->lut_data = e.value;
      w->lut_data_length = e.length;
      w->have_lut_data = 1;
      w->h->mlut_big = w->big;
    } else if (depth == 2 && w->group_seq && w->frame) {  /* a value of a functional group */
      s = lumen_dicom_frame_tag(w->ctx, w->path, w->group_seq, tag, w->d + e.value, e.length, w->big, w->frame);
      if (s != LUMEN_OK) return s;
    }
    p += e.length;
  }
  if (in_item_undefined) return bad(w, p, "item without its delimiter (truncated file)", NULL);
  *pos = p;
  return LUMEN_OK;
}

/* Transfer syntaxes with a decoder here (GDCM on Debian): 0 unknown, 1 native, 2 encapsulated. */
static int syntax_kind(const char *uid, int *implicit, int *big) {
  *implicit = *big = 0;
  if (strcmp(uid, "1.2.840.10008.1.2") == 0) return *implicit = 1, 1;
  if (strcmp(uid, "1.2.840.10008.1.2.1") == 0) return 1;
  if (strcmp(uid, "1.2.840.10008.1.2.2") == 0) return *big = 1, 1;
  static const char *const enc[] = {
      "1.2.840.10008.1.2.5",     /* RLE lossless */
      "1.2.840.10008.1.2.4.50",  /* JPEG baseline */
      "1.2.840.10008.1.2.4.51",  /* JPEG extended */
      "1.2.840.10008.1.2.4.57",  /* JPEG lossless */
      "1.2.840.10008.1.2.4.70",  /* JPEG lossless SV1 */
      "1.2.840.10008.1.2.4.80",  /* JPEG-LS lossless */
      "1.2.840.10008.1.2.4.81",  /* JPEG-LS near-lossless */
      "1.2.840.10008.1.2.4.90",  /* JPEG 2000 lossless */
      "1.2.840.10008.1.2.4.91",  /* JPEG 2000 */
      NULL};
  for (int i = 0; enc[i]; i++)
    if (strcmp(uid, enc[i]) == 0) return 2;
  return 0;
}

/* The image description, complete when PixelData is reached (the tags before it ascend). */
static lumen_status check_description(walker *w) {
  lumen_dicom_info *in = &w->h->info;
  const char *path = w->path;
  lumen_ctx *ctx = w->ctx;
  if (!w->have_rows || !w->have_cols || !w->have_bits || !w->have_photo)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_read: '%s': %s (%s) missing, expected in every image", path,
                      !w->have_rows ? "Rows" : !w->have_cols ? "Columns" : !w->have_bits ? "BitsAllocated"
                                                                                    : "PhotometricInterpretation",
                      !w->have_rows ? "0028,0010" : !w->have_cols ? "0028,0011" : !w->have_bits ? "0028,0100"
                                                                                         : "0028,0004");
  if (in->rows < 1 || in->columns < 1)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': Rows %lld x Columns %lld, expected at least 1",
                      path, (long long)in->rows, (long long)in->columns);
  if (in->samples_per_pixel != 1)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_read: '%s': colour DICOM (%s, SamplesPerPixel %d) is not supported: lumen's image "
                      "operations and pipelines take greyscale images (SamplesPerPixel 1, MONOCHROME1/2); convert it to "
                      "greyscale first", path, in->photometric[0] ? in->photometric : "no PhotometricInterpretation",
                      in->samples_per_pixel);
  if (strcmp(in->photometric, "MONOCHROME1") != 0 && strcmp(in->photometric, "MONOCHROME2") != 0)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_read: '%s': PhotometricInterpretation is '%s' (%s), expected MONOCHROME1 or "
                      "MONOCHROME2: lumen takes greyscale images", path, in->photometric,
                      !strncmp(in->photometric, "PALETTE", 7) ? "a palette colour image" : "colour");
  if (in->bits_allocated != 1 && in->bits_allocated != 8 && in->bits_allocated != 16 && in->bits_allocated != 32)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_read: '%s': BitsAllocated is %d, expected 1, 8, 16 or 32", path, in->bits_allocated);
  /* 1 bit: packed bits (a binary segmentation, an overlay-like mask), native only; unpacked to a byte each */
  if (in->bits_allocated == 1 && w->h->encapsulated)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_read: '%s': BitsAllocated 1 in transfer syntax %s, expected native pixel data", path,
                      in->transfer_syntax);
  if (!w->have_stored) in->bits_stored = in->bits_allocated;
  if (in->bits_stored < 1 || in->bits_stored > in->bits_allocated)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': BitsStored is %d, expected 1..%d (BitsAllocated)",
                      path, in->bits_stored, in->bits_allocated);
  if (!w->have_high) in->high_bit = in->bits_stored - 1;
  if (in->high_bit != in->bits_stored - 1)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED, "lumen_dicom_read: '%s': HighBit is %d, expected %d (BitsStored - 1)",
                      path, in->high_bit, in->bits_stored - 1);
  if (in->pixel_representation != 0 && in->pixel_representation != 1)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': PixelRepresentation is %d, expected 0 or 1", path,
                      in->pixel_representation);
  if (w->h->encapsulated && in->bits_allocated == 32 &&
      strcmp(in->transfer_syntax, "1.2.840.10008.1.2.5") != 0)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_read: '%s': BitsAllocated 32 in transfer syntax %s, expected 8 or 16", path,
                      in->transfer_syntax);
  if (in->frames < 1) in->frames = 1;
  int64_t bytes = 0;
  if (lumen_mul_i64(in->rows, in->columns, &bytes) || lumen_mul_i64(bytes, in->frames, &bytes) ||
      lumen_mul_i64(bytes, lumen_dicom_sample_bytes(in->bits_allocated), &bytes))
    return lumen_fail(ctx, LUMEN_ERR_OVERFLOW, "lumen_dicom_read: '%s': image size overflows", path);
  w->h->decoded_bytes = bytes;
  if (in->has_rescale && !(in->rescale_slope != 0))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': RescaleSlope is 0, expected a non-zero number",
                      path);
  /* A LUT modality transform (pydicom's mlut_18.dcm): one item, LUTDescriptor = entries (0: 65536)
     \ first stored value mapped (signed when the pixels are) \ bits, LUTData 16-bit entries. It
     wins over RescaleSlope/Intercept, as in pydicom's apply_modality_lut. */
  if (w->have_modality_lut) {
    const char *why = w->mlut_items != 1               ? "has not one item"
                      : !w->have_lut_desc || !w->have_lut_data ? "has no LUTDescriptor (0028,3002) or LUTData (0028,3006)"
                      : w->lut_desc[2] < 8 || w->lut_desc[2] > 16 ? "LUTDescriptor's bits are not 8..16"
                                                                  : NULL;
    int64_t entries = w->lut_desc[0] ? w->lut_desc[0] : 65536;
    if (!why && w->lut_data_length < 2 * (uint64_t)entries) why = "LUTData has fewer 16-bit values than LUTDescriptor's entries";
    if (why)
      return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': ModalityLUTSequence (0028,3000) %s", path, why);
    w->h->mlut_entries = entries;
    w->h->mlut_first = in->pixel_representation ? (int64_t)(int16_t)w->lut_desc[1] : (int64_t)w->lut_desc[1];
    w->h->mlut_offset = (int64_t)w->lut_data;
    in->has_rescale = 0;  /* the table is the modality transform: a rescale beside it is neither applied nor reported */
    in->rescale_slope = 1;
    in->rescale_intercept = 0;
  }
  /* PixelSpacing 0\0 (some CR exports, pydicom-data's RG1_*.dcm): "unknown", read as absent (a warning) */
  if (w->have_spacing && in->spacing[0] == 0 && in->spacing[1] == 0) {
    w->have_spacing = 0;
    w->h->zero_spacing = 1;
  }
  if (w->have_spacing) {
    in->spacing_source = "PixelSpacing";
  } else if (w->have_imager) {
    in->spacing[0] = w->imager[0];
    in->spacing[1] = w->imager[1];
    in->spacing_source = "ImagerPixelSpacing";
  }
  if (in->spacing_source && !(in->spacing[0] > 0 && in->spacing[1] > 0))
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': %s is %g\\%g, expected positive numbers (mm)",
                      path, in->spacing_source, in->spacing[1], in->spacing[0]);
  if (!in->spacing_source) in->spacing[0] = in->spacing[1] = 1;
  in->has_window = w->have_wc && w->have_ww;
  return LUMEN_OK;
}

/* After the walk: the pixel data against the description. */
static lumen_status check_pixels(walker *w) {
  lumen_dicom_info *in = &w->h->info;
  const char *path = w->path;
  lumen_ctx *ctx = w->ctx;
  int64_t bytes = w->h->decoded_bytes;
  if (!w->have_pixel)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': no PixelData (7FE0,0010): not an image", path);
  if (in->bits_allocated == 1) bytes = (bytes + 7) / 8;  /* packed: the unpacked size is one byte a pixel */
  if (in->bits_allocated == 1 && w->h->pixel_words) bytes += bytes & 1;  /* whole 16-bit words */
  if (!w->h->encapsulated && w->h->pixel_length < bytes)
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_read: '%s': PixelData has %lld bytes, expected %lld (Rows %lld x Columns %lld x "
                      "NumberOfFrames %lld x BitsAllocated %d / 8, rounded up)",
                      path, (long long)w->h->pixel_length, (long long)bytes, (long long)in->rows,
                      (long long)in->columns, (long long)in->frames, in->bits_allocated);
  return LUMEN_OK;
}

/* The modality LUT of every frame keeps the stored range finite in float32 (a RescaleSlope of 1e308,
   or 32-bit pixels x 1e30, gave an image of infinities with exit 0). */
static lumen_status check_lut_range(lumen_ctx *ctx, const char *path, const lumen_dicom_header *hdr) {
  const lumen_dicom_info *in = &hdr->info;
  int bits = in->bits_stored > 0 && in->bits_stored <= 32 ? in->bits_stored : in->bits_allocated;
  double top = in->pixel_representation ? ldexp(1.0, bits - 1) : ldexp(1.0, bits) - 1;
  int64_t frames = hdr->enhanced ? hdr->n_frames : 1;
  for (int64_t k = 0; k < frames; k++) {
    double slope, intercept;
    lumen_dicom_frame_rescale(hdr, k, &slope, &intercept);
    double most = fabs(slope) * top + fabs(intercept);
    if (!(most <= FLT_MAX))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_read: '%s'%s: RescaleSlope %g and RescaleIntercept %g take the stored values "
                        "(%d bits, up to %g) beyond float32 (%g): a corrupt header?", path,
                        hdr->enhanced ? " (a frame's PixelValueTransformationSequence)" : "", slope, intercept, bits, top,
                        (double)FLT_MAX);
  }
  return LUMEN_OK;
}

/* Philips' precise values, as dcm2niix gives them by default: (stored x RS + RI) / (RS x SS) with
   the MRScaleSlope SS (2005,100E), folded into the modality LUT (classic files; an enhanced file's
   scale lives in private per-frame sequences, not read). */
static void philips_precise(lumen_dicom_header *hdr) {
  lumen_dicom_info *in = &hdr->info;
  lumen_dicom_series_tags *t = &hdr->series;
  if (hdr->enhanced || !t->has_philips_scale || in->rescale_slope == 0) return;
  double d = in->rescale_slope * t->philips_scale_slope;
  in->rescale_intercept /= d;
  in->rescale_slope = 1.0 / t->philips_scale_slope;
  in->has_rescale = 1;
  t->philips_scaled = 1;
}

static lumen_status precheck(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size, size_t file_size,
                             int headers_only, lumen_dicom_header *hdr);

lumen_status lumen_dicom_precheck(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                  lumen_dicom_header *hdr) {
  return precheck(ctx, path, data, size, size, 0, hdr);
}

lumen_status lumen_dicom_precheck_headers(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size,
                                          size_t file_size, lumen_dicom_header *hdr) {
  if (size > file_size) size = file_size;
  return precheck(ctx, path, data, size, file_size, 1, hdr);
}

static lumen_status precheck(lumen_ctx *ctx, const char *path, const uint8_t *data, size_t size, size_t file_size,
                             int headers_only, lumen_dicom_header *hdr) {
  memset(hdr, 0, sizeof *hdr);
  walker w;
  memset(&w, 0, sizeof w);
  w.ctx = ctx;
  w.path = path;
  w.d = data;
  w.n = size;
  w.h = hdr;
  w.headers_only = headers_only;
  w.file_size = file_size;
  hdr->info.samples_per_pixel = 1;
  hdr->info.rescale_slope = 1;
  /* the file meta group (explicit VR little endian, group 0002) after the preamble; a bare data set
     (no preamble, no "DICM", perhaps a meta group at byte 0: older exports, ACR-NEMA style) is
     read from byte 0, its transfer syntax guessed below when no meta group names it */
  size_t p = 132;
  if (size < 132 || memcmp(data + 128, "DICM", 4) != 0) {
    if (!lumen_dicom_bare_dataset(data, size))
      return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                        "lumen_dicom_read: '%s' is not a DICOM file (no \"DICM\" at byte 128 of the Part 10 format, "
                        "nor a data set from byte 0)", path);
    p = 0;
    hdr->bare = 1;
  }
  uint32_t last = 0;
  while (p + 8 <= size && rd16(&w, p, 0) == 0x0002) {
    element e;
    size_t at = p;
    lumen_status s = read_element(&w, &p, size, 0, 0, &e);
    if (s != LUMEN_OK) return s;
    uint32_t tag = (uint32_t)e.group << 16 | e.elem;
    if (e.length == UNDEFINED) return bad(&w, at, "undefined length in the file meta group", NULL);
    if (tag <= last && last) return bad(&w, at, "file meta elements out of order or repeated", NULL);
    last = tag;
    if (tag == 0x00020010u) text_value(&w, &e, hdr->info.transfer_syntax, sizeof hdr->info.transfer_syntax);
    p += e.length;
  }
  if (!hdr->info.transfer_syntax[0] && size - p >= 8) {
    /* no TransferSyntaxUID (pydicom's meta_missing_tsyntax.dcm, bare data sets): the first element
       tells the native syntax, as pydicom and dcm2niix guess it (load() logs the guess) */
    const uint8_t *d = data + p;
    int vr = d[4] >= 'A' && d[4] <= 'Z' && d[5] >= 'A' && d[5] <= 'Z';
    const char *uid = (d[0] | d[1] << 8) != 0x0008 && (d[0] << 8 | d[1]) == 0x0008 && vr ? "1.2.840.10008.1.2.2"
                      : vr                                                         ? "1.2.840.10008.1.2.1"
                                                                                   : "1.2.840.10008.1.2";
    snprintf(hdr->info.transfer_syntax, sizeof hdr->info.transfer_syntax, "%s", uid);
    hdr->syntax_guessed = 1;
  }
  if (!hdr->info.transfer_syntax[0])
    return lumen_fail(ctx, LUMEN_ERR_FORMAT,
                      "lumen_dicom_read: '%s': no TransferSyntaxUID (0002,0010) in the file meta group", path);
  int kind = syntax_kind(hdr->info.transfer_syntax, &w.implicit, &w.big);
  if (!kind)
    return lumen_fail(ctx, LUMEN_ERR_UNSUPPORTED,
                      "lumen_dicom_read: '%s': TransferSyntaxUID %s is not supported, expected native "
                      "(1.2.840.10008.1.2, .1.2.1, .1.2.2), deflated (.1.2.1.99), RLE, JPEG, JPEG-LS or JPEG 2000 "
                      "(docs/DICOM.md)",
                      path, hdr->info.transfer_syntax);
  hdr->encapsulated = kind == 2;
  hdr->big_endian = w.big;
  /* A data set written implicit VR under an explicit-VR transfer syntax (some secondary captures,
     e.g. pydicom's SC_rgb_jpeg.dcm): where the first element's VR bytes are no VR and its implicit
     length fits, the data set is read implicit, as pydicom and DCMTK read it. */
  if (!w.implicit && !w.big && size - p >= 8) {
    const uint8_t *v = w.d + p + 4;
    uint32_t len = (uint32_t)w.d[p + 4] | (uint32_t)w.d[p + 5] << 8 | (uint32_t)w.d[p + 6] << 16 | (uint32_t)w.d[p + 7] << 24;
    if ((v[0] < 'A' || v[0] > 'Z' || v[1] < 'A' || v[1] > 'Z') && (len == UNDEFINED || len <= size - p - 8))
      w.implicit = 1;
  }
  lumen_status s = walk_dataset(&w, &p, size, 0, 0);
  if (s == LUMEN_OK && headers_only && (!w.have_pixel || hdr->encapsulated))  /* not reached, or fragments */
    s = lumen_fail(ctx, LUMEN_ERR_FORMAT, "lumen_dicom_read: '%s': the headers end past the first %zu bytes", path, size);
  if (s == LUMEN_OK) s = check_pixels(&w);
  if (s == LUMEN_OK) s = lumen_dicom_frames_finish(ctx, path, hdr);
  if (s == LUMEN_OK) philips_precise(hdr);
  if (s == LUMEN_OK) s = check_lut_range(ctx, path, hdr);
  if (s != LUMEN_OK) lumen_dicom_header_free(hdr);
  return s;
}
