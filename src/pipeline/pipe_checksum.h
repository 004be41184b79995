/* Checksums of inputs and outputs (checksum.c): XXH3 64-bit. */
#ifndef LUMEN_PIPE_CHECKSUM_H
#define LUMEN_PIPE_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#include "lumen/status.h"
#include "lumen/context.h"

/* PIPE_CHECKSUM_KEY names the field that holds one in the run log, so that a log or record
   written with the former FNV-1a ("fnv1a64") never reads as matching. */
#define PIPE_CHECKSUM_KEY "xxh3_64"
#define PIPE_CHECKSUM_NAME "XXH3 64-bit (xxHash) over the file bytes, 16 hex digits"
/* Hash of a file's bytes; returns 0 or an errno value (ENOMEM, EIO, or fopen's). Uses no context,
   so any thread may call it; pipe_checksum_report turns the value into the context's error. */
int pipe_checksum_path(const char *path, uint64_t *hash);
lumen_status pipe_checksum_report(lumen_ctx *ctx, const char *path, int err);
uint64_t pipe_checksum_bytes(uint64_t seed, const void *p, size_t n);
void pipe_checksum_hex(uint64_t hash, char hex[17]);

#endif
