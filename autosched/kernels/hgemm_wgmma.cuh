// FP16 / BF16 GEMM on the H100's warpgroup tensor cores (sm_90a), FP32 accumulation, output in the
// input type: C (M, N) row-major = A . B, where A is stored (M, K) (A_MN = 0) or (K, M) (A_MN = 1)
// and B is stored (N, K) (B_MN = 0: a linear layer's weight) or (K, N) (B_MN = 1).
//
// Design (one CTA per SM, persistent):
//   * warpgroup 0 is the producer: one thread issues TMA tile loads (cp.async.bulk.tensor) of A and
//     B into a STAGES-deep ring of shared-memory slots.  full[s] (count 1) completes when the
//     producer's arrive.expect_tx and the slot's TMA bytes have all arrived; empty[s] (count: one
//     lane per consumer warp) completes when every consumer warp has finished reading slot s.
//   * warpgroups 1..CONSUMERS are consumers: each owns BM / CONSUMERS rows of the BM x BN tile (MW
//     m64 blocks) and issues wgmma.mma_async m64nBNk16 with both operands read from shared memory
//     through matrix descriptors, one commit group per slot; it keeps one group in flight
//     (wait_group 1) and releases the slot before it.
//   * setmaxnreg hands the producer's registers to the consumers (two-consumer configs).
//   * every role walks the same tile sequence (tile = blockIdx.x; tile += gridDim.x) and the same
//     ceil(K / BK) slots per tile, so the producer fills exactly the slots the consumers drain: no
//     role waits for an arrival that never comes, whatever the ragged tile counts.
//   * epilogue: each consumer converts its accumulators, writes them to its own shared staging
//     area in the 128B-swizzled layout a TMA store reads (conflict-free), fences the generic proxy
//     against the async one, and one thread stores 64 x 64 boxes with TMA (clipped at M, N).  The
//     staging area is reused only after cp.async.bulk.wait_group.read says the last store read it.
//
// Shared layouts.  SWZ (32, 64 or 128 bytes) is both the TMA swizzle and the wgmma descriptor's;
// BK = SWZ / 2 elements, so a K-major tile row (one m or n) is exactly one swizzle row.
//   K-major operand (A_MN = 0 for A, B_MN = 0 for B): rows of SWZ bytes, 8-row atoms of 8 * SWZ bytes;
//     descriptor SBO = 8 * SWZ (next 8 rows), LBO unused (1); the k16 step inside the swizzled row
//     advances the start address by 32 bytes (the hardware applies the XOR on the final address,
//     which is why every slot is 1024-byte aligned and base_offset stays 0).
//   MN-major operand: TMA boxes of E = BK elements (SWZ bytes) along M or N by BK rows of k, one box
//     per E-wide chunk, chunks BK * SWZ bytes apart; descriptor LBO = BK * SWZ (next chunk along
//     M/N), SBO = 8 * SWZ (next 8 k rows); the k16 step advances 16 rows = 16 * SWZ bytes.
//   wgmma's transpose immediates are 1 for an MN-major operand (allowed for 16-bit types).
//
// Edges: TMA zero-fills the parts of a box outside the tensor (and still counts the whole box's
// bytes toward expect_tx, so every slot expects the same STAGE_BYTES); TMA stores clip at the
// tensor's bounds.  Row strides must be multiples of 16 bytes (the workload's multiples of 8).
//
// Tensor maps arrive by value, as __grid_constant__ kernel parameters holding the 128-byte
// CUtensorMaps the host encoded (cuTensorMapEncodeTiled): the copy engine reads them from the
// parameter space, which nothing writes while the kernel runs, so each is only prefetched (a map in
// global memory would need a costly sys-scope tensormap acquire fence before its first use).
//
// Accumulator fragment of m64nNk16 (per warp w of the warpgroup, lane l, register i < N / 2):
//   row 16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "splitk_reduce.cuh"

namespace autosched_wgmma {

// the driver's CUtensorMap: opaque, 128 bytes, 64-byte aligned (cuda.h is not on NVRTC's path)
struct alignas(64) TensorMap {
  unsigned char bytes[128];
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// two accumulators -> the 32-bit pair of the output type (bf16 or fp16) an epilogue stages
template <bool BF16>
__device__ __forceinline__ unsigned pack_pair(float a, float b) {
  if constexpr (BF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<unsigned*>(&v);
  } else {
    __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<unsigned*>(&v);
  }
}

// ---- mbarriers -----------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// returns once the phase of parity `parity` has completed (a fresh barrier counts the phase before
// its first, parity 1, as completed: the producer's first pass over the ring does not wait)
__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity) {
  unsigned done;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  } while (!done);
}

