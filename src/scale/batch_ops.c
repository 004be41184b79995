/* The library ops of a public image batch by name (src/scale/batch_ops.h): a view of every row of
   the op registry (src/filter/op_table.c) that writes an image, built once. */
#include <pthread.h>
#include <string.h>
#include "scale/batch_ops.h"
#include "filter/op_registry.h"

#define MAX_OPS 128

static lumen_batch_named_op views[MAX_OPS];
static pthread_once_t views_once = PTHREAD_ONCE_INIT;

static void build_views(void) {
  for (int k = 0; k < lumen_op_row_count() && k < MAX_OPS; k++) {
    const lumen_op_row *r = lumen_op_row_at(k);
    if (!r->run || r->info.output == LUMEN_OP_OUTPUT_NONE) continue; /* statistics: no image */
    views[k] = (lumen_batch_named_op){r->info.name, r->info.kind == LUMEN_OP_KIND_SEGMENT ? "segment" : "filter",
                                      r->info.opts_size, r->init, r->run,
                                      r->charge ? r->charge : strcmp(r->info.name, "morphology") ? r->info.name : NULL};
  }
}

const lumen_batch_named_op *lumen_batch_named_op_find(const char *name) {
  int k = lumen_op_row_index(lumen_op_find(name));
  if (k < 0 || k >= MAX_OPS) return NULL;
  pthread_once(&views_once, build_views);
  return views[k].name ? &views[k] : NULL;
}

const char *lumen_batch_named_op_charge_name(const lumen_batch_named_op *op, const void *opts) {
  static const char *const morph[LUMEN_MORPH_COUNT] = {"erode", "dilate", "open", "close", "tophat"};
  if (op->charge) return op->charge;
  const lumen_morph_opts *m = opts; /* the morphology by its op */
  return m && (int)m->op >= 0 && m->op < LUMEN_MORPH_COUNT ? morph[m->op] : "open";
}
