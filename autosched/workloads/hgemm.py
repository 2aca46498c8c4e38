"""Tensor-core GEMM: D (M, N) = A (M, K) . B (K, N), FP16 or BF16 inputs, FP32 accumulation, the
output in the input dtype.

Layouts (the storage of the logical A and B; two letters, the first A's, the second B's):

    n  row-major: the logical matrix as a C array holds it, A (M, K), B (K, N)
    t  stored transposed: A as (K, M), B as (N, K) (a linear layer's weight is such a B)

so `nn`, `nt` (today's b_col, the `_bt` shape suffix), `tn` and `tt`.  The output is row-major
(M, N) in these four.  `bb` is the tensor-core seed's blocked layout, in which A, B *and* D are
stored as [rows/16, cols/16, 16, 16]: element (i, j) of a logical R x C matrix sits at
[i // 16, j // 16, i % 16, j % 16], so each 16 x 16 tile (one wmma fragment) is 256 contiguous
values and the tiles follow each other row of tiles by row of tiles.  A is then
[M/16, K/16, 16, 16], B [K/16, N/16, 16, 16] and D [M/16, N/16, 16, 16]; M, N and K must be
multiples of 16.

Dtypes: fp16 (numpy float16) and bf16 (uint16 bit patterns, autosched.bf16: numpy has none).

In the row layouts each stored row must be a multiple of 8 values: the tensor-core kernels move
16-byte chunks (8 halves) and a row that does not start on one cannot be read with them.  The
dimension along no stored row is free (today's: any M where A is row-major), its ragged edge the
kernel's to handle.
"""

from __future__ import annotations

import numpy as np

from autosched.bf16 import EPS_BF16, bf16_bits_to_float32, float32_to_bf16_bits
from autosched.workloads.base import Check, Workload, WorkloadError, as_int, parse_dims
from autosched.workloads.sgemm import EPS32, Sgemm, check_gemm_dims

EPS16 = float(np.finfo(np.float16).eps)

LAYOUTS = ("nn", "nt", "tn", "tt", "bb")
DTYPES = ("fp16", "bf16")
TILE = 16                       # the blocked layout's tile edge (the seed's wmma fragment)

# shape_str's layout suffixes: nt keeps the `_bt` every existing shape, recording and file name uses
_SUFFIX = {"nn": "", "nt": "_bt", "tn": "_tn", "tt": "_tt", "bb": "_bb"}
# what from_shape reads after MxNxK: those, `_nt` (the same as `_bt`), `_nn`, and a dtype
_LAYOUT_TOKENS = {"nn": "nn", "nt": "nt", "bt": "nt", "tn": "tn", "tt": "tt", "bb": "bb"}
SYNTAX = ("MxNxK, then optionally a layout _nn, _nt (or _bt: B stored (N, K)), _tn, _tt or _bb "
          "(blocked 16x16 tiles) and a dtype _fp16 or _bf16 (e.g. 64x11008x4096_bt or 4096x4096x4096_tn_bf16)")


