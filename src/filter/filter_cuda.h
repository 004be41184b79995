/* The filter layer's CUDA backend interface: the CUDA implementations of lumen's filter ops
 * (defined in src/cuda/filter_*.cu, which sit above this layer and implement it), registered in the op table of
 * src/filter/dispatch.c when LUMEN_FILTER_CUDA_KERNELS is defined (CUDA builds). Each has the
 * lf_impl signature: the dispatcher has staged call->in[] on call->device and allocated call->out
 * there with alloc_dtype == out_dtype (float32, float16 or bfloat16 for float outputs; uint8 masks).
 * A device failure returns LUMEN_ERR_DEVICE / LUMEN_ERR_DEVICE_OUT_OF_MEMORY (the dispatcher reruns
 * the op on the CPU); a case a kernel does not cover returns LUMEN_ERR_NOT_BUILT with the reason
 * (also a CPU rerun). Labelling and the largest component have no CUDA kernel.
 * docs/GPU.md describes the kernels, their tolerances against the CPU path and their limits. */
#ifndef LUMEN_FILTER_FILTER_CUDA_H
#define LUMEN_FILTER_FILTER_CUDA_H

#include "filter/filter_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

lumen_status lf_cuda_gaussian(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_dog(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_laplace(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_convolve(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_median(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_morphology(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_gamma(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_abs(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_contrast(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_otsu(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_sauvola(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_local_variance(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_variance_binarize(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_entropy(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_mutual_information(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_variance(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_bandpass(lumen_ctx *ctx, lf_call *call);
lumen_status lf_cuda_fill_holes(lumen_ctx *ctx, lf_call *call);

#ifdef __cplusplus
}
#endif
#endif