// ---- TMA -----------------------------------------------------------------------------------
// `map` points at a __grid_constant__ parameter: its generic address, which TMA takes as it is
__device__ __forceinline__ void tensormap_prefetch(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(map) : "memory");
}
// box at coordinates (c0 innermost, c1), in elements, into shared memory, completing on `bar`
__device__ __forceinline__ void tma_load(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n"
      ::"r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void tma_store(const TensorMap* map, unsigned src, int c0, int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%2, %3}], [%1];\n"
               ::"l"(map), "r"(src), "r"(c0), "r"(c1) : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_read_all() { asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory"); }
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// ---- clusters ------------------------------------------------------------------------------
__device__ __forceinline__ unsigned cluster_reg_ctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_reg_nctarank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_reg_id() {
  unsigned r;
  asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(r));
  return r;
}
__device__ __forceinline__ unsigned cluster_reg_count() {
  unsigned r;
  asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(r));
  return r;
}
// every thread of every CTA of the cluster; not .aligned: a warp may reach it apart (the producer)
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
// the shared::cluster address of `local` (a shared::cta address) in the CTA of rank `rank`
__device__ __forceinline__ unsigned cluster_map(unsigned local, unsigned rank) {
  unsigned r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(local), "r"(rank));
  return r;
}
// an arrival on the barrier at `cluster_bar` (a shared::cluster address, the peer's) at CTA scope
__device__ __forceinline__ void mbar_arrive_remote(unsigned cluster_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(cluster_bar) : "memory");
}
// tma_load into the same offset `dst` of every CTA in `mask`, completing on `bar` at the same offset
__device__ __forceinline__ void tma_load_multicast(unsigned dst, const TensorMap* map, unsigned bar, int c0, int c1,
                                                   unsigned short mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4}], [%2], %5;\n"
      ::"r"(dst), "l"(map), "r"(bar), "r"(c0), "r"(c1), "h"(mask) : "memory");
}

// ---- warpgroup MMA ---------------------------------------------------------------------------
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory"); }

// wgmma shared-memory matrix descriptor (sm_90): start address, LBO and SBO in 16-byte units
// (bits 0-13, 16-29, 32-45), base offset 0 (bits 49-51), swizzle mode (bits 62-63: 1 = 128B,
// 2 = 64B, 3 = 32B)
template <int SWZ>
__device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  constexpr unsigned long long mode = SWZ == 128 ? 1 : SWZ == 64 ? 2 : 3;
  return (unsigned long long)((addr >> 4) & 0x3FFF) | ((unsigned long long)((lbo >> 4) & 0x3FFF) << 16) |
         ((unsigned long long)((sbo >> 4) & 0x3FFF) << 32) | (mode << 62);
}

// Wgmma<N>::mma<BF16, TA, TB>(d, da, db): one wgmma.mma_async m64nNk16 (D += A B, FP32 accumulators, FP16 or
// BF16 operands from shared memory through descriptors da and db, transpose immediates TA and TB), one asm
// statement per N generated below: its N / 2 accumulators are operands %0 .. %(N / 2 - 1) and the
// descriptors, the scale-d register (1: accumulate) and the transposes follow them, DA .. DA + 4.
template <int N>
struct Wgmma;

