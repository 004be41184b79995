#include "lumen/status.h"

static const char *const status_text[LUMEN_STATUS_COUNT] = {
  [LUMEN_OK] = "success",
  [LUMEN_ERR_INVALID_ARGUMENT] = "invalid argument",
  [LUMEN_ERR_OVERFLOW] = "size overflow",
  [LUMEN_ERR_OUT_OF_MEMORY] = "out of host memory",
  [LUMEN_ERR_DEVICE_OUT_OF_MEMORY] = "out of device memory",
  [LUMEN_ERR_NOT_BUILT] = "feature not built into this lumen",
  [LUMEN_ERR_NO_DEVICE] = "no usable device",
  [LUMEN_ERR_DEVICE] = "device error",
  [LUMEN_ERR_UNSUPPORTED] = "unsupported operation",
  [LUMEN_ERR_IO] = "input/output error",
  [LUMEN_ERR_FORMAT] = "malformed input",
  [LUMEN_ERR_CANCELLED] = "cancelled",
  [LUMEN_ERR_INTERNAL] = "internal error",
  [LUMEN_ERR_INVALID_DATA] = "invalid input data",
};

static const char *const status_id[LUMEN_STATUS_COUNT] = {
  [LUMEN_OK] = "ok",
  [LUMEN_ERR_INVALID_ARGUMENT] = "invalid_argument",
  [LUMEN_ERR_OVERFLOW] = "overflow",
  [LUMEN_ERR_OUT_OF_MEMORY] = "out_of_memory",
  [LUMEN_ERR_DEVICE_OUT_OF_MEMORY] = "device_out_of_memory",
  [LUMEN_ERR_NOT_BUILT] = "not_built",
  [LUMEN_ERR_NO_DEVICE] = "no_device",
  [LUMEN_ERR_DEVICE] = "device_error",
  [LUMEN_ERR_UNSUPPORTED] = "unsupported",
  [LUMEN_ERR_IO] = "io_error",
  [LUMEN_ERR_FORMAT] = "format_error",
  [LUMEN_ERR_CANCELLED] = "cancelled",
  [LUMEN_ERR_INTERNAL] = "internal_error",
  [LUMEN_ERR_INVALID_DATA] = "invalid_data",
};

const char *lumen_status_string(lumen_status status) {
  if ((int)status < 0 || status >= LUMEN_STATUS_COUNT) return "unknown status";
  return status_text[status];
}

const char *lumen_status_name(lumen_status status) {
  if ((int)status < 0 || status >= LUMEN_STATUS_COUNT) return "unknown";
  return status_id[status];
}
