// One decode-step-like kernel a launch: every block reads `per` 16-byte words of its own, then
// MODE decides what its warp 0 does with the block's sum of squares (scripts/experiments/atomic_tail.py):
//   0 nothing (the value goes to a per-block slot with a plain store)
//   1 one double atomicAdd to a single address (the RESIDUAL epilogue's ss_out today)
//   2 one double atomicAdd to slot blockIdx.x % SLOTS
template <int MODE, int SLOTS>
__global__ void atomic_tail(const uint4* __restrict__ src, int per, double* ss, double* plain) {
  const uint4* p = src + (long long)blockIdx.x * per;
  float acc = 0.f;
  for (int i = threadIdx.x; i < per; i += blockDim.x) {
    const uint4 v = __ldg(p + i);
    acc += __uint_as_float(v.x & 0x3f7fffffu) * __uint_as_float(v.y & 0x3f7fffffu);
  }
  if (threadIdx.x < 32) {
    for (int o = 16; o > 0; o /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) {
      if (MODE == 0) plain[blockIdx.x] = acc;
      else if (MODE == 1) atomicAdd(ss, (double)acc);
      else atomicAdd(ss + blockIdx.x % SLOTS, (double)acc);
    }
  }
}