// AUTOSCHED_I<n>(m): m(1) m(2) ... m(n - 1), for the accumulator operands
#define AUTOSCHED_I4(m) m(1) m(2) m(3)
#define AUTOSCHED_I8(m) AUTOSCHED_I4(m) m(4) m(5) m(6) m(7)
#define AUTOSCHED_I12(m) AUTOSCHED_I8(m) m(8) m(9) m(10) m(11)
#define AUTOSCHED_I16(m) AUTOSCHED_I12(m) m(12) m(13) m(14) m(15)
#define AUTOSCHED_I20(m) AUTOSCHED_I16(m) m(16) m(17) m(18) m(19)
#define AUTOSCHED_I24(m) AUTOSCHED_I20(m) m(20) m(21) m(22) m(23)
#define AUTOSCHED_I28(m) AUTOSCHED_I24(m) m(24) m(25) m(26) m(27)
#define AUTOSCHED_I32(m) AUTOSCHED_I28(m) m(28) m(29) m(30) m(31)
#define AUTOSCHED_I36(m) AUTOSCHED_I32(m) m(32) m(33) m(34) m(35)
#define AUTOSCHED_I40(m) AUTOSCHED_I36(m) m(36) m(37) m(38) m(39)
#define AUTOSCHED_I44(m) AUTOSCHED_I40(m) m(40) m(41) m(42) m(43)
#define AUTOSCHED_I48(m) AUTOSCHED_I44(m) m(44) m(45) m(46) m(47)
#define AUTOSCHED_I52(m) AUTOSCHED_I48(m) m(48) m(49) m(50) m(51)
#define AUTOSCHED_I56(m) AUTOSCHED_I52(m) m(52) m(53) m(54) m(55)
#define AUTOSCHED_I60(m) AUTOSCHED_I56(m) m(56) m(57) m(58) m(59)
#define AUTOSCHED_I64(m) AUTOSCHED_I60(m) m(60) m(61) m(62) m(63)
#define AUTOSCHED_I68(m) AUTOSCHED_I64(m) m(64) m(65) m(66) m(67)
#define AUTOSCHED_I72(m) AUTOSCHED_I68(m) m(68) m(69) m(70) m(71)
#define AUTOSCHED_I76(m) AUTOSCHED_I72(m) m(72) m(73) m(74) m(75)
#define AUTOSCHED_I80(m) AUTOSCHED_I76(m) m(76) m(77) m(78) m(79)
#define AUTOSCHED_I84(m) AUTOSCHED_I80(m) m(80) m(81) m(82) m(83)
#define AUTOSCHED_I88(m) AUTOSCHED_I84(m) m(84) m(85) m(86) m(87)
#define AUTOSCHED_I92(m) AUTOSCHED_I88(m) m(88) m(89) m(90) m(91)
#define AUTOSCHED_I96(m) AUTOSCHED_I92(m) m(92) m(93) m(94) m(95)
#define AUTOSCHED_I100(m) AUTOSCHED_I96(m) m(96) m(97) m(98) m(99)
#define AUTOSCHED_I104(m) AUTOSCHED_I100(m) m(100) m(101) m(102) m(103)
#define AUTOSCHED_I108(m) AUTOSCHED_I104(m) m(104) m(105) m(106) m(107)
#define AUTOSCHED_I112(m) AUTOSCHED_I108(m) m(108) m(109) m(110) m(111)
#define AUTOSCHED_I116(m) AUTOSCHED_I112(m) m(112) m(113) m(114) m(115)
#define AUTOSCHED_I120(m) AUTOSCHED_I116(m) m(116) m(117) m(118) m(119)
#define AUTOSCHED_I124(m) AUTOSCHED_I120(m) m(120) m(121) m(122) m(123)
#define AUTOSCHED_I128(m) AUTOSCHED_I124(m) m(124) m(125) m(126) m(127)
#define AUTOSCHED_REG(i) ", %" #i
#define AUTOSCHED_ACC(i) , "+f"(d[i])
#define AUTOSCHED_WGMMA_ASM(N, NACC, TY, DA, DB, SD, TA_, TB_)                                                    \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #SD ", 0;\n"                                                \
               "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TY "." TY " {%0" AUTOSCHED_I##NACC(AUTOSCHED_REG) \
               "}, %" #DA ", %" #DB ", p, 1, 1, %" #TA_ ", %" #TB_ ";\n}\n"                                       \
               : "+f"(d[0]) AUTOSCHED_I##NACC(AUTOSCHED_ACC)                                                        \
               : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))
#define AUTOSCHED_WGMMA(N, NACC, DA, DB, SD, TA_, TB_)                                                     \
  template <>                                                                                            \
  struct Wgmma<N> {                                                                                      \
    template <int BF16, int TA, int TB>                                                                  \
    static __device__ __forceinline__ void mma(float (&d)[NACC], unsigned long long da, unsigned long long db) { \
      if constexpr (BF16) AUTOSCHED_WGMMA_ASM(N, NACC, "bf16", DA, DB, SD, TA_, TB_);                    \
      else AUTOSCHED_WGMMA_ASM(N, NACC, "f16", DA, DB, SD, TA_, TB_);                                     \
    }                                                                                                    \
  };
