"""A workload with a symbolic M (DietCode's frontend): an operator whose M ranges over [lo, hi] in
steps of `step` while (N, K), layout and dtype are fixed, with the tuning instances (`wkl_insts`)
and their weights (`wkl_inst_weights`).

    dw = DynamicWorkload.parse("hgemm", "Mx4096x4096_bt", m_range=(1, 4096))
    dw.at(100)          # the concrete Hgemm(100, 4096, 4096, b_col=1)

BERT's dense layers see M = 16 x sequence length, length 1..128: m_range=(16, 2048), step=16.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autosched.registry import family
from autosched.workloads import Hgemm
from autosched.workloads.base import WorkloadError

# Llama-2-7B's fused qkv, gate+up and down projections (Y = X W^T: B stored (N, K)) and BERT-base's
# dense layers, with the ranges of issue 16
LLAMA2_7B = ("Mx4096x4096_bt", "Mx12288x4096_bt", "Mx22016x4096_bt", "Mx4096x11008_bt")
BERT_BASE = ("Mx768x768_bt", "Mx3072x768_bt", "Mx768x3072_bt")


@dataclass(frozen=True)
class DynamicWorkload:
    op: str                     # the family's workload name ("hgemm")
    N: int
    K: int
    layout: str
    dtype: str
    lo: int
    hi: int
    step: int
    instances: tuple[int, ...]  # the Ms tuned on (wkl_insts)
    weights: tuple[float, ...]  # their weights (wkl_inst_weights), summing to 1

    # -- construction -------------------------------------------------------------------------
    @classmethod
    def parse(cls, op: str, shape: str, m_range, instances=None, weights=None, step: int = 1,
              layout: str | None = None, dtype: str | None = None) -> "DynamicWorkload":
        """`shape` is the family's shape with the symbol M for its first dimension ("Mx4096x4096_bt");
        `m_range` (lo, hi) or "lo:hi"; instances default to `default_instances`; weights to uniform."""
        try:
            fam = family(op)
        except ValueError as e:
            raise WorkloadError(str(e)) from None
        if fam.workload.name != "hgemm":
            raise WorkloadError(f"dynamic shapes are implemented for hgemm only, not {op}")
        if not isinstance(shape, str) or not shape.strip().upper().startswith("MX"):
            raise WorkloadError(f"shape must name the symbolic M first, as in Mx4096x4096_bt; got {shape!r}")
        lo, hi = parse_range(m_range)
        step = _int("step", step)
        if step < 1:
            raise WorkloadError(f"step must be >= 1, got {step}")
        if lo % step or hi % step:
            raise WorkloadError(f"range {lo}:{hi} must hold multiples of the step {step} at both ends")
        # the shape at M = hi: the family parses and checks N, K, layout and dtype
        w = fam.parse(f"{hi}" + shape.strip()[1:], layout=layout, dtype=dtype)
        if instances is None:
            insts = default_instances(lo, hi, step)
        else:
            insts = tuple(_int("instance", m) for m in instances)
            bad = [m for m in insts if not (lo <= m <= hi and m % step == 0)]
            if bad:
                raise WorkloadError(f"instances {bad} lie outside the range {lo}:{hi}"
                                    + (f" (step {step})" if step > 1 else ""))
            if len(set(insts)) != len(insts) or not insts:
                raise WorkloadError(f"instances must be distinct and at least one, got {list(insts)}")
        if weights is None:
            wts = tuple(1.0 / len(insts) for _ in insts)
        else:
            wts = tuple(float(x) for x in weights)
            if len(wts) != len(insts):
                raise WorkloadError(f"{len(wts)} weights for {len(insts)} instances")
            if not all(math.isfinite(x) and x >= 0 for x in wts) or sum(wts) <= 0:
                raise WorkloadError(f"weights must be finite, >= 0 and not all 0, got {list(wts)}")
            total = sum(wts)
            wts = tuple(x / total for x in wts)
        order = sorted(range(len(insts)), key=lambda i: insts[i])
        return cls(w.name, w.N, w.K, w.layout, w.dtype, lo, hi, step,
                   tuple(insts[i] for i in order), tuple(wts[i] for i in order))

    # -- views --------------------------------------------------------------------------------
    def at(self, m: int):
        """The concrete workload at M = m (which must lie in the range)."""
        m = _int("M", m)
        if not (self.lo <= m <= self.hi and m % self.step == 0):
            raise WorkloadError(f"M={m} is outside {self.range_str}")
        return Hgemm.from_shape(f"{m}x{self.N}x{self.K}", layout=self.layout, dtype=self.dtype)

    @property
    def largest(self):
        return self.at(self.hi)

    def ms(self) -> list[int]:
        """Every M of the range."""
        return list(range(self.lo, self.hi + 1, self.step))

    @property
    def range_str(self) -> str:
        return f"M in {self.lo}:{self.hi}" + (f" step {self.step}" if self.step > 1 else "")

    @property
    def shape_str(self) -> str:
        return "M" + self.largest.shape_str[len(str(self.hi)):]

    @property
    def key(self) -> str:
        """Names the operator, the range and the fixed dimensions; the instances and weights are
        the tuning run's, kept in its result."""
        p = dict(self.largest.params)
        p["M"] = f"{self.lo}..{self.hi}" + (f"/{self.step}" if self.step > 1 else "")
        return self.op + ":" + ",".join(f"{k}={v}" for k, v in p.items())

    def to_json(self) -> dict:
        return {"op": self.op, "shape": self.shape_str, "N": self.N, "K": self.K, "layout": self.layout,
                "dtype": self.dtype, "range": [self.lo, self.hi], "step": self.step,
                "instances": list(self.instances), "weights": list(self.weights)}

    @classmethod
    def from_json(cls, d: dict) -> "DynamicWorkload":
        return cls.parse(d["op"], d["shape"], tuple(d["range"]), d["instances"], d["weights"], d.get("step", 1))


