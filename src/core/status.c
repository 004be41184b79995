#include "lumen/status.h"
#include <stddef.h>

/* Each status once: its lumen_status_name and its lumen_status_string. */
static const struct status_names {
  lumen_status status;
  const char *id, *text;
} status_names[] = {
  {LUMEN_OK,                       "ok",                   "success"},
  {LUMEN_ERR_INVALID_ARGUMENT,     "invalid_argument",     "invalid argument"},
  {LUMEN_ERR_OVERFLOW,             "overflow",             "size overflow"},
  {LUMEN_ERR_OUT_OF_MEMORY,        "out_of_memory",        "out of host memory"},
  {LUMEN_ERR_DEVICE_OUT_OF_MEMORY, "device_out_of_memory", "out of device memory"},
  {LUMEN_ERR_NOT_BUILT,            "not_built",            "feature not built into this lumen"},
  {LUMEN_ERR_NO_DEVICE,            "no_device",            "no usable device"},
  {LUMEN_ERR_DEVICE,               "device_error",         "device error"},
  {LUMEN_ERR_UNSUPPORTED,          "unsupported",          "unsupported operation"},
  {LUMEN_ERR_IO,                   "io_error",             "input/output error"},
  {LUMEN_ERR_FORMAT,               "format_error",         "malformed input"},
  {LUMEN_ERR_CANCELLED,            "cancelled",            "cancelled"},
  {LUMEN_ERR_INTERNAL,             "internal_error",       "internal error"},
  {LUMEN_ERR_INVALID_DATA,         "invalid_data",         "invalid input data"},
};
_Static_assert(sizeof status_names / sizeof status_names[0] == LUMEN_STATUS_COUNT, "a row for every status");

/* The row of status, NULL for a value outside the enum. */
static const struct status_names *status_row(lumen_status status) {
  for (size_t i = 0; i < sizeof status_names / sizeof status_names[0]; i++)
    if (status_names[i].status == status) return &status_names[i];
  return NULL;
}

const char *lumen_status_string(lumen_status status) {
  const struct status_names *row = status_row(status);
  return row ? row->text : "unknown status";
}

const char *lumen_status_name(lumen_status status) {
  const struct status_names *row = status_row(status);
  return row ? row->id : "unknown";
}
