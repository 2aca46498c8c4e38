// The check of a kernel's output against its float64 reference, on the GPU that holds both: per
// element |out - ref| <= bound, as workloads/sgemm.py's Sgemm.check does on the host (which took
// tens of milliseconds a check at a few million outputs, twice a measurement).
//
// Stats out (zeroed by the caller): [0] outputs off by more than their bound, [1] outputs not
// finite, [2] the largest |out - ref| as the bits of a non-negative double (ordered as integers);
// sums out: [0] sum (out - ref)^2, [1] sum ref^2.  A warp reduces, then one atomic each.
//
// KIND: 0 FP16 outputs, 1 BF16 (uint16 bit patterns), 2 FP32.
//
// The output is n = rows x cols elements, row-major and contiguous; ref and bound are the same rows
// and cols with a row stride of ld >= cols elements: a row family's device copies (measure/worker.py)
// hold a larger problem's products, and a member's are its top-left corner, checked where they lie.

#include <cuda_fp16.h>

template <int KIND>
__device__ __forceinline__ double output_value(const void* out, long long i) {
  if (KIND == 0) return (double)__half2float(static_cast<const __half*>(out)[i]);
  if (KIND == 1) return (double)__uint_as_float((unsigned)static_cast<const unsigned short*>(out)[i] << 16);
  return (double)static_cast<const float*>(out)[i];
}

template <int KIND>
__global__ void __launch_bounds__(256)
check_output(const void* __restrict__ out, const double* __restrict__ ref, const double* __restrict__ bound,
             long long n, long long cols, long long ld, unsigned long long* __restrict__ stats,
             double* __restrict__ sums) {
  unsigned long long bad = 0, nonfinite = 0;
  double max_err = 0.0, d2 = 0.0, r2 = 0.0;
  const long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long j = ld == cols ? i : (i / cols) * ld + i % cols;
    const double o = output_value<KIND>(out, i), r = ref[j];
    if (!isfinite(o)) {
      ++nonfinite;
      continue;
    }
    const double d = o - r, e = fabs(d);
    bad += e > bound[j];
    max_err = fmax(max_err, e);
    d2 = fma(d, d, d2);
    r2 = fma(r, r, r2);
  }
  for (int off = 16; off > 0; off >>= 1) {
    bad += __shfl_xor_sync(0xffffffffu, bad, off);
    nonfinite += __shfl_xor_sync(0xffffffffu, nonfinite, off);
    max_err = fmax(max_err, __shfl_xor_sync(0xffffffffu, max_err, off));
    d2 += __shfl_xor_sync(0xffffffffu, d2, off);
    r2 += __shfl_xor_sync(0xffffffffu, r2, off);
  }
  if ((threadIdx.x & 31) == 0) {
    if (bad) atomicAdd(&stats[0], bad);
    if (nonfinite) atomicAdd(&stats[1], nonfinite);
    atomicMax(&stats[2], (unsigned long long)__double_as_longlong(max_err));
    atomicAdd(&sums[0], d2);
    atomicAdd(&sums[1], r2);
  }
}
