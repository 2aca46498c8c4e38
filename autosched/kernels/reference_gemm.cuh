// The float64 products that check a GEMM: ref = A . B and mag = |A| . |B|, A (M, K) and B^T (N, K)
// row-major float32 (the FP16/BF16 inputs decoded: every such value is a float32, and the product
// of two is exact in a double), sums in double.  measure/reference_gpu.py runs it in the worker
// that checks kernels, where the same two products on the host took seconds at 4096 rows.
//
// Plain FP64 FMAs, no tensor cores and no cleverness: it is the oracle, so it stays readable.  A
// 64 x 64 output tile a block of 16 x 16 threads, each thread 4 x 4 outputs strided by 16 (a
// warp's stores land on consecutive columns); K in slices of 16 through shared memory, both tiles
// read along k (rows of A and of B^T).

namespace autosched_reference {
constexpr int TILE = 64;
constexpr int SLICE = 16;
constexpr int SIDE = 16;          // threads along each side of the block
constexpr int PER = TILE / SIDE;  // outputs a thread along each side
}  // namespace autosched_reference

__global__ void __launch_bounds__(256)
reference_products(const float* __restrict__ A, const float* __restrict__ Bt, double* __restrict__ ref,
                   double* __restrict__ mag, int M, int N, int K) {
  using namespace autosched_reference;
  // +1: the tiles are written along k and read along m or n, which would otherwise hit one bank
  __shared__ float As[SLICE][TILE + 1];
  __shared__ float Bs[SLICE][TILE + 1];
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * SIDE + tx;
  const long long row0 = (long long)blockIdx.y * TILE, col0 = (long long)blockIdx.x * TILE;
  double acc[PER][PER], accm[PER][PER];
#pragma unroll
  for (int i = 0; i < PER; ++i)
#pragma unroll
    for (int j = 0; j < PER; ++j) acc[i][j] = accm[i][j] = 0.0;

  for (int k0 = 0; k0 < K; k0 += SLICE) {
#pragma unroll
    for (int e = tid; e < TILE * SLICE; e += SIDE * SIDE) {
      const int r = e / SLICE, kk = e % SLICE;
      const long long gr = row0 + r;
      As[kk][r] = (gr < M && k0 + kk < K) ? A[gr * K + k0 + kk] : 0.f;
      const long long gc = col0 + r;
      Bs[kk][r] = (gc < N && k0 + kk < K) ? Bt[gc * K + k0 + kk] : 0.f;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < SLICE; ++kk) {
      double a[PER], b[PER];
#pragma unroll
      for (int i = 0; i < PER; ++i) a[i] = As[kk][ty + SIDE * i];
#pragma unroll
      for (int j = 0; j < PER; ++j) b[j] = Bs[kk][tx + SIDE * j];
#pragma unroll
      for (int i = 0; i < PER; ++i)
#pragma unroll
        for (int j = 0; j < PER; ++j) {
          acc[i][j] = fma(a[i], b[j], acc[i][j]);
          accm[i][j] = fma(fabs(a[i]), fabs(b[j]), accm[i][j]);
        }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < PER; ++i) {
    const long long r = row0 + ty + SIDE * i;
    if (r >= M) continue;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const long long c = col0 + tx + SIDE * j;
      if (c < N) {
        ref[r * N + c] = acc[i][j];
        mag[r * N + c] = accm[i][j];
      }
    }
  }
}
