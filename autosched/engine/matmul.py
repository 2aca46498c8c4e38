"""The engine's matmuls: one weight matrix shape, every layer's copy of it, and the kernel for it.

    q4f16_1          the tuned GEMV (config from the database, else a same-device recording,
                     else the cost model's prediction, else the rule-based default: selection.rank),
                     fp16 in and out
    fp16             gemv_dense of kernels/decode.cuh, its warps and unroll chosen the same way
                     (family gemv-dense, templates/gemv_dense.py; the default is the fixed choice
                     of before: 4 warps, unroll 4)
    fp32/int8        gemv_dense with the fixed warps and unroll

Each applies a decode-step epilogue to its sums (templates/epilogue.py): "store" is the plain
matmul; the others take the epilogue's arguments at the call.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from autosched import layouts
from autosched.engine.weights import quantize_int8, quantize_q4f16_1
from autosched.launch import LoadedKernel
from autosched.runtime import ptr
from autosched.registry import templates_for
from autosched.selection import Candidate
from autosched.templates.decode import gemv_dense_spec
from autosched.templates.epilogue import epilogue_id
from autosched.templates.gemv_dense import GemvDenseTemplate, blocks_pair_rows as dense, engine_spec
from autosched.templates.gemv_q4f16 import blocks_pair_rows as q4, fused_spec
from autosched.workloads import GemvDense, GemvQ4F16

# torch is imported inside functions: optional / slow to import, a CPU install runs without it; rank is
# imported inside functions too: looked up at call time, as tests replace it on its module

# the epilogue arguments of a "store" matmul: no residual, no sums
NO_EPILOGUE = (np.uint64(0), np.uint64(0), np.uint64(0), np.int32(0), np.float32(0))

# the formats whose matmul has a search space, and the workload it is tuned as
TUNED_FORMATS = {"q4f16_1": GemvQ4F16, "fp16": GemvDense}


def tuned_workload(fmt: str, n: int, k: int):
    """The workload a matmul of `fmt` and shape (n, k) is tuned as, or None (no search space)."""
    w = TUNED_FORMATS.get(fmt)
    return w(n, k) if w is not None else None


def blocks_pair_rows(workload, config: dict) -> bool:
    """Does `config` give every block of `workload`'s GEMV whole (gate, up) row pairs?"""
    if isinstance(workload, GemvDense):
        return dense(workload, config)
    return q4(workload, config)


BUDGET_MACRO = "-DAUTOSCHED_PREFETCH_BUDGET="


def with_prefetch_budget(spec, budget: int):
    """`spec` compiled with an L2 prefetch budget of `budget` bytes a grid (kernels/pdl.cuh)."""
    if budget < 0:
        raise ValueError(f"a prefetch budget is a number of bytes >= 0, got {budget}")
    options = tuple(o for o in spec.options if not o.startswith(BUDGET_MACRO))
    return dataclasses.replace(spec, options=(*options, f"{BUDGET_MACRO}{int(budget)}ll"))


