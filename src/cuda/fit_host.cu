// Host side of the CUDA fitting tier: the real lumen_fitcu_ops (src/fit/fit_cuda.h) that the chunk
// loop of src/fit/fit_cuda.c drives. Per device and run: two non-blocking streams, the shared grid
// uploaded once, a workspace per resident thread, and per slot (two, so that the copies of one
// chunk overlap the kernel of the other) pinned staging buffers and device buffers from the
// stream-ordered pool (cudaMallocAsync). Input curves may live in host or device memory.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda/fit_kernel.cuh"

namespace {

const int kBlock = 128;
const size_t kSmemMax = 32 * 1024;

struct Handle {
  int dev = 0, prev_dev = -1;
  lumen_fitcu_problem pb;
  const lumen_fitcu_input *in = nullptr;
  cudaStream_t st[2] = {nullptr, nullptr};
  void *gridmem = nullptr, *work[2] = {nullptr, nullptr};  // one workspace per slot: both kernels may run at once
  int64_t resident = 0;
  int blocks_max = 0;
  size_t smem = 0;
  lumen_fitk_args base;
  size_t elem = 4;           // bytes of one input value
  size_t sol = 4;            // bytes of one solver value
  int data_dev = 0;          // input curves in device memory
  int64_t chunk = 0;
  void *d_data[2] = {nullptr, nullptr}, *d_consts[2] = {nullptr, nullptr};
  lumen_fitcu_row *d_rows[2] = {nullptr, nullptr};
  void *h_data[2] = {nullptr, nullptr}, *h_consts[2] = {nullptr, nullptr};
  lumen_fitcu_row *h_rows[2] = {nullptr, nullptr};
  int64_t first[2] = {0, 0}, count[2] = {0, 0};
  // kernel time: events around each launch, against a reference recorded at open
  cudaEvent_t ev_ref = nullptr, ev_start[2] = {nullptr, nullptr}, ev_stop[2] = {nullptr, nullptr};
  int timed[2] = {0, 0};
  double busy_ms = 0.0, last_end_ms = 0.0;
};

lumen_status cuda_reason(cudaError_t e, const char *what, char *why, size_t why_size) {
  snprintf(why, why_size, "%s: %s (%s)", what, cudaGetErrorName(e), cudaGetErrorString(e));
  cudaGetLastError();
  if (e == cudaErrorMemoryAllocation) return LUMEN_ERR_DEVICE_OUT_OF_MEMORY;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver || e == cudaErrorInvalidDevice)
    return LUMEN_ERR_NO_DEVICE;
  return LUMEN_ERR_DEVICE;
}

int real_count(char *why, size_t why_size) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cuda_reason(e, "CUDA probe", why, why_size);
    return 0;
  }
  if (n == 0) snprintf(why, why_size, "the driver reports 0 devices");
  return n;
}

int real_supports(int dev, const lumen_fitcu_problem *pb, char *why, size_t why_size) {
  if ((lumen_model_flags((lumen_model)pb->model) & LUMEN_MF_AREAS) || !lumen_fitk_built(pb->model)) {
    snprintf(why, why_size, "model %s has no CUDA kernel", lumen_model_name((lumen_model)pb->model));
    return 0;
  }
  cudaDeviceProp prop;
  cudaError_t e = cudaGetDeviceProperties(&prop, dev);
  if (e != cudaSuccess) {
    cuda_reason(e, "device properties", why, why_size);
    return 0;
  }
  if (prop.major * 10 + prop.minor < 75) {
    snprintf(why, why_size, "compute capability %d.%d, lumen's kernels need >= 7.5", prop.major, prop.minor);
    return 0;
  }
  int prev = -1, bps = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(dev);
  e = lumen_fitk_occupancy(pb->model, pb->f64, kBlock, 0, &bps);
  if (prev >= 0) cudaSetDevice(prev);
  if (e != cudaSuccess || bps < 1) {
    if (e != cudaSuccess) cuda_reason(e, "fitting kernel", why, why_size);
    else snprintf(why, why_size, "fitting kernel cannot run (no resident block)");
    return 0;
  }
  return 1;
}

