/* lumen_cuda_available: MATLAB / Octave MEX. True when lumen can use a CUDA device.

   [available, reason, device_count] = lumen_cuda_available()
   available     logical: this lumen was built with CUDA and at least one device is usable
   reason        why not (no driver, no device, not built ...), '' when available
   device_count  the number of usable CUDA devices */
#include <stdio.h>
#include "mex.h"
#include "lumen/context.h"
#include "lumen/device.h"

void mexFunction(int nlhs, mxArray *plhs[], int nrhs, const mxArray *prhs[]) {
  (void)prhs;
  if (nrhs != 0) mexErrMsgIdAndTxt("lumen:invalidArgument", "lumen_cuda_available: takes no arguments");
  if (nlhs > 3) mexErrMsgIdAndTxt("lumen:invalidArgument", "lumen_cuda_available: at most 3 outputs");
  lumen_ctx *ctx = NULL;
  if (lumen_ctx_create(&ctx) != LUMEN_OK) mexErrMsgIdAndTxt("lumen:out_of_memory", "lumen_cuda_available: no context");
  int count = 0;
  char reason[512] = "";
  lumen_status st = lumen_cuda_probe(ctx, &count, reason, sizeof reason);
  int ok = st == LUMEN_OK && count > 0;
  if (ok) reason[0] = '\0';
  else count = 0;
  lumen_ctx_destroy(ctx);
  plhs[0] = mxCreateLogicalScalar(ok ? 1 : 0);
  if (nlhs > 1) plhs[1] = mxCreateString(reason);
  if (nlhs > 2) plhs[2] = mxCreateDoubleScalar((double)count);
}
