"""The Workload interface every operator implements."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np


class WorkloadError(ValueError):
    """A shape or buffer that the operator's format cannot accept."""


# str.isdigit() also passes superscripts and other scripts' digits, which int() then refuses or
# reads: a shape is ASCII digits only, and never so long that int() itself refuses it
_DIGITS = re.compile(r"[0-9]{1,30}")


def parse_dims(text: str, count: int, syntax: str) -> list[int]:
    """`count` dimensions joined by 'x' (or '*'), spaces around each allowed, as ints; else
    WorkloadError quoting `syntax` (the expected form, with an example)."""
    if not isinstance(text, str):
        raise WorkloadError(f"shape must be {syntax}, got {text!r} (not a string)")
    parts = [p.strip() for p in text.lower().replace("*", "x").split("x")]
    if len(parts) != count or not all(_DIGITS.fullmatch(p) for p in parts):
        raise WorkloadError(f"shape must be {syntax}, got {text!r}")
    return [int(p) for p in parts]


def as_int(label: str, value) -> int:
    """`value` as a Python int (numpy integers too: their products would wrap silently), or
    WorkloadError naming `label`."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise WorkloadError(f"{label} must be an integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Check:
    ok: bool
    max_abs_err: float
    rel_l2_err: float
    message: str


class Workload:
    """One operator at concrete shapes.  Subclasses define name, params, inputs, reference."""

    name: str = ""

    @property
    def params(self) -> dict[str, int]:
        raise NotImplementedError

    @property
    def key(self) -> str:
        return self.name + ":" + ",".join(f"{k}={v}" for k, v in self.params.items())

    def inputs(self, seed: int) -> dict[str, np.ndarray]:
        raise NotImplementedError

    def reference(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        raise NotImplementedError

    def output_spec(self) -> tuple[tuple[int, ...], np.dtype]:
        raise NotImplementedError

    def bytes_moved(self) -> int:
        raise NotImplementedError

    def flops(self) -> int:
        raise NotImplementedError

    memory_bound = True     # how a time is best read: bandwidth (GB/s) or arithmetic (TFLOP/s)

    def throughput(self, us: float) -> tuple[float, str]:
        if self.memory_bound:
            return self.bytes_moved() / (us * 1e-6) / 1e9, "GB/s"
        return self.flops() / (us * 1e-6) / 1e12, "TFLOP/s"

    def check(self, out: np.ndarray, ref: np.ndarray) -> Check:
        raise NotImplementedError

    @staticmethod
    def unusable(out: np.ndarray, ref: np.ndarray) -> Check | None:
        """The failed Check of an output that has the wrong shape or a non-finite element (never
        written, or overflowed), else None: every workload's check starts here."""
        if out.shape != ref.shape:
            return Check(False, float("inf"), float("inf"), f"output shape {out.shape} != {ref.shape}")
        if not np.all(np.isfinite(out)):
            bad = int(np.sum(~np.isfinite(out)))
            return Check(False, float("inf"), float("inf"), f"{bad} of {out.size} outputs not finite "
                         "(unwritten or overflowed)")
        return None

    def require_inputs(self, inputs: dict[str, np.ndarray], want: dict[str, tuple[tuple, type]]) -> None:
        """WorkloadError naming the first of `want` (name -> (shape, dtype)) that `inputs` lacks or
        holds with another shape or dtype."""
        for name, (shape, dtype) in want.items():
            if name not in inputs:
                raise WorkloadError(f"missing input {name}; {self!r} needs {sorted(want)}")
            a = inputs[name]
            if a.shape != shape or a.dtype != dtype:
                raise WorkloadError(f"{name} must be {shape} {np.dtype(dtype).name} for {self!r}, "
                                    f"got {a.shape} {a.dtype}")

    @classmethod
    def check_vector(cls, out: np.ndarray, ref: np.ndarray, rms_frac: float, rel_l2_max: float) -> Check:
        """A float-accumulated vector stored in fp16: the largest error within `rms_frac` of the output's
        rms plus 2e-3 of its largest magnitude, and the relative L2 error within `rel_l2_max`."""
        o = out.astype(np.float64)
        failed = cls.unusable(o, ref)
        if failed:
            return failed
        err = np.abs(o - ref)
        scale = float(np.sqrt(np.mean(ref ** 2))) or 1.0
        rel_l2 = float(np.linalg.norm(o - ref) / (np.linalg.norm(ref) or 1.0))
        max_err = float(err.max())
        ok = max_err <= rms_frac * scale + 2e-3 * float(np.abs(ref).max()) and rel_l2 <= rel_l2_max
        msg = "" if ok else f"max abs err {max_err:.3g} (output rms {scale:.3g}), rel L2 {rel_l2:.3g}"
        return Check(ok, max_err, rel_l2, msg)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.params.items())})"

    def __eq__(self, other) -> bool:
        return isinstance(other, Workload) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


class MatrixVector(Workload):
    """The shape of a GEMV: N outputs, each a K-long row of the matrix times the vector.  Subclasses
    set N and K (after their own checks) and EXAMPLE, the shape their parse error shows."""

    EXAMPLE = "4096x4096"

    @classmethod
    def from_shape(cls, text: str):
        """'12288x4096' -> cls(N=12288, K=4096)."""
        return cls(*parse_dims(text, 2, f"NxK (e.g. {cls.EXAMPLE})"))

    @property
    def params(self) -> dict[str, int]:
        return {"N": self.N, "K": self.K}

    @property
    def shape_str(self) -> str:
        return f"{self.N}x{self.K}"
