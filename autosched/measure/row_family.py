"""The inputs, float64 reference and error bound that the GEMMs of one K, layout and dtype share.

A dynamic-M tuning (autosched.dynamic) measures one N x K GEMM at dozens of shapes: probes at two
grids (each M' x N' a whole number of tiles, N' near N), seeds, every tuning instance.  Drawn afresh
for each shape, every measurement would pay for its own inputs and two float64 products, seconds at
4096 x 4096 x 4096, where a static tuning pays once.  But where A is stored row-major
(Workload.row_family_key is not None), the problem of M rows and N columns is the top-left corner
of any larger one over the same K: its A is a prefix of A's rows, its B a prefix of B's columns,
its reference and bound the same corner of the larger one's.  So a family keeps A's rows and B's
columns drawn so far (rows in blocks of BLOCK, columns in blocks of COL_BLOCK, each block from its
own stream of the family seed, so nothing depends on the order shapes arrive in) and the reference
and bound of all of them, and grows only when a shape needs rows or columns it has not drawn: the
new rows' (at least doubling) or the new columns' products alone are computed, by `products`
(reference_gpu.py: the worker's GPU; numpy where none is given).  B is kept as B^T (columns, K),
which is B's storage where B is stored (N, K) (the linear layer's layout), and a view of it otherwise.

A measurement of a family member records the family seed: its inputs are rows 0..M-1 and columns
0..N-1 of the family that seed draws (draw_a_rows, draw_b_cols), not Workload.inputs(seed).
"""

from __future__ import annotations

import numpy as np

from autosched.measure.reference_gpu import host_products

BLOCK = 64          # rows of A drawn (and their products computed) at a time
COL_BLOCK = 256     # columns of B


class RowFamily:
    def __init__(self, workload, seed: int, products=host_products):
        key = workload.row_family_key()
        if key is None:
            raise ValueError(f"{workload.key} has no row family (A is not stored row-major)")
        self.key, self.seed, self.workload = key, seed, workload
        empty = workload._encode(np.empty((0, workload.K), dtype=np.float32))
        self._a, self._bt = empty, empty.copy()          # A's rows, B^T's rows (B's columns), stored
        self._bt32 = np.empty((0, workload.K), dtype=np.float32)
        self._ref = np.empty((0, 0), dtype=np.float64)
        self._bound = np.empty((0, 0), dtype=np.float64)
        self._products = products
        self.rows = self.cols = 0
        self.products = 0              # outputs whose products were computed (what growing cost)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self._a, self._bt, self._bt32, self._ref, self._bound))

    def bytes_after(self, workload) -> int:
        """nbytes once `workload` is viewed (what growing to it will hold; the worker's budget)."""
        rows = self.rows if workload.M <= self.rows else -(-max(workload.M, 2 * self.rows) // BLOCK) * BLOCK
        cols = max(self.cols, -(-workload.N // COL_BLOCK) * COL_BLOCK)
        K, stored = self.workload.K, self._a.itemsize
        return rows * K * stored + cols * K * (stored + 4) + 2 * rows * cols * 8

    def member(self, workload) -> bool:
        return workload.row_family_key() == self.key

    def view(self, workload) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        """(inputs, reference, bound) of a member, views into the family's arrays."""
        if not self.member(workload):
            raise ValueError(f"{workload.key} is not of the row family {self.key}")
        M, N = workload.M, workload.N
        if N > self.cols:
            self._grow_cols(N)
        if M > self.rows:
            self._grow_rows(M)
        bt = self._bt[:N]
        return ({"A": self._a[:M], "B": bt if workload.b_col else bt.T},
                self._ref[:M, :N], self._bound[:M, :N])

    def prefix_inputs(self, workload) -> dict[str, str]:
        """The inputs of a member that are prefixes of the family's stored arrays (device_arrays'
        names): A always (rows of row-major storage); B where it is stored (N, K), B^T's rows."""
        out = {"A": "a"}
        if workload.b_col:
            out["B"] = "bt"
        return out

    def device_arrays(self) -> dict[str, np.ndarray]:
        """What a device mirror holds (measure/worker.py): A's rows and B^T's rows in the stored
        dtype, the reference and bound (rows x cols), all C-contiguous."""
        return {"a": self._a, "bt": self._bt, "ref": self._ref, "bound": self._bound}

    def _corner(self, a32: np.ndarray, bt32: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if not (len(a32) and len(bt32)):        # nothing drawn yet along the other side
            empty = np.empty((len(a32), len(bt32)), dtype=np.float64)
            return empty, empty.copy()
        ref, mag = self._products(a32, bt32)
        self.products += ref.size
        return ref, self.workload.bound_of(ref, mag)

    def _grow_rows(self, M: int) -> None:
        w = self.workload
        target = -(-max(M, 2 * self.rows) // BLOCK) * BLOCK
        new = np.concatenate([w.draw_a_rows(self.seed, j, BLOCK) for j in range(self.rows // BLOCK, target // BLOCK)])
        ref, bound = self._corner(w.decode(new), self._bt32)
        self._a = np.concatenate([self._a, new])
        self._ref = np.concatenate([self._ref, ref])
        self._bound = np.concatenate([self._bound, bound])
        self.rows = target

    def _grow_cols(self, N: int) -> None:
        """To the columns asked, in whole blocks (no doubling: a probe's N' is within a tile of N)."""
        w = self.workload
        target = -(-N // COL_BLOCK) * COL_BLOCK
        new = np.concatenate([w.draw_b_cols(self.seed, j, COL_BLOCK)
                              for j in range(self.cols // COL_BLOCK, target // COL_BLOCK)])
        new32 = w.decode(new)
        ref, bound = self._corner(w.decode(self._a), new32)
        self._bt = np.concatenate([self._bt, new])
        self._bt32 = np.concatenate([self._bt32, new32])
        self._ref = np.concatenate([self._ref, ref], axis=1)
        self._bound = np.concatenate([self._bound, bound], axis=1)
        self.cols = target