// N below 64 and between its multiples: the swapped roles' token tiles (hgemm_wgmma_swap); 168: 66 column
// tiles cover Llama-2-7B's FFN (N = 11008) in two waves of 132 CTAs at M = 512 (hgemm_wgmma_sched)
AUTOSCHED_WGMMA(8, 4, 4, 5, 6, 7, 8)
AUTOSCHED_WGMMA(16, 8, 8, 9, 10, 11, 12)
AUTOSCHED_WGMMA(24, 12, 12, 13, 14, 15, 16)
AUTOSCHED_WGMMA(32, 16, 16, 17, 18, 19, 20)
AUTOSCHED_WGMMA(40, 20, 20, 21, 22, 23, 24)
AUTOSCHED_WGMMA(48, 24, 24, 25, 26, 27, 28)
AUTOSCHED_WGMMA(56, 28, 28, 29, 30, 31, 32)
AUTOSCHED_WGMMA(64, 32, 32, 33, 34, 35, 36)
AUTOSCHED_WGMMA(80, 40, 40, 41, 42, 43, 44)
AUTOSCHED_WGMMA(96, 48, 48, 49, 50, 51, 52)
AUTOSCHED_WGMMA(128, 64, 64, 65, 66, 67, 68)
AUTOSCHED_WGMMA(168, 84, 84, 85, 86, 87, 88)
AUTOSCHED_WGMMA(192, 96, 96, 97, 98, 99, 100)
AUTOSCHED_WGMMA(256, 128, 128, 129, 130, 131, 132)

// ---- the pipeline every wgmma kernel here runs ----------------------------------------------------
// A ring of STAGES slots of SLOT bytes at `ring`, the second operand B_OFF bytes into a slot; full[s] at bars + 8 s, empty[s] at bars + 8 (STAGES + s),
// then EXTRA more barriers of count 4.  Producer and consumers walk the same units and slots in the same
// order, counting slot uses in `it`, so every wait has its arrival whatever the ragged unit counts.
template <int STAGES, int SLOT, int B_OFF>
struct Ring {
  // full[s] (count 1: the producer's expect_tx), empty[s] (count `empty`), visible to the copy engine
  template <int EXTRA = 0>
  static __device__ __forceinline__ void init(unsigned bars, unsigned empty) {
    for (int s = 0; s < STAGES; ++s) {
      mbar_init(bars + 8 * s, 1);
      mbar_init(bars + 8 * (STAGES + s), empty);
    }
#pragma unroll
    for (int e = 0; e < EXTRA; ++e) mbar_init(bars + 8 * (2 * STAGES + e), 4);
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    fence_async_smem();
  }
  // the producer's slots for k-blocks kb0 .. kb0 + nk - 1 of one unit: wait until the consumers are done
  // with the slot's last use, expect bytes() (whole boxes, clipped or not), load(slot, full barrier, k-block)
  template <class Bytes, class Load>
  static __device__ __forceinline__ void fill(unsigned& it, unsigned ring, unsigned bars, int kb0, int nk,
                                              Bytes bytes, Load load) {
    for (int kb = kb0; kb < kb0 + nk; ++kb, ++it) {
      const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
      const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
      mbar_wait(empty, phase ^ 1);
      mbar_expect_tx(full, bytes());
      load(ring + s * SLOT, full, kb);
    }
  }
  // a consumer's nk slots of one unit: wait for each, mma(its two operands' addresses) as one wgmma commit
  // group, keep one group in flight and release(kb > 0, it) the slot before it, whose empty barrier is at
  // bars + last(it) (the last slot's release is the caller's, after its wgmma wait)
  template <class Mma, class Release>
  static __device__ __forceinline__ void drain(unsigned& it, unsigned ring, unsigned bars, int nk, Mma mma,
                                               Release release) {
    for (int kb = 0; kb < nk; ++kb, ++it) {
      const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
      mbar_wait(bars + 8 * s, phase);
      __syncwarp();                              // the spin may leave lanes apart; wgmma is .aligned
      const unsigned a = ring + s * SLOT, b = a + B_OFF;
      wgmma_fence();                             // accumulators were written by ordinary code
      mma(a, b);
      wgmma_commit();
      wgmma_wait<1>();                           // the previous slot's group has finished reading
      release(kb > 0, it);
    }
  }
  static __device__ __forceinline__ unsigned last(unsigned it) { return 8 * (STAGES + (it - 1) % STAGES); }
};

