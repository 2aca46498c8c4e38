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
// parameter space, which nothing writes while the kernel runs, so each is only prefetched.  (A map
// kept in global memory would need a sys-scope tensormap acquire fence before its first use, since
// a host copy wrote it: on an H100 that fence cost 0.6-1 us a launch of a short GEMM, 2026-11-26.)
//
// Accumulator fragment of m64nNk16 (per warp w of the warpgroup, lane l, register i < N / 2):
//   row 16 w + l / 4 + 8 ((i / 2) % 2), column 8 (i / 4) + 2 (l % 4) + i % 2.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace autosched_wgmma {

// the driver's CUtensorMap: opaque, 128 bytes, 64-byte aligned (cuda.h is not on NVRTC's path)
struct alignas(64) TensorMap {
  unsigned char bytes[128];
};

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
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

template <int N>
struct Wgmma;

// One asm statement per wgmma N (its accumulator count is in the operand list); the type is
// spliced in as a string literal.  scale-d is 1 (D += A B: accumulators are zeroed per tile), the
// A and B scales 1, the transpose immediates TA and TB.
#define AUTOSCHED_WGMMA_N64(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31" \
    "}, %32, %33, p, 1, 1, %35, %36;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<64> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[32], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N64("bf16");
    else AUTOSCHED_WGMMA_N64("f16");
  }
};

#define AUTOSCHED_WGMMA_N128(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63" \
    "}, %64, %65, p, 1, 1, %67, %68;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<128> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[64], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N128("bf16");
    else AUTOSCHED_WGMMA_N128("f16");
  }
};

#define AUTOSCHED_WGMMA_N192(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %98, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n192k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95" \
    "}, %96, %97, p, 1, 1, %99, %100;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<192> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[96], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N192("bf16");
    else AUTOSCHED_WGMMA_N192("f16");
  }
};

#define AUTOSCHED_WGMMA_N256(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n256k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127" \
    "}, %128, %129, p, 1, 1, %131, %132;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
      "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
      "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
      "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
      "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
      "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
      "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
      "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
      "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
      "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
      "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<256> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[128], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N256("bf16");
    else AUTOSCHED_WGMMA_N256("f16");
  }
};

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP>
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
  // up to 16: a 64 x 64 tile's ring fits 13 slots, and short GEMMs kept gaining past 8 (H100,
  // 2026-11-26, 64x4096x4096: 24.5 us at 8 slots, 22.7 at 13; scripts/experiments/wgmma_stages.py)
  static_assert(STAGES >= 2 && STAGES <= 16, "a ring of 2 to 16 slots");
  static_assert(SMEM_BYTES <= 232448, "shared memory: the H100's opt-in limit per block");
  static_assert(GROUP >= 1, "tile-row group of the raster");
  static_assert(64 % BK == 0, "an MN-major m64 block spans whole E = BK chunks");

  // Rows of A past M.  TMA zero-fills the rows of a box that lie outside the tensor, and on an H100
  // a box mostly outside is slow to arrive (64 x 64 tiles, 4096 x 4096: 24.6 us at M = 1 and 25.8
  // at M = 65 against 22.4 at M = 64 and 128; scripts/experiments/wgmma_oob_rows.py, 2026-11-26).
  // So a K-major A never reaches past M by more than 15 rows: where M >= BM the last tile row is
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

  static __device__ void producer(const TensorMap* tmA, const TensorMap* tmB, unsigned ring, unsigned bars,
                                  int M, int tiles_m, int tiles_n, int kslots) {
    tensormap_prefetch(tmA);
    tensormap_prefetch(tmB);
    const int tiles = tiles_m * tiles_n;
    unsigned it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int m0, n0;
      tile_coords(tile, tiles_m, tiles_n, M, m0, n0);
      for (int kb = 0; kb < kslots; ++kb, ++it) {
        const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
        const unsigned full = bars + 8 * s, empty = bars + 8 * (STAGES + s);
        mbar_wait(empty, phase ^ 1);               // the consumers are done with the slot's last use
        mbar_expect_tx(full, B_SLOT + a_rows(M) * SWZ);   // whole boxes, clipped or not
        const unsigned a = ring + s * STAGE_BYTES, b = a + A_SLOT;
        const int k0 = kb * BK;
        if constexpr (A_MN) {                      // A stored (K, M): boxes of BK m's x BK k's
#pragma unroll
          for (int j = 0; j < BM / BK; ++j) tma_load(a + j * BK * SWZ, tmA, full, m0 + j * BK, k0);
        } else {                                   // A stored (M, K): one box of BK k's x BM rows
          tma_load(a, tmA, full, k0, m0);
        }
        if constexpr (B_MN) {                      // B stored (K, N)
#pragma unroll
          for (int j = 0; j < BN / BK; ++j) tma_load(b + j * BK * SWZ, tmB, full, n0 + j * BK, k0);
        } else {                                   // B stored (N, K)
          tma_load(b, tmB, full, k0, n0);
        }
      }
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

  static __device__ void consumer(const TensorMap* tmC, unsigned ring, unsigned cstage, unsigned bars,
                                  int M, int N, int tiles_m, int tiles_n, int kslots) {
    const int wg = threadIdx.x / 128 - 1, t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    if (t == 0) tensormap_prefetch(tmC);
    const int tiles = tiles_m * tiles_n;
    // this warpgroup's staging: MW x (BN / 64) boxes of 64 x 64 outputs
    const unsigned my_c = cstage + wg * MW * (BN / 64) * C_BOX;
    float acc[MW][ACC];
    unsigned it = 0;
    for (int tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
      int m0, n0;
      tile_coords(tile, tiles_m, tiles_n, M, m0, n0);
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; ++i) acc[w][i] = 0.0f;
      for (int kb = 0; kb < kslots; ++kb, ++it) {
        const unsigned s = it % STAGES, phase = (it / STAGES) & 1;
        mbar_wait(bars + 8 * s, phase);
        __syncwarp();                              // the spin may leave lanes apart; wgmma is .aligned
        const unsigned a = ring + s * STAGE_BYTES, b = a + A_SLOT;
        wgmma_fence();                             // accumulators were written by ordinary code
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
          const unsigned long long db = desc<B_MN>(b, 0, kk);
#pragma unroll
          for (int w = 0; w < MW; ++w)
            Wgmma<BN>::template mma<BF16, A_MN, B_MN>(acc[w], desc<A_MN>(a, (wg * MW + w) * 64, kk), db);
        }
        wgmma_commit();
        wgmma_wait<1>();                           // the previous slot's group has finished reading
        if (kb > 0 && lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));
      }
      wgmma_wait<0>();
      if (lane == 0) mbar_arrive(bars + 8 * (STAGES + (it - 1) % STAGES));

      // epilogue: registers -> swizzled staging -> TMA store
      if (t == 0) bulk_wait_read_all();            // the last tile's store has read the staging
      asm volatile("bar.sync %0, 128;\n" ::"r"(1 + wg) : "memory");
