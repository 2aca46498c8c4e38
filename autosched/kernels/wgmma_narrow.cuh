// wgmma N below 64 and between hgemm_wgmma's 64-multiples (m64nNk16: N / 2 accumulators a thread),
// one asm statement each as in hgemm_wgmma.cuh: the swapped roles' token tiles (hgemm_wgmma_swap).
#pragma once
#include "hgemm_wgmma.cuh"

namespace autosched_wgmma {

#define AUTOSCHED_WGMMA_N8(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n8k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3" \
    "}, %4, %5, p, 1, 1, %7, %8;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<8> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[4], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N8("bf16");
    else AUTOSCHED_WGMMA_N8("f16");
  }
};

#define AUTOSCHED_WGMMA_N16(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7" \
    "}, %8, %9, p, 1, 1, %11, %12;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<16> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[8], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N16("bf16");
    else AUTOSCHED_WGMMA_N16("f16");
  }
};

#define AUTOSCHED_WGMMA_N24(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %14, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n24k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11" \
    "}, %12, %13, p, 1, 1, %15, %16;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<24> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[12], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N24("bf16");
    else AUTOSCHED_WGMMA_N24("f16");
  }
};

#define AUTOSCHED_WGMMA_N32(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
    "}, %16, %17, p, 1, 1, %19, %20;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<32> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[16], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N32("bf16");
    else AUTOSCHED_WGMMA_N32("f16");
  }
};

#define AUTOSCHED_WGMMA_N40(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %22, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n40k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19" \
    "}, %20, %21, p, 1, 1, %23, %24;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<40> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[20], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N40("bf16");
    else AUTOSCHED_WGMMA_N40("f16");
  }
};

#define AUTOSCHED_WGMMA_N48(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %26, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n48k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23" \
    "}, %24, %25, p, 1, 1, %27, %28;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<48> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[24], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N48("bf16");
    else AUTOSCHED_WGMMA_N48("f16");
  }
};

#define AUTOSCHED_WGMMA_N56(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %30, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n56k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27" \
    "}, %28, %29, p, 1, 1, %31, %32;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<56> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[28], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N56("bf16");
    else AUTOSCHED_WGMMA_N56("f16");
  }
};

#define AUTOSCHED_WGMMA_N80(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %42, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n80k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39" \
    "}, %40, %41, p, 1, 1, %43, %44;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<80> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[40], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N80("bf16");
    else AUTOSCHED_WGMMA_N80("f16");
  }
};

#define AUTOSCHED_WGMMA_N96(TY) \
  asm volatile( \
    "{\n.reg .pred p;\nsetp.ne.b32 p, %50, 0;\n" \
    "wgmma.mma_async.sync.aligned.m64n96k16.f32." TY "." TY " {" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47" \
    "}, %48, %49, p, 1, 1, %51, %52;\n}\n" \
    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
      "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
      "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
      "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
      "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
      "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]) \
    : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB))

template <>
struct Wgmma<96> {
  template <int BF16, int TA, int TB>
  static __device__ __forceinline__ void mma(float (&d)[48], unsigned long long da, unsigned long long db) {
    if constexpr (BF16) AUTOSCHED_WGMMA_N96("bf16");
    else AUTOSCHED_WGMMA_N96("f16");
  }
};

}  // namespace autosched_wgmma