template <int W, int N>
__device__ __forceinline__ void zero(float (&acc)[W][N]) {
#pragma unroll
  for (int w = 0; w < W; ++w)
#pragma unroll
    for (int i = 0; i < N; ++i) acc[w][i] = 0.0f;
}

// warpgroup 0 the producer, the others consumers; with two consumers setmaxnreg hands them its registers
template <int CONSUMERS, class Producer, class Consumer>
__device__ __forceinline__ void roles(Producer producer_warpgroup, Consumer consumer) {
  if (threadIdx.x < 128) {
    if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
    producer_warpgroup();
  } else {
    if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
    consumer();
  }
}

// SPLIT_K > 1 (hgemm_wgmma_splitk.cuh): work units u = tile * SPLIT_K + slice, each slice's partial summed
// by the CTA that finishes the tile last (splitk_reduce.cuh, named barrier 3: all consumers)
template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP, int SPLIT_K = 1>
struct HgemmWgmma {
  static constexpr int BK = SWZ / 2;                        // elements of K a slot holds
  static constexpr int MW = BM / (64 * CONSUMERS);          // m64 blocks a consumer owns
  static constexpr int THREADS = 128 * (CONSUMERS + 1);
  static constexpr int A_SLOT = BM * SWZ;                   // bytes: BM x BK 16-bit values
  static constexpr int B_SLOT = BN * SWZ;
  static constexpr int STAGE_BYTES = A_SLOT + B_SLOT;       // what each full barrier expects
  static constexpr int C_BOX = 64 * 128;                    // a 64 x 64 output box, 128B-swizzled
  static constexpr int C_BYTES = BM * BN * 2;
  static constexpr int BAR_OFFSET = STAGES * STAGE_BYTES + C_BYTES;
  // + the barriers, + 1024 to align the dynamic shared memory base to the 128B swizzle atom
  static constexpr int SMEM_BYTES = BAR_OFFSET + 2 * STAGES * 8 + 1024;
  static constexpr int ACC = BN / 2;                        // accumulators of one m64 block

  static_assert(SWZ == 32 || SWZ == 64 || SWZ == 128, "swizzle 32, 64 or 128 bytes");
  static_assert(CONSUMERS == 1 || CONSUMERS == 2, "one or two consumer warpgroups");
  static_assert(BM % (64 * CONSUMERS) == 0 && (MW == 1 || MW == 2), "BM = 64 x CONSUMERS x (1 or 2)");
  static_assert(BN == 64 || BN == 128 || BN == 192 || BN == 256, "wgmma N and the 64-wide output boxes");
  static_assert(BM <= 256 && BN <= 256, "a TMA box is at most 256 rows");
  static_assert(MW * ACC <= 128, "accumulators: MW x BN / 2 <= 128 floats a consumer thread");
  // up to 16: short GEMMs keep gaining past 8 slots (scripts/experiments/wgmma_stages.py)
  static_assert(STAGES >= 2 && STAGES <= 16, "a ring of 2 to 16 slots");
  static_assert(SMEM_BYTES <= 232448, "shared memory: the H100's opt-in limit per block");
  static_assert(GROUP >= 1, "tile-row group of the raster");
  static_assert(64 % BK == 0, "an MN-major m64 block spans whole E = BK chunks");

  // Rows of A past M.  TMA zero-fills the rows of a box outside the tensor, and a box mostly outside
  // is slow to arrive (scripts/experiments/wgmma_oob_rows.py).  So a K-major A never reaches past M by more than 15 rows: where M >= BM the last tile row is
  // moved up to end at M (its rows above m0 repeat the tile row before it, stored twice with the
  // same values), and where M < BM the host's map boxes a_rows(M) rows, a multiple of 16 (the
  // slot's other rows keep stale data, whose products land only in output rows past M, which the
  // TMA store clips).  An MN-major A (M is its inner dimension) keeps whole boxes.
  static __device__ __forceinline__ int a_rows(int M) { return A_MN ? BM : min(BM, (M + 15) / 16 * 16); }

