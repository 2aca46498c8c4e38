// Attention waiting on the qkv matmul group by group instead of on its whole grid.
//
// With programmatic dependent launch, rope_attention's dependency wait returns only once every
// block of the qkv matmul has finished and the grid's writes are flushed; at batch 1 the matmul's
// last blocks, the grid's completion and attention's own chain of round trips are all on the
// step's critical path.  Instead the qkv kernel (gemv_q4f16_signal.cuh) counts, per kv group, the
// blocks that have written their rows: a kv group g is kv head g's k and v rows and the q rows of
// its kv_mul query heads.  Attention's blocks of group g spin on that count (one thread, an acquire
// load), so a group's attention starts as soon as its rows are out, while other blocks still run.
//
// The count is reset by the group's last attention block to pass the wait (a second word a group
// counts arrivals).  No kernel of the next layer can touch it before then: the next qkv matmul
// signals only after its own dependency wait, which returns once the o, gate_up and down matmuls,
// and through them this attention, have completed.
//
// A wrong target would hang the GPU; the spin gives up after ~SPIN_LIMIT polls (seconds) and
// traps, so the launch fails with an error instead.
#pragma once

namespace autosched_flags {

constexpr long long SPIN_LIMIT = 1ll << 26;

// The kv group of row `row` of the fused qkv output: q rows (n_heads * head_size), then k and v
// (kv_dim each).
__device__ __forceinline__ int group_of_row(int row, int q_dim, int kv_dim, int head_size, int kv_mul) {
  if (row < q_dim) return row / (kv_mul * head_size);
  if (row < q_dim + kv_dim) return (row - q_dim) / head_size;
  return (row - q_dim - kv_dim) / head_size;
}

// Called by every thread of a block after its last store: the block's writes are made visible at
// GPU scope before thread 0 bumps the count (fence, barrier, then a relaxed atomic: a release).
__device__ __forceinline__ void signal_done(unsigned* count, int tid) {
  __threadfence();
  __syncthreads();
  if (tid == 0) atomicAdd(count, 1u);
}

__device__ __forceinline__ unsigned load_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// One thread spins until *count reaches target; the caller's barrier after it carries the
// acquire to the rest of its block.
__device__ __forceinline__ void spin_until(const unsigned* count, unsigned target) {
  long long polls = 0;
  while (load_acquire(count) < target) {
    if (++polls > SPIN_LIMIT) __trap();
  }
}

}  // namespace autosched_flags
