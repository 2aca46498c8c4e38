"""What a model's decode step launches, and how a tuning budget is split over it (tune-model).

    plan = step_plan(cfg, ["q4f16_1"], budget_s=600)
    for s in plan.shapes:            # the tunable shapes, largest share first
        print(s.workload.key, s.names, f"{s.share:.1%}", s.budget_s)

A step of the engine (engine/engine.py) is, per layer, the fused qkv matmul (+ norm epilogue),
rope_attention, o (+ residual), the fused gate/up matmul (+ norm and SwiGLU), down (+ residual);
and once, embed_norm, the classifier (+ the final norm) and argmax.  Of these, what has a search
space is a matmul whose format has a tuned family: q4f16_1's GEMV (family gemv-q4f16) and fp16's
dense GEMV (family gemv-dense: its warps and unroll).  A matmul
with an epilogue is tuned as the plain GEMV of its shape (the epilogue runs after the sums, on the
same config); the engine's own step verification then times the fused kernels.  The rest (the dense
fp32/int8 GEMV, attention, embed, argmax) have no space yet and are listed as such.

A kernel's share of the step is estimated from what it moves: bytes at a nominal 3 TB/s plus 3 us
a launch (search/transfer.scale_for), times its launches a step, attention at half the context.
Only the ratios matter: they split the budget.  Shapes that several matmuls share are tuned once.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from autosched.engine.matmul import tuned_workload
from autosched.engine.shapes import EPILOGUE, matmul_shapes
from autosched.models.llama2c import LlamaConfig
from autosched.models.quantize import FORMATS
from autosched.search.transfer import scale_for

_BYTES_PER_WEIGHT = {"fp32": 4.0, "fp16": 2.0, "int8": 1.0}
_BW_B_PER_US, _LAUNCH_US = 3e6, 3.0       # the nominal rates of search/transfer.scale_for


@dataclass
class Kernel:
    """One kernel of the step, in one weight format."""
    name: str                    # "qkv", "o", "gate_up", "down", "cls", "attention", "embed", "argmax"
    fmt: str
    launches: int                # a step
    nominal_us: float            # one launch, estimated from its bytes
    shape: tuple[int, int] | None = None      # (N, K) of a matmul
    epilogue: str = ""
    workload: object = None      # the tunable workload, None when the kernel has no search space
    why_not: str = ""            # why it has none
    share: float = 0.0           # of the step's estimated time (set by step_plan)

    @property
    def tunable(self) -> bool:
        return self.workload is not None


@dataclass
class Shape:
    """One tunable workload: the kernels of the step that run it, its share, its budget."""
    workload: object
    names: list[str]
    fmt: str
    share: float                 # of the step (its kernels' shares summed)
    budget_s: float = 0.0


@dataclass
class Plan:
    cfg: LlamaConfig
    formats: list[str]
    budget_s: float
    kernels: dict[str, list[Kernel]] = field(default_factory=dict)     # format -> its step
    shapes: list[Shape] = field(default_factory=list)                   # tunable, largest share first


def matmul_workload(fmt: str, n: int, k: int):
    """(the workload a matmul of this format and shape is tuned as, or None; why not)."""
    w = tuned_workload(fmt, n, k)
    if w is not None:
        return w, ""
    return None, f"{fmt}: the {fmt} dense GEMV (kernels/decode.cuh gemv_dense) has no search space yet"


def _bytes_us(nbytes: float) -> float:
    return nbytes / _BW_B_PER_US + _LAUNCH_US


def step_kernels(cfg: LlamaConfig, fmt: str) -> list[Kernel]:
    """Every kernel one decode step of `fmt` launches, with its shares set (summing to 1)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown weight format {fmt!r}; choose from {', '.join(FORMATS)}")
    act = 4 if fmt == "fp32" else 2
    out = []
    for name, (n, k) in matmul_shapes(cfg).items():
        launches = 1 if name == "cls" else cfg.n_layers
        w, why = matmul_workload(fmt, n, k)
        if w is not None:
            us = scale_for(w.name)(w.params)
        else:
            us = _bytes_us(n * k * _BYTES_PER_WEIGHT[fmt] + act * (n + k))
        out.append(Kernel(name, fmt, launches, us, (n, k), EPILOGUE[name], w, why))
    # attention reads the KV cache up to the position: half the context on average
    kv = 2 * (cfg.seq_len / 2) * cfg.kv_dim * act
    fixed = "has no search space (a fixed launch)"
    out += [Kernel("attention", fmt, cfg.n_layers, _bytes_us(kv), why_not=f"rope_attention {fixed}"),
            Kernel("embed", fmt, 1, _bytes_us(4 * cfg.dim), why_not=f"embed_norm {fixed}"),
            Kernel("argmax", fmt, 1, _bytes_us(6 * cfg.vocab_size), why_not=f"argmax {fixed}")]
    total = sum(x.launches * x.nominal_us for x in out)
    for x in out:
        x.share = x.launches * x.nominal_us / total
    return out


def step_plan(cfg: LlamaConfig, formats, budget_s: float) -> Plan:
    """The kernels of each format's step and the tunable shapes, the budget split over them by
    share (the budgets sum to `budget_s` where anything is tunable)."""
    formats = list(dict.fromkeys(formats))
    if not formats:
        raise ValueError("no weight format given")
    if not budget_s > 0:
        raise ValueError(f"the budget must be above 0, got {budget_s}")
    plan = Plan(cfg, formats, budget_s)
    shapes: dict[str, Shape] = {}
    for fmt in formats:
        plan.kernels[fmt] = ks = step_kernels(cfg, fmt)
        for k in ks:
            if k.tunable:
                s = shapes.setdefault(k.workload.key, Shape(k.workload, [], fmt, 0.0))
                s.names.append(k.name)
                s.share += k.share / len(formats)       # each format's step counts alike
    plan.shapes = sorted(shapes.values(), key=lambda s: -s.share)
    total = sum(s.share for s in plan.shapes)
    for s in plan.shapes:
        s.budget_s = budget_s * s.share / total
    return plan