  // the tile `tile` of the grouped raster: GROUP tile rows are walked column by column, so
  // consecutive CTAs share B columns and A rows in L2
  static __device__ __forceinline__ void tile_coords(int tile, int tiles_m, int tiles_n, int M, int& m0, int& n0) {
    const int per_group = GROUP * tiles_n;
    const int first_m = (tile / per_group) * GROUP;
    const int rows = min(tiles_m - first_m, GROUP);
    const int r = tile % per_group;
    m0 = (first_m + r % rows) * BM;
    n0 = (r / rows) * BN;
    if (!A_MN && m0 + BM > M) m0 = max(0, M - BM);
  }

  using Pipe = Ring<STAGES, STAGE_BYTES, A_SLOT>;
  using Reduce = SplitKReduce<SPLIT_K, 128 * CONSUMERS, MW * ACC / 4, 3>;
  static_assert(SPLIT_K >= 1 && SPLIT_K <= 8, "1 to 8 K slices");

  // one operand's slot of ROWS (m or n) x BK from row r0 and k k0: MN-major, BK-wide chunks (boxes of
  // BK x BK) BK * SWZ bytes apart; K-major, one box
  template <int MN, int ROWS>
  static __device__ __forceinline__ void load(unsigned dst, const TensorMap* map, unsigned bar, int r0, int k0) {
    if constexpr (MN) {
#pragma unroll
      for (int j = 0; j < ROWS / BK; ++j) tma_load(dst + j * BK * SWZ, map, bar, r0 + j * BK, k0);
    } else {
      tma_load(dst, map, bar, k0, r0);
    }
  }

  // unit u's tile origin and k-blocks (one slice: all of K)
  static __device__ __forceinline__ void unit(int u, int tiles_m, int tiles_n, int M, int kslots, int& m0, int& n0,
                                              int& kb0, int& nk) {
    tile_coords(u / SPLIT_K, tiles_m, tiles_n, M, m0, n0);
    if constexpr (SPLIT_K == 1) {
      kb0 = 0;
      nk = kslots;
    } else {
      Reduce::slice_range(u % SPLIT_K, kslots, kb0, nk);
    }
  }