class Matmul:
    """out (N) = W_layer (N, K) . x for every layer's W of one shape."""

    def __init__(self, name: str, fmt: str, n: int, k: int, act: str, out: str, device_info, db=None,
                 config: dict | None = None, pdl: bool = False, choice=None, epilogue: str = "store",
                 prefetch_budget: int | None = None):
        """The q4f16_1 or fp16 config: `choice` (a selection.Candidate), else `config`, else rank's
        first (database, recording, prediction, default).  prefetch_budget: the bytes a grid asks
        the L2 for before its dependency wait (kernels/pdl.cuh; None: its default)."""
        self.name, self.fmt, self.n, self.k = name, fmt, n, k
        self.epilogue = epilogue
        epilogue_id(epilogue)           # refuse an unknown name before anything is built
        self.layers: list[dict] = []
        if fmt in TUNED_FORMATS:
            if act != "half" or out != "half":
                raise ValueError(f"the {fmt} GEMV reads and writes fp16")
            from autosched.selection import rank
            self.workload = tuned_workload(fmt, n, k)
            self.choice = (choice if choice is not None
                           else Candidate(templates_for(self.workload)[0].family, config, "given") if config is not None
                           else rank(self.workload, device_info, db)[0])
            if fmt == "fp16":      # the tuned config is of the plain GEMV; an epilogue takes its warps and unroll
                cfg = GemvDenseTemplate().space(self.workload, device_info).validate(self.choice.config)
                self.spec = engine_spec(n, k, cfg, device_info.arch, epilogue=epilogue)
            elif epilogue == "store":
                self.spec = templates_for(self.workload)[0].render(self.workload, self.choice.config, device_info)
            else:
                self.spec = fused_spec(self.workload, self.choice.config, device_info, epilogue)
            if pdl and fmt == "q4f16_1":    # the same kernel plus the weight prefetch and the dependency wait
                self.spec = dataclasses.replace(self.spec, options=(*self.spec.options, "-DAUTOSCHED_PDL"))
        else:
            self.workload = None
            self.choice = None
            self.spec = gemv_dense_spec(n, k, fmt, act, out, device_info.arch, epilogue=epilogue)
        self.kernel = None
        self.pdl = pdl
        self.prefetch_budget = None
        if prefetch_budget is not None:
            self.spec = with_prefetch_budget(self.spec, prefetch_budget)
            self.prefetch_budget = prefetch_budget

    def load(self, builder) -> None:
        self.kernel = LoadedKernel(self.spec, builder, self.pdl)

    def set_prefetch_budget(self, budget: int, builder) -> None:
        """Serve the same config compiled with another L2 prefetch budget (the packed weights stay)."""
        self.spec = with_prefetch_budget(self.spec, budget)
        self.prefetch_budget = budget
        self.load(builder)

    def add_layer(self, w) -> None:
        """w: (N, K) float32 torch tensor on the GPU; kept only in the packed form."""
        if tuple(w.shape) != (self.n, self.k):
            raise ValueError(f"{self.name}: expected a ({self.n}, {self.k}) matrix, got {tuple(w.shape)}")
        import torch
        if self.fmt == "q4f16_1":
            a_q, a_scale = quantize_q4f16_1(w)
            host = {"A_q": a_q, "A_scale": a_scale}
            packed = {a.name: layouts.apply(a.layout, a.params(), host[a.name]).contiguous()
                      for a in self.spec.args if a.role == "input" and a.name in host}
        elif self.fmt == "int8":
            q, s = quantize_int8(w)
            packed = {"w": q.contiguous(), "scale": s.contiguous()}
        else:
            packed = {"w": w.to(torch.float32 if self.fmt == "fp32" else torch.float16).contiguous()}
        self.layers.append(packed)

    def add_layer_copies(self, w, count: int) -> None:
        """`count` layers of the same matrix w: packed once, the others clones of it (timing runs,
        whose time does not depend on the weights' values, on more bytes than the L2 holds)."""
        self.add_layer(w)
        first = self.layers[-1]
        self.layers += [{arg: t.clone() for arg, t in first.items()} for _ in range(count - 1)]

    def nbytes(self, layer: int) -> int:
        return sum(t.numel() * t.element_size() for t in self.layers[layer].values())

    def __call__(self, stream, layer: int, out, x, epilogue_args: tuple = NO_EPILOGUE) -> None:
        """out = W_layer . x, then the epilogue, whose arguments (x residual, ss_in, ss_out: device
        pointers; dim: int32; eps: float32) a fused matmul needs."""
        p = self.layers[layer]
        if self.fmt == "q4f16_1":
            args = [ptr(out) if a.role == "output" else ptr(x) if a.name == "V" else ptr(p[a.name])
                    for a in self.spec.args]
            if self.epilogue != "store":
                args += epilogue_args
        else:
            args = [ptr(out), ptr(p["w"]), ptr(p["scale"]) if "scale" in p else np.uint64(0), ptr(x), np.int32(self.n),
                    np.int32(self.k), *epilogue_args]
        self.kernel(stream, *args)

    def describe(self) -> str:
        if self.choice is not None and self.fmt == "fp16":
            c = self.choice.config
            return (f"{self.name} {self.n}x{self.k} fp16 GEMV (warps {c['warps']}, unroll {c['unroll']}) + "
                    f"{self.epilogue}, config from {self.choice.source}")
        if self.choice is not None:
            return (f"{self.name} {self.n}x{self.k} q4f16_1 GEMV + {self.epilogue}, config from "
                    f"{self.choice.source}")
        return f"{self.name} {self.n}x{self.k} {self.fmt} {self.spec.name_expression}"
