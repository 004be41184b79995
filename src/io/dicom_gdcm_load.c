/* GDCM's decoder as a module loaded on first use (dicom_internal.h, docs/DICOM.md "Library"):
   liblumen_gdcm.so holds src/io/dicom_gdcm.cpp and the GDCM libraries it needs, so a lumen process
   that decodes no compressed DICOM never loads GDCM (whose libraries build their dictionaries at
   load time: ~20 ms at every start when they were linked in). The fuzz targets link the decoder
   in (LUMEN_GDCM_LINKED). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "core/internal.h"
#include "io/dicom_internal.h"

#ifdef LUMEN_HAVE_DICOM

typedef int (*decode_fn)(const uint8_t *, size_t, const lumen_dicom_header *, void *, size_t, char *, size_t);

#if LUMEN_GDCM_LINKED
int lumen_gdcm_module_decode(const uint8_t *data, size_t size, const lumen_dicom_header *hdr, void *dst,
                             size_t dst_bytes, char *msg, size_t msg_size);
int lumen_dicom_gdcm_load(char *msg, size_t msg_size) {
  (void)msg;
  (void)msg_size;
  return 1;
}
static decode_fn decoder(void) { return lumen_gdcm_module_decode; }
#else

#define MODULE "liblumen_gdcm.so"
#ifndef LUMEN_GDCM_BUILD_MODULE
#define LUMEN_GDCM_BUILD_MODULE NULL
#endif

static pthread_once_t once = PTHREAD_ONCE_INIT;
static decode_fn loaded;
static char why[768], from[4096];

static void load(void) {
  loaded = (decode_fn)(uintptr_t)lumen_module_load(MODULE, "lumen_gdcm_module_decode", LUMEN_GDCM_BUILD_MODULE, 0,
                                                   from, sizeof from, why, sizeof why);
}

int lumen_dicom_gdcm_load(char *msg, size_t msg_size) {
  pthread_once(&once, load);
  if (loaded) return 1;
  if (msg && msg_size) snprintf(msg, msg_size, "lumen's GDCM module (" MODULE ") was not found or did not load: %s", why);
  return 0;
}

static decode_fn decoder(void) { return loaded; }
#endif

int lumen_dicom_gdcm_decode(const uint8_t *data, size_t size, const lumen_dicom_header *hdr, void *dst,
                            size_t dst_bytes, char *msg, size_t msg_size) {
  if (!lumen_dicom_gdcm_load(msg, msg_size)) return -1;
  return decoder()(data, size, hdr, dst, dst_bytes, msg, msg_size);
}

lumen_status lumen_dicom_selftest(lumen_ctx *ctx, char *detail, size_t detail_size) {
  LUMEN_REQUIRE_NOT_NULL(ctx, detail);
  char msg[1024];
  if (!lumen_dicom_gdcm_load(msg, sizeof msg)) {
    snprintf(detail, detail_size, "native DICOM reads; compressed ones cannot: %s", msg);
    return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "DICOM self-test: %s", detail);
  }
#if LUMEN_GDCM_LINKED
  snprintf(detail, detail_size, "GDCM decoder linked in (RLE, JPEG, JPEG-LS, JPEG 2000)");
#else
  snprintf(detail, detail_size, "GDCM decoder module %s (RLE, JPEG, JPEG-LS, JPEG 2000)", from);
#endif
  return LUMEN_OK;
}

#else

lumen_status lumen_dicom_selftest(lumen_ctx *ctx, char *detail, size_t detail_size) {
  LUMEN_REQUIRE_NOT_NULL(ctx, detail);
  snprintf(detail, detail_size, "built without GDCM (libgdcm-dev): DICOM input unavailable");
  return lumen_fail(ctx, LUMEN_ERR_NOT_BUILT, "DICOM self-test: %s", detail);
}

#endif
