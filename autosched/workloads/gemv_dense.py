"""Dense fp16 GEMV, the decode engine's fp16 matmul (kernels/decode.cuh gemv_dense, epilogue "store").

    W (N, K) float16   row-major, rows 16-byte aligned (K % 8 == 0)
    V (K,)   float16
    C (N,)   float16   C[n] = sum_k W[n, k] * V[k]
"""

from __future__ import annotations

import numpy as np

from autosched.workloads.base import Check, MatrixVector, WorkloadError, as_int

ALIGN = 8                  # fp16 values in 16 bytes: a row must start 16-byte aligned
MAX_ELEMENTS = 2**31 - 1   # the kernel indexes rows with 32-bit N and K


class GemvDense(MatrixVector):
    EXAMPLE = "2048x8192"
    name = "gemv_dense"

    def __init__(self, N: int, K: int):
        N, K = as_int("N", N), as_int("K", K)
        if N < 1:
            raise WorkloadError(f"N must be >= 1, got N={N}")
        if K < ALIGN or K % ALIGN:
            raise WorkloadError(f"K must be a positive multiple of {ALIGN} (fp16 rows read in 16-byte loads), "
                                f"got K={K}")
        if N * K > MAX_ELEMENTS:
            raise WorkloadError(f"{N}x{K} is too large: N*K must be at most 2^31-1; split the matrix")
        self.N, self.K = N, K

    def inputs(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        # weights ~ 1/sqrt(K) keep |C| near 1 at every K (no fp16 overflow, one tolerance for all)
        w = rng.standard_normal((self.N, self.K), dtype=np.float32) / np.float32(np.sqrt(self.K))
        return {"W": w.astype(np.float16), "V": rng.standard_normal(self.K).astype(np.float16)}

    def validate_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        want = {"W": ((self.N, self.K), np.float16), "V": ((self.K,), np.float16)}
        self.require_inputs(inputs, want)

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        self.validate_inputs(inputs)
        v = inputs["V"].astype(np.float64)
        out = np.empty(self.N, dtype=np.float64)
        chunk = max(1, (1 << 24) // self.K)
        for r0 in range(0, self.N, chunk):
            rows = slice(r0, min(self.N, r0 + chunk))
            out[rows] = inputs["W"][rows].astype(np.float64) @ v
        return out

    def output_spec(self):
        return (self.N,), np.dtype(np.float16)

    def bytes_moved(self) -> int:
        return 2 * self.N * self.K + 2 * self.K + 2 * self.N

    def flops(self) -> int:
        return 2 * self.N * self.K

    def check(self, out: np.ndarray, ref: np.ndarray) -> Check:
        """fp16 output of a float-accumulated sum: error relative to the output's scale."""
        return self.check_vector(out, ref, 1e-2, 3e-3)
