// The q4f16_1 weight layouts (autosched/layouts.py) made on the GPU from the natural words a worker
// uploads once per shape: a tuning worker meets dozens of layouts per shape, and packing each on
// the host (tens of milliseconds at 4096 x 4096) was work every GPU of a host repeated.
// layouts.py stays the definition; tests/gpu/test_relayout_gpu.py holds the two equal.
//
// Words: in (rows, kw) natural uint32 words -> out tiled ln x lk (word_index of gemv_q4f16.cuh),
// each word's nibbles reordered: NIBBLES 0 natural, 1 NIBBLE_ORDER_K (even elements to the low half,
// odd to the high), 2 rows (2m, 2m+1) paired.  Scales: in (rows, g) fp16 bits -> out tiled ln x 1.

__device__ __forceinline__ unsigned nibbles_even_odd(unsigned w) {
  unsigned out = 0;
#pragma unroll
  for (int p = 0; p < 4; ++p) {
    out |= ((w >> (8 * p)) & 0xFu) << (4 * p);           // element 2p -> nibble p
    out |= ((w >> (8 * p + 4)) & 0xFu) << (16 + 4 * p);  // element 2p+1 -> nibble 4+p
  }
  return out;
}

template <int NIBBLES>
__global__ void __launch_bounds__(256)
relayout_q4_words(const unsigned* __restrict__ in, unsigned* __restrict__ out, long long rows, long long kw,
                  long long ln, long long lk) {
  static_assert(NIBBLES >= 0 && NIBBLES <= 2, "nibble order: 0 natural, 1 k, 2 rows");
  const long long n = rows * kw, stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long row = i / kw, w = i % kw;
    unsigned v;
    if (NIBBLES == 0) {
      v = in[i];
    } else if (NIBBLES == 1) {
      v = nibbles_even_odd(in[i]);
    } else {
      const long long pair = row & ~1LL;
      const unsigned a = in[pair * kw + w], b = in[(pair + 1) * kw + w];
      v = (row & 1) ? ((a >> 16) | (b & 0xFFFF0000u)) : ((a & 0xFFFFu) | (b << 16));
    }
    out[((row / ln) * (kw / lk) + w / lk) * (ln * lk) + (row % ln) * lk + (w % lk)] = v;
  }
}

__global__ void __launch_bounds__(256)
relayout_q4_scales(const unsigned short* __restrict__ in, unsigned short* __restrict__ out, long long rows,
                   long long groups, long long ln) {
  const long long n = rows * groups, stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    const long long row = i / groups, g = i % groups;
    out[((row / ln) * groups + g) * ln + (row % ln)] = in[i];
  }
}
