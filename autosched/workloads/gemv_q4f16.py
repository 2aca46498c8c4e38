"""q4f16_1 dequantize-GEMV (the seed's NK_degemv).

    A_q     (N, K/8)  uint32   value j of a word at bits 4j..4j+3
    A_scale (N, K/32) float16  one scale per group of 32 along K
    V       (K,)      float16
    C       (N,)      float16  C[n] = sum_k (q[n, k] - 7) * scale[n, k // 32] * V[k]
"""

from __future__ import annotations

import numpy as np

from autosched.workloads.base import Check, MatrixVector, WorkloadError, as_int

GROUP = 32        # elements sharing one scale
PER_WORD = 8      # 4-bit values in a uint32
MAX_ELEMENTS = 2**31 - 1   # per buffer: kernels and launchers count elements and rows in 32-bit ints


def unpack_q4(a_q: np.ndarray) -> np.ndarray:
    """(N, K/8) uint32 -> (N, K) uint8 values 0..15, in natural order."""
    shifts = (np.arange(PER_WORD, dtype=np.uint32) * 4)
    vals = (a_q[:, :, None] >> shifts) & np.uint32(0xF)
    return vals.reshape(a_q.shape[0], -1).astype(np.uint8)


def pack_q4(q: np.ndarray) -> np.ndarray:
    """(N, K) values 0..15 -> (N, K/8) uint32, value j of a word at bits 4j..4j+3."""
    n, k = q.shape
    v = q.reshape(n, k // PER_WORD, PER_WORD).astype(np.uint32)
    shifts = (np.arange(PER_WORD, dtype=np.uint32) * 4)
    return np.bitwise_or.reduce(v << shifts, axis=2).astype(np.uint32)


class GemvQ4F16(MatrixVector):
    EXAMPLE = "12288x4096"
    name = "gemv_q4f16"

    def __init__(self, N: int, K: int):
        N, K = as_int("N", N), as_int("K", K)
        if N < 1:
            raise WorkloadError(f"N must be >= 1, got N={N}")
        if K < GROUP or K % GROUP:
            raise WorkloadError(f"K must be a positive multiple of {GROUP} (one fp16 scale per "
                                f"{GROUP} values), got K={K}")
        # the weight's N*K/8 words is the largest buffer; with it under 2^31, so are the scales, V,
        # C, the rows a block past the end indexes, and the grid (at most N blocks): a shape past
        # it once exported a launch of 25e9 blocks
        if K > MAX_ELEMENTS or N * (K // PER_WORD) > MAX_ELEMENTS:
            raise WorkloadError(f"{N}x{K} is too large: the weight's N*K/8 = {N * (K // PER_WORD)} words "
                                f"and V's K values must each be at most 2^31-1; split the matrix")
        self.N, self.K = N, K

    def inputs(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        q = rng.integers(0, 16, size=(self.N, self.K), dtype=np.uint8)
        # scales ~ 1/sqrt(K) keep |C| near 1 for any K, so fp16 output neither overflows nor
        # underflows and the tolerance below means the same thing at every shape
        scale = (rng.uniform(0.5, 1.5, size=(self.N, self.K // GROUP)) / np.sqrt(self.K) / 4.6)
        v = rng.standard_normal(self.K)
        return {
            "A_q": pack_q4(q),
            "A_scale": scale.astype(np.float16),
            "V": v.astype(np.float16),
        }

    def validate_inputs(self, inputs: dict[str, np.ndarray]) -> None:
        want = {"A_q": ((self.N, self.K // 8), np.uint32),
                "A_scale": ((self.N, self.K // GROUP), np.float16),
                "V": ((self.K,), np.float16)}
        self.require_inputs(inputs, want)

    def dequantize(self, a_q: np.ndarray, a_scale: np.ndarray, rows: slice = slice(None)) -> np.ndarray:
        q = unpack_q4(a_q[rows]).astype(np.float64) - 7.0
        s = np.repeat(a_scale[rows].astype(np.float64), GROUP, axis=1)
        return q * s

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        self.validate_inputs(inputs)
        v = inputs["V"].astype(np.float64)
        out = np.empty(self.N, dtype=np.float64)
        chunk = max(1, (1 << 24) // self.K)      # ~128 MB of float64 at a time
        for r0 in range(0, self.N, chunk):
            rows = slice(r0, min(self.N, r0 + chunk))
            out[rows] = self.dequantize(inputs["A_q"], inputs["A_scale"], rows) @ v
        return out

    def output_spec(self):
        return (self.N,), np.dtype(np.float16)

    def bytes_moved(self) -> int:
        return self.N * self.K // 2 + self.N * (self.K // GROUP) * 2 + 2 * self.K + 2 * self.N

    def flops(self) -> int:
        return 2 * self.N * self.K

    def check(self, out: np.ndarray, ref: np.ndarray) -> Check:
        """fp16 output of an fp32/fp16-accumulated sum: error relative to the output's scale."""
        # fp16 rounding of the output alone is 2^-11 relative; half2 partial sums add a few ulps
        return self.check_vector(out, ref, 2e-2, 5e-3)
