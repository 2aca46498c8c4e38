// Programmatic dependent launch (sm_90): a kernel launched with programmatic stream serialization
// may start while its predecessor still runs.  It may only touch data no predecessor writes (the
// weights) before grid_dependency_wait(), which returns once every predecessor has finished and its
// writes are visible.  grid_dependents_launch() lets the successor start (its own wait still
// covers us, so calling it first thing is safe).  Both are no-ops for a kernel launched the
// ordinary way.
#pragma once

namespace autosched_pdl {

__device__ __forceinline__ void grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void grid_dependents_launch() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" :::);
#endif
}

// Bytes a whole grid asks the L2 for ahead of its wait: enough to keep HBM busy through the
// predecessor's tail, small enough that it does not evict what the predecessor still reads.  The
// best amount depends on the step's kernels (H100, 2026-11-27: the 7B q4f16_1 step 1.5-3.5% faster
// at 2 MiB than at 8, the 1B fp16 4% faster, the 1B q4f16_1 2% slower), so the engine times a few
// in its step and compiles its matmuls with the winner (-DAUTOSCHED_PREFETCH_BUDGET=...).
#ifndef AUTOSCHED_PREFETCH_BUDGET
#define AUTOSCHED_PREFETCH_BUDGET (8ll << 20)
#endif
constexpr long long PREFETCH_BUDGET = AUTOSCHED_PREFETCH_BUDGET;

// Ask the L2 for the start of [p, p + bytes) in 128-byte lines, spread over the block's threads,
// at most PREFETCH_BUDGET / blocks bytes, so the block's first weights stream in while the
// predecessor finishes.
__device__ __forceinline__ void prefetch_l2(const void* p, long long bytes, int tid, int threads, int blocks) {
  const char* c = static_cast<const char*>(p);
  const long long cap = PREFETCH_BUDGET / blocks;
  // an int line counter (a 64-bit induction variable here made ptxas spill in the q4 GEMV)
  const int lines = (int)(((bytes < cap ? bytes : cap) + 127) / 128);
  for (int i = tid; i < lines; i += threads) asm volatile("prefetch.global.L2 [%0];" ::"l"(c + (long long)i * 128));
}

}  // namespace autosched_pdl
