"""FP16 GEMM with FP32 accumulation and FP16 output: C (M, N) = A (M, K) . B, A row-major; B
row-major (K, N), or with b_col stored (N, K) as a linear layer's weight is.

Any M; K, and N where B is row-major, multiples of 8: the tensor-core kernels move 16-byte chunks
(8 halves) and a row that does not start on one cannot be read with them.
"""

from __future__ import annotations

import numpy as np

from autosched.workloads.base import Workload, WorkloadError, parse_dims
from autosched.workloads.sgemm import EPS32, Sgemm, check_gemm_dims

EPS16 = float(np.finfo(np.float16).eps)


class Hgemm(Workload):
    name = "hgemm"
    memory_bound = False

    def __init__(self, M: int, N: int, K: int, b_col: int = 0):
        check_gemm_dims(M, N, K)
        if b_col not in (0, 1):
            raise WorkloadError(f"b_col must be 0 or 1, got {b_col!r}")
        if K % 8:
            raise WorkloadError(f"K={K}: the fp16 GEMM reads rows in 16-byte chunks, so K must be a multiple of 8")
        if not b_col and N % 8:
            raise WorkloadError(f"N={N}: a row-major B is read in 16-byte chunks, so N must be a multiple of 8 "
                                "(or store B as (N, K): b_col)")
        self.M, self.N, self.K, self.b_col = int(M), int(N), int(K), int(b_col)

    @classmethod
    def from_shape(cls, text: str) -> "Hgemm":
        """'4096x4096x4096' (M x N x K, B row-major) or '1x4096x4096_bt' (B stored (N, K))."""
        syntax = "MxNxK, with _bt for B stored (N, K) (e.g. 64x11008x4096_bt)"
        if not isinstance(text, str):
            raise WorkloadError(f"shape must be {syntax}, got {text!r} (not a string)")
        t = text.lower().strip()
        b_col = int(t.endswith("_bt"))
        try:
            dims = parse_dims(t.removesuffix("_bt"), 3, syntax)
        except WorkloadError:
            raise WorkloadError(f"shape must be {syntax}, got {text!r}") from None
        return cls(*dims, b_col=b_col)

    @property
    def params(self) -> dict[str, int]:
        return {"M": self.M, "N": self.N, "K": self.K, "b_col": self.b_col}

    @property
    def shape_str(self) -> str:
        return f"{self.M}x{self.N}x{self.K}" + ("_bt" if self.b_col else "")

    def inputs(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((self.M, self.K), dtype=np.float32).astype(np.float16)
        b = rng.standard_normal((self.K, self.N), dtype=np.float32).astype(np.float16)
        return {"A": a, "B": np.ascontiguousarray(b.T) if self.b_col else b}

    def _b(self, inputs) -> np.ndarray:
        return inputs["B"].T if self.b_col else inputs["B"]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return inputs["A"].astype(np.float64) @ self._b(inputs).astype(np.float64)

    def error_bound(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Per element: the fp16 rounding of the output (half an ulp, relative) plus the fp32
        accumulation's few sqrt(K) * eps of sum |a||b|; products of fp16 values are exact in fp32."""
        mag = np.abs(inputs["A"]).astype(np.float64) @ np.abs(self._b(inputs)).astype(np.float64)
        ref = self.reference(inputs)
        return EPS16 * np.abs(ref) + 8.0 * np.sqrt(self.K) * EPS32 * mag + 1e-30

    def output_spec(self):
        return (self.M, self.N), np.dtype(np.float16)

    def bytes_moved(self) -> int:
        return 2 * (self.M * self.K + self.K * self.N + self.M * self.N)

    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    CHECK_CHUNK = Sgemm.CHECK_CHUNK
    check = Sgemm.check         # every output within the bound of the float64 reference
