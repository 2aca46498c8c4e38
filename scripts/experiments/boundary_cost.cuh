// How much of a decode layer's time is its kernel boundaries (scripts/experiments/boundary_cost.py)?
// Each kernel stands for one of the layer's matmuls: it reads its own weight-sized buffer once (its
// block a contiguous region, as the q4 GEMV's blocks do) and needs its predecessor's output, a few
// words the predecessor wrote, to finish.
//
//   ORDER 0  wait, then stream: today's kernels (the weights' first bytes asked of the L2 before the
//            wait, PREFETCH_BUDGET of them over the grid, as the q4 GEMV does)
//   ORDER 1  stream, then wait: what a kernel that needs its input only at its end could do, an
//            upper bound for one that takes its input chunk by chunk as the predecessor writes it
//
// Launched with programmatic stream serialization (PDL) or without; grid_dependents_launch first.
#include "pdl.cuh"
#include "read_patterns.cuh"

template <int ORDER, int UNROLL>
__global__ void layer_stream(const uint4* __restrict__ src, long long n16, const unsigned* prev, unsigned* mine) {
  using namespace autosched_pdl;
  if (ORDER == 0) {
    const long long per = (n16 + gridDim.x - 1) / gridDim.x;
    const long long lo = blockIdx.x * per, hi = min(n16, lo + per);
    prefetch_l2(src + lo, (hi - lo) * 16, threadIdx.x, blockDim.x, gridDim.x);
  }
  grid_dependents_launch();
  if (ORDER == 0) grid_dependency_wait();
  unsigned acc = xor_region<UNROLL>(src, n16);
  if (ORDER == 1) grid_dependency_wait();
  // the dependency: the predecessor's word, read through L2 after the wait
  acc ^= __ldcg(prev + (blockIdx.x & 31));
  if (threadIdx.x == 0) mine[blockIdx.x & 31] = acc;
}
