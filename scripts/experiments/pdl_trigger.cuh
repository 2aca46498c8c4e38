// When should a decode step's kernel let its successor launch, and should its weights be streamed
// so that the L2 keeps what the successor prefetched (scripts/experiments/pdl_trigger.py)?
// boundary_cost.cuh's "pdl wait" kernels (each lets its successor launch first thing, and the
// successor asks the L2 for its first weights at once) took 53 us a layer against 48.7 launched
// plainly: the successor's prefetch then runs while the predecessor still has most of its stream
// to go, which may evict it before use.
//
//   PREFETCH  ask the L2 for the block's first weights (pdl.cuh's budget) before the wait
//   TRIGGER   grid_dependents_launch: 0 first thing, 1 half way through the block's region, 2 at its end
//   EVICT     0 plain loads; 1 the weights streamed with an L2 evict-first policy
#include "pdl.cuh"

template <int EVICT>
__device__ __forceinline__ uint4 ld_weights(const uint4* p, unsigned long long policy) {
  uint4 v;
  if (EVICT) {
    asm volatile("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0,%1,%2,%3}, [%4], %5;"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
  } else {
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  }
  return v;
}

template <int PREFETCH, int TRIGGER, int EVICT, int UNROLL>
__global__ void layer_stream2(const uint4* __restrict__ src, long long n16, const unsigned* prev, unsigned* mine) {
  using namespace autosched_pdl;
  const long long per = (n16 + gridDim.x - 1) / gridDim.x;
  const long long lo = blockIdx.x * per, hi = min(n16, lo + per);
  if (PREFETCH) prefetch_l2(src + lo, (hi - lo) * 16, threadIdx.x, blockDim.x, gridDim.x);
  if (TRIGGER == 0) grid_dependents_launch();
  grid_dependency_wait();
  unsigned long long policy = 0;
  if (EVICT) asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  unsigned acc = __ldcg(prev + (blockIdx.x & 31));
  const long long mid = lo + (hi - lo) / 2;
  bool fired = TRIGGER != 1;
  long long i = lo + threadIdx.x;
  for (; i + (UNROLL - 1) * blockDim.x < hi; i += UNROLL * blockDim.x) {
    if (!fired && i >= mid) {
      grid_dependents_launch();
      fired = true;
    }
    uint4 v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) v[u] = ld_weights<EVICT>(src + i + u * blockDim.x, policy);
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  for (; i < hi; i += blockDim.x) {
    const uint4 v = ld_weights<EVICT>(src + i, policy);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (TRIGGER != 0) grid_dependents_launch();   // a no-op where it already fired
  if (threadIdx.x == 0) mine[blockIdx.x & 31] = acc;
}
