/* lumen: accelerated medical image computation. Include this one header. */
#ifndef LUMEN_H
#define LUMEN_H
#include "lumen/status.h"
#include "lumen/precision.h"
#include "lumen/context.h"
#include "lumen/device.h"
#include "lumen/image.h"
#include "lumen/filter.h"
#include "lumen/segment.h"
#include "lumen/ops.h"
#include "lumen/batch.h"
#include "lumen/models.h"
#include "lumen/health.h"
#include "lumen/aif.h"
#include "lumen/fit_state.h"
#include "lumen/fit.h"
#endif