def to_blocked(x: np.ndarray) -> np.ndarray:
    """A logical (R, C) matrix, R and C multiples of 16 -> its [R/16, C/16, 16, 16] storage."""
    r, c = x.shape
    return np.ascontiguousarray(x.reshape(r // TILE, TILE, c // TILE, TILE).transpose(0, 2, 1, 3))


def from_blocked(x: np.ndarray) -> np.ndarray:
    """[R/16, C/16, 16, 16] storage -> the logical (R, C) matrix (inverse of to_blocked)."""
    rt, ct, _, _ = x.shape
    return x.transpose(0, 2, 1, 3).reshape(rt * TILE, ct * TILE)


def _flag(label: str, value) -> int:
    value = as_int(label, value)
    if value not in (0, 1):
        raise WorkloadError(f"{label} must be 0 or 1, got {value!r}")
    return value


class Hgemm(Workload):
    name = "hgemm"
    memory_bound = False

    def __init__(self, M: int, N: int, K: int, b_col: int = 0, a_col: int = 0, blocked: int = 0, bf16: int = 0):
        check_gemm_dims(M, N, K)
        if b_col not in (0, 1):
            raise WorkloadError(f"b_col must be 0 or 1, got {b_col!r}")
        a_col, blocked, bf16 = _flag("a_col", a_col), _flag("blocked", blocked), _flag("bf16", bf16)
        M, N, K, b_col = int(M), int(N), int(K), int(b_col)
        dt = "bf16" if bf16 else "fp16"
        if blocked:
            if a_col or b_col:
                raise WorkloadError("the blocked layout (bb) stores A and B in 16x16 tiles of their logical "
                                    "rows: a_col and b_col must be 0 with it")
            for label, v in (("M", M), ("N", N), ("K", K)):
                if v % TILE:
                    raise WorkloadError(f"{label}={v}: the blocked layout stores 16x16 tiles, so M, N and K "
                                        "must be multiples of 16")
        else:
            # the stored rows: A's are K long (row-major) or M long (stored (K, M)); B's N or K long
            if K % 8 and (b_col or not a_col):
                raise WorkloadError(f"K={K}: the {dt} GEMM reads rows in 16-byte chunks, so K must be a "
                                    "multiple of 8")
            if a_col and M % 8:
                raise WorkloadError(f"M={M}: an A stored (K, M) is read in 16-byte chunks, so M must be a "
                                    "multiple of 8 (or store A row-major)")
            if not b_col and N % 8:
                raise WorkloadError(f"N={N}: a row-major B is read in 16-byte chunks, so N must be a multiple "
                                    "of 8 (or store B as (N, K): b_col)")
        self.M, self.N, self.K, self.b_col = M, N, K, b_col
        self.a_col, self.blocked, self.bf16 = a_col, blocked, bf16

    @property
    def layout(self) -> str:
        if self.blocked:
            return "bb"
        return "nt"[self.a_col] + "nt"[self.b_col]

    @property
    def dtype(self) -> str:
        return "bf16" if self.bf16 else "fp16"

    @classmethod
    def from_shape(cls, text: str, layout: str | None = None, dtype: str | None = None) -> "Hgemm":
        """'4096x4096x4096' (M x N x K, nn, fp16), '1x4096x4096_bt' (B stored (N, K)), suffixes for
        the other layouts and the dtype ('4096x4096x4096_tn_bf16'); `layout` and `dtype` (the
        --layout and --dtype options) say the same, and must agree with a suffix that says it too."""
        if not isinstance(text, str):
            raise WorkloadError(f"shape must be {SYNTAX}, got {text!r} (not a string)")
        dims, *tokens = text.lower().strip().split("_")
        said: dict[str, str] = {}
        for tok in tokens:
            kind, value = (("layout", _LAYOUT_TOKENS[tok]) if tok in _LAYOUT_TOKENS
                           else ("dtype", tok) if tok in DTYPES else (None, None))
            if kind is None or kind in said:
                raise WorkloadError(f"shape must be {SYNTAX}, got {text!r}")
            said[kind] = value
        for kind, given, choices in (("layout", layout, LAYOUTS), ("dtype", dtype, DTYPES)):
            if given is None:
                continue
            if not isinstance(given, str) or given.lower() not in choices:
                raise WorkloadError(f"{kind} must be one of {', '.join(choices)}, got {given!r}")
            given = given.lower()
            if said.get(kind, given) != given:
                raise WorkloadError(f"shape {text!r} says {kind} {said[kind]} but the {kind} option says {given}")
            said[kind] = given
        try:
            m, n, k = parse_dims(dims, 3, SYNTAX)
        except WorkloadError:
            raise WorkloadError(f"shape must be {SYNTAX}, got {text!r}") from None
        lay = said.get("layout", "nn")
        return cls(m, n, k, b_col=int(lay == "nt" or lay == "tt"), a_col=int(lay[0] == "t"),
                   blocked=int(lay == "bb"), bf16=int(said.get("dtype") == "bf16"))

    @property
    def params(self) -> dict[str, int]:
        # a_col, blocked and bf16 came after keys were first written: left out at 0, so every key of
        # an FP16 nn/nt GEMM is what it was (workload_from_key reads a missing flag as 0)
        p = {"M": self.M, "N": self.N, "K": self.K, "b_col": self.b_col}
        for name in ("a_col", "blocked", "bf16"):
            if getattr(self, name):
                p[name] = getattr(self, name)
        return p

    @property
    def shape_str(self) -> str:
        return f"{self.M}x{self.N}x{self.K}" + _SUFFIX[self.layout] + ("_bf16" if self.bf16 else "")

    # -- values ---------------------------------------------------------------------------------

    def _encode(self, x32: np.ndarray) -> np.ndarray:
        """float32 values -> the dtype's storage (float16, or uint16 BF16 bit patterns)."""
        return float32_to_bf16_bits(x32) if self.bf16 else x32.astype(np.float16)

    def decode(self, stored: np.ndarray) -> np.ndarray:
        """The dtype's storage -> float32 values (exact: every FP16 and BF16 value is a float32)."""
        return bf16_bits_to_float32(stored) if self.bf16 else np.asarray(stored).astype(np.float32)

    def _store(self, logical: np.ndarray, transposed: int) -> np.ndarray:
        if self.blocked:
            return to_blocked(logical)
        return np.ascontiguousarray(logical.T) if transposed else logical

    def _load(self, stored: np.ndarray, transposed: int) -> np.ndarray:
        if self.blocked:
            return from_blocked(stored)
        return stored.T if transposed else stored

    def inputs(self, seed: int) -> dict[str, np.ndarray]:
        """Standard normal values rounded to the dtype, A drawn before B (the draws of every layout
        and dtype are the same logical matrices' values), each stored in its layout."""
        rng = np.random.default_rng(seed)
        a = self._encode(rng.standard_normal((self.M, self.K), dtype=np.float32))
        b = self._encode(rng.standard_normal((self.K, self.N), dtype=np.float32))
        return {"A": self._store(a, self.a_col), "B": self._store(b, self.b_col)}

    def logical(self, inputs) -> tuple[np.ndarray, np.ndarray]:
        """(A (M, K), B (K, N)) as float64, whatever their layout and dtype."""
        return (self.decode(self._load(inputs["A"], self.a_col)).astype(np.float64),
                self.decode(self._load(inputs["B"], self.b_col)).astype(np.float64))

    def _b(self, inputs) -> np.ndarray:
        return self._load(inputs["B"], self.b_col)

    def _out(self, d: np.ndarray) -> np.ndarray:
        """The logical (M, N) result in the output's layout."""
        return to_blocked(d) if self.blocked else d

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        a, b = self.logical(inputs)
        return self._out(a @ b)

    def error_bound(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Per element: the rounding of the output to the dtype (up to an eps relative: FP16 2^-10,
        BF16 2^-7, twice the half ulp of round-to-nearest) plus the fp32 accumulation's few
        sqrt(K) * eps of sum |a||b|; products of FP16 or BF16 values (11 or 8 significant bits) are
        exact in fp32's 24."""
        a, b = self.logical(inputs)
        return self._out(self.bound_of(a @ b, np.abs(a) @ np.abs(b)))

    def bound_of(self, ref: np.ndarray, mag: np.ndarray) -> np.ndarray:
        """error_bound from the float64 product and sum |a||b| (logical layout)."""
        eps_out = EPS_BF16 if self.bf16 else EPS16
        return eps_out * np.abs(ref) + 8.0 * np.sqrt(self.K) * EPS32 * mag + 1e-30

    # -- row families: every M of one N, K, layout and dtype over the same inputs ------------------

    def row_family_key(self) -> str | None:
        """The key of the workloads whose inputs, reference and bound are the first M rows and the
        first N columns of one larger problem's (M and N left out: K, layout and dtype), or None where
        rows of the output are not rows of the storage (A stored (K, M), the blocked layout)."""
        if self.a_col or self.blocked:
            return None
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in self.params.items() if k not in ("M", "N"))

    def draw_b_cols(self, seed: int, block: int, cols: int) -> np.ndarray:
        """Columns [block * cols, (block + 1) * cols) of a row family's B, as B^T's rows (cols, K) in
        the dtype's storage: each block its own stream of the family seed, so a family grown in any
        order holds the same columns (and B stored (N, K) takes them without a transpose)."""
        rng = np.random.default_rng([seed, 1 << 30, block])
        return self._encode(rng.standard_normal((cols, self.K), dtype=np.float32))

    def draw_a_rows(self, seed: int, block: int, rows: int) -> np.ndarray:
        """Rows [block * rows, (block + 1) * rows) of a row family's A (row-major storage): each block
        its own stream of the family seed, so a family grown in any order holds the same rows."""
        rng = np.random.default_rng([seed, block])
        return self._encode(rng.standard_normal((rows, self.K), dtype=np.float32))

    def output_spec(self):
        shape = (self.M // TILE, self.N // TILE, TILE, TILE) if self.blocked else (self.M, self.N)
        return shape, np.dtype(np.uint16 if self.bf16 else np.float16)

    def bytes_moved(self) -> int:
        return 2 * (self.M * self.K + self.K * self.N + self.M * self.N)

    def flops(self) -> int:
        return 2 * self.M * self.N * self.K

    CHECK_CHUNK = Sgemm.CHECK_CHUNK

    def check(self, out: np.ndarray, ref: np.ndarray, bound: np.ndarray | None = None):
        """Every output within the bound of the float64 reference; a BF16 output (uint16 bits) is
        read as its values first, so its bit patterns are never compared as integers."""
        if self.bf16:
            out = np.asarray(out)
            if out.dtype != np.uint16:
                return Check(False, float("inf"), float("inf"),
                             f"a bf16 output is uint16 bit patterns, got dtype {out.dtype}")
            out = bf16_bits_to_float32(out)
        return Sgemm.check(self, out, ref, bound)