  static __device__ void producer(const TensorMap* tmA, const TensorMap* tmB, unsigned ring, unsigned bars,
                                  int M, int tiles_m, int tiles_n, int kslots) {
    tensormap_prefetch(tmA);
    tensormap_prefetch(tmB);
    const int units = tiles_m * tiles_n * SPLIT_K;
    unsigned it = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      int m0, n0, kb0, nk;
      unit(u, tiles_m, tiles_n, M, kslots, m0, n0, kb0, nk);
      Pipe::fill(it, ring, bars, kb0, nk, [&] { return B_SLOT + a_rows(M) * SWZ; },
                 [&, m0, n0](unsigned a, unsigned full, int kb) {
                   const unsigned b = a + A_SLOT;
                   const int k0 = kb * BK;
                   load<A_MN, BM>(a, tmA, full, m0, k0);
                   load<B_MN, BN>(b, tmB, full, n0, k0);
                 });
    }
  }

  // descriptor of the m64 (A) or the whole-BN (B) operand at row `r0` and k step `kk` of a slot
  template <int MN_MAJOR>
  static __device__ __forceinline__ unsigned long long desc(unsigned slot, int r0, int kk) {
    if constexpr (MN_MAJOR)
      return make_desc<SWZ>(slot + (r0 / BK) * BK * SWZ + kk * SWZ, BK * SWZ, 8 * SWZ);
    else
      return make_desc<SWZ>(slot + r0 * SWZ + kk * 2, 16, 8 * SWZ);
  }

  // one slot's k steps for W m64 blocks of rows row0, row0 + 64, ... of the tile, wgmma N = NW (B's slot at
  // `b`, which a kernel of another BN than this instance's places itself)
  template <int NW, int W>
  static __device__ __forceinline__ void mma(float (&acc)[W][NW / 2], unsigned a, unsigned b, int row0) {
#pragma unroll
    for (int kk = 0; kk < BK; kk += 16) {
      const unsigned long long db = desc<B_MN>(b, 0, kk);
#pragma unroll
      for (int w = 0; w < W; ++w) Wgmma<NW>::template mma<BF16, A_MN, B_MN>(acc[w], desc<A_MN>(a, row0 + w * 64, kk), db);
    }
  }

  // registers -> this consumer's 128B-swizzled staging `my_c` (MW x BN / 64 boxes of 64 x 64) -> TMA stores
  // clipped at M and N; the staging is rewritten only once the last tile's stores have read it
  static __device__ __forceinline__ void epilogue(const float (&acc)[MW][ACC], const TensorMap* tmC, unsigned my_c,
                                                  int wg, int t, int warp, int lane, int M, int N, int m0, int n0) {
    if (t == 0) bulk_wait_read_all();
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
#pragma unroll
    for (int w = 0; w < MW; ++w)
#pragma unroll
      for (int i = 0; i < ACC; i += 2) {
        const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);     // within the m64 block
        const int col = 8 * (i / 4) + 2 * (lane % 4);                 // within BN
        const int box = col / 64, unit = (col % 64) / 8;
        const unsigned dst = my_c + (w * (BN / 64) + box) * C_BOX + row * 128 + ((unit ^ (row % 8)) * 16) + (col % 8) * 2;
        asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(pack_pair<BF16>(acc[w][i], acc[w][i + 1]))
                     : "memory");
      }
    fence_async_smem();                          // these stores are read next by the copy engine
    asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
    if (t == 0) {
#pragma unroll
      for (int w = 0; w < MW; ++w) {
        const int row0 = m0 + (wg * MW + w) * 64;
        if (row0 >= M) continue;                 // wholly outside C: nothing to store
#pragma unroll
        for (int box = 0; box < BN / 64; ++box)
          if (n0 + box * 64 < N) tma_store(tmC, my_c + (w * (BN / 64) + box) * C_BOX, n0 + box * 64, row0);
      }
      bulk_commit();
    }
  }

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars, int M, int N,
                                  int tiles_m, int tiles_n, int kslots, unsigned char* ws) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32, ct = threadIdx.x - 128;
    if (t == 0) tensormap_prefetch(tmC);
    const int tiles = tiles_m * tiles_n, units = tiles * SPLIT_K;
    const unsigned my_c = cstage + wg * MW * (BN / 64) * C_BOX;   // MW x (BN / 64) boxes of 64 x 64 outputs
    float acc[MW][ACC];
    unsigned it = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
      int m0, n0, kb0, nk;
      unit(u, tiles_m, tiles_n, M, kslots, m0, n0, kb0, nk);
      zero(acc);
      Pipe::drain(it, ring, bars, nk, [&](unsigned a, unsigned b) { mma<BN>(acc, a, b, wg * MW * 64); },
                  [&](bool go, unsigned i) { if (go && lane == 0) mbar_arrive(bars + Pipe::last(i)); });
      // unconditional, even for an empty slice: a wgmma wait under a branch makes ptxas serialize every
      // wgmma of the kernel (C7518)
      wgmma_wait<0>();
      if constexpr (SPLIT_K == 1) {
        if (lane == 0) mbar_arrive(bars + Pipe::last(it));
        epilogue(acc, tmC, my_c, wg, t, warp, lane, M, N, m0, n0);
      } else {
        if (nk > 0 && lane == 0) mbar_arrive(bars + Pipe::last(it));
        if (Reduce::reduce(&acc[0][0], ws, tiles, u / SPLIT_K, u % SPLIT_K, ct))
          epilogue(acc, tmC, my_c, wg, t, t / 32, t % 32, M, N, m0, n0);
      }
    }
    // the staging must outlive the stores' reads; split, the grid's completion orders their writes
    // (waiting for the writes too cost short split-K GEMMs 0.5-0.7 us: scripts/experiments/wgmma_exit_wait.py)
    if (t == 0) {
      if constexpr (SPLIT_K == 1) bulk_wait_all();
      else bulk_wait_read_all();
    }
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N,
                             int K, unsigned char* ws, unsigned char* smem_raw) {
    // slots start on a 1024-byte boundary: the swizzle atoms of TMA and wgmma are address-based
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, bars = base + BAR_OFFSET;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) Pipe::init(bars, 4 * CONSUMERS);   // empty: lane 0 of each consumer warp
    __syncthreads();
    roles<CONSUMERS>([&] { if (threadIdx.x == 0) producer(tmA, tmB, ring, bars, M, tiles_m, tiles_n, kslots); },
                     [&] { consumer(tmC, ring, cstage, bars, M, N, tiles_m, tiles_n, kslots, ws); });
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_wgmma(const __grid_constant__ autosched_wgmma::TensorMap tmA, const __grid_constant__ autosched_wgmma::TensorMap tmB,
            const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP>::run(&tmA, &tmB, &tmC, M, N, K,
                                                                                           nullptr, smem);
}
