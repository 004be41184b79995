/* lumen: status codes returned by every public function. */
#ifndef LUMEN_STATUS_H
#define LUMEN_STATUS_H
#include "lumen/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every public call returns one of these; detail goes to the context's last-error message. */
typedef enum lumen_status {
  LUMEN_OK = 0,
  LUMEN_ERR_INVALID_ARGUMENT,    /* NULL pointer, bad size, unknown enum value, ... */
  LUMEN_ERR_OVERFLOW,            /* a size product does not fit in int64 / size_t */
  LUMEN_ERR_OUT_OF_MEMORY,       /* host allocation failed */
  LUMEN_ERR_DEVICE_OUT_OF_MEMORY,/* device allocation failed */
  LUMEN_ERR_NOT_BUILT,           /* the feature was not compiled into this build */
  LUMEN_ERR_NO_DEVICE,           /* no usable device (no driver, no GPU, bad index) */
  LUMEN_ERR_DEVICE,              /* a CUDA runtime or driver error */
  LUMEN_ERR_UNSUPPORTED,         /* valid request this operation cannot do */
  LUMEN_ERR_IO,                  /* a file could not be read or written */
  LUMEN_ERR_FORMAT,              /* a file or text has the wrong content */
  LUMEN_ERR_CANCELLED,           /* the progress callback asked to stop */
  LUMEN_ERR_INTERNAL,            /* a bug in lumen: please report */
  LUMEN_ERR_INVALID_DATA,        /* the options are fine but the input's values cannot be used (NaN voxels,
                                    a spacing that turns a kernel in mm into millions of voxels); the
                                    command line exits 1 for it, 2 for LUMEN_ERR_INVALID_ARGUMENT */
  LUMEN_STATUS_COUNT             /* number of codes; not a status */
} lumen_status;

/* Human-readable, never NULL; an unknown value gives "unknown status". */
LUMEN_API const char *lumen_status_string(lumen_status status);
/* Short stable identifier ("ok", "invalid_argument", ...) for logs and JSON. */
LUMEN_API const char *lumen_status_name(lumen_status status);

#ifdef __cplusplus
}
#endif
#endif