void free_slots(Handle *h) {
  for (int s = 0; s < 2; ++s) {
    if (h->d_data[s]) cudaFreeAsync(h->d_data[s], h->st[s]);
    if (h->d_consts[s]) cudaFreeAsync(h->d_consts[s], h->st[s]);
    if (h->d_rows[s]) cudaFreeAsync(h->d_rows[s], h->st[s]);
    if (h->st[s]) cudaStreamSynchronize(h->st[s]);
    if (h->h_data[s]) cudaFreeHost(h->h_data[s]);
    if (h->h_consts[s]) cudaFreeHost(h->h_consts[s]);
    if (h->h_rows[s]) cudaFreeHost(h->h_rows[s]);
    h->d_data[s] = h->d_consts[s] = h->h_data[s] = h->h_consts[s] = nullptr;
    h->d_rows[s] = h->h_rows[s] = nullptr;
  }
  h->chunk = 0;
}

void real_close(void *handle) {
  Handle *h = (Handle *)handle;
  if (!h) return;
  cudaSetDevice(h->dev);
  free_slots(h);
  if (h->gridmem) cudaFreeAsync(h->gridmem, h->st[0]);
  for (int s = 0; s < 2; ++s)
    if (h->work[s]) cudaFreeAsync(h->work[s], h->st[0]);
  for (int s = 0; s < 2; ++s)
    if (h->st[s]) {
      cudaStreamSynchronize(h->st[s]);
      cudaStreamDestroy(h->st[s]);
    }
  for (int s = 0; s < 2; ++s) {
    if (h->ev_start[s]) cudaEventDestroy(h->ev_start[s]);
    if (h->ev_stop[s]) cudaEventDestroy(h->ev_stop[s]);
  }
  if (h->ev_ref) cudaEventDestroy(h->ev_ref);
  cudaGetLastError();
  if (h->prev_dev >= 0) cudaSetDevice(h->prev_dev);
  delete h;
}

template <typename T, typename G>
void build_grid(const lumen_fitcu_problem *pb, unsigned char *buf, G *g,
                int (*setup)(G *, int, const T *, const T *, T *, T *)) {
  const int n = pb->n;
  T *t = (T *)buf, *dt = t + n, *cp = t + 2 * n, *icp = t + 3 * n, *w = t + 4 * n;
  int dce = lumen_model_is_dce((lumen_model)pb->model);
  for (int i = 0; i < n; ++i) {
    t[i] = (T)pb->t[i];
    cp[i] = pb->cp ? (T)pb->cp[i] : (T)0;
    w[i] = pb->w ? (T)pb->w[i] : (T)1;
  }
  setup(g, n, t, dce ? cp : nullptr, dt, icp);
  g->conv = pb->conv;
  g->tr = (T)pb->tr;
  g->r1 = (T)pb->r1;
  double *w64 = (double *)(buf + (((size_t)n * 5 * sizeof(T) + 15) & ~(size_t)15));
  for (int i = 0; i < n; ++i) w64[i] = pb->w ? pb->w[i] : 1.0;
}

int setup32(lumen_grid_f32 *g, int n, const float *t, const float *cp, float *dt, float *icp) {
  return lumen_grid_setup_f32(g, n, t, cp, dt, icp);
}
int setup64(lumen_grid_f64 *g, int n, const double *t, const double *cp, double *dt, double *icp) {
  return lumen_grid_setup_f64(g, n, t, cp, dt, icp);
}