#pragma unroll
      for (int w = 0; w < MW; ++w)
#pragma unroll
        for (int i = 0; i < ACC; i += 2) {
          const int row = 16 * warp + lane / 4 + 8 * ((i / 2) % 2);     // within the m64 block
          const int col = 8 * (i / 4) + 2 * (lane % 4);                 // within BN
          const int box = col / 64, unit = (col % 64) / 8;
          const unsigned dst = my_c + (w * (BN / 64) + box) * C_BOX + row * 128 +
                               ((unit ^ (row % 8)) * 16) + (col % 8) * 2;
          unsigned packed;
          if constexpr (BF16) {
            __nv_bfloat162 v = __floats2bfloat162_rn(acc[w][i], acc[w][i + 1]);
            packed = *reinterpret_cast<unsigned*>(&v);
          } else {
            __half2 v = __floats2half2_rn(acc[w][i], acc[w][i + 1]);
            packed = *reinterpret_cast<unsigned*>(&v);
          }
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst), "r"(packed) : "memory");
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
    if (t == 0) bulk_wait_all();                   // the staging must outlive the stores' reads
  }

  static __device__ void run(const TensorMap* tmA, const TensorMap* tmB, const TensorMap* tmC, int M, int N,
                             int K, unsigned char* smem_raw) {
    // slots start on a 1024-byte boundary: the swizzle atoms of TMA and wgmma are address-based
    const unsigned base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const unsigned ring = base, cstage = base + STAGES * STAGE_BYTES, bars = base + BAR_OFFSET;
    const int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN, kslots = (K + BK - 1) / BK;
    if (threadIdx.x == 0) {
      for (int s = 0; s < STAGES; ++s) {
        mbar_init(bars + 8 * s, 1);                            // full: the producer's expect_tx
        mbar_init(bars + 8 * (STAGES + s), 4 * CONSUMERS);     // empty: lane 0 of each consumer warp
      }
      asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
      fence_async_smem();                                      // visible to the copy engine too
    }
    __syncthreads();
    if (threadIdx.x < 128) {
      if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
      if (threadIdx.x == 0) producer(tmA, tmB, ring, bars, M, tiles_m, tiles_n, kslots);
    } else {
      if constexpr (CONSUMERS == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
      consumer(tmC, ring, cstage, bars, M, N, tiles_m, tiles_n, kslots);
    }
  }
};

}  // namespace autosched_wgmma

template <int BF16, int A_MN, int B_MN, int BM, int BN, int SWZ, int STAGES, int CONSUMERS, int GROUP>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1)
hgemm_wgmma(const __grid_constant__ autosched_wgmma::TensorMap tmA, const __grid_constant__ autosched_wgmma::TensorMap tmB,
            const __grid_constant__ autosched_wgmma::TensorMap tmC, int M, int N, int K) {
  extern __shared__ __align__(1024) unsigned char smem[];
  autosched_wgmma::HgemmWgmma<BF16, A_MN, B_MN, BM, BN, SWZ, STAGES, CONSUMERS, GROUP>::run(&tmA, &tmB, &tmC, M, N,
                                                                                           K, smem);
}