def parse_range(r) -> tuple[int, int]:
    """(lo, hi) from a pair or "lo:hi", 1 <= lo <= hi."""
    if isinstance(r, str):
        parts = r.split(":")
        if len(parts) != 2 or not all(p.strip().isascii() and p.strip().isdigit() for p in parts):
            raise WorkloadError(f"range must be LO:HI (e.g. 1:4096), got {r!r}")
        r = (int(parts[0]), int(parts[1]))
    try:
        lo, hi = r
    except (TypeError, ValueError):
        raise WorkloadError(f"range must be (lo, hi) or 'LO:HI', got {r!r}") from None
    lo, hi = _int("range start", lo), _int("range end", hi)
    if not 1 <= lo <= hi:
        raise WorkloadError(f"range must have 1 <= lo <= hi, got {lo}:{hi}")
    return lo, hi


def default_instances(lo: int, hi: int, step: int = 1, odd: int = 3) -> tuple[int, ...]:
    """The range's ends, the powers of two inside it (times the step), and `odd` values that divide
    no tile (an odd multiple of the step spread geometrically over the range): the shapes a tile
    fits exactly and those it does not."""
    out = {lo, hi}
    p = 1
    while p * step <= hi:
        if p * step >= lo:
            out.add(p * step)
        p *= 2
    lo_u, hi_u = lo // step, hi // step
    for i in range(1, odd + 1):
        u = round(lo_u * (hi_u / lo_u) ** (i / (odd + 1)))
        u = u + 1 if u % 2 == 0 else u
        if lo_u <= u <= hi_u:
            out.add(u * step)
    return tuple(sorted(out))


def _int(label: str, v) -> int:
    if isinstance(v, bool) or not hasattr(v, "__index__"):
        raise WorkloadError(f"{label} must be an integer, got {v!r}")
    return int(v)