lumen_status real_open(int dev, const lumen_fitcu_problem *pb, const lumen_fitcu_input *in, void **handle,
                       int64_t *free_bytes, char *why, size_t why_size) {
  *handle = nullptr;
  *free_bytes = 0;
  Handle *h = new Handle();
  h->pb = *pb;
  h->in = in;
  h->dev = dev;
  cudaGetDevice(&h->prev_dev);
  h->elem = in->data_f64 ? sizeof(double) : sizeof(float);
  h->sol = pb->f64 ? sizeof(double) : sizeof(float);
  cudaError_t e = cudaSetDevice(dev);
  lumen_status st = LUMEN_OK;
  char what[96];
  snprintf(what, sizeof what, "cuda:%d", dev);
  for (int s = 0; s < 2 && e == cudaSuccess; ++s) e = cudaStreamCreateWithFlags(&h->st[s], cudaStreamNonBlocking);
  if (e != cudaSuccess) {
    st = cuda_reason(e, what, why, why_size);
    real_close(h);
    return st;
  }
  // the input's location
  cudaPointerAttributes attr;
  if (cudaPointerGetAttributes(&attr, in->data) == cudaSuccess && attr.type == cudaMemoryTypeDevice) h->data_dev = 1;
  cudaGetLastError();
  // the shared grid
  size_t gbytes = lumen_fitk_grid_bytes(pb->n, pb->f64);
  unsigned char *gbuf = (unsigned char *)calloc(1, gbytes);
  if (!gbuf) {
    snprintf(why, why_size, "out of host memory for the grid");
    real_close(h);
    return LUMEN_ERR_OUT_OF_MEMORY;
  }
  memset(&h->base, 0, sizeof h->base);
  if (pb->f64)
    build_grid<double, lumen_grid_f64>(pb, gbuf, &h->base.g64, setup64);
  else
    build_grid<float, lumen_grid_f32>(pb, gbuf, &h->base.g32, setup32);
  e = cudaMallocAsync(&h->gridmem, gbytes, h->st[0]);
  if (e == cudaSuccess) e = cudaMemcpyAsync(h->gridmem, gbuf, gbytes, cudaMemcpyHostToDevice, h->st[0]);
  if (e == cudaSuccess) e = cudaStreamSynchronize(h->st[0]);
  free(gbuf);
  if (e == cudaSuccess) {  // kernel timing is best effort: without events the time reads 0
    bool ok = cudaEventCreate(&h->ev_ref) == cudaSuccess;
    for (int s = 0; s < 2 && ok; ++s)
      ok = cudaEventCreate(&h->ev_start[s]) == cudaSuccess && cudaEventCreate(&h->ev_stop[s]) == cudaSuccess;
    ok = ok && cudaEventRecord(h->ev_ref, h->st[0]) == cudaSuccess;
    if (!ok) {
      for (int s = 0; s < 2; ++s) {
        if (h->ev_start[s]) cudaEventDestroy(h->ev_start[s]);
        if (h->ev_stop[s]) cudaEventDestroy(h->ev_stop[s]);
        h->ev_start[s] = h->ev_stop[s] = nullptr;
      }
      cudaGetLastError();
    }
  }
  if (e != cudaSuccess) {
    st = cuda_reason(e, "grid upload", why, why_size);
    real_close(h);
    return st;
  }
  // launch shape and the per-thread workspaces
  size_t garr = (size_t)pb->n * 5 * h->sol;
  h->base.smem_grid = garr <= kSmemMax;
  h->smem = h->base.smem_grid ? garr : 0;
  int bps = 0, sms = 0;
  e = lumen_fitk_occupancy(pb->model, pb->f64, kBlock, h->smem, &bps);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess || bps < 1) {
    st = e != cudaSuccess ? cuda_reason(e, "kernel occupancy", why, why_size) : LUMEN_ERR_DEVICE;
    if (e == cudaSuccess) snprintf(why, why_size, "fitting kernel has no resident block");
    real_close(h);
    return st;
  }
  h->blocks_max = bps * sms;
  int64_t per = lumen_fitk_work_elems(pb->n, pb->np) * (int64_t)h->sol;
  for (;;) {  // fewer resident threads when the workspace does not fit
    h->resident = (int64_t)h->blocks_max * kBlock;
    e = cudaMallocAsync(&h->work[0], (size_t)(h->resident * per), h->st[0]);
    if (e == cudaSuccess) e = cudaMallocAsync(&h->work[1], (size_t)(h->resident * per), h->st[0]);
    if (e == cudaSuccess) e = cudaStreamSynchronize(h->st[0]);
    if (e == cudaSuccess) break;
    cudaGetLastError();
    for (int s = 0; s < 2; ++s)
      if (h->work[s]) cudaFreeAsync(h->work[s], h->st[0]);
    cudaStreamSynchronize(h->st[0]);
    cudaGetLastError();
    h->work[0] = h->work[1] = nullptr;
    if (e != cudaErrorMemoryAllocation || h->blocks_max <= sms) {
      st = cuda_reason(e, "fitting workspace", why, why_size);
      real_close(h);
      return st;
    }
    h->blocks_max /= 2;
  }
  h->base.pb = *pb;
  h->base.gridmem = h->gridmem;
  h->base.work = nullptr;  // per slot in real_submit
  h->base.work_per_thread = lumen_fitk_work_elems(pb->n, pb->np);
  h->base.data_f64 = in->data_f64;
  size_t fb = 0, tb = 0;
  e = cudaMemGetInfo(&fb, &tb);
  if (e != cudaSuccess) {
    st = cuda_reason(e, "memory info", why, why_size);
    real_close(h);
    return st;
  }
  *free_bytes = (int64_t)fb;
  *handle = h;
  return LUMEN_OK;
}

