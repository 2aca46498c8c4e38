"""FP32 GEMM: C (M, N) = A (M, K) . B (K, N), row-major; with trans_a the stored A is (K, M).

Any M, N, K >= 1: a kernel handles the edges that are not multiples of its tiles.
"""

from __future__ import annotations

import os

import numpy as np

from autosched.workloads.base import Check, Workload, WorkloadError, as_int, parse_dims

# concurrent.futures is imported inside functions: start-up time (the command line imports this module)

EPS32 = float(np.finfo(np.float32).eps)

# the GEMM kernels put M on grid.y, which CUDA caps at 65535 blocks, in blocks of at most 256 rows
MAX_M = 65535 * 256


def check_gemm_dims(M, N, K) -> None:
    """WorkloadError unless M, N, K are integers >= 1, every matrix has fewer than 2^31
    elements (the GEMM kernels index with 32-bit integers) and M rows fit a launch grid."""
    for label, value in (("M", M), ("N", N), ("K", K)):
        value = as_int(label, value)
        if value < 1:
            raise WorkloadError(f"{label} must be >= 1, got {label}={value}")
    M, N, K = int(M), int(N), int(K)      # numpy integers would wrap in the products below
    if M * K >= 2**31 or K * N >= 2**31 or M * N >= 2**31:
        raise WorkloadError(f"{M}x{N}x{K}: every matrix must have fewer than 2^31 elements "
                            "(the kernels index with 32-bit integers)")
    if M > MAX_M:
        raise WorkloadError(f"M={M} is over {MAX_M}: the kernels cover M in at most 65535 blocks "
                            "(CUDA's grid.y limit) of at most 256 rows; split the rows into several GEMMs")


class Sgemm(Workload):
    name = "sgemm"
    memory_bound = False

    def __init__(self, M: int, N: int, K: int, trans_a: int = 0):
        check_gemm_dims(M, N, K)
        if trans_a not in (0, 1):
            raise WorkloadError(f"trans_a must be 0 or 1, got {trans_a!r}")
        self.M, self.N, self.K, self.trans_a = int(M), int(N), int(K), int(trans_a)

    @classmethod
    def from_shape(cls, text: str, trans_a: int = 0) -> "Sgemm":
        """'4096x4096x4096' (M x N x K) -> Sgemm; a '_ta' suffix (as shape_str writes it) stores A
        transposed."""
        if not isinstance(text, str):
            raise WorkloadError(f"shape must be MxNxK[_ta] (e.g. 64x11008x4096), got {text!r} (not a string)")
        t = text.lower().strip()
        if t.endswith("_ta"):
            t, trans_a = t[:-3], 1
        try:
            dims = parse_dims(t, 3, "MxNxK[_ta] (e.g. 64x11008x4096)")
        except WorkloadError:
            # quote what the user typed, not the remainder
            raise WorkloadError(f"shape must be MxNxK[_ta] (e.g. 64x11008x4096), got {text!r}") from None
        return cls(*dims, trans_a=trans_a)

    @property
    def params(self) -> dict[str, int]:
        return {"M": self.M, "N": self.N, "K": self.K, "trans_a": self.trans_a}

    @property
    def shape_str(self) -> str:
        return f"{self.M}x{self.N}x{self.K}" + ("_ta" if self.trans_a else "")

    def inputs(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((self.M, self.K), dtype=np.float32)
        b = rng.standard_normal((self.K, self.N), dtype=np.float32)
        return {"A": np.ascontiguousarray(a.T) if self.trans_a else a, "B": b}

    def _a(self, inputs) -> np.ndarray:
        return inputs["A"].T if self.trans_a else inputs["A"]

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        return self._a(inputs).astype(np.float64) @ inputs["B"].astype(np.float64)

    def error_bound(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Per-element bound for an fp32 kernel: a few sqrt(K) * eps of sum |a||b| (the typical
        rounding of a K-term fp32 sum), far below what a missing or doubled tile would change."""
        mag = np.abs(self._a(inputs)).astype(np.float64) @ np.abs(inputs["B"]).astype(np.float64)
        return 8.0 * np.sqrt(self.K) * EPS32 * mag + 1e-30

    def output_spec(self):
        return (self.M, self.N), np.dtype(np.float32)

    def bytes_moved(self) -> int:
        return 4 * (self.M * self.K + self.K * self.N + self.M * self.N)

    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    CHECK_CHUNK = 1 << 20      # outputs per piece of a threaded check

    def check(self, out: np.ndarray, ref: np.ndarray, bound: np.ndarray | None = None) -> Check:
        """Every output within `bound` of the float64 reference.  Large outputs are checked in row
        blocks on threads (numpy releases the GIL), so a 4096 x 4096 check takes a fraction of the
        time of a kernel's timing rather than more than it; the verdict is that of one pass."""
        if out.shape != ref.shape:
            return self.unusable(out, ref)
        if bound is None:
            bound = 8.0 * np.sqrt(self.K) * EPS32 * np.abs(ref).max() + 1e-30
        bound = np.broadcast_to(bound, ref.shape)
        rows = out.shape[0] if out.ndim else 1
        per = max(1, self.CHECK_CHUNK // max(1, out.size // max(1, rows)))
        blocks = [(r, min(rows, r + per)) for r in range(0, rows, per)] if out.ndim else [(0, 1)]

        def piece(span):
            o = out[span[0]:span[1]].astype(np.float64) if out.ndim else np.float64(out)
            r = ref[span[0]:span[1]] if out.ndim else ref
            b = bound[span[0]:span[1]] if out.ndim else bound
            nonfinite = int(np.size(o) - np.count_nonzero(np.isfinite(o)))
            if nonfinite:
                return nonfinite, 0.0, 0.0, 0.0, 0
            err = np.abs(o - r)
            d = o - r
            return (0, float(err.max(initial=0.0)), float(np.vdot(d, d)), float(np.vdot(r, r)),
                    int(np.count_nonzero(err > b)))

        if len(blocks) > 1:
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(min(len(blocks), os.cpu_count() or 1)) as ex:
                parts = list(ex.map(piece, blocks))
        else:
            parts = [piece(blocks[0])]
        return Sgemm.verdict(out.size, sum(p[0] for p in parts), max(p[1] for p in parts),
                            sum(p[2] for p in parts), sum(p[3] for p in parts), sum(p[4] for p in parts))

    @staticmethod
    def verdict(size: int, nonfinite: int, max_err: float, d2: float, r2: float, bad: int) -> Check:
        """The Check of `size` outputs from their counts and sums: those not finite, the largest
        |out - ref|, sum (out - ref)^2, sum ref^2, and those off by more than their bound (the host's
        check above and the GPU's, measure/reference_gpu.py, alike)."""
        if nonfinite:
            return Check(False, float("inf"), float("inf"), f"{nonfinite} of {size} outputs not finite "
                         "(unwritten or overflowed)")
        rel = float(np.sqrt(d2) / (np.sqrt(r2) or 1.0))
        ok = bad == 0
        msg = "" if ok else (f"{bad} of {size} outputs off by more than the fp32 bound "
                             f"(max abs err {max_err:.3g}, rel L2 {rel:.3g})")
        return Check(ok, float(max_err), rel, msg)
