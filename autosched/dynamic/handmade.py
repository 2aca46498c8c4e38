"""A DynamicResult made by hand: given micro-kernels served over given ranges of M, no tuning.  For
GPU checks and timings that must pin a kernel to a range (every split-K config through one
ops.HgemmDispatch, say) without a tuning run deciding which kernels exist; never saved as an
artifact (its runner is "handmade", its verification empty)."""

from __future__ import annotations

from autosched.dynamic.dispatch import Dispatcher
from autosched.dynamic.measurer import CompileReport, MicroKernel
from autosched.dynamic.tune import DynamicResult


def chain_nodes(tops: list[int]) -> list[dict]:
    """Decision-tree nodes serving kernel i for M up to tops[i] (ascending), the last kernel above."""
    nodes: list[dict] = []
    for i, top in enumerate(tops):
        nodes.append({"le": top, "left": len(nodes) + 1, "right": len(nodes) + 2})
        nodes.append({"kernel": i})
    nodes.append({"kernel": len(tops)})
    return nodes


def handmade_result(dw, kernels: list[tuple[str, dict]], tops: list[int], device_key: str,
                    runner: str = "handmade") -> DynamicResult:
    """kernels: (family, config) pairs; kernel i serves M in (tops[i-1], tops[i]], the last one the
    rest of dw's range (len(tops) == len(kernels) - 1)."""
    if len(tops) != len(kernels) - 1 or list(tops) != sorted(tops):
        raise ValueError(f"{len(kernels)} kernels need {len(kernels) - 1} ascending tops, got {tops}")
    report = CompileReport(0, 0, 0, 0, 1, "handmade")
    mks = [MicroKernel(dict(c), report, {}, family=f) for f, c in kernels]
    disp = Dispatcher(chain_nodes(list(tops)), [c for _, c in kernels], dw.lo, dw.hi, [f for f, _ in kernels])
    fams = "+".join(sorted({f for f, _ in kernels}))
    return DynamicResult(dw, device_key, runner, fams, "handmade", mks, len(mks), [], disp)
