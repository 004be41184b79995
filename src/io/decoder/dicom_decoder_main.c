/* lumen-dicom-decoder: decodes one compressed DICOM pixel data element with GDCM's codecs in a
   process of its own, for a caller with several threads (src/io/dicom_isolate.c; the request
   layout is dicom_internal.h's lumen_dicom_decode_request). A decoder that aborts ends this
   process only. Not meant to be run by hand: it reads the request from descriptor 3. */
#define _DEFAULT_SOURCE 1
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "io/dicom_internal.h"
#include "lumen_build_config.h"

enum { DECODED = 0, USAGE = 2, REFUSED = 3 };

static int refuse(lumen_dicom_decode_request *rq, const char *why) {
  snprintf(rq->msg, sizeof rq->msg, "%s", why);
  return REFUSED;
}

int main(int argc, char **argv) {
  (void)argv;
  struct stat st;
  if (argc != 1 || fstat(LUMEN_DECODER_FD, &st) != 0 || !S_ISREG(st.st_mode) ||
      (size_t)st.st_size < sizeof(lumen_dicom_decode_request)) {
    fprintf(stderr, "lumen-dicom-decoder: a helper of lumen's DICOM reader, started by lumen itself\n");
    return USAGE;
  }
  size_t bytes = (size_t)st.st_size;
  void *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, LUMEN_DECODER_FD, 0);
  if (map == MAP_FAILED) return USAGE;
  lumen_dicom_decode_request *rq = map;
  if (rq->magic != LUMEN_DECODER_MAGIC || rq->header_bytes != sizeof *rq) return USAGE;
  /* every range inside the mapping before anything is read through it */
  if (rq->data_offset < (int64_t)sizeof *rq || rq->data_size < 0 || rq->pixels_size < 0 ||
      rq->data_offset > (int64_t)bytes - rq->data_size || rq->pixels_offset < rq->data_offset + rq->data_size ||
      rq->pixels_offset > (int64_t)bytes - rq->pixels_size || rq->pixel_offset < 0 || rq->pixel_offset > rq->data_size)
    return refuse(rq, "malformed request");
  rq->msg[0] = '\0';
  lumen_dicom_limit_cpu(rq->pixels_size);
#if LUMEN_TEST_HOOKS
  /* test builds: a decoder that aborts ("1": every decoder process, "helper": this program only) */
  const char *ab = getenv("LUMEN_TEST_DICOM_CHILD_ABORT");
  if (ab && (!strcmp(ab, "1") || !strcmp(ab, "helper"))) abort();
  if (getenv("LUMEN_TEST_DICOM_CHILD_SPIN")) lumen_dicom_test_spin(); /* ... or never ends */
#endif
  char why[sizeof rq->msg];
  if (!lumen_dicom_gdcm_load(why, sizeof why)) return refuse(rq, why);
  lumen_dicom_header hdr;
  memset(&hdr, 0, sizeof hdr);
  hdr.info = rq->info;
  hdr.info.spacing_source = NULL;
  hdr.encapsulated = 1;
  hdr.pixel_offset = rq->pixel_offset;
  hdr.decoded_bytes = rq->pixels_size;
  const uint8_t *data = (const uint8_t *)map + rq->data_offset;
  char msg[sizeof rq->msg] = "";
  int r = lumen_dicom_gdcm_decode(data, (size_t)rq->data_size, &hdr, (uint8_t *)map + rq->pixels_offset,
                                  (size_t)rq->pixels_size, msg, sizeof msg);
  if (r != 0) return refuse(rq, msg[0] ? msg : "the decoder failed");
  return DECODED;
}
