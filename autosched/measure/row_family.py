"""The inputs, float64 reference and error bound that the GEMMs of one row family share.

A dynamic-M tuning (autosched.dynamic) measures one N x K GEMM at dozens of Ms: probes at two grids,
seeds, every tuning instance.  Drawn afresh for each M, every measurement would pay for its own
inputs and three float64 products on the host, up to ~1 s at 4096 x 4096 x 4096, where a static
tuning pays once.  But where A is stored row-major (Workload.row_family_key is not None), the
problem of M rows is the first M rows of any taller one over the same B: its inputs are a prefix of
A, and its reference and bound are the same prefix of the taller one's, row for row.  So a family
keeps one B, A's rows drawn so far (in blocks of BLOCK rows, each from its own stream of the family
seed, so the rows do not depend on the order Ms arrive in) and their reference and bound rows, and
grows (at least doubling) only when an M needs rows it has not drawn: the new rows' products alone
are computed.  B is kept decoded (float32), so growing is two products of the new rows only: the
reference in float64 and the sum |a||b| that sizes the tolerance (reference_gpu.py: the worker's
GPU computes them; numpy where none is given).

A measurement of a family member records the family seed: its inputs are rows 0..M-1 of the family
that seed draws (draw_a_rows, draw_b), not Workload.inputs(seed).
"""

from __future__ import annotations

import numpy as np

from autosched.measure.reference_gpu import host_products

BLOCK = 64          # rows drawn (and their products computed) at a time


class RowFamily:
    def __init__(self, workload, seed: int, products=host_products):
        key = workload.row_family_key()
        if key is None:
            raise ValueError(f"{workload.key} has no row family (A is not stored row-major)")
        self.key, self.seed, self.workload = key, seed, workload
        self.b = workload.draw_b(seed)
        self._b32 = np.ascontiguousarray(workload.decode(workload._load(self.b, workload.b_col)))
        self._products = products
        K, N = workload.K, workload.N
        self.rows = 0
        self._a = workload._encode(np.empty((0, K), dtype=np.float32))
        self._ref = np.empty((0, N), dtype=np.float64)
        self._bound = np.empty((0, N), dtype=np.float64)
        self.products = 0              # rows whose products were computed (what growing cost)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.b, self._b32, self._a, self._ref, self._bound))

    def member(self, workload) -> bool:
        return workload.row_family_key() == self.key

    def view(self, workload) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """(inputs, reference, bound) of a member, views into the family's arrays."""
        if not self.member(workload):
            raise ValueError(f"{workload.key} is not of the row family {self.key}")
        M = workload.M
        if M > self.rows:
            self._grow(M)
        return {"A": self._a[:M], "B": self.b}, self._ref[:M], self._bound[:M]

    def _grow(self, M: int) -> None:
        w = self.workload
        target = -(-max(M, 2 * self.rows) // BLOCK) * BLOCK
        new = np.concatenate([w.draw_a_rows(self.seed, j, BLOCK) for j in range(self.rows // BLOCK, target // BLOCK)])
        ref, mag = self._products(w.decode(new), self._b32)
        bound = w.bound_of(ref, mag)
        self._a = np.concatenate([self._a, new])
        self._ref = np.concatenate([self._ref, ref])
        self._bound = np.concatenate([self._bound, bound])
        self.products += target - self.rows
        self.rows = target