void real_bytes(void *handle, int64_t *per_curve, int64_t *fixed) {
  Handle *h = (Handle *)handle;
  int64_t one = (int64_t)h->pb.n * (int64_t)h->elem + (h->in->consts ? LUMEN_FIT_NCONSTS * (int64_t)h->elem : 0) +
                (int64_t)sizeof(lumen_fitcu_row);
  *per_curve = 2 * one;
  *fixed = 0;
}

lumen_status real_alloc(void *handle, int64_t chunk, char *why, size_t why_size) {
  Handle *h = (Handle *)handle;
  cudaSetDevice(h->dev);
  free_slots(h);
  size_t nd = (size_t)chunk * (size_t)h->pb.n * h->elem, nc = (size_t)chunk * LUMEN_FIT_NCONSTS * h->elem,
         nr = (size_t)chunk * sizeof(lumen_fitcu_row);
  cudaError_t e = cudaSuccess;
  for (int s = 0; s < 2 && e == cudaSuccess; ++s) {
    e = cudaMallocAsync(&h->d_data[s], nd, h->st[s]);
    if (e == cudaSuccess && h->in->consts) e = cudaMallocAsync(&h->d_consts[s], nc, h->st[s]);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&h->d_rows[s], nr, h->st[s]);
    if (e == cudaSuccess) e = cudaStreamSynchronize(h->st[s]);
    if (e == cudaSuccess && !h->data_dev) e = cudaMallocHost(&h->h_data[s], nd);
    if (e == cudaSuccess && h->in->consts && !h->data_dev) e = cudaMallocHost(&h->h_consts[s], nc);
    if (e == cudaSuccess) e = cudaMallocHost((void **)&h->h_rows[s], nr);
  }
  if (e != cudaSuccess) {
    char what[96];
    snprintf(what, sizeof what, "allocation for a chunk of %lld curves", (long long)chunk);
    cuda_reason(e, what, why, why_size);
    free_slots(h);
    return LUMEN_ERR_DEVICE_OUT_OF_MEMORY;  // every allocation failure halves the chunk
  }
  h->chunk = chunk;
  return LUMEN_OK;
}

lumen_status real_submit(void *handle, int slot, int64_t first, int64_t count, char *why, size_t why_size) {
  Handle *h = (Handle *)handle;
  const lumen_fitcu_input *in = h->in;
  cudaStream_t s = h->st[slot];
  const size_t row = (size_t)h->pb.n * h->elem, crow = LUMEN_FIT_NCONSTS * h->elem;
  const int64_t *list = in->list + first;
  const int contiguous = list[count - 1] - list[0] == count - 1;
  cudaError_t e = cudaSuccess;
  const unsigned char *src = (const unsigned char *)in->data, *csrc = (const unsigned char *)in->consts;
  if (h->data_dev) {  // device (or peer) memory: copy on the device
    if (contiguous) {
      e = cudaMemcpyAsync(h->d_data[slot], src + (size_t)list[0] * row, (size_t)count * row, cudaMemcpyDefault, s);
      if (e == cudaSuccess && csrc)
        e = cudaMemcpyAsync(h->d_consts[slot], csrc + (size_t)list[0] * crow, (size_t)count * crow, cudaMemcpyDefault, s);
    } else {
      for (int64_t i = 0; i < count && e == cudaSuccess; ++i) {
        e = cudaMemcpyAsync((unsigned char *)h->d_data[slot] + (size_t)i * row, src + (size_t)list[i] * row, row,
                            cudaMemcpyDefault, s);
        if (e == cudaSuccess && csrc)
          e = cudaMemcpyAsync((unsigned char *)h->d_consts[slot] + (size_t)i * crow, csrc + (size_t)list[i] * crow,
                              crow, cudaMemcpyDefault, s);
      }
    }
  } else {  // host memory: gather into pinned staging (host threads), then one asynchronous copy
    unsigned char *hd = (unsigned char *)h->h_data[slot], *hc = (unsigned char *)h->h_consts[slot];
    lumen_fitcu_gather(in, first, count, hd, row, csrc ? hc : nullptr, crow);
    e = cudaMemcpyAsync(h->d_data[slot], hd, (size_t)count * row, cudaMemcpyHostToDevice, s);
    if (e == cudaSuccess && csrc) e = cudaMemcpyAsync(h->d_consts[slot], hc, (size_t)count * crow, cudaMemcpyHostToDevice, s);
  }
  if (e != cudaSuccess) return cuda_reason(e, "copy to the device", why, why_size);
  lumen_fitk_args a = h->base;
  a.data = h->d_data[slot];
  a.consts = csrc ? h->d_consts[slot] : nullptr;
  a.rows = h->d_rows[slot];
  a.work = h->work[slot];
  a.count = count;
  int64_t blocks = (count + kBlock - 1) / kBlock;
  if (blocks > h->blocks_max) blocks = h->blocks_max;
  h->timed[slot] = h->ev_start[slot] && cudaEventRecord(h->ev_start[slot], s) == cudaSuccess;
  e = lumen_fitk_launch(&a, (int)blocks, kBlock, h->smem, s);
  if (e != cudaSuccess) return cuda_reason(e, "fitting kernel launch", why, why_size);
  if (h->timed[slot]) h->timed[slot] = cudaEventRecord(h->ev_stop[slot], s) == cudaSuccess;
  e = cudaMemcpyAsync(h->h_rows[slot], h->d_rows[slot], (size_t)count * sizeof(lumen_fitcu_row),
                      cudaMemcpyDeviceToHost, s);
  if (e != cudaSuccess) return cuda_reason(e, "copy of the results", why, why_size);
  h->first[slot] = first;
  h->count[slot] = count;
  return LUMEN_OK;
}

lumen_status real_finish(void *handle, int slot, char *why, size_t why_size) {
  Handle *h = (Handle *)handle;
  cudaError_t e = cudaStreamSynchronize(h->st[slot]);
  int64_t cnt = h->count[slot];
  h->count[slot] = 0;
  if (e != cudaSuccess) return cuda_reason(e, "fitting kernel", why, why_size);
  if (h->timed[slot]) {  // the union of the kernels' intervals (slots overlap; starts come in order)
    float a = 0.f, b = 0.f;
    if (cudaEventElapsedTime(&a, h->ev_ref, h->ev_start[slot]) == cudaSuccess &&
        cudaEventElapsedTime(&b, h->ev_ref, h->ev_stop[slot]) == cudaSuccess) {
      double lo = a > h->last_end_ms ? (double)a : h->last_end_ms;
      if ((double)b > lo) h->busy_ms += (double)b - lo;
      if ((double)b > h->last_end_ms) h->last_end_ms = (double)b;
    }
    h->timed[slot] = 0;
  }
  lumen_fitcu_deliver(h->in, h->first[slot], cnt, h->h_rows[slot]);
  return LUMEN_OK;
}

double real_kernel_seconds(void *handle) { return ((const Handle *)handle)->busy_ms * 1e-3; }

const lumen_fitcu_ops real_ops = {real_count,  real_supports, real_open,           real_bytes, real_alloc,
                                  real_submit, real_finish,   real_kernel_seconds, real_close};

}  // namespace

extern "C" const lumen_fitcu_ops *lumen_fitcu_real_ops(void) { return &real_ops; }

extern "C" int lumen_fitcu_is_device_ptr(const void *p) {
  if (!p) return 0;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return 0;
  }
  cudaPointerAttributes attr;
  cudaError_t e = cudaPointerGetAttributes(&attr, p);
  cudaGetLastError();
  return e == cudaSuccess && attr.type == cudaMemoryTypeDevice;
}

extern "C" lumen_status lumen_fitcu_copy_to_host(void *dst, const void *src, size_t bytes) {
  cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return LUMEN_ERR_DEVICE;
  }
  return LUMEN_OK;
}
